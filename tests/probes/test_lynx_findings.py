"""What a LYNX result's counts and findings mean: exits are rollouts, savings are shares of tokens,
validity is "not rejected at this n" with the exact interval, and a 0% saving is never an effect."""

from __future__ import annotations

import numpy as np
import pytest

from thinklens.probes.conformal import MondrianCalibrator, validity_curve
from thinklens.probes.exits import EventTable, RolloutTable, base_rate_by_position, evaluate_exit_policies, policy_costs, token_saving
from thinklens.probes.lynx_findings import ACCURACY, SAVING, VALIDITY, find, headline_lines, lynx_findings, saving_interval
from thinklens.probes.lynx_result import LynxResult


def _calibrator() -> MondrianCalibrator:
    """p = 0.99 gets {1}, p = 0.1 gets {0} at delta 0.05 and 0.1 (30 calibration events per class)."""
    return MondrianCalibrator.fit(np.r_[np.full(30, 0.1), np.full(30, 0.9)], np.r_[np.zeros(30), np.ones(30)])


def _tables(n_rollouts: int = 3):
    # rollout 0: three {1} events (two of them y=0: the first is where it exits); rollout 1: one {1} event, y=0;
    # rollout 2: one {0} event (no exit). 3 test events with y=0 get {1}, but only 2 rollouts exit.
    ev = EventTable(rollout=[0, 0, 0, 1, 2], position=[10, 20, 30, 50, 40], label=[0, 0, 1, 0, 1],
                    prob=[0.99, 0.99, 0.99, 0.99, 0.1], exit_tokens=[13, 23, 33, 53, 43])
    ro = RolloutTable(length=[100] * n_rollouts, correct=[1] * n_rollouts, tokens=[100] * n_rollouts)
    return ev, ro


def _result(deltas=(0.05, 0.1)):
    ev, ro = _tables()
    cal = _calibrator()
    report = evaluate_exit_policies(ev, ro, cal, deltas)
    validity = validity_curve(ev.prob, ev.label, cal, deltas)
    return LynxResult.build(report=report, validity=validity, base_rate=base_rate_by_position(ev, ro), summary={},
                            thresholds={d: cal.thresholds(d) for d in deltas}), ev, ro


def test_n_exit_counts_rollouts_that_exited_not_wrong_events_with_the_set_one():
    # kills the mutant that fills per_delta's n_exit with the validity count (y=0 events that got {1}): 3, not 2
    result, ev, ro = _result()
    for row in result.per_delta:
        assert row["n_exit"] == 2 and row["n_rollouts"] == 3
        assert row["n_neg_set_one"] == 3 and row["n_neg"] == 3
        assert row["exit_rate"] == pytest.approx(2 / 3)
        assert row["validity"].startswith("P(S={1}|y=0) = 3/3 = 1, exact 95% interval")
        assert not row["consistent"] and "the bound is rejected" in row["validity"]
        assert row["validity_verdict"] == "rejected" and not row["validity_shown"]
    assert result.report.get("lynx", 0.05).n_exit == 2 and result.report.get("full").n_exit == 0


def test_saving_is_the_share_of_tokens_saved():
    ev, ro = _tables()
    o = evaluate_exit_policies(ev, ro, _calibrator(), (0.1,)).get("lynx", 0.1)
    correct, tokens = policy_costs(ev, ro, o.exit_event)
    assert tokens.tolist() == [13, 53, 100] and correct.tolist() == [0, 0, 1]
    assert o.saving == pytest.approx(1 - (13 + 53 + 100) / 300) == token_saving(tokens, ro.tokens)


def test_saving_interval_is_a_bootstrap_over_rollouts():
    lo, hi = saving_interval(np.array([50.0] * 10 + [100.0] * 10), np.full(20, 100.0))
    assert lo < 0.25 < hi and 0 <= lo and hi <= 0.5
    assert saving_interval(np.full(10, 100.0), np.full(10, 100.0)) == (0.0, 0.0)
    d_lo, d_hi = saving_interval(np.full(10, 50.0), np.full(10, 100.0), baseline_tokens=np.full(10, 40.0))
    assert d_lo == pytest.approx(-0.1) and d_hi == pytest.approx(-0.1)  # LYNX minus oracle, paired


