"""Plotly figures of the latent results (pure: result in, figure out; the app and the CLI share them).

Example:
    >>> fig = figure_seek_budget([0.4, 0.6, 0.7], "psrm")
    >>> fig.data[0].y
    (40.0, 60.0, 70.0)
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go


def figure_accuracy(rows: list[dict[str, Any]]):
    """Accuracy per method (bars), reasoning positions and compression in the hover text."""
    fig = go.Figure()
    for problems in dict.fromkeys(r["problems"] for r in rows):  # one group of bars per problem set
        group = [r for r in rows if r["problems"] == problems]
        acc = [100 * r["accuracy"] for r in group]
        ci = [r.get("ci") or [r["accuracy"]] * 2 for r in group]
        text = [f"n={r['n']}, {r['reasoning_positions']:.1f} pos" + (f", {r['compression']:.1f}x" if r.get("compression") else "")
                for r in group]
        fig.add_trace(go.Bar(x=[r["label"] for r in group], y=acc, name=str(problems), text=text, textposition="outside",
                             error_y={"type": "data", "symmetric": False, "array": [100 * c[1] - a for c, a in zip(ci, acc)],
                                      "arrayminus": [a - 100 * c[0] for c, a in zip(ci, acc)]}))
    fig.update_layout(title="Accuracy (95% Wilson interval) and reasoning positions, by problem set", yaxis_title="accuracy (%)",
                      xaxis_title="method", yaxis_range=[0, 115], template="plotly_white", legend_title_text="problems")
    return fig


def figure_seek_budget(accuracy: list[float], reward: str = "psrm", baseline: dict[str, Any] | None = None):
    """LatentSeek accuracy against the iteration budget (0 = plain greedy CoT); with ``baseline`` (the summary's
    oracle best-of-N by temperature), the greedy chain or any of the first b samples, dashed, at the same budget."""
    fig = go.Figure(go.Scatter(x=list(range(len(accuracy))), y=[100 * a for a in accuracy], mode="lines+markers",
                               name=f"LatentSeek ({reward})"))
    for t, b in (baseline or {}).items():
        if b:
            curve = b["greedy_or_samples_by_budget"]
            fig.add_trace(go.Scatter(x=list(range(len(curve))), y=[100 * a for a in curve], mode="lines+markers",
                                     line={"dash": "dash"}, name=f"oracle: greedy or any of b samples (T={t})"))
    fig.update_layout(title=f"LatentSeek ({reward}): accuracy vs iteration budget", xaxis_title="iterations",
                      yaxis_title="accuracy (%)", template="plotly_white")
    return fig


def figure_entropy(latents: list[dict[str, Any]], title: str = "Latent-SFT: per-step entropy"):
    """Entropy (nats) and exp(entropy) of each latent step's top-K superposition."""
    steps = list(range(1, len(latents) + 1))
    fig = go.Figure([
        go.Scatter(x=steps, y=[s["entropy"] for s in latents], name="entropy (nats)", mode="lines+markers"),
        go.Scatter(x=steps, y=[s["exp_entropy"] for s in latents], name="exp(entropy)", mode="lines+markers", yaxis="y2"),
    ])
    fig.update_layout(title=title, xaxis_title="latent step", yaxis_title="entropy (nats)",
                      yaxis2={"title": "exp(entropy)", "overlaying": "y", "side": "right"}, template="plotly_white")
    return fig
