"""The equivalence test against scipy's one-sided t-tests, and its degenerate samples."""

import numpy as np
import pytest
from scipy import stats

from thinklens.calibration.tost import tost_mean


def test_tost_is_the_larger_of_two_one_sided_t_tests_and_its_interval_the_90_percent_t_interval():
    rng = np.random.default_rng(0)
    for mean, margin in ((0.0, 0.3), (0.2, 0.3), (0.5, 0.3)):
        d = rng.normal(mean, 1.0, 80)
        eq = tost_mean(d, margin=margin)
        p_low = stats.ttest_1samp(d, -margin, alternative="greater").pvalue
        p_high = stats.ttest_1samp(d, margin, alternative="less").pvalue
        assert eq.p == pytest.approx(max(p_low, p_high), rel=1e-9)
        lo, hi = stats.t.interval(0.90, df=79, loc=d.mean(), scale=stats.sem(d))
        assert eq.ci == pytest.approx((lo, hi), rel=1e-9)
        assert eq.equivalent == (eq.p < 0.05)  # the interval inside the margin is the same decision as both tests


def test_a_sample_without_variation_shows_equivalence_only_through_its_bounds():
    """Kills: units that all agree passing as equivalent on a zero-width interval, whatever their number."""
    assert not tost_mean([0.0] * 4, margin=0.05).equivalent  # no bounds: nothing shown
    few, many = (tost_mean([0.0] * n, margin=0.05, bounds=(-1, 1)) for n in (20, 200))
    assert not few.equivalent and many.equivalent  # 0 of 20 changes bounds the change at 14 points; 0 of 200 at 1.5
    assert many.ci[1] == pytest.approx(1 - 0.05 ** (1 / 200)) and many.ci[0] == -many.ci[1]
    q = 1 - 0.05 ** (1 / 200)
    every = tost_mean([1.0] * 200, margin=0.05, bounds=(0, 1))  # all moved by the most: far outside the margin
    assert every.ci == pytest.approx((1 - q, 1 + q)) and not every.equivalent and every.p == 1.0
