"""Plotly figures: structure, hover text, peak markers, error bars and the overlay means."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from thinklens.analyses.mi import (
    TokenTrajectory,
    compare_estimators,
    figure_enrichment,
    figure_mi_curve,
    figure_model_overlay,
    nhsic_trajectory,
    thinking_token_enrichment,
    top_k_peaks,
)
from thinklens.errors import ThinklensError


def _curve() -> tuple[object, list[str]]:
    y = torch.linspace(-100.0, 100.0, 16)
    states = torch.stack([y * s for s in (0.1, 1.0, 0.3, 0.8)])
    return nhsic_trajectory(states, y), ["a", " So", "\n", " Wait"]


def test_mi_curve_hover_and_peaks() -> None:
    curve, tokens = _curve()
    peaks = top_k_peaks(curve, k=2)
    fig = figure_mi_curve(curve, tokens=tokens, peaks=peaks)
    line, marks = fig.data
    assert list(line.y) == pytest.approx(curve.mi.tolist())  # type: ignore[attr-defined]
    assert "token ' So'" in line.hovertext[1] and "token '\\n'" in line.hovertext[2]
    assert list(marks.x) == [1, 3] and list(marks.text) == ["So", "Wait"]


def test_mi_curve_side_by_side_variants() -> None:
    y = torch.linspace(-100.0, 100.0, 16)
    curves = compare_estimators(torch.stack([y, y * 0.5]), y)
    fig = figure_mi_curve(curves)
    assert [t.name for t in fig.data] == ["reference", "median_sigma", "l2"]
    assert fig.data[2].yaxis == "y3"


def test_mi_curve_errors() -> None:
    curve, tokens = _curve()
    with pytest.raises(ThinklensError, match="tokens"):
        figure_mi_curve(curve, tokens=tokens[:2])
    with pytest.raises(ThinklensError, match="peaks"):
        figure_mi_curve(curve, peaks=top_k_peaks([1.0, 2.0], k=1))


def test_enrichment_error_bars_are_the_interval() -> None:
    traj = TokenTrajectory(tokens=(" So", " x", " So", " Wait", "1"), peaks=(0, 3))
    res = thinking_token_enrichment([traj], ci="wilson")
    fig = figure_enrichment(res)
    bar = fig.data[0]
    assert list(bar.x) == [w.word for w in res.words]
    for i, w in enumerate(res.words):
        assert bar.y[i] + bar.error_y.array[i] == pytest.approx(w.ci_high)
        assert bar.y[i] - bar.error_y.arrayminus[i] == pytest.approx(w.ci_low)


def test_model_overlay_means_by_hand() -> None:
    fig = figure_model_overlay({"reasoning": [np.array([1.0, 2.0, 3.0]), np.array([3.0, 4.0])],
                                "base": [np.array([0.5, 0.5])]})
    band, mean, _, base_mean = fig.data
    assert list(mean.y) == [2.0, 3.0, 3.0] and mean.name == "reasoning (n=2)"
    assert list(base_mean.y) == [0.5, 0.5]
    # s.e.m. at step 0: std([1, 3], ddof=1) / sqrt(2) = 1
    assert band.y[0] == pytest.approx(3.0)
    frac = figure_model_overlay({"m": [np.array([0.0, 1.0]), np.array([0.0, 0.5, 1.0])]}, x="fraction", grid=5)
    assert list(frac.data[1].y) == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])
    with pytest.raises(ThinklensError):
        figure_model_overlay({"m": []})
    with pytest.raises(ThinklensError):
        figure_model_overlay({"m": [np.zeros(2)]}, x="time")


def test_trajectory_chart_draws_the_own_curve_above_its_control_and_says_when_the_control_matches() -> None:
    """Kills: the shuffled curve drawn above the real one in the default chart, with nothing saying that the control
    scores as high: the own curve is on top (zorder) and the title states the control's reading."""
    import dataclasses

    import numpy as np

    from thinklens.analyses.mi.config import MIPeaksJobConfig
    from thinklens.analyses.mi.figures_runs import figure_overlay, figure_trajectory
    from thinklens.analyses.mi.synthetic import synthetic_record

    rec = synthetic_record(0, "m", "think", 2, MIPeaksJobConfig(k=2), np.random.default_rng(0))
    own = rec.mi[rec.site]
    high = [v + 1.0 for v in own]  # a control that scores above the own answer everywhere
    rec = dataclasses.replace(rec, shuffled={**rec.shuffled, rec.estimator: high})
    fig = figure_trajectory(rec, variants=False)
    own_tr, shuf_tr = fig.data[0], fig.data[1]
    assert "shuffled" in shuf_tr.name and own_tr.zorder > shuf_tr.zorder and fig.data[-1].zorder > own_tr.zorder
    assert "not answer-specific" in fig.layout.title.text
    low = dataclasses.replace(rec, shuffled={**rec.shuffled, rec.estimator: [v - 1.0 for v in own]})
    assert f"above the shuffled one at {len(own)}/{len(own)} steps" in figure_trajectory(low, variants=False).layout.title.text
    assert "shuffled" not in figure_trajectory(rec, variants=False, shuffled=False).layout.title.text
    models = [{"name": "m", "key": "m", "site": "s", "style": "think",
               "mean_curves": {"step": {"s": {"x": [0, 1], "mean": [0.1, 0.2], "sem": [0.01, 0.01], "n": [4, 4]}},
                               "shuffled_step": {"x": [0, 1], "mean": [0.5, 0.6], "sem": [0.01, 0.01], "n": [4, 4]}}}]
    overlay = figure_overlay(models, x="step", shuffled=True)
    for tr in overlay.data:
        assert tr.zorder == (0 if "shuffled" in tr.name else 1)
