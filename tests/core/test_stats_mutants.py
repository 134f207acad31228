"""thinklens.calibration.stats.wilson at levels other than 95%, against the score formula: kills the mutant "wilson: level
ignored (always 95%)" (bench/mutants.py), which the 95% checks of tests/core/test_stats.py let through."""

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
