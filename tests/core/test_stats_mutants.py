"""thinklens.stats.wilson at levels other than 95%, against the score formula: kills the mutant "wilson: level
ignored (always 95%)" (bench/mutants.py), which the 95% checks of tests/core/test_stats.py let through."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from thinklens.stats import wilson


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
