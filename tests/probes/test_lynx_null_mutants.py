"""LYNX's null setting, end to end on event tables: a working LYNX passes it by equivalence (no saving,
no harm, the bound shown), and a LYNX broken on purpose fails it. Each broken LYNX is a named mutant in
bench/mutants.py that these default-tier tests kill:

- "LYNX exits at a fixed low threshold (calibration ignored)": ``lynx_exits`` in probes/exits.py;
- "LYNX probe scores ignore the states": ``LynxMLPProbe.decision_function`` in probes/mlp.py.

The null mimics tiny-r1 (the ``lynx null`` organism): every test cue comes before the answer is known (a forced exit
there is wrong, y = 0), the full rollouts are right, and the calibration positives are events after the answer
(fallback events), which the probe tells apart from the cues. It is sized as the full null is judged: 1,600 test
negatives (a violation of 0.02 at delta 0.1 is seen with power 0.81) over 800 rollouts (a 2-point harm margin).
"""

from __future__ import annotations

import numpy as np
import pytest

from thinklens.calibration.findings import findings_doc
from thinklens.probes.conformal import MondrianCalibrator, validity_curve
from thinklens.probes.exits import EventTable, RolloutTable, base_rate_by_position, evaluate_exit_policies
from thinklens.probes.lynx_findings import lynx_findings
from thinklens.probes.lynx_result import LynxResult
from thinklens.probes.mlp import LynxMLPProbe
from thinklens.probes.validation import DELTAS, FULL_MODEL_NULL, FULL_NULL, delta_rows, judge_null

N_ROLLOUTS, EVENTS = 800, 2  # 1,600 test negatives


def _judge(p_cal: np.ndarray, y_cal: np.ndarray, p_test: np.ndarray) -> tuple[bool, list[str], list[dict]]:
    """The null's judgement of a LYNX run whose test events (all y = 0) got probabilities ``p_test``."""
    cal = MondrianCalibrator.fit(p_cal, y_cal)
    ev = EventTable(rollout=np.repeat(np.arange(N_ROLLOUTS), EVENTS), position=[20, 40] * N_ROLLOUTS,
                    label=np.zeros(N_ROLLOUTS * EVENTS, dtype=int), prob=p_test, exit_tokens=[23, 43] * N_ROLLOUTS)
    ro = RolloutTable(length=[100] * N_ROLLOUTS, correct=[1] * N_ROLLOUTS, tokens=[100] * N_ROLLOUTS)
    report = evaluate_exit_policies(ev, ro, cal, DELTAS)
    validity = validity_curve(ev.prob, ev.label, cal, DELTAS)
    fs = lynx_findings(report, validity, ev, ro)
    result = LynxResult.build(report=report, validity=validity, base_rate=base_rate_by_position(ev, ro),
                              summary={"findings": findings_doc(fs)},
                              thresholds={d: cal.thresholds(d) for d in DELTAS})
    rows, missing = delta_rows(result, FULL_NULL)
    assert not missing
    ok, misses = judge_null(rows)
    return ok, misses, rows


def test_null_with_given_scores_passes_and_a_fixed_threshold_fails_it():
    """Probe scores as tiny-r1's null run has them (cues: p near 0, 95th percentile about 0.1; calibration positives
    near 1). Kills "LYNX exits at a fixed low threshold (calibration ignored)": p > 0.05 exits at a fifth of the
    cues, a saving bought with 20+ points of accuracy."""
    rng = np.random.default_rng(0)
    p_cal = np.r_[rng.beta(30, 1, 80), rng.beta(1, 30, 300)]
    y_cal = np.r_[np.ones(80, dtype=int), np.zeros(300, dtype=int)]
    ok, misses, rows = _judge(p_cal, y_cal, rng.beta(1, 30, N_ROLLOUTS * EVENTS))
    assert ok, misses
    for r in rows:  # passed by equivalence: each interval inside its margin, and the bound shown
        assert r["saving_ci"][1] < 0.05 and -0.02 < r["accuracy_change_ci"][0] and r["accuracy_change_ci"][1] < 0.02
        assert r["validity_shown"] and r["power"] >= 0.8 and r["n_neg"] == 1600


def _states(rng: np.random.Generator, n: int, label: int) -> np.ndarray:
    x = rng.normal(size=(n, 4))  # [n, feature]
    x[:, 0] += 8.0 * label  # the answer is known: one direction of the state says so
    return x


