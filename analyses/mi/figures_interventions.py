"""Plotly figures for the suppression test, TTTS and Representation Recycling.

Example:
    >>> from thinklens.analyses.mi.suppression import SuppressionResult, SuppressionRow
    >>> res = SuppressionResult(rows=(SuppressionRow("none", 0, n_correct=8, n=10), SuppressionRow("thinking", 4, n_correct=3, n=10)),
    ...                         thinking_words=("Wait",), thinking_ids=(1, 2, 3, 4), random_ids=(), seed=0)
    >>> [round(y, 2) for y in figure_suppression(res).data[0].y]
    [0.8, 0.3]
"""

from __future__ import annotations

from collections.abc import Mapping

import plotly.graph_objects as go

from thinklens.analyses.mi.recycling import RecyclingResult
from thinklens.analyses.mi.suppression import SuppressionResult
from thinklens.analyses.mi.ttts import TTTSResult


def figure_suppression(result: SuppressionResult) -> go.Figure:
    """Accuracy per condition (none, thinking, each random draw), with counts in the hover."""
    rows = result.rows
    colors = ["gray" if r.condition == "none" else "crimson" if r.condition == "thinking" else "steelblue"
              for r in rows]
    fig = go.Figure(go.Bar(
        x=[r.condition for r in rows], y=[r.accuracy for r in rows], marker_color=colors,
        hovertext=[f"{r.condition}: {r.n_correct}/{r.n} correct, {r.n_ids} token ids suppressed" for r in rows],
        hoverinfo="text",
    ))
    fig.update_layout(title={"text": f"Suppressing thinking tokens ({', '.join(result.thinking_words)}) "
                                     "vs as many random tokens"},
                      xaxis_title="suppressed", yaxis_title="accuracy", yaxis_range=[0, 1])
    return fig


def figure_ttts(result: TTTSResult) -> go.Figure:
    """Accuracy vs extra-token budget: plain continuation and each thinking word."""
    fig = go.Figure()
    methods = list(dict.fromkeys(r.method for r in result.rows))
    for method in methods:
        pts = [r for r in result.rows if r.method == method]
        fig.add_trace(go.Scatter(
            x=[r.budget for r in pts], y=[r.accuracy for r in pts], mode="lines+markers", name=method,
            hovertext=[f"{method} @ {r.budget}: {r.n_correct}/{r.n}, {r.mean_extra_tokens:.1f} extra tokens used"
                       for r in pts], hoverinfo="text",
        ))
    fig.update_layout(title={"text": "Thinking-token test-time scaling vs plain continuation"},
                      xaxis_title="extra token budget", yaxis_title="accuracy (forced answer)", yaxis_range=[0, 1])
    return fig


def figure_recycling(results: RecyclingResult | Mapping[str, RecyclingResult]) -> go.Figure:
    """Plain vs RR accuracy, one group per setting (e.g. per model or per layer)."""
    named = dict(results) if isinstance(results, Mapping) else {f"layer {results.layer}": results}
    names = list(named)
    fig = go.Figure([
        go.Bar(name="greedy", x=names, y=[named[n].accuracy_plain for n in names]),
        go.Bar(name="representation recycling", x=names, y=[named[n].accuracy_rr for n in names],
               hovertext=[f"{named[n].mean_recycled_steps:.1f} recycled steps per problem" for n in names]),
    ])
    fig.update_layout(barmode="group", title={"text": "Representation Recycling"}, yaxis_title="accuracy",
                      yaxis_range=[0, 1])
    return fig
