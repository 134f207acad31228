"""Plotly figures for LYNX results; each takes a result object and returns a ``go.Figure``.

Example:
    >>> import numpy as np
    >>> from thinklens.probes.conformal import ValidityCurve
    >>> curve = ValidityCurve(deltas=np.array([0.05, 0.1]), rate=np.array([0.04, 0.08]),
    ...                       lower=np.array([0.02, 0.05]), upper=np.array([0.07, 0.12]),
    ...                       n_neg=200, n_neg_set_one=np.array([8, 16]), confidence=0.95)
    >>> [t.name for t in figure_validity(curve).data]
    ['bound δ', 'P(S={1} | y=0)']
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from thinklens.probes.conformal import ValidityCurve
from thinklens.probes.exits import BaseRateCurve, ExitReport, PolicyOutcome

_COLOURS = {"lynx": "#1f77b4", "full": "#333333", "first_cue": "#d62728", "fraction": "#ff7f0e",
            "threshold": "#9467bd", "oracle": "#2ca02c"}


def figure_pareto(report: ExitReport) -> go.Figure:
    """Accuracy vs mean tokens for every policy; LYNX's delta sweep as a line, the front dashed."""
    fig = go.Figure()
    for policy in dict.fromkeys(o.policy for o in report.outcomes):
        group = [o for o in report.outcomes if o.policy == policy]
        fig.add_trace(go.Scatter(
            x=[o.mean_tokens for o in group], y=[o.accuracy for o in group], name=policy,
            mode="lines+markers+text" if policy == "lynx" else "markers+text",
            text=[o.label.split(" ", 1)[1] if o.param is not None else "" for o in group],
            textposition="top center", marker={"color": _COLOURS.get(policy), "size": 9},
            customdata=[[o.saving, o.exit_rate] for o in group],
            hovertemplate="%{x:.1f} tokens, accuracy %{y:.3f}<br>saving %{customdata[0]:.1%}, "
                          "exit rate %{customdata[1]:.1%}<extra>" + policy + "</extra>",
        ))
    front = report.pareto()
    fig.add_trace(go.Scatter(x=[o.mean_tokens for o in front], y=[o.accuracy for o in front],
                             name="Pareto front", mode="lines", line={"dash": "dash", "color": "#999999"}))
    fig.update_layout(title="Early exit: accuracy vs tokens", xaxis_title="mean tokens per rollout",
                      yaxis_title="accuracy", template="plotly_white")
    return fig


def figure_exit_histogram(outcomes: PolicyOutcome | list[PolicyOutcome], n_bins: int = 20) -> go.Figure:
    """Histogram of where rollouts exit (position / length); rollouts that never exit are counted."""
    outcomes = [outcomes] if isinstance(outcomes, PolicyOutcome) else list(outcomes)
    fig = go.Figure()
    for o in outcomes:
        exited = o.exit_fraction[np.isfinite(o.exit_fraction)]
        fig.add_trace(go.Histogram(x=exited, xbins={"start": 0.0, "end": 1.0, "size": 1.0 / n_bins},
                                   name=f"{o.label} ({int(np.sum(~np.isfinite(o.exit_fraction)))} no exit)",
                                   opacity=0.7, marker={"color": _COLOURS.get(o.policy)} if len(outcomes) == 1
                                   else None))
    fig.update_layout(title="Exit position", xaxis_title="exit position / rollout length",
                      yaxis_title="rollouts", barmode="overlay", template="plotly_white")
    return fig


def figure_validity(curve: ValidityCurve) -> go.Figure:
    """Empirical P(S={1} | y=0) vs delta with Clopper-Pearson bars and the diagonal (the bound)."""
    d = curve.deltas
    top = float(max(np.nanmax(curve.upper) if curve.upper.size else 0.0, d.max() if d.size else 0.0)) * 1.05
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0.0, top], y=[0.0, top], name="bound δ", mode="lines",
                             line={"dash": "dash", "color": "#999999"}))
    fig.add_trace(go.Scatter(
        x=d, y=curve.rate, name="P(S={1} | y=0)", mode="lines+markers",
        error_y={"type": "data", "symmetric": False, "array": curve.upper - curve.rate,
                 "arrayminus": curve.rate - curve.lower},
        customdata=np.column_stack([curve.n_neg_set_one, np.full(d.shape, curve.n_neg)]),
        hovertemplate="δ=%{x}: %{y:.3f} (%{customdata[0]} of %{customdata[1]} negatives)<extra></extra>",
    ))
    fig.update_layout(title=f"Conformal validity on held-out events ({curve.confidence:.0%} Clopper-Pearson)",
                      xaxis_title="δ (target miscoverage)", yaxis_title="empirical rate of S={1} among y=0",
                      template="plotly_white")
    return fig


def figure_base_rate(curve: BaseRateCurve) -> go.Figure:
    """Share of events whose forced exit is correct, by relative position in the rollout."""
    centres = (curve.edges[:-1] + curve.edges[1:]) / 2
    fig = go.Figure(go.Scatter(
        x=centres, y=curve.rate, mode="lines+markers", name="P(y=1)",
        error_y={"type": "data", "symmetric": False, "array": curve.upper - curve.rate,
                 "arrayminus": curve.rate - curve.lower},
        customdata=curve.count, hovertemplate="%{x:.2f}: %{y:.3f} (%{customdata} events)<extra></extra>",
    ))
    fig.update_layout(title="Label base rate vs event position", xaxis_title="event position / rollout length",
                      yaxis_title="share of correct forced exits", yaxis_range=[0, 1], template="plotly_white")
    return fig


def figure_layer_sweep(sweeps, title: str = "Probe score by site") -> go.Figure:
    """Cross-validated probe score per site (mean, error bars +-1 std over folds), one line per sweep.

    Args:
        sweeps: a :class:`thinklens.probes.datasets.LayerSweep`, or ``{name: LayerSweep}`` for several
            scores on the same sites (e.g. AUROC and accuracy).
    """
    named = sweeps if isinstance(sweeps, dict) else {sweeps.scoring: sweeps}
    fig = go.Figure()
    for name, sweep in named.items():
        fig.add_trace(go.Scatter(
            x=list(sweep.sites), y=sweep.mean, name=name, mode="lines+markers",
            error_y={"type": "data", "array": sweep.std}, customdata=sweep.std,
            hovertemplate="%{x}: %{y:.3f} ± %{customdata:.3f}<extra>" + name + "</extra>",
        ))
    fig.update_layout(title=title, xaxis_title="site (forward order)", yaxis_title="cross-validated score",
                      template="plotly_white")
    return fig
