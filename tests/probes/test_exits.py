"""Exit rule and policies on a crafted event table whose outcomes are computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from thinklens.errors import ThinklensError
from thinklens.probes.conformal import MondrianCalibrator
from thinklens.probes.exits import (
    EventTable,
    RolloutTable,
    base_rate_by_position,
    evaluate_exit_policies,
    first_exits,
    pareto_front,
)

# Three rollouts of 100 tokens; full rollouts cost 120 tokens; rollout 1's full answer is wrong.
# Rows are deliberately not in position order within rollout 0.
ROLLOUTS = RolloutTable(length=np.array([100, 100, 100]), correct=np.array([1, 0, 1]),
                        tokens=np.array([120, 120, 120]))
EVENTS = EventTable(
    rollout=np.array([0, 0, 0, 1, 1, 2]),
    position=np.array([60, 10, 30, 20, 80, 70]),
    label=np.array([1, 0, 1, 0, 1, 1]),
    prob=np.array([0.99, 0.40, 0.60, 0.70, 0.98, 0.97]),
    exit_tokens=np.array([70, 20, 40, 30, 90, 80]),
    is_cue=np.array([True, True, True, True, True, False]),  # rollout 2 had no cue: fallback at 0.7
)


def _calibrator():
    # positives' 1-p: 0.01..0.10 (10 values); negatives' p: 0.01..0.10 plus 0.95: n = 11
    p_pos = 1 - np.linspace(0.01, 0.10, 10)
    p_neg = np.r_[np.linspace(0.01, 0.10, 10), 0.95]
    return MondrianCalibrator.fit(np.r_[p_pos, p_neg], np.r_[np.ones(10), np.zeros(11)])


def test_first_exit_scans_by_position_not_row_order():
    assert first_exits(EVENTS, ROLLOUTS, np.ones(6, bool)).tolist() == [1, 3, 5]
    assert first_exits(EVENTS, ROLLOUTS, np.array([1, 0, 1, 0, 0, 0], bool)).tolist() == [2, -1, -1]


def test_lynx_exits_only_where_the_set_is_exactly_one():
    cal = _calibrator()
    # delta 0.1: k_pos = ceil(11 * .9) = 10 -> q_pos = 0.10 (1 in S iff p >= 0.90);
    #            k_neg = ceil(12 * .9) = 11 -> q_neg = 0.95 (0 in S iff p <= 0.95)
    assert cal.thresholds(0.1) == pytest.approx((0.10, 0.95))
    # sets: .99 {1}; .40 {0}; .60 {0}; .70 {0}; .98 {1}; .97 {1}
    report = evaluate_exit_policies(EVENTS, ROLLOUTS, cal, deltas=[0.1], fractions=[0.5])
    lynx = report.get("lynx", 0.1)
    assert lynx.exit_event.tolist() == [0, 4, 5]
    assert lynx.accuracy == pytest.approx(1.0) and lynx.mean_tokens == pytest.approx((70 + 90 + 80) / 3)
    # delta 0.3: k_neg = ceil(12 * .7) = 9 -> q_neg = 0.09, so 0 leaves every set with p > 0.09;
    # k_pos = ceil(11 * .7) = 8 -> q_pos = 0.08 (1 in S iff p >= 0.92): .40/.60/.70 get the empty set
    assert cal.thresholds(0.3) == pytest.approx((0.08, 0.09))
    assert cal.prediction_sets(np.array([0.6]), 0.3).tolist() == [[False, False]]
    assert report.get("full").accuracy == pytest.approx(2 / 3) and report.get("full").saving == 0.0


def test_baselines_by_hand():
    report = evaluate_exit_policies(EVENTS, ROLLOUTS, _calibrator(), deltas=[0.1], fractions=[0.5, 0.9])
    first = report.get("first_cue")
    assert first.exit_event.tolist() == [1, 3, -1]  # rollout 2 has only a fallback event: keeps full
    assert first.accuracy == pytest.approx((0 + 0 + 1) / 3)
    assert first.mean_tokens == pytest.approx((20 + 30 + 120) / 3)
    assert report.get("fraction", 0.5).exit_event.tolist() == [0, 4, 5]  # first at position >= 50
    assert report.get("fraction", 0.9).exit_event.tolist() == [-1, -1, -1]
    thr = report.get("threshold", 0.5)
    assert thr.exit_event.tolist() == [2, 3, 5]  # first p > 0.5 (uncalibrated)
    assert thr.accuracy == pytest.approx(2 / 3) and thr.exit_rate == 1.0
    assert report.get("oracle").exit_event.tolist() == [2, 4, 5]
    np.testing.assert_allclose(thr.exit_fraction, [0.3, 0.2, 0.7])


def test_pareto_and_table():
    report = evaluate_exit_policies(EVENTS, ROLLOUTS, _calibrator(), deltas=[0.1], fractions=[0.5])
    front = report.pareto()
    assert [o.mean_tokens for o in front] == sorted(o.mean_tokens for o in front)
    assert report.get("oracle") in front  # 100% accuracy at the fewest tokens of any perfect policy
    assert all(row.keys() >= {"policy", "accuracy", "mean_tokens", "on_pareto"} for row in report.table())
    assert pareto_front(np.array([1, 1, 2]), np.array([0.5, 0.5, 0.4])).tolist() == [True, True, False]


def test_vacuous_deltas_raise_or_are_skipped():
    with pytest.raises(ThinklensError, match="at least 99"):
        evaluate_exit_policies(EVENTS, ROLLOUTS, _calibrator(), deltas=[0.01])
    report = evaluate_exit_policies(EVENTS, ROLLOUTS, _calibrator(), deltas=[0.01, 0.1], skip_vacuous=True)
    assert report.skipped_deltas == (0.01,) and report.get("lynx").param == 0.1


def test_base_rate_by_position():
    curve = base_rate_by_position(EVENTS, ROLLOUTS, n_bins=2)
    # first half: positions 10, 30, 20 -> labels 0, 1, 0; second half: 60, 80, 70 -> 1, 1, 1
    assert curve.count.tolist() == [3, 3]
    np.testing.assert_allclose(curve.rate, [1 / 3, 1.0])
    assert np.all(curve.lower <= curve.rate) and np.all(curve.rate <= curve.upper)


def test_table_validation():
    with pytest.raises(ThinklensError, match="event label"):
        EventTable(rollout=[0], position=[1], label=[2], prob=[0.5], exit_tokens=[1])
    with pytest.raises(ThinklensError, match="event prob"):
        EventTable(rollout=[0], position=[1], label=[1], prob=[3.0], exit_tokens=[1])
    bad = EventTable(rollout=[5], position=[1], label=[1], prob=[0.5], exit_tokens=[1])
    with pytest.raises(ThinklensError, match="rollout ids"):
        first_exits(bad, ROLLOUTS, np.array([True]))
