"""Oracles for thinklens.calibration.stats that kill the mutants of bench/mutants.py the 95% checks of
tests/core/test_stats.py let through: wilson at levels other than 95% against the score formula ("wilson: level
ignored (always 95%)"); the bootstrap's quantiles against the same resamples drawn by hand ("bootstrap: a 90%
interval labelled 95%"); no_headroom's two-sided McNemar bound ("no_headroom tested one-sided"); McNemar's own
interval against its p ("paired 0/1 difference interval from the bootstrap, not McNemar's")."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from thinklens.calibration.stats import wilson


@pytest.mark.parametrize("level", [0.8, 0.9, 0.99])
@pytest.mark.parametrize("k,n", [(3, 10), (137, 400)])
def test_wilson_follows_its_level(k, n, level):
    z = norm.ppf(0.5 + level / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    lo, hi = wilson(k, n, level=level)
    assert lo == pytest.approx(centre - half, abs=1e-9) and hi == pytest.approx(centre + half, abs=1e-9)
    lo95, hi95 = wilson(k, n)
    assert (hi - lo < hi95 - lo95) == (level < 0.95)


def test_mcnemar_without_discordant_pairs_and_holm_capped_at_one():
    """mutmut survivors on thinklens/calibration/stats.py: McNemar on outcomes with no discordant pair is p = 1 exactly (no
    evidence either way, never above 1), and Holm's adjusted p values never exceed 1 (statsmodels' rule:
    min(1, (m - rank) p), running maximum)."""
    from thinklens.calibration.stats import holm, mcnemar

    same = [True, False, True, True]
    assert mcnemar(same, same) == 1.0
    assert holm([0.01, 0.6, 0.9]) == [0.03, 1.0, 1.0]
    assert holm([0.04, 0.03]) == [0.06, 0.06]


@pytest.mark.parametrize("level", [0.95, 0.8])
def test_bootstrap_interval_is_the_quantiles_of_its_level(level):
    """The percentile bootstrap's interval at ``level`` is the (1 -+ level) / 2 quantiles of the resampled means, the
    resamples drawn here by hand with the same generator: a 90% interval labelled 95% is 0.05/0.95, not 0.025/0.975."""
    import numpy as np

    from thinklens.calibration.stats import bootstrap_ci

    values = np.random.default_rng(5).normal(size=40)
    idx = np.random.default_rng(3).integers(0, 40, size=(2000, 40))  # [n_boot, n]
    means = values[idx].mean(1)
    a = (1 - level) / 2
    want = (np.quantile(means, a), np.quantile(means, 1 - a))
    assert bootstrap_ci(values, seed=3, level=level) == pytest.approx(want, abs=1e-12)
    if level == 0.95:
        assert bootstrap_ci(values, seed=3) == pytest.approx(want, abs=1e-12)  # the default is 95%


def test_no_headroom_is_two_sided_like_mcnemar():
    """Five problems to fix: the best a method could do is McNemar p = 2 * 0.5**5 = 0.0625 (two-sided, as mcnemar
    tests) -> no headroom; one-sided (0.031) would call it testable. Six: 0.031 -> headroom."""
    from thinklens.calibration.findings import no_headroom
    from thinklens.calibration.stats import mcnemar

    fixed_all = [True] * 60
    control5, control6 = [True] * 55 + [False] * 5, [True] * 54 + [False] * 6
    assert mcnemar(fixed_all, control5) == pytest.approx(0.0625) and no_headroom(55, 60)
    assert mcnemar(fixed_all, control6) == pytest.approx(0.03125) and not no_headroom(54, 60)
    assert no_headroom(5, 60, higher_is_effect=False) and not no_headroom(6, 60, higher_is_effect=False)


def test_paired_binary_interval_is_mcnemars_own():
    """The hybrid's skill gap: 8 problems against 2 of 200 had a bootstrap interval [0.005, 0.06] excluding 0 beside
    McNemar's p = 0.11. The finding's difference interval is now the exact test's: it contains 0 exactly when p >=
    0.05, and excludes it when p < 0.05 (checked over every split of up to 20 discordant pairs)."""
    from thinklens.calibration.findings import paired_finding
    from thinklens.calibration.stats import mcnemar

    a, b = [1] * 8 + [0] * 2 + [0] * 190, [0] * 8 + [1] * 2 + [0] * 190
    f = paired_finding("h beats r", a, b, control="r", statistic="accuracy", binary=True)
    lo, hi = f.extra["diff_ci"]
    assert f.p == pytest.approx(0.109375) and lo < 0 < hi and f.verdict == "no effect"
    assert f.extra["test"] == "mcnemar" and "McNemar" in f.extra["diff_interval"]
    for m in range(1, 21):
        for k in range(m + 1):
            x = [1] * k + [0] * (m - k) + [1] * 5 + [0] * 15
            y = [0] * k + [1] * (m - k) + [1] * 5 + [0] * 15
            g = paired_finding("x", x, y, control="y", statistic="acc", binary=True, min_n=1)
            lo, hi = g.extra["diff_ci"]
            assert (lo > 0 or hi < 0) == (mcnemar(x, y) < 0.05), (k, m, lo, hi, mcnemar(x, y))
            assert lo <= g.extra["diff"] <= hi
