"""Peaks of an MI trajectory, by two named rules.

* ``"top_k"``: the k highest steps (the reference notebook marks the top 20 of each trajectory).
  Ties are broken towards the earlier step, so the result is deterministic.
* ``"iqr"``: steps strictly above Q3 + whisker * (Q3 - Q1) of the trajectory (Tukey's outlier
  fence, whisker 1.5): a robust threshold whose number of peaks adapts to the trajectory.
  Quartiles use linear interpolation (numpy's default).

Either rule reads one curve. The paper reads it on the raw MI with the own answer; :func:`answer_specific` gives
the curve own - shuffled-answer MI, on which a peak is a step where the state holds *this* answer more than another
problem's (the mi-peaks job stores the top-k peaks of both; :mod:`thinklens.analyses.mi.validation` says why the
settings score the second).

Example:
    >>> mi = [0.1, 0.9, 0.2, 0.8, 0.1]
    >>> top_k_peaks(mi, k=2).indices
    (1, 3)
    >>> iqr_peaks([0.1, 0.1, 0.1, 0.1, 0.9]).indices
    (4,)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from thinklens.errors import ThinklensError

REFERENCE_K = 20
"""Peaks per trajectory in the reference notebook."""


@dataclass(frozen=True)
class Peaks:
    """Peak steps of one trajectory; ``indices[j]`` is a step t, whose state produced token g[t]."""

    indices: tuple[int, ...]
    """Peak steps, ascending."""
    rule: str
    """"top_k" or "iqr"."""
    threshold: float
    """top_k: the k-th largest value (peaks are >= it); iqr: the fence (peaks are > it)."""
    n_steps: int
    """Length of the trajectory."""
    k: int | None = None
    """top_k only: the number of peaks asked for (after clipping)."""
    whisker: float | None = None
    """iqr only: the multiple of the IQR above Q3."""

    @property
    def fraction(self) -> float:
        """Share of steps that are peaks (the spec: under about 5% in the paper's runs)."""
        return len(self.indices) / self.n_steps if self.n_steps else 0.0

    def mask(self) -> list[bool]:
        """One flag per step."""
        chosen = set(self.indices)
        return [t in chosen for t in range(self.n_steps)]


def as_values(mi: object) -> np.ndarray:
    """A 1-D float64 array from an MICurve, a tensor, an array or a list; NaN is an error."""
    values = getattr(mi, "mi", mi)  # an MICurve carries its scores in .mi
    if hasattr(values, "detach"):  # a torch tensor (no torch import needed here)
        values = values.detach().cpu().double().numpy()
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ThinklensError.of("MI trajectory", f"shape {arr.shape}", "a 1-D sequence of scores [step]",
                                "pass one trajectory at a time")
    if not np.all(np.isfinite(arr)):
        raise ThinklensError.of("MI trajectory", f"non-finite score at step {int(np.argmin(np.isfinite(arr)))}",
                                "finite scores", "recompute the curve; check the captured states for NaN")
    return arr


def top_k_peaks(mi: object, k: int = REFERENCE_K, *, clip: bool = False) -> Peaks:
    """The k highest steps (ties: earlier step first).

    A trajectory shorter than k is an error unless ``clip=True``, which then marks every step as a
    peak (k becomes the length) -- almost never what an analysis wants, hence opt-in.

    Example:
        >>> top_k_peaks([3.0, 1.0, 3.0, 2.0], k=2).indices  # tie at 3.0: both steps 0 and 2
        (0, 2)
        >>> top_k_peaks([1.0, 2.0], k=20, clip=True).k
        2
    """
    arr = as_values(mi)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ThinklensError.of("k", k, "an int >= 1", f"use the reference k = {REFERENCE_K}")
    if arr.size < k:
        if not clip:
            raise ThinklensError.of("trajectory length", arr.size, f"at least k = {k} steps",
                                    "pass a smaller k, or clip=True to keep every step of short trajectories")
        k = arr.size
    if k == 0:
        return Peaks(indices=(), rule="top_k", threshold=math.inf, n_steps=0, k=0)
    order = np.argsort(-arr, kind="stable")[:k]  # stable: equal values keep step order
    return Peaks(indices=tuple(sorted(int(i) for i in order)), rule="top_k", threshold=float(arr[order[-1]]),
                 n_steps=int(arr.size), k=k)


def answer_specific(own: object, shuffled: object) -> np.ndarray:
    """The answer-specific curve: ``own`` MI minus the shuffled-answer MI on the same states, step by step; ``shuffled``
    is one curve [step] or several [control, step], whose mean is taken.

    Example:
        >>> answer_specific([0.5, 0.9, 0.4], [0.4, 0.5, 0.4]).round(3).tolist()
        [0.1, 0.4, 0.0]
        >>> answer_specific([0.5, 0.9], [[0.4, 0.5], [0.2, 0.7]]).round(3).tolist()
        [0.2, 0.3]
    """
    o = as_values(own)
    s = np.asarray(getattr(shuffled, "mi", shuffled), dtype=np.float64)
    s = as_values(s.mean(axis=0) if s.ndim == 2 else s)
    if s.shape != o.shape:
        raise ThinklensError.of("shuffled-answer curve", f"shape {s.shape}", f"{o.shape[0]} steps, as the own curve",
                                "pass the shuffled control of the same trajectory")
    return o - s


def iqr_peaks(mi: object, *, whisker: float = 1.5) -> Peaks:
    """Steps strictly above Q3 + whisker * IQR. A flat trajectory has no peaks.

    Example:
        >>> p = iqr_peaks([1.0, 2.0, 3.0, 4.0, 20.0])  # Q1 = 2, Q3 = 4, fence = 4 + 1.5 * 2 = 7
        >>> p.indices, p.threshold
        ((4,), 7.0)
    """
    arr = as_values(mi)
    if not (isinstance(whisker, (int, float)) and math.isfinite(whisker) and whisker >= 0):
        raise ThinklensError.of("whisker", whisker, "a finite number >= 0", "use Tukey's 1.5")
    if arr.size == 0:
        return Peaks(indices=(), rule="iqr", threshold=math.inf, n_steps=0, whisker=float(whisker))
    q1, q3 = np.percentile(arr, [25.0, 75.0])
    fence = float(q3 + whisker * (q3 - q1))
    return Peaks(indices=tuple(int(i) for i in np.flatnonzero(arr > fence)), rule="iqr", threshold=fence,
                 n_steps=int(arr.size), whisker=float(whisker))


PEAK_RULES: dict[str, Callable[..., Peaks]] = {"top_k": top_k_peaks, "iqr": iqr_peaks}
"""Named peak rules; CLI choices and app menus derive from this registry."""


def find_peaks(mi: object, rule: str = "top_k", **options: object) -> Peaks:
    """Peaks by a registered rule name, e.g. ``find_peaks(curve, "iqr", whisker=3.0)``."""
    if rule not in PEAK_RULES:
        raise ThinklensError.of("peak rule", rule, f"one of {sorted(PEAK_RULES)}", "pick a registered rule")
    return PEAK_RULES[rule](mi, **options)


def peaks_for_all(curves: Sequence[object], rule: str = "top_k", **options: object) -> list[Peaks]:
    """The same rule applied to each trajectory."""
    return [find_peaks(c, rule, **options) for c in curves]
