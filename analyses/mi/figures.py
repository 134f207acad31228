"""Plotly figures for MI peaks and thinking tokens; each takes a result and returns a Figure.

Example:
    >>> import torch
    >>> from thinklens.analyses.mi import nhsic_trajectory, top_k_peaks
    >>> y = torch.linspace(-100.0, 100.0, 32)
    >>> curve = nhsic_trajectory(torch.stack([y * s for s in (0.2, 1.0, 0.5)]), y)
    >>> fig = figure_mi_curve(curve, tokens=["a", " So", "b"], peaks=top_k_peaks(curve, k=1))
    >>> [t.name for t in fig.data]
    ['reference', 'peaks (top_k)']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from thinklens.analyses.mi.peaks import Peaks, as_values
from thinklens.errors import ThinklensError

if TYPE_CHECKING:  # keeps the estimator out of the import graph of the app's pages
    from thinklens.analyses.mi.estimator import MICurve
    from thinklens.analyses.mi.thinking_tokens import EnrichmentResult


def _hover(values: np.ndarray, tokens: Sequence[str] | None) -> list[str]:
    # repr() shows leading spaces and newlines, which matter for reading tokens.
    return [f"step {t}<br>MI {v:.4g}" + (f"<br>token {tokens[t]!r}" if tokens is not None else "")
            for t, v in enumerate(values)]


def figure_mi_curve(
    curves: MICurve | Mapping[str, MICurve | object] | object,
    tokens: Sequence[str] | None = None,
    peaks: Peaks | None = None,
    title: str = "MI with the answer per generated token",
) -> go.Figure:
    """MI curve of one trajectory, hover text per token, markers on the peaks.

    ``curves`` may be one MICurve (or a 1-D array) or a mapping name -> curve, e.g. the output of
    :func:`thinklens.analyses.mi.compare_estimators` or a real-vs-shuffled-answer pair: each gets its own row
    with a shared step axis, since the variants live on different scales. Peaks are drawn on the
    first row; ``tokens[t]`` is the token produced at step t.
    """
    named = dict(curves) if isinstance(curves, Mapping) else {getattr(curves, "name", "MI"): curves}
    if not named:
        raise ThinklensError.of("curves", "an empty mapping", "at least one curve", "pass a curve")
    series = {name: as_values(c) for name, c in named.items()}
    n_steps = {v.size for v in series.values()}
    if tokens is not None and any(len(tokens) != n for n in n_steps):
        raise ThinklensError.of("tokens", f"{len(tokens)} tokens for curves of {sorted(n_steps)} steps",
                                "one token per step", "pass Trace.tokens of the same trajectory")
    fig = make_subplots(rows=len(series), cols=1, shared_xaxes=True, vertical_spacing=0.04,
                        subplot_titles=list(series) if len(series) > 1 else None)
    for row, (name, values) in enumerate(series.items(), start=1):
        fig.add_trace(go.Scatter(x=np.arange(values.size), y=values, mode="lines", name=name,
                                 hovertext=_hover(values, tokens), hoverinfo="text"), row=row, col=1)
        fig.update_yaxes(title_text="nHSIC", row=row, col=1)
    if peaks is not None:
        first = next(iter(series.values()))
        if peaks.n_steps != first.size:
            raise ThinklensError.of("peaks", f"peaks of a {peaks.n_steps}-step trajectory",
                                    f"peaks of this {first.size}-step curve", "recompute the peaks on this curve")
        idx = list(peaks.indices)
        labels = [tokens[i] for i in idx] if tokens is not None else None
        fig.add_trace(go.Scatter(x=idx, y=first[idx], mode="markers+text" if labels else "markers",
                                 text=[lab.strip() for lab in labels] if labels else None, textposition="top center",
                                 marker={"size": 9, "symbol": "diamond", "color": "crimson"},
                                 name=f"peaks ({peaks.rule})",
                                 hovertext=[_hover(first, tokens)[i] for i in idx], hoverinfo="text"), row=1, col=1)
    fig.update_xaxes(title_text="generated token (step)", row=len(series), col=1)
    fig.update_layout(title={"text": title}, hovermode="closest", height=260 + 220 * len(series))
    return fig


def figure_enrichment(result: EnrichmentResult, top: int = 20, by: str = "peak_count") -> go.Figure:
    """Enrichment ratio of the top words with CI error bars; a dashed line marks ratio 1 (no enrichment)."""
    words = result.top(top, by=by)
    ratio = np.array([w.ratio for w in words])
    fig = go.Figure(go.Bar(
        x=[w.word for w in words], y=ratio, name="enrichment",
        error_y={"type": "data", "symmetric": False,
                 "array": np.array([w.ci_high for w in words]) - ratio,
                 "arrayminus": ratio - np.array([w.ci_low for w in words])},
        hovertext=[f"{w.word!r}<br>ratio {w.ratio:.3g} [{w.ci_low:.3g}, {w.ci_high:.3g}]"
                   f"<br>at peaks {w.peak_count} / {result.n_peak_tokens}"
                   f"<br>anywhere {w.total_count} / {result.n_tokens}" for w in words],
        hoverinfo="text",
    ))
    fig.add_hline(y=1.0, line_dash="dash", line_color="gray")
    fig.update_layout(
        title={"text": f"Thinking tokens: enrichment at MI peaks ({result.n_trajectories} trajectories, "
                       f"{100 * result.level:.0f}% {result.ci} CI)"},
        xaxis_title="word emitted from the peak state", yaxis_title="frequency at peaks / frequency overall",
    )
    return fig


def mean_curve(curves: Sequence[object], x: str = "step", grid: int = 101) -> dict[str, list[float]]:
    """Mean and standard error of several MI curves, as plain lists (stored in run folders).

    ``x="step"`` averages over the trajectories still running at each step; ``x="fraction"`` first
    resamples each trajectory onto ``grid`` points of relative position in [0, 1].

    Example:
        >>> mean_curve([[1.0, 3.0], [3.0]], "step")
        {'x': [0.0, 1.0], 'mean': [2.0, 3.0], 'sem': [1.0, 0.0], 'n': [2, 1]}
    """
    if x not in ("step", "fraction"):
        raise ThinklensError.of("x", x, "'step' or 'fraction'", "pick one of the two")
    arrays = [as_values(c) for c in curves]
    arrays = [a for a in arrays if a.size]
    if not arrays:
        raise ThinklensError.of("curves", "no non-empty curve", "at least one scored trajectory", "score some first")
    if x == "fraction":  # trajectories differ in length: compare at the same relative position
        pos = np.linspace(0.0, 1.0, grid)
        rows = np.stack([np.interp(pos, np.linspace(0.0, 1.0, a.size), a) for a in arrays])
    else:  # mean over the trajectories still running at each step
        pos = np.arange(max(a.size for a in arrays), dtype=np.float64)
        rows = np.full((len(arrays), pos.size), np.nan)
        for i, a in enumerate(arrays):
            rows[i, : a.size] = a
    count = np.sum(~np.isnan(rows), axis=0)
    mean = np.nanmean(rows, axis=0)
    sq = np.nansum((rows - mean) ** 2, axis=0)
    sem = np.where(count > 1, np.sqrt(sq / np.maximum(count - 1, 1) / np.maximum(count, 1)), 0.0)
    return {"x": pos.tolist(), "mean": mean.tolist(), "sem": sem.tolist(), "n": count.astype(int).tolist()}


def figure_mean_curves(means: Mapping[str, Mapping[str, Sequence[float]]], x: str = "step",
                       title: str = "Mean MI per model") -> go.Figure:
    """Mean curves (each from :func:`mean_curve`) with a +- 1 s.e.m. band, one trace per name.

    Example:
        >>> fig = figure_mean_curves({"a": mean_curve([[1.0, 2.0]]), "b": mean_curve([[2.0, 1.0]])})
        >>> [t.name for t in fig.data if t.showlegend is not False]
        ['a (n=1)', 'b (n=1)']
    """
    if not means:
        raise ThinklensError.of("means", "an empty mapping", "at least one mean curve", "score some trajectories")
    fig = go.Figure()
    for name, m in means.items():
        pos, mean, sem = (np.asarray(m[k], dtype=np.float64) for k in ("x", "mean", "sem"))
        band_x = np.concatenate([pos, pos[::-1]])
        band_y = np.concatenate([mean + sem, (mean - sem)[::-1]])
        fig.add_trace(go.Scatter(x=band_x, y=band_y, fill="toself", opacity=0.2, line={"width": 0},
                                 hoverinfo="skip", showlegend=False, legendgroup=name, name=f"{name} band"))
        fig.add_trace(go.Scatter(x=pos, y=mean, mode="lines", name=f"{name} (n={max(m['n'])})", legendgroup=name))
    fig.update_layout(title={"text": title}, xaxis_title="generated token (step)" if x == "step"
                      else "relative position in the trajectory", yaxis_title="mean nHSIC")
    return fig


def figure_model_overlay(
    curves_by_model: Mapping[str, Sequence[object]], x: str = "step", grid: int = 101,
    title: str = "Mean MI per model",
) -> go.Figure:
    """Mean MI curve of several models (e.g. reasoning vs non-reasoning sibling), +- 1 s.e.m. band.

    ``x="step"`` averages over the trajectories still running at each step; ``x="fraction"`` first
    resamples each trajectory onto ``grid`` points of relative position in [0, 1].
    """
    if not curves_by_model or any(len(c) == 0 for c in curves_by_model.values()):
        raise ThinklensError.of("curves_by_model", {k: len(v) for k, v in curves_by_model.items()},
                                "at least one model with at least one curve each", "score some trajectories")
    return figure_mean_curves({name: mean_curve(curves, x, grid) for name, curves in curves_by_model.items()},
                              x=x, title=title)
