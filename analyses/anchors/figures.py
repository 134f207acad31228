"""Plotly figures of a thought-anchors run: per-sentence importance by each measure, and the suppression matrix.

Example:
    >>> fig = figure_importance(["a.", "b."], {"forced": [0.1, 0.9]}, title="t")
    >>> [tr.name for tr in fig.data]
    ['forced']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def _label(k: int, text: str, width: int = 28) -> str:
    return f"{k}: {text[:width]}{'...' if len(text) > width else ''}"


def figure_importance(sentences: Sequence[str], measures: Mapping[str, Sequence[float]], *, title: str = ""):
    """Grouped bars: each measure's importance per sentence (hover: the sentence)."""
    import plotly.graph_objects as go  # lazy: import cost (plotly)

    labels = [_label(k, s) for k, s in enumerate(sentences)]
    fig = go.Figure([go.Bar(name=name, x=labels, y=list(vals), hovertext=list(sentences)) for name, vals in measures.items()])
    fig.update_layout(title=title, barmode="group", xaxis_title="sentence", yaxis_title="importance", template="plotly_white")
    return fig


def figure_suppression(sentences: Sequence[str], matrix: Sequence[Sequence[float]], *, title: str = ""):
    """Heatmap of the suppression matrix: row = suppressed sentence, column = later sentence, colour = mean KL (nats)."""
    import plotly.graph_objects as go  # lazy: import cost (plotly)

    labels = [_label(k, s, 20) for k, s in enumerate(sentences)]
    fig = go.Figure(go.Heatmap(z=[list(r) for r in matrix], x=labels, y=labels, colorscale="Viridis", colorbar={"title": "KL"}))
    fig.update_layout(title=title, xaxis_title="affected sentence", yaxis_title="suppressed sentence", template="plotly_white",
                      yaxis={"autorange": "reversed"})
    return fig
