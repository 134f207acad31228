"""Figures of the lenses: the answer's token along a trace (block x step heat maps, one per lens) and the held-out KL to
the final output per block (logit against tuned lens, with intervals).

Example:
    >>> from thinklens.analyses.lens.along_trace import AnswerLens
    >>> res = AnswerLens("logit", 5, "5", [0, 1], ["a", "b"], [[0.1, 0.2], [0.3, 0.9]], [[4, 2], [1, 0]], (1, 1))
    >>> len(figure_answer_lens(res).data)   # the heat map and the mark of the first top-1
    2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from thinklens.analyses.lens.along_trace import AnswerLens
from thinklens.errors import ThinklensError


def figure_answer_lens(*results: AnswerLens, title: str = ""):
    """Heat maps (block x step) of the target's probability under each lens given, side by side in rows, the first
    (step, block) where it is the top token marked."""
    import plotly.graph_objects as go  # lazy: CLI start-up (plotly)
    from plotly.subplots import make_subplots  # lazy: import cost (plotly)

    if not results:
        raise ThinklensError.of("lens results", 0, "at least one AnswerLens", "pass read_along's result")
    fig = make_subplots(rows=len(results), cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=[f"{r.lens} lens: p({r.target_text!r})" + (
                            f", top-1 first at step {r.first[0]}, block {r.first[1]}" if r.first else ", never top-1")
                            for r in results])
    for i, r in enumerate(results, start=1):
        z = [list(col) for col in zip(*r.prob)]  # [layer][step]
        hover = [[f"step {t} ({r.tokens[t]!r}), block {layer}: p={r.prob[t][j]:.3f}, rank {r.rank[t][j]}"
                  for t in range(len(r.tokens))] for j, layer in enumerate(r.layers)]
        fig.add_trace(go.Heatmap(z=z, x=list(range(len(r.tokens))), y=r.layers, zmin=0, zmax=1, colorscale="Viridis",
                                 text=hover, hovertemplate="%{text}<extra></extra>", showscale=i == 1), row=i, col=1)
        if r.first is not None:
            fig.add_trace(go.Scatter(x=[r.first[0]], y=[r.first[1]], mode="markers", showlegend=False,
                                     marker=dict(symbol="x", size=12, color="red"), hoverinfo="skip"), row=i, col=1)
        fig.update_yaxes(title_text="block", row=i, col=1)
    tokens = results[0].tokens
    fig.update_xaxes(title_text="step (token produced)", tickmode="array", tickvals=list(range(len(tokens))), ticktext=tokens,
                     row=len(results), col=1)
    fig.update_layout(title=title or "The answer's token along the trace", height=180 + 220 * len(results),
                      margin=dict(t=70, b=40))
    return fig


def figure_kl_by_layer(rows: Sequence[Mapping[str, Any]], *, title: str = ""):
    """Held-out KL to the final output per block, logit against tuned lens, with their 95% intervals (rows of the job's
    ``layers`` table: ``layer``, ``logit_kl``, ``logit_ci``, ``tuned_kl``, ``tuned_ci``)."""
    import plotly.graph_objects as go  # lazy: CLI start-up (plotly)

    fig = go.Figure()
    x = [r["layer"] for r in rows]
    for name in ("logit", "tuned"):
        y = [r[f"{name}_kl"] for r in rows]
        lo = [r[f"{name}_kl"] - r[f"{name}_ci"][0] for r in rows]
        hi = [r[f"{name}_ci"][1] - r[f"{name}_kl"] for r in rows]
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines+markers", name=f"{name} lens",
                                 error_y=dict(type="data", array=hi, arrayminus=lo)))
    fig.update_layout(title=title or "KL to the model's final output per block (held-out texts)", xaxis_title="block",
                      yaxis_title="KL (nats)", height=380, margin=dict(t=50, b=40))
    return fig
