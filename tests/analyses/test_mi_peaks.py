"""Peak rules against hand-computed answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from thinklens.analyses.mi import PEAK_RULES, Peaks, find_peaks, iqr_peaks, nhsic_trajectory, peaks_for_all, top_k_peaks
from thinklens.errors import ThinklensError

try:  # under the jaxtyping/beartype import hook the type checker may reject a bad argument first
    from jaxtyping import TypeCheckError
except ImportError:  # pragma: no cover
    TypeCheckError = TypeError  # type: ignore[misc,assignment]


def test_top_k_picks_the_largest_steps_in_step_order() -> None:
    p = top_k_peaks([0.5, 0.1, 0.9, 0.3, 0.7], k=3)
    assert p.indices == (0, 2, 4)
    assert p.threshold == 0.5 and p.rule == "top_k" and p.k == 3 and p.n_steps == 5
    assert p.mask() == [True, False, True, False, True]
    assert p.fraction == pytest.approx(0.6)


def test_top_k_ties_go_to_the_earlier_step() -> None:
    assert top_k_peaks([1.0, 2.0, 2.0, 2.0, 0.0], k=2).indices == (1, 2)
    assert top_k_peaks([5.0] * 6, k=3).indices == (0, 1, 2)


def test_top_k_reference_default_and_short_trajectories() -> None:
    mi = np.arange(30, dtype=float)
    assert top_k_peaks(mi).indices == tuple(range(10, 30))  # k = 20
    with pytest.raises(ThinklensError, match="clip=True"):
        top_k_peaks(np.arange(5.0))
    clipped = top_k_peaks(np.arange(5.0), clip=True)
    assert clipped.indices == (0, 1, 2, 3, 4) and clipped.k == 5
    assert top_k_peaks([], clip=True).indices == ()


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_top_k_rejects_bad_k(k: object) -> None:
    with pytest.raises((ThinklensError, TypeCheckError)) as info:
        top_k_peaks([1.0, 2.0, 3.0], k=k)  # type: ignore[arg-type]
    assert info.type is TypeCheckError or "bad k" in str(info.value)


def test_iqr_fence_by_hand() -> None:
    # Q1 = 2, Q3 = 4, fence = 4 + 1.5 * 2 = 7
    p = iqr_peaks([1.0, 2.0, 3.0, 4.0, 20.0])
    assert p.indices == (4,) and p.threshold == 7.0 and p.whisker == 1.5
    # 8 values, linear interpolation: Q1 at position 1.75 -> 2.75, Q3 at 5.25 -> 6.25; IQR 3.5;
    # fence 6.25 + 5.25 = 11.5
    p = iqr_peaks([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 100.0])
    assert p.threshold == pytest.approx(11.5) and p.indices == (7,)
    # whisker 0: strictly above Q3 = 6.25
    assert iqr_peaks([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 100.0], whisker=0.0).indices == (6, 7)


def test_iqr_flat_and_empty_trajectories_have_no_peaks() -> None:
    assert iqr_peaks([0.3] * 10).indices == ()
    empty = iqr_peaks([])
    assert empty.indices == () and math.isinf(empty.threshold) and empty.fraction == 0.0
    with pytest.raises(ThinklensError, match="whisker"):
        iqr_peaks([1.0, 2.0], whisker=-1.0)


def test_inputs_curve_tensor_and_bad_values() -> None:
    y = torch.linspace(-100.0, 100.0, 32)
    curve = nhsic_trajectory(torch.stack([y * 0.2, y, y * 0.5]), y)
    assert top_k_peaks(curve, k=1).indices == (1,)
    assert top_k_peaks(torch.tensor([0.0, 3.0, 1.0]), k=1).indices == (1,)
    with pytest.raises(ThinklensError, match="non-finite"):
        top_k_peaks([0.0, float("nan"), 1.0], k=1)
    with pytest.raises(ThinklensError, match="1-D"):
        iqr_peaks(np.zeros((2, 3)))


def test_registry_and_find_peaks() -> None:
    assert set(PEAK_RULES) == {"top_k", "iqr"}
    assert find_peaks([1.0, 5.0, 2.0], "top_k", k=1).indices == (1,)
    assert find_peaks([1.0, 1.0, 1.0, 1.0, 9.0], "iqr").indices == (4,)
    with pytest.raises(ThinklensError, match="peak rule"):
        find_peaks([1.0], "mad")
    both = peaks_for_all([[1.0, 2.0], [3.0, 0.0]], "top_k", k=1)
    assert [p.indices for p in both] == [(1,), (0,)]
    assert isinstance(both[0], Peaks)
