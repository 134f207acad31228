"""Figures and tables from a stored mi-peaks run (the run index and single trajectory records).

These need no model and no estimator: the app calls them on what it reads from a run folder, and the
job calls the same functions to write the run's figures.

Example:
    >>> from thinklens.analyses.mi.figures import mean_curve
    >>> entry = {"key": "m", "name": "m", "style": "think", "site": "resid_post.3", "n": 2, "accuracy": 0.5,
    ...          "mean_tokens": 2.0, "mean_mi": {"resid_post.3": 1.0}, "mean_max_mi": 1.5, "peak_to_median": 2.0,
    ...          "peak_fraction": {"top_k": 0.5, "iqr": 0.0}, "controls": [],
    ...          "mean_curves": {"fraction": {"resid_post.3": mean_curve([[1.0, 2.0]], "fraction")}}}
    >>> models_table([entry])[0]["accuracy"]
    0.5
    >>> len(figure_overlay([entry]).data)
    2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from thinklens.analyses.mi.figures import figure_mean_curves
from thinklens.analyses.mi.peaks import find_peaks
from thinklens.analyses.mi.run_format import TrajectoryRecord
from thinklens.errors import ThinklensError, opt

CURVE_CHOICES = ("estimator variants", "shuffled-answer control")
"""Optional curves of the trajectory figure (app menu)."""


def model_label(entry: Mapping[str, Any]) -> str:
    """How a model is named in legends: ``tiny-think (think)``."""
    return f"{entry['name']} ({entry.get('style', '?')})"


def trajectory_curves(record: TrajectoryRecord, site: str | None = None, *, variants: bool = True
                      ) -> list[tuple[str, list[float], list[float] | None]]:
    """(name, own-answer curve, shuffled-answer curve or None) per panel: the chosen site first
    (peaks go there), then the other estimator variants at the record's main site. The shuffled
    control is stored at the main site only."""
    site = site or record.site
    if site not in record.mi:
        raise ThinklensError.of("site", site, f"one of {sorted(record.mi)}", "pick a scored site")
    main = site == record.site
    out = [(f"{record.estimator} @ {site}", record.mi[site], record.shuffled.get(record.estimator) if main else None)]
    if variants:
        out += [(f"{e} @ {record.site}", c, record.shuffled.get(e)) for e, c in record.variants.items()
                if not (e == record.estimator and main)]
    return out


def _hover(tokens: Sequence[str], values: Sequence[float], what: str) -> list[str]:
    return [f"step {t}<br>token {tok!r}<br>{what} {v:.4g}" for t, (tok, v) in enumerate(zip(tokens, values))]


def control_line(own: Sequence[float], shuffled: Sequence[float] | None) -> str:
    """What this trajectory's shuffled-answer control says, for the chart's title: a curve that its control matches
    is not read as MI with the answer ("" without a control).

    Example:
        >>> control_line([0.2, 0.4], [0.1, 0.1])
        'own answer above the shuffled one at 2/2 steps (mean 0.3 vs 0.1)'
        >>> control_line([0.2, 0.2], [0.3, 0.1])
        'the shuffled answer scores as high (mean 0.2 vs 0.2): this curve is not answer-specific'
    """
    if shuffled is None or not len(own) or len(own) != len(shuffled):
        return ""
    o, sh = np.asarray(own, dtype=float), np.asarray(shuffled, dtype=float)
    above = int((o > sh).sum())
    if o.mean() > sh.mean():
        return f"own answer above the shuffled one at {above}/{len(o)} steps (mean {o.mean():.3g} vs {sh.mean():.3g})"
    return f"the shuffled answer scores as high (mean {o.mean():.3g} vs {sh.mean():.3g}): this curve is not answer-specific"


def figure_trajectory(record: TrajectoryRecord, *, site: str | None = None, rule: str = "top_k",
                      variants: bool = True, shuffled: bool = True, whisker: float = 1.5) -> go.Figure:
    """MI curve(s) of one stored trajectory: per-token hover, the peaks of ``rule`` on the first panel,
    and in each panel the same estimator against a shuffled answer (dashed, same scale).

    One panel per estimator shown (the variants live on different scales). Peaks at the record's
    main site are the stored ones; at another site they are recomputed with the same rule (k = the
    stored number of top-k peaks).

    Example:
        >>> from thinklens.analyses.mi.synthetic import synthetic_record
        >>> from thinklens.analyses.mi.config import MIPeaksJobConfig
        >>> import numpy as np
        >>> rec = synthetic_record(0, "m", "think", 2, MIPeaksJobConfig(k=2), np.random.default_rng(0))
        >>> [t.name for t in figure_trajectory(rec, variants=False).data][1:]
        ['shuffled answer (#1)', 'peaks (top_k)']
    """
    site = site or record.site
    panels = trajectory_curves(record, site, variants=variants)
    if site == record.site:
        peaks = record.peaks_of(rule)
    else:
        opts = {"k": max(1, len(record.peaks.get("top_k", [1]))), "clip": True} if rule == "top_k" else {"whisker": whisker}
        peaks = find_peaks(record.mi[site], rule, **opts)
    tokens = list(record.tokens)
    x = list(range(len(tokens)))
    fig = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=[p[0] for p in panels] if len(panels) > 1 else None)
    for r, (name, own, shuf) in enumerate(panels, start=1):
        # the own-answer curve is drawn above its control (zorder), whichever scores higher
        fig.add_trace(go.Scatter(x=x, y=own, mode="lines", name=name, hovertext=_hover(tokens, own, "MI"), zorder=2,
                                 hoverinfo="text", line={"color": "#1f77b4" if r == 1 else None}), row=r, col=1)
        if shuffled and shuf is not None:
            fig.add_trace(go.Scatter(x=x, y=shuf, mode="lines", name=f"shuffled answer (#{record.shuffled_answer_of})",
                                     line={"dash": "dash", "color": "gray"}, legendgroup="shuffled", showlegend=r == 1,
                                     hovertext=_hover(tokens, shuf, "MI vs shuffled answer"), hoverinfo="text",
                                     zorder=1),
                          row=r, col=1)
        fig.update_yaxes(title_text="nHSIC", row=r, col=1)
    first = panels[0][1]
    idx = list(peaks.indices)
    fig.add_trace(go.Scatter(x=idx, y=[first[i] for i in idx], mode="markers+text", name=f"peaks ({rule})",
                             text=[tokens[i].strip() for i in idx], textposition="top center",
                             marker={"size": 10, "symbol": "diamond", "color": "crimson"},
                             hovertext=[_hover(tokens, first, "peak MI")[i] for i in idx], hoverinfo="text", zorder=3),
                  row=1, col=1)
    fig.update_xaxes(title_text="generated token (step)", row=len(panels), col=1)
    mark = "correct" if record.correct else f"wrong (parsed {record.parsed}, gold {record.answer})"
    control = control_line(panels[0][1], panels[0][2]) if shuffled else ""
    fig.update_layout(title={"text": f"MI with the answer per generated token: {record.model} #{record.index}, {mark}"
                             + (f"<br><sub>{control}</sub>" if control else "")},
                      hovermode="closest", height=300 + 200 * len(panels), margin={"t": 70})
    return fig


def figure_overlay(models: Sequence[Mapping[str, Any]], *, x: str = "fraction", site: str | None = None,
                   shuffled: bool = False) -> go.Figure:
    """Mean MI of every model at its main site (reasoning vs non-reasoning), optionally with each
    model's shuffled-answer mean as a dashed reference."""
    means: dict[str, Any] = {}
    for m in models:
        s = site or m["site"]
        curve = m["mean_curves"][x].get(s)
        if curve is not None:
            means[model_label(m)] = curve
        if shuffled and f"shuffled_{x}" in m["mean_curves"]:
            means[f"{model_label(m)}: shuffled answer"] = m["mean_curves"][f"shuffled_{x}"]
    fig = figure_mean_curves(means, x=x, title=f"Mean MI per model ({site or 'main site'}, "
                             f"{'relative position' if x == 'fraction' else 'by step'})")
    for tr in fig.data:  # the controls dashed and drawn below the own-answer curves
        control = "shuffled" in (tr.name or "")
        if control:
            tr.line.dash = "dash"
        tr.zorder = 0 if control else 1
    return fig


