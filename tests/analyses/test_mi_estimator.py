"""The fast nHSIC estimator against the plain two-inverse formula (numpy float64) and its properties."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from thinklens.analyses.mi import (
    ESTIMATORS,
    NHSICConfig,
    compare_estimators,
    nhsic,
    nhsic_trajectory,
    permuted_coordinates_control,
    shuffled_answer_control,
)
from thinklens.analyses.mi.reference import plain_median_sigma, plain_nhsic, plain_trajectory
from thinklens.analyses.mi.solvers import median_sigma
from thinklens.errors import ThinklensError

try:  # under the jaxtyping/beartype import hook the shape checker may reject a bad argument first
    from jaxtyping import TypeCheckError
except ImportError:  # pragma: no cover
    TypeCheckError = TypeError  # type: ignore[misc,assignment]


def _raises_bad(call: object, match: str) -> None:
    """A ThinklensError naming ``match``, or the runtime shape checker's error when it is active."""
    with pytest.raises((ThinklensError, TypeCheckError)) as info:
        call()  # type: ignore[operator]
    assert info.type is TypeCheckError or match in str(info.value)


def _trajectory(m: int, steps: int, scale: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """float32 states: some near the answer, some coordinate-shuffled (unrelated), some noise."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randn(m, generator=g) * scale
    rows = []
    for t in range(steps):
        base = y if t % 3 == 0 else (y[torch.randperm(m, generator=g)] if t % 3 == 1 else torch.zeros(m))
        rows.append(base + torch.randn(m, generator=g) * scale * 0.5)
    return torch.stack(rows), y


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b) / np.abs(b)))


@pytest.mark.parametrize("m,scale", [(16, 30.0), (64, 1.0), (200, 5.0), (300, 100.0)])
@pytest.mark.parametrize("method", ["nystrom", "cholesky"])
def test_matches_plain_formula_float32(m: int, scale: float, method: str) -> None:
    states, y = _trajectory(m, 6, scale, seed=m)
    fast = nhsic_trajectory(states, y, method=method).mi.numpy()
    plain = plain_trajectory(states.numpy(), y.numpy())
    assert _rel(fast, plain) <= 1e-4


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_variants_match_plain_formula(name: str) -> None:
    states, y = _trajectory(96, 5, 8.0, seed=1)
    curve = nhsic_trajectory(states, y, name, chunk_size=2)
    assert curve.name == name
    assert _rel(curve.mi.numpy(), plain_trajectory(states.numpy(), y.numpy(), ESTIMATORS[name])) <= 1e-4


def test_float64_cholesky_is_tight_and_bounds_hold() -> None:
    states, y = _trajectory(128, 4, 20.0, seed=2)
    plain = plain_trajectory(states.numpy(), y.numpy())
    for method, dtype in [("cholesky", torch.float64), ("cholesky", torch.float32), ("nystrom", torch.float32)]:
        curve = nhsic_trajectory(states, y, method=method, dtype=dtype)
        err = np.abs(curve.mi.numpy() - plain)
        # The certified solver bound (plus the answer-side bound) covers the error, up to the oracle's
        # own float64 rounding.
        assert np.all(err <= curve.bound.numpy() + curve.truncation_bound + 1e-9 * np.abs(plain))
    assert _rel(nhsic_trajectory(states, y, method="cholesky", dtype=torch.float64).mi.numpy(), plain) < 1e-7


def test_chunking_and_sketch_size_do_not_change_numbers() -> None:
    states, y = _trajectory(64, 7, 10.0, seed=3)
    a = nhsic_trajectory(states, y).mi
    b = nhsic_trajectory(states, y, chunk_size=3, sketch=8).mi
    torch.testing.assert_close(a, b, rtol=1e-8, atol=0)


def test_symmetric_in_x_and_y() -> None:
    g = torch.Generator().manual_seed(4)
    x, y = torch.randn(48, generator=g, dtype=torch.float64) * 40, torch.randn(48, generator=g, dtype=torch.float64) * 10
    assert nhsic(x, y) == pytest.approx(nhsic(y, x), rel=1e-8)
    assert plain_nhsic(x.numpy(), y.numpy()) == pytest.approx(plain_nhsic(y.numpy(), x.numpy()), rel=1e-8)


def test_permuting_coordinates_of_x_alone_drops_the_score() -> None:
    g = torch.Generator().manual_seed(5)
    y = torch.randn(256, generator=g) * 30
    x = y + torch.randn(256, generator=g) * 3
    own = nhsic(x, y)
    shuffled = nhsic(x[torch.randperm(256, generator=g)], y)
    assert shuffled < 0.2 * own
    # ... while permuting both the same way changes nothing (only the pairing matters).
    p = torch.randperm(256, generator=g)
    assert nhsic(x[p], y[p]) == pytest.approx(own, rel=1e-8)


def test_shift_invariant_nonnegative_and_cauchy_schwarz() -> None:
    """nHSIC = <F_x, F_y> (Frobenius) with PSD F: >= 0 and <= sqrt(nHSIC(x, x) nHSIC(y, y))."""
    g = torch.Generator().manual_seed(6)
    x = torch.randn(64, generator=g, dtype=torch.float64) * 50
    y = torch.randn(64, generator=g, dtype=torch.float64) * 50
    assert nhsic(x + 7.0, y - 3.0) == pytest.approx(nhsic(x, y), rel=1e-8)
    assert 0.0 <= nhsic(x, y) <= (nhsic(x, x) * nhsic(y, y)) ** 0.5


def test_score_grows_with_norm_at_fixed_sigma_but_not_with_median_sigma() -> None:
    """The caveat of the spec: the reference score follows activation magnitude."""
    g = torch.Generator().manual_seed(7)
    y = torch.randn(128, generator=g, dtype=torch.float64) * 2
    x = y + torch.randn(128, generator=g, dtype=torch.float64)
    assert nhsic(10 * x, 10 * y) > 2 * nhsic(x, y)  # same vectors, larger activations
    median = nhsic(x, y, "median_sigma")
    assert nhsic(10 * x, 10 * y, "median_sigma") == pytest.approx(median, rel=1e-8)
    assert nhsic(10 * x, y, "median_sigma") == pytest.approx(median, rel=1e-8)
    # "l2" brings every step to the answer's norm: the step's own norm no longer matters.
    assert nhsic(10 * x, y, "l2") == pytest.approx(nhsic(x, y, "l2"), rel=1e-8)


def test_constant_vectors_score_exactly_zero() -> None:
    y = torch.linspace(-80.0, 80.0, 32)
    states = torch.stack([torch.zeros(32), torch.full((32,), 5.0), y])
    for name in ESTIMATORS:
        curve = nhsic_trajectory(states, y, name)
        assert curve.mi[:2].tolist() == [0.0, 0.0]
        assert curve.mi[2] > 0
        assert not torch.isnan(curve.mi).any()
    const_answer = nhsic_trajectory(states, torch.full((32,), 2.0))
    assert const_answer.answer_rank == 0 and const_answer.mi.tolist() == [0.0, 0.0, 0.0]
    assert plain_nhsic(np.zeros(32), y.numpy()) == 0.0


def test_median_sigma_matches_numpy_median() -> None:
    g = torch.Generator().manual_seed(8)
    for m in (2, 3, 7, 10):
        v = torch.randn(3, m, generator=g, dtype=torch.float64)
        v[2, : m // 2 + 1] = 0.0  # many ties
        expected = [plain_median_sigma(row.numpy()) for row in v]
        assert median_sigma(v).tolist() == pytest.approx(expected, rel=1e-12)
    assert median_sigma(torch.zeros(1, 5, dtype=torch.float64)).tolist() == [1.0]


def test_bad_inputs_raise_thinklens_error() -> None:
    y = torch.randn(16)
    states = torch.randn(3, 16)
    with pytest.raises(ThinklensError, match="NaN"):
        nhsic_trajectory(torch.where(torch.arange(16) == 4, float("nan"), states), y)
    with pytest.raises(ThinklensError, match="NaN"):
        nhsic_trajectory(states, torch.where(torch.arange(16) == 0, float("inf"), y))
    _raises_bad(lambda: nhsic_trajectory(torch.randn(3, 15), y), "d_model")
    _raises_bad(lambda: nhsic_trajectory(y, y), "states")
    with pytest.raises(ThinklensError, match="estimator"):
        nhsic_trajectory(states, y, "refrence")
    with pytest.raises(ThinklensError, match="method"):
        nhsic_trajectory(states, y, method="svd")
    with pytest.raises(ThinklensError, match="sigma"):
        NHSICConfig(sigma=0.0)
    _raises_bad(lambda: NHSICConfig(bandwidth="silverman"), "bandwidth")  # type: ignore[arg-type]


def test_empty_trajectory_gives_empty_curve() -> None:
    curve = nhsic_trajectory(torch.zeros(0, 8), torch.randn(8))
    assert len(curve) == 0


def test_shuffled_answer_control_uses_other_problems() -> None:
    g = torch.Generator().manual_seed(9)
    answers = [torch.randn(32, generator=g) * 30 for _ in range(4)]
    trajs = [torch.stack([a + torch.randn(32, generator=g) * 3 for _ in range(3)]) for a in answers]
    ctrl = shuffled_answer_control(trajs, answers, seed=1)
    assert sorted(ctrl.answer_of) == [0, 1, 2, 3] and all(i != j for i, j in enumerate(ctrl.answer_of))
    for i, curve in enumerate(ctrl.curves):
        expected = nhsic_trajectory(trajs[i], answers[ctrl.answer_of[i]]).mi
        torch.testing.assert_close(curve.mi, expected)
        assert curve.mi.mean() < nhsic_trajectory(trajs[i], answers[i]).mi.mean()
    assert shuffled_answer_control(trajs, answers, seed=1).answer_of == ctrl.answer_of
    with pytest.raises(ThinklensError):
        shuffled_answer_control(trajs[:1], answers[:1])
    with pytest.raises(ThinklensError):
        shuffled_answer_control(trajs, answers[:3])


def test_permuted_coordinates_control_scores_low() -> None:
    g = torch.Generator().manual_seed(10)
    y = torch.randn(128, generator=g) * 30
    states = torch.stack([y + torch.randn(128, generator=g) * 3 for _ in range(3)])
    assert (permuted_coordinates_control(states, y).mi < 0.3 * nhsic_trajectory(states, y).mi).all()


def test_compare_estimators_returns_all_variants() -> None:
    states, y = _trajectory(32, 3, 10.0, seed=11)
    curves = compare_estimators(states, y)
    assert set(curves) == {"reference", "median_sigma", "l2"}
    assert all(len(c) == 3 for c in curves.values())


# ---------------------------------------------------------------- the job's default: the kernel scaled to the states


def test_job_default_scales_the_kernel_to_the_states_and_the_paper_keeps_sigma_50() -> None:
    """On Gemma-3-270M the fixed sigma = 50 meets states hundreds of times wider. The job's default is the
    median heuristic, so MI is the same number when every activation of a model is 100x larger; the paper's preset
    keeps sigma = 50 driving the peaks. Kills: a default that is the fixed sigma (the 100x rescale moves it)."""
    from thinklens.analyses.jobs.mi_peaks import PRESETS
    from thinklens.analyses.mi.config import DEFAULT_ESTIMATOR, MIPeaksJobConfig

    assert MIPeaksJobConfig().estimators[0] == DEFAULT_ESTIMATOR == PRESETS["demo"].estimators[0]
    assert PRESETS["paper"].estimators[0] == "reference" and ESTIMATORS["reference"].sigma == 50.0
    states, y = _trajectory(96, 6, 2.0, seed=11)
    small = nhsic_trajectory(states, y, DEFAULT_ESTIMATOR).mi
    large = nhsic_trajectory(100 * states, 100 * y, DEFAULT_ESTIMATOR).mi
    torch.testing.assert_close(large, small, rtol=1e-6, atol=1e-9)
    ref_small, ref_large = (nhsic_trajectory(s, a, "reference").mi for s, a in ((states, y), (100 * states, 100 * y)))
    assert float((ref_large - ref_small).abs().max()) > 0.1  # the fixed sigma reads the scale, not the answer


def test_default_sigma_is_the_median_pairwise_distance_by_hand() -> None:
    """x = [0, 1, 3, 7]: pair distances 1, 3, 7, 2, 6, 4, median (3 + 4) / 2 = 3.5; y = [0, 2, 4, 10]: 2, 4, 10, 2, 8,
    6, median (4 + 6) / 2 = 5. The score is the plain formula at those two widths."""
    from thinklens.analyses.mi.config import DEFAULT_ESTIMATOR

    x = torch.tensor([0.0, 1.0, 3.0, 7.0], dtype=torch.float64)
    y = torch.tensor([0.0, 2.0, 4.0, 10.0], dtype=torch.float64)
    curve = nhsic_trajectory(x[None], y, DEFAULT_ESTIMATOR, dtype=torch.float64)
    assert curve.sigma.tolist() == [3.5] and curve.answer_sigma == 5.0
    assert float(curve.mi[0]) == pytest.approx(plain_nhsic(x.numpy(), y.numpy(), sigma=3.5, sigma_y=5.0), rel=1e-7)


def test_a_saturated_fixed_sigma_is_flagged_on_the_mi_findings() -> None:
    """Kills: a fixed-sigma MI on states 669 sigma wide (Gemma-3-270M's 'scale max|x-mean|/sigma median 669')
    reported without a word; the flag is absent at the zoo's scale (~0.05) and for the scaled default."""
    from types import SimpleNamespace

    from thinklens.analyses.mi.mi_findings import model_findings
    from thinklens.analyses.mi.small_scale import kernel_scale

    g = torch.Generator().manual_seed(3)
    wide = torch.randn(4, 640, generator=g) * 10000.0  # a residual stream hundreds of sigmas wide
    scale = kernel_scale(wide, "reference")
    assert float(scale.median()) > 100

    def records(est: str, scales: list[float]) -> list[SimpleNamespace]:
        return [SimpleNamespace(estimator=est, variants={est: [0.5 + 0.01 * (i % 2)] * 8}, shuffled={est: [0.5] * 8},
                                tokens=tuple("abcdefgh"), answer="zzz", peaks={"top_k": (1,)},
                                small_scale={"scale": scales}) for i in range(12)]

    (mi,) = model_findings("m", records("reference", scale.tolist()), word_rows=[], rule="top_k", top=3)
    assert "saturated" in mi.extra["flag"] and "median_sigma scales the kernel" in mi.extra["flag"]
    (mi,) = model_findings("m", records("reference", [0.05] * 8), word_rows=[], rule="top_k", top=3)
    assert "flag" not in mi.extra
    (mi,) = model_findings("m", records("median_sigma", []), word_rows=[], rule="top_k", top=3)
    assert "flag" not in mi.extra


def test_the_report_flags_a_saturated_fixed_sigma_scored_next_to_the_default() -> None:
    """The CLI's report says when the fixed sigma scored beside the default meets states hundreds of sigmas wide."""
    from thinklens.analyses.jobs.mi_peaks import report

    small = {"estimator": "reference", "mean_corr2": 0.9, "mean_corr2_shuffled": 0.9, "mean_mi": 1.4, "corr_mi_corr2": 0.1,
             "median_scale": 669.0}
    model = {"style": "plain", "accuracy": 0.5, "mean_mi": 0.6, "peak_fraction": {"top_k": 0.1, "iqr": 0.05},
             "top_words": [], "small_scale": small}
    summary = {"n_problems": 4, "mean_tokens": 10.0, "mean_peak_fraction": 0.1, "findings": [], "top_words": [],
               "models": {"m": model}}
    assert "the states reach 669 sigma" in report(summary) and "saturated" in report(summary)
    small["median_scale"] = 0.05
    assert "saturated" not in report(summary)
