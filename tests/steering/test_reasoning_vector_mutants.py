"""The reasoning vector's random-direction control, against what it must be: a seeded direction unrelated to v with
v's norm in every tensor. Kills the mutants "control equal to v", "control not norm-matched" and "control ignores
its seed" (bench/mutants.py); the planted validation setting kills "control equal to v" end to end
(tests/steering/test_reasoning_vector_validation.py)."""

from __future__ import annotations

import torch

from thinklens.steering.reasoning_vectors import ReasoningVector


def _vector() -> ReasoningVector:
    g = torch.Generator().manual_seed(3)
    return ReasoningVector({"a.weight": torch.randn(16, 8, generator=g) * 0.01,
                            "b.weight": torch.randn(32, generator=g) * 5.0}, "v")


def test_the_control_has_vs_norm_in_every_tensor_and_an_unrelated_direction():
    v = _vector()
    r = v.random_like(0)
    assert set(r.delta) == set(v.delta)
    for name, d in v.delta.items():
        x = r.delta[name]
        assert x.shape == d.shape
        torch.testing.assert_close(x.norm(), d.norm(), rtol=1e-5, atol=0)
        cosine = float((x.flatten() @ d.flatten()) / (x.norm() * d.norm()))
        # a random direction in 32-128 dimensions: |cos| about 1/sqrt(dim); v itself would give 1
        assert abs(cosine) < 0.6, (name, cosine)


def test_the_control_is_seeded():
    v = _vector()
    assert all(torch.equal(v.random_like(5).delta[n], v.random_like(5).delta[n]) for n in v.delta)
    assert not any(torch.allclose(v.random_like(5).delta[n], v.random_like(6).delta[n]) for n in v.delta)