def figure_sites(entry: Mapping[str, Any], x: str = "fraction") -> go.Figure:
    """Mean MI of one model at every scored site (MI at several layers)."""
    return figure_mean_curves(dict(entry["mean_curves"][x]), x=x, title=f"Mean MI per site: {model_label(entry)}")


def models_table(models: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per model: accuracy, length, mean MI, peak height and sparsity."""
    return [{"model": m["name"], "style": m.get("style"), "n": m.get("n"), "accuracy": m.get("accuracy"),
             "mean tokens": m.get("mean_tokens"), "mean MI": m["mean_mi"][m["site"]],
             "mean max MI": m.get("mean_max_mi"), "max / median": m.get("peak_to_median"),
             "top-k peak fraction": m["peak_fraction"].get("top_k"),
             "IQR peak fraction": m["peak_fraction"].get("iqr")} for m in models]


def controls_table(models: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per model and estimator: own vs shuffled answer, peak agreement, correlation with norm."""
    return [{"model": m["name"], **row} for m in models for row in m.get("controls", [])]


def figure_controls(models: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Mean MI against the own answer vs a shuffled one, per estimator (one panel each: the
    estimators live on different scales)."""
    rows = controls_table(models)
    estimators = list(dict.fromkeys(r["estimator"] for r in rows))
    if not estimators:
        raise ThinklensError.of("controls", "no rows", "a run with scored trajectories", "re-run the job")
    fig = make_subplots(rows=1, cols=len(estimators), subplot_titles=estimators)
    for c, est in enumerate(estimators, start=1):
        sub = [r for r in rows if r["estimator"] == est]
        for what, color in (("mean_mi", "crimson"), ("mean_mi_shuffled", "gray")):
            fig.add_trace(go.Bar(x=[r["model"] for r in sub], y=[r[what] for r in sub], marker_color=color,
                                 name="own answer" if what == "mean_mi" else "shuffled answer",
                                 legendgroup=what, showlegend=c == 1,
                                 hovertext=[f"{r['model']} / {est}: {r[what]:.4g}<br>own > shuffled in "
                                            f"{100 * (r['own_beats_shuffled'] or 0):.0f}% of trajectories"
                                            for r in sub], hoverinfo="text"), row=1, col=c)
    fig.update_layout(barmode="group", title={"text": "Own vs shuffled answer, per estimator"})
    fig.update_xaxes(title_text="model")
    fig.update_yaxes(title_text="mean nHSIC")  # every panel: each estimator has its own scale
    return fig


def figure_rr_sweep(rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """RR accuracy per recycled block against plain greedy (a dashed line)."""
    if not rows:
        raise ThinklensError.of("RR rows", "none", "one row per recycled layer", f"run with {opt('recycling', True)}")
    rows = sorted(rows, key=lambda r: r["layer"])
    fig = go.Figure(go.Scatter(
        x=[r["layer"] for r in rows], y=[r["accuracy_rr"] for r in rows], mode="lines+markers", name="RR",
        hovertext=[f"layer {r['layer']}: {r['accuracy_rr']:.3f}, {r['mean_recycled_steps']:.2f} recycled steps"
                   for r in rows], hoverinfo="text"))
    fig.add_hline(y=rows[0]["accuracy_plain"], line_dash="dash", line_color="gray",
                  annotation_text=f"greedy {rows[0]['accuracy_plain']:.3f}")
    fig.update_layout(title={"text": "Representation Recycling: accuracy per recycled block"},
                      xaxis_title="recycled block", yaxis_title="accuracy", yaxis_range=[0, 1])
    return fig