def test_a_zero_saving_is_never_an_effect_and_the_headline_says_so():
    # 40 rollouts whose only events get {0}: LYNX never exits
    ro = RolloutTable(length=[100] * 40, correct=[1] * 40, tokens=[100] * 40)
    ev = EventTable(rollout=np.arange(40), position=[50] * 40, label=[0, 1] * 20, prob=[0.1] * 40,
                    exit_tokens=[53] * 40)
    cal = _calibrator()
    report = evaluate_exit_policies(ev, ro, cal, (0.05, 0.1, 0.2))
    fs = lynx_findings(report, validity_curve(ev.prob, ev.label, cal, (0.05, 0.1, 0.2)), ev, ro)
    assert sorted({f.extra["delta"] for f in fs}) == [0.05, 0.1]  # only deltas in 0.05-0.1
    s = find(fs, SAVING, 0.05)
    assert (s.value, s.ci, s.verdict, s.n, s.control_value) == (0.0, (0.0, 0.0), "no effect", 40, 0.0)
    assert s.extra["oracle_saving"] == pytest.approx(0.47 / 2)  # the oracle exits at the 20 right events
    assert find(fs, ACCURACY, 0.05).verdict == "no effect"
    v = find(fs, VALIDITY, 0.1)
    # 0/20 does not reject the bound, but 20 negatives cannot see a violation of 0.02: not shown, never "no effect"
    assert v.verdict == "too few samples" and v.n == 20 and v.ci[0] == 0.0 and v.extra["interval"] == "clopper-pearson"
    assert v.extra["power"] < 0.8 and v.extra["validity"] == "underpowered" and v.p == 1.0
    lines = headline_lines([f.to_dict() for f in fs])
    assert len(lines) == 2 and all("no token saving shown" in line and " saves " not in line for line in lines)


def test_findings_on_a_planted_saving_and_a_rejected_bound():
    result, ev, ro = _result()
    cal = _calibrator()
    fs = lynx_findings(result.report, result.validity, ev, ro)
    acc = find(fs, ACCURACY, 0.1)
    assert acc.value == pytest.approx(1 / 3) and acc.control_value == 1.0 and acc.extra["test"] == "mcnemar"
    assert acc.verdict == "too few samples"  # 3 rollouts
    v = find(fs, VALIDITY, 0.05)
    assert v.value == 1.0 and v.ci[0] > 0.05 and v.verdict == "too few samples"
    # many rollouts like rollout 1 (exit at a wrong event): a significant loss and a rejected bound
    n = 40
    ev2 = EventTable(rollout=np.arange(n), position=[50] * n, label=[0] * n, prob=[0.99] * n, exit_tokens=[53] * n)
    ro2 = RolloutTable(length=[100] * n, correct=[1] * n, tokens=[100] * n)
    rep = evaluate_exit_policies(ev2, ro2, cal, (0.05,))
    fs2 = lynx_findings(rep, validity_curve(ev2.prob, ev2.label, cal, (0.05,)), ev2, ro2)
    assert find(fs2, SAVING, 0.05).verdict == "effect" and find(fs2, SAVING, 0.05).value == pytest.approx(0.47)
    assert find(fs2, ACCURACY, 0.05).verdict == "effect"  # a loss: higher_is_effect=False
    assert find(fs2, VALIDITY, 0.05).verdict == "effect"  # the bound is rejected
    line = headline_lines(fs2)[0]
    assert "saves 47.0%" in line and "a significant loss" in line and "is rejected" in line


def test_a_rejected_bound_and_a_loss_are_harms_never_successes():
    """The validity finding's ``effect`` (the bound rejected) was once shown green like a saving; LYNX marks its
    harms (``extra["harm"]``) so that pages show them as failures (app/dashboard.py: finding_tone)."""
    ev, ro = _tables()
    cal = _calibrator()
    report = evaluate_exit_policies(ev, ro, cal, (0.05, 0.1))
    fs = lynx_findings(report, validity_curve(ev.prob, ev.label, cal, (0.05, 0.1)), ev, ro)
    assert all(f.extra.get("harm") for f in fs if f.statistic in (ACCURACY, VALIDITY))
    assert not any(f.extra.get("harm") for f in fs if f.statistic == SAVING)
    # 3 of 3 negatives get {1}: too few to test (n < 10), never "no effect"
    assert {find(fs, VALIDITY, d).verdict for d in (0.05, 0.1)} == {"too few samples"}
    cv = validity_curve(np.r_[np.full(40, 0.99), np.full(260, 0.01)], np.zeros(300, int), cal, (0.05,))  # 40/300
    assert cv.verdict(0) == "rejected" and cv.p_value[0] < 0.05
    eq = find(fs, ACCURACY, 0.05).extra["equivalence"]
    assert eq["test"] == "TOST" and eq["margin"] == 0.02 and not eq["within_margin"]  # 3 rollouts show nothing