@pytest.fixture(scope="module")
def probe() -> LynxMLPProbe:
    rng = np.random.default_rng(1)
    X = np.r_[_states(rng, 300, 1), _states(rng, 300, 0)]
    y = np.r_[np.ones(300, dtype=int), np.zeros(300, dtype=int)]
    return LynxMLPProbe(hidden_layer_sizes=(16,), random_state=0).fit(X, y)


def test_null_with_a_trained_probe_passes_and_a_probe_ignoring_the_states_fails_it(probe):
    """The LYNX probe trained on states that say whether the answer is known. Kills "LYNX probe scores ignore the
    states": scores unrelated to the states put about delta of the cues in the set {1} (the conformal bound still
    holds per event), and those exits cost accuracy the null's harm margin does not allow.

    The MLP's probabilities sit near 0.5 (balanced weights, early stopping), so the states must say it clearly: with
    8 dimensions and a shift of 6 the same LYNX exits at 17 of 1,600 cues at delta 0.05, within its per-event bound
    but 2.1 points of harm: a working LYNX passes this null only with a probe that tells the cues apart."""
    rng = np.random.default_rng(2)
    X_cal = np.r_[_states(rng, 80, 1), _states(rng, 300, 0)]
    y_cal = np.r_[np.ones(80, dtype=int), np.zeros(300, dtype=int)]
    p_test = probe.predict_proba(_states(rng, N_ROLLOUTS * EVENTS, 0))[:, 1]
    ok, misses, rows = _judge(probe.predict_proba(X_cal)[:, 1], y_cal, p_test)
    assert ok, misses
    assert all(r["n_exit"] <= 2 for r in rows)  # 1 and 0 of 800 rollouts exit (at delta 0.05 and 0.1)


def _small_null(p_test: np.ndarray, gate_open: bool) -> tuple[bool, list[str], list[dict]]:
    """A null sized as smol-r1-once's full one (:data:`FULL_MODEL_NULL`: 80 test rollouts), with one cue in each of the
    first ``len(p_test)`` rollouts (all y = 0: too few negatives for the bound's test to have power), whose run says
    its exit gate was ``gate_open``; calibrated as in :func:`_judge`."""
    n, rollouts = len(p_test), FULL_MODEL_NULL.n_test
    rng = np.random.default_rng(2)
    cal = MondrianCalibrator.fit(np.r_[rng.beta(30, 1, 80), rng.beta(1, 30, 300)],
                                 np.r_[np.ones(80, dtype=int), np.zeros(300, dtype=int)])
    ev = EventTable(rollout=np.arange(n), position=[20] * n, label=np.zeros(n, dtype=int), prob=p_test,
                    exit_tokens=[23] * n)
    ro = RolloutTable(length=[100] * rollouts, correct=[1] * rollouts, tokens=[100] * rollouts)
    report = evaluate_exit_policies(ev, ro, cal, DELTAS)
    validity = validity_curve(ev.prob, ev.label, cal, DELTAS)
    result = LynxResult.build(report=report, validity=validity, base_rate=base_rate_by_position(ev, ro),
                              summary={"findings": findings_doc(lynx_findings(report, validity, ev, ro)),
                                       "exit_gate": {"open": gate_open}},
                              thresholds={d: cal.thresholds(d) for d in DELTAS})
    rows, missing = delta_rows(result, FULL_MODEL_NULL)
    assert not missing
    return (*judge_null(rows), rows)


def test_a_null_where_lynx_abstains_needs_no_power_for_its_bound():
    """smol-r1-once's full null: the gate stayed closed and LYNX exited nowhere, with 11 test negatives (power 0.54):
    no event was in an exit, so the exits' rate at negatives is 0 by construction and the null passes. The same run
    with the gate open is judged by the test and is not shown; and a LYNX that exits past a closed gate is judged by
    the test too (kills: abstention read from the gate alone, not from the exits)."""
    low = np.full(11, 0.01)
    ok, misses, rows = _small_null(low, gate_open=False)
    assert ok, misses
    assert all(r["abstained"] and r["n_exit"] == 0 and r["power"] < 0.8 for r in rows)
    ok, misses, _ = _small_null(low, gate_open=True)
    assert not ok and all("not shown" in m for m in misses)
    ok, misses, rows = _small_null(np.full(11, 0.99), gate_open=False)
    assert not ok and not any(r["abstained"] for r in rows) and any(r["n_exit"] > 0 for r in rows)
