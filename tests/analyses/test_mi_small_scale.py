"""The small-scale limit of nHSIC (squared coordinate correlation) against the estimator, and the chance level of
the peak-set Jaccard against a permutation estimate."""

import random

import pytest
import torch

from thinklens.analyses.mi.estimator import nhsic_trajectory
from thinklens.analyses.mi.per_model import expected_jaccard, jaccard
from thinklens.analyses.mi.small_scale import kernel_scale, small_scale_nhsic, squared_correlation
from thinklens.errors import ThinklensError


def _pair(scale: float, d: int = 128, steps: int = 6, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    y = torch.randn(d, generator=g, dtype=torch.float64) * scale
    noise = torch.stack([torch.randn(d, generator=g, dtype=torch.float64) * scale * k for k in (0.3, 1.0, 3.0, 0.1, 2.0, 0.6)])
    return y[None] * torch.linspace(0.5, 2.0, steps, dtype=torch.float64)[:, None] + noise[:steps], y


@pytest.mark.parametrize("estimator", ["reference", "l2"])
def test_small_norm_nhsic_is_the_squared_correlation(estimator):
    states, answer = _pair(scale=1.0)  # |x| ~ 11, max |x_i - mean| / sigma ~ 0.04-0.2
    assert float(kernel_scale(states).max()) < 0.25
    mi = nhsic_trajectory(states, answer, estimator).mi
    approx = small_scale_nhsic(states, answer, estimator)
    rho2 = squared_correlation(states, answer)
    assert torch.allclose(mi, approx, atol=1.5e-2)  # the leading-order term, ridge weights included
    assert torch.allclose(mi, rho2, atol=8e-2)  # plain rho^2: the ridge weights a_x a_y ~ 0.9-1 aside
    assert float(torch.corrcoef(torch.stack([mi, rho2]))[0, 1]) > 0.99


def test_the_approximation_fails_at_large_scale_and_for_the_median_bandwidth():
    states, answer = _pair(scale=20.0)  # |x_i| ~ sigma: higher kernel orders count
    mi = nhsic_trajectory(states, answer).mi
    assert float((mi - small_scale_nhsic(states, answer)).abs().max()) > 0.3
    with pytest.raises(ThinklensError, match="bandwidth"):
        small_scale_nhsic(states, answer, "median_sigma")


def test_squared_correlation_is_scale_and_shift_free():
    states, answer = _pair(scale=1.0)
    assert torch.allclose(squared_correlation(states * 7 + 3, answer * 0.1 - 2), squared_correlation(states, answer))
    assert squared_correlation(torch.ones(1, 128, dtype=torch.float64), answer).item() == 0.0


@pytest.mark.parametrize(("n", "a", "b"), [(30, 3, 3), (12, 3, 5), (8, 0, 2), (5, 5, 2), (40, 6, 1)])
def test_expected_jaccard_matches_a_permutation_estimate(n, a, b):
    rng = random.Random(0)
    draws = [jaccard(rng.sample(range(n), a), rng.sample(range(n), b)) for _ in range(20000)]
    assert expected_jaccard(n, a, b) == pytest.approx(sum(draws) / len(draws), abs=5e-3)


def test_expected_jaccard_rejects_impossible_sizes():
    with pytest.raises(ThinklensError):
        expected_jaccard(3, 4, 1)
