"""Figures that compare several runs (the app's comparison views): LYNX Pareto curves of several runs.

Each takes loaded results keyed by run id and returns a plotly figure; the pages only render them.

Example:
    >>> figure_pareto_runs({}).layout.title.text
    'Early exit across runs: accuracy vs tokens'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go
from plotly.colors import qualitative

AXES = {"tokens": "mean tokens per rollout", "saving": "token saving vs the full rollout"}


def figure_pareto_runs(results: Mapping[str, Any], x: str = "tokens") -> go.Figure:
    """LYNX's δ sweep of every run as one line (δ at each point), with each run's full rollout and
    first-cue exit as reference markers in the same colour.

    Args:
        results: run id -> ``probes.lynx_result.LynxResult``.
        x: ``"tokens"`` (mean tokens per rollout) or ``"saving"`` (fraction of tokens saved).
    """
    fig = go.Figure()
    colours = qualitative.Plotly
    for i, (run_id, res) in enumerate(results.items()):
        colour = colours[i % len(colours)]
        outs = res.report.outcomes

        def xs(group: list) -> list[float]:
            return [o.mean_tokens if x == "tokens" else o.saving for o in group]

        lynx = sorted([o for o in outs if o.policy == "lynx"], key=lambda o: o.param)
        fig.add_trace(go.Scatter(
            x=xs(lynx), y=[o.accuracy for o in lynx], mode="lines+markers+text", name=f"{run_id}: LYNX",
            text=[f"δ {o.param:g}" for o in lynx], textposition="top center", line={"color": colour},
            customdata=[[o.param, o.saving, o.exit_rate] for o in lynx],
            hovertemplate="δ %{customdata[0]}: accuracy %{y:.3f}, saving %{customdata[1]:.1%}, exit rate "
                          "%{customdata[2]:.1%}<extra>" + run_id + "</extra>"))
        for policy, symbol in (("full", "x"), ("first_cue", "triangle-up")):
            ref = [o for o in outs if o.policy == policy]
            if ref:
                fig.add_trace(go.Scatter(x=xs(ref), y=[o.accuracy for o in ref], mode="markers",
                                         name=f"{run_id}: {policy.replace('_', ' ')}",
                                         marker={"color": colour, "symbol": symbol, "size": 11}))
    fig.update_layout(title="Early exit across runs: accuracy vs tokens", xaxis_title=AXES.get(x, x),
                      yaxis_title="accuracy", template="plotly_white", legend={"groupclick": "toggleitem"})
    if x == "saving":
        fig.update_xaxes(tickformat=".0%")
    return fig
