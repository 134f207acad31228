"""Every LYNX figure builds from its result object and serialises to plotly JSON."""

from __future__ import annotations

import numpy as np

from thinklens.probes.conformal import MondrianCalibrator, validity_curve
from thinklens.probes.exits import EventTable, RolloutTable, base_rate_by_position, evaluate_exit_policies
from thinklens.probes.figures import figure_base_rate, figure_exit_histogram, figure_pareto, figure_validity


def _split(rng, n_rollouts=60, per=6):
    rollout = np.repeat(np.arange(n_rollouts), per)
    position = np.tile(np.arange(per) * 15 + 5, n_rollouts)
    label = (rng.random(rollout.size) < position / 100).astype(int)  # later exits are more often right
    prob = np.clip(0.6 * label + 0.4 * rng.random(rollout.size), 0, 1)
    events = EventTable(rollout=rollout, position=position, label=label, prob=prob, exit_tokens=position + 10)
    rollouts = RolloutTable(length=np.full(n_rollouts, 100), correct=np.ones(n_rollouts, int),
                            tokens=np.full(n_rollouts, 110))
    return events, rollouts


def test_figures_build():
    rng = np.random.default_rng(0)
    cal_events, _ = _split(rng)
    events, rollouts = _split(rng)
    cal = MondrianCalibrator.fit(cal_events.prob, cal_events.label)
    report = evaluate_exit_policies(events, rollouts, cal, deltas=[0.02, 0.05, 0.1, 0.3], skip_vacuous=True)
    fig = figure_pareto(report)
    assert {t.name for t in fig.data} >= {"lynx", "full", "first_cue", "Pareto front"}
    hist = figure_exit_histogram([report.get("lynx", 0.1), report.get("first_cue")])
    assert len(hist.data) == 2
    curve = validity_curve(events.prob, events.label, cal, [0.05, 0.1, 0.3])
    vfig = figure_validity(curve)
    assert list(vfig.data[0].x) == [0.0, vfig.data[0].y[1]]  # the diagonal
    bfig = figure_base_rate(base_rate_by_position(events, rollouts))
    for f in (fig, hist, vfig, bfig):
        assert f.to_json()
