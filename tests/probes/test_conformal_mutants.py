"""The conformal rank in exact arithmetic: ``k = ceil((n + 1)(1 - delta))`` computed on the decimal delta, not on its
binary float (where 150 * (1 - 0.18) is 123.00000000000001 and ceil gives 124). Kills the mutant "rank in floating
point" (bench/mutants.py)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from probes.conformal import class_quantile, conformal_rank

# (n, delta) where the float product lands just above an integer: the exact rank is one less
FLOAT_TRAPS = [(149, 0.18), (99, 0.41), (49, 0.42), (24, 0.44)]


@pytest.mark.parametrize("n,delta", FLOAT_TRAPS)
def test_rank_is_exact_where_floating_point_rounds_up(n, delta):
    exact = math.ceil((n + 1) * (1 - Fraction(str(delta))))
    assert math.ceil((n + 1) * (1 - delta)) == exact + 1  # the trap is real
    assert conformal_rank(n, delta) == exact
    scores = np.arange(n, dtype=np.float64)[::-1].copy()  # the k-th smallest of 0..n-1 is k - 1
    assert class_quantile(scores, delta) == exact - 1
