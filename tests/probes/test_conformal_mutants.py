"""The conformal rank in exact arithmetic: ``k = ceil((n + 1)(1 - delta))`` computed on the decimal delta, not on its
binary float (where 150 * (1 - 0.18) is 123.00000000000001 and ceil gives 124). Kills the mutant "rank in floating
point" (bench/mutants.py)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from thinklens.probes.conformal import class_quantile, conformal_rank

# (n, delta) where the float product lands just above an integer: the exact rank is one less
FLOAT_TRAPS = [(149, 0.18), (99, 0.41), (49, 0.42), (24, 0.44)]


@pytest.mark.parametrize("n,delta", FLOAT_TRAPS)
def test_rank_is_exact_where_floating_point_rounds_up(n, delta):
    exact = math.ceil((n + 1) * (1 - Fraction(str(delta))))
    assert math.ceil((n + 1) * (1 - delta)) == exact + 1  # the trap is real
    assert conformal_rank(n, delta) == exact
    scores = np.arange(n, dtype=np.float64)[::-1].copy()  # the k-th smallest of 0..n-1 is k - 1
    assert class_quantile(scores, delta) == exact - 1


def test_validity_curve_interval_at_its_level_and_without_negatives():
    """The validity interval is the exact one at the level asked for (the mutmut survivors 'confidence dropped'
    in clopper_pearson and validity_curve), and a test split without wrong-exit events reports a NaN rate with
    the vacuous [0, 1] interval rather than a number (scipy's exact interval, computed here)."""
    from scipy.stats import beta

    from thinklens.probes.conformal import MondrianCalibrator, clopper_pearson, validity_curve

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 600)
    p = np.clip(0.4 * y + 0.6 * rng.random(600), 0, 1)
    cal = MondrianCalibrator.fit(p[:300], y[:300])
    vc = validity_curve(p[300:], y[300:], cal, [0.1, 0.3], confidence=0.8)
    n, k = vc.n_neg, vc.n_neg_set_one
    assert vc.confidence == 0.8 and n == int((y[300:] == 0).sum()) and k.max() > 0
    lo = np.where(k > 0, beta.ppf(0.1, k, n - k + 1), 0.0)
    hi = np.where(k < n, beta.ppf(0.9, k + 1, n - k), 1.0)
    assert np.allclose(vc.lower, lo) and np.allclose(vc.upper, hi)
    lo95, _ = clopper_pearson(k, n)  # the default level is 95%: a wider interval
    assert (lo95 < vc.lower).all()
    none = validity_curve(p[300:][y[300:] == 1], y[300:][y[300:] == 1], cal, [0.1, 0.3])
    assert none.n_neg == 0 and np.isnan(none.rate).all() and none.rate.shape == (2,)
    assert none.lower.tolist() == [0.0, 0.0] and none.upper.tolist() == [1.0, 1.0]
