"""Mondrian split conformal: hand-computed quantiles, errors, and coverage on simulated data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from thinklens.errors import ThinklensError
from thinklens.probes.conformal import (
    MondrianCalibrator,
    ValidityCurve,
    class_quantile,
    clopper_pearson,
    conformal_rank,
    min_calibration_events,
    prediction_sets,
    validity_curve,
)


def test_ranks_and_quantiles_by_hand():
    scores = np.array([0.30, 0.10, 0.50, 0.20, 0.40, 0.05, 0.60, 0.15, 0.35, 0.25])  # n = 10
    # delta 0.1: k = ceil(11 * 0.9) = ceil(9.9) = 10 -> the largest
    assert conformal_rank(10, 0.1) == 10 and class_quantile(scores, 0.1) == 0.60
    # delta 0.3: k = ceil(11 * 0.7) = ceil(7.7) = 8 -> sorted [.05 .1 .15 .2 .25 .3 .35 .4 ...][7]
    assert conformal_rank(10, 0.3) == 8 and class_quantile(scores, 0.3) == 0.40
    # delta 0.5: k = ceil(5.5) = 6 -> 0.30
    assert class_quantile(scores, 0.5) == 0.30
    # exact decimal arithmetic: (19 + 1) * 0.95 is 19 exactly, so k = 19 (floats could give 20)
    assert conformal_rank(19, 0.05) == 19
    # k is clipped below at 1: n = 1 needs (2)(1 - delta) <= 1, i.e. delta >= 0.5
    assert conformal_rank(1, 0.9) == 1


def test_sets_from_thresholds_by_hand():
    cal = MondrianCalibrator.fit(np.array([0.9, 0.8, 0.6, 0.7, 0.1, 0.3, 0.2, 0.4]),
                                 np.array([1, 1, 1, 1, 0, 0, 0, 0]))
    # positives' scores 1-p = [.1 .2 .3 .4], negatives' scores p = [.1 .2 .3 .4]; delta 0.4: k = ceil(3) = 3
    q_pos, q_neg = cal.thresholds(0.4)
    assert (q_pos, q_neg) == pytest.approx((0.3, 0.3))
    p = np.array([0.75, 0.7, 0.5, 0.3, 0.2])
    sets = cal.prediction_sets(p, 0.4)
    # 1 in S iff 1-p <= .3 (p >= .7); 0 in S iff p <= .3
    assert sets.tolist() == [[False, True], [False, True], [False, False], [True, False], [True, False]]
    assert cal.exit_mask(p, 0.4).tolist() == [True, True, False, False, False]
    assert np.array_equal(prediction_sets(p, q_pos, q_neg), sets)
    # a wide set {0, 1}: both thresholds generous
    assert prediction_sets(np.array([0.5]), 0.6, 0.6).tolist() == [[True, True]]


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 1.5, float("nan"), "a"])
def test_delta_outside_unit_interval_is_an_error(delta):
    with pytest.raises(ThinklensError, match="delta"):
        conformal_rank(50, delta)


def test_too_small_class_says_how_many_events_are_needed():
    assert min_calibration_events(0.05) == 19 and min_calibration_events(0.01) == 99
    cal = MondrianCalibrator.fit(np.r_[np.full(30, 0.9), np.full(10, 0.1)], np.r_[np.ones(30), np.zeros(10)])
    cal.thresholds(0.1)  # 10 negatives suffice for delta = 0.1 (need 9)
    with pytest.raises(ThinklensError, match=r"at least 19 calibration events.*10 negatives"):
        cal.thresholds(0.05)
    with pytest.raises(ThinklensError, match="at least"):
        MondrianCalibrator.fit(np.array([0.9, 0.8]), np.array([1, 1])).thresholds(0.3)  # no negatives


def test_input_validation():
    with pytest.raises(ThinklensError, match="probabilities"):
        MondrianCalibrator.fit(np.array([1.5, 0.2]), np.array([1, 0]))
    with pytest.raises(ThinklensError, match="binary"):
        MondrianCalibrator.fit(np.array([0.5, 0.2]), np.array([2, 0]))


def test_clopper_pearson_matches_scipy():
    for k, n in [(0, 10), (3, 10), (10, 10), (17, 400)]:
        lo, hi = clopper_pearson(np.array([k]), n)
        ci = binomtest(k, n).proportion_ci(0.95, method="exact")
        assert (lo[0], hi[0]) == pytest.approx((ci.low, ci.high))


def test_coverage_on_simulated_exchangeable_data():
    """The guarantee is marginal over calibration and test draws: pool many independent splits.

    Mondrian calibration is per class, so each split draws a fixed number of events per class.
    With continuous scores, P(0 not in S | y=0) is exactly 1 - k/(n+1); S = {1} is rarer still.
    """
    rng = np.random.default_rng(0)
    deltas = np.array([0.02, 0.05, 0.1, 0.2])
    reps, n_cal, n_test = 1000, 60, 10

    def probe(y):  # an imperfect probe's P(y=1)
        return 1 / (1 + np.exp(-(1.5 * (2 * y - 1) + rng.normal(size=y.shape))))

    exits = np.zeros(len(deltas))  # test negatives whose set is {1}
    missing0 = np.zeros(len(deltas))  # test negatives whose set lacks 0
    for _ in range(reps):
        y_cal = np.r_[np.ones(n_cal, int), np.zeros(n_cal, int)]
        cal = MondrianCalibrator.fit(probe(y_cal), y_cal)
        neg = probe(np.zeros(n_test, int))
        for i, d in enumerate(deltas):
            sets = cal.prediction_sets(neg, d)
            exits[i] += np.sum(sets[:, 1] & ~sets[:, 0])
            missing0[i] += np.sum(~sets[:, 0])
    n_neg = reps * n_test
    _, upper = clopper_pearson(exits, n_neg)
    rate = exits / n_neg
    assert np.all(rate <= deltas + (upper - rate)), (rate, upper)
    exact = np.array([1 - conformal_rank(n_cal, d) / (n_cal + 1) for d in deltas])
    lo, hi = clopper_pearson(missing0, n_neg, confidence=0.999)
    assert np.all((lo <= exact) & (exact <= hi)), (missing0 / n_neg, exact)


def test_validity_curve_on_a_held_out_split():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 6000)
    p = np.clip(0.35 * y + 0.65 * rng.random(6000), 0, 1)
    cal = MondrianCalibrator.fit(p[:3000], y[:3000])
    curve = validity_curve(p[3000:], y[3000:], cal, [0.01, 0.05, 0.1, 0.3])
    assert curve.n_neg == int(np.sum(y[3000:] == 0))
    assert np.all(curve.consistent) and np.all(curve.lower <= curve.rate) and np.all(curve.rate <= curve.upper)
    assert np.all(np.diff(curve.rate) >= 0)  # larger delta, tighter threshold, more exits
    assert set(curve.to_dict()) >= {"deltas", "rate", "upper", "n_neg"}


def test_validity_is_contradicted_when_the_exact_interval_lies_above_delta():
    # 45 of 319 negatives get {1} at delta = 0.1 (a LYNX run calibrated on fallback events, tested on cues): the
    # rate 0.141 is below delta + its upper margin (0.1 + 0.043), but the exact interval [0.105, 0.184] excludes 0.1
    n_exit = np.array([45, 20, 71])
    deltas = np.array([0.1, 0.05, 0.2])
    lo, hi = clopper_pearson(n_exit, 319)
    curve = ValidityCurve(deltas=deltas, rate=n_exit / 319, lower=lo, upper=hi, n_neg=319, n_neg_set_one=n_exit,
                          confidence=0.95)
    assert curve.rate[0] <= deltas[0] + curve.margin[0]  # the looser check passes
    assert curve.consistent.tolist() == [False, True, True]
    assert binomtest(45, 319, 0.1, alternative="greater").pvalue < 0.025  # the one-sided exact test agrees


@pytest.mark.parametrize(("n", "delta"), [(30, 0.1), (10, 0.3), (50, 0.05), (99, 0.01), (7, 0.2)])
def test_conformal_quantile_is_the_k_th_smallest_not_a_neighbour(n, delta):
    # kills the off-by-one conformal quantile mutants: k - 1 / k + 1 (index), and ceil(n (1 - delta)) for
    # ceil((n + 1)(1 - delta)) (they differ at n = 30, delta = 0.1: 28 vs 27). k from integers, not floats:
    num, den = round(delta * 1000), 1000
    k = -(-(n + 1) * (den - num) // den)  # ceil((n+1)(1-delta)) in integer arithmetic
    scores = np.random.default_rng(n).permutation(np.arange(1, n + 1) / (n + 1))  # distinct, the i-th smallest i/(n+1)
    assert conformal_rank(n, delta) == k
    assert class_quantile(scores, delta) == pytest.approx(k / (n + 1))
    # the consequence a mutant breaks: with exchangeable scores the exact miscoverage is 1 - k/(n+1) <= delta, and
    # one rank lower (k - 1) would exceed delta for the cases where k is the smallest valid rank
    assert 1 - k / (n + 1) <= delta + 1e-12
    assert 1 - (k - 1) / (n + 1) > delta


def test_validity_statement_names_the_exact_interval_and_does_not_claim_proof():
    from thinklens.calibration.stats import clopper_pearson as exact

    lo, hi = clopper_pearson(np.array([3, 30]), 100)
    assert (lo[0], hi[0]) == exact(3, 100) and (lo[1], hi[1]) == exact(30, 100)  # thinklens.calibration.stats' interval
    curve = ValidityCurve(np.array([0.05, 0.1]), np.array([0.03, 0.3]), lo, hi, 100, np.array([3, 30]), 0.95)
    # not rejected is not shown: 100 negatives have power 0.16 against a true rate of 0.07
    assert curve.statement(0).endswith("not rejected at n=100, but its power against 0.07 is 0.16 (< 0.8): not shown "
                                       "(underpowered)")
    assert "exact 95% interval" in curve.statement(0) and "one-sided exact binomial test of <= 0.05" in curve.statement(0)
    assert curve.statement(1).endswith("the bound is rejected at n=100")
    assert curve.verdict(0) == "underpowered" and curve.verdict(1) == "rejected"


def test_validity_is_a_one_sided_binomial_test_at_its_level_with_its_power():
    """The bound is tested one-sided at the declared delta, at level 0.05 (27/379 at delta 0.05: p = 0.043,
    rejected; the two-sided Clopper-Pearson interval's lower end 0.0475 would not reject it), and its power is exact."""
    k = np.array([19, 27])
    lo, hi = clopper_pearson(k, 379)
    curve = ValidityCurve(np.array([0.05, 0.05]), k / 379, lo, hi, 379, k, 0.95)
    assert curve.p_value[1] == pytest.approx(binomtest(27, 379, 0.05, alternative="greater").pvalue)
    assert curve.consistent.tolist() == [True, False] and curve.lower[1] <= 0.05
    assert curve.verdict(0) == "underpowered" and curve.verdict(1) == "rejected"
    # the power: P(X >= 27 | 379, 0.07), 27 being the smallest count the test rejects at 0.05
    assert binomtest(26, 379, 0.05, alternative="greater").pvalue >= 0.05
    from scipy.stats import binom

    assert curve.power[0] == pytest.approx(binom.sf(26, 379, 0.07)) and curve.power[0] < 0.8
