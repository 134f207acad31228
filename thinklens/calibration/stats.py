"""Intervals and paired tests: the one place a thinklens number gets its uncertainty. Every job reports its
headline claims as findings (:mod:`thinklens.calibration.findings`), whose intervals and tests come from here,
so that no job computes an interval its own way:

- accuracies: :func:`wilson` (default) or :func:`clopper_pearson` (exact; used for bounds a guarantee
  must not overstate);
- two independent proportions: :func:`rate_difference` (Newcombe's interval of their difference);
- a statistic over problems or trajectories: :func:`bootstrap_ci` (percentile bootstrap over the units);
- a comparison on the same units: :func:`paired_bootstrap` (difference of means with its interval and a
  two-sided p value), :func:`sign_flip_test` (paired permutation), :func:`mcnemar` (exact, paired 0/1) with
  :func:`mcnemar_interval` (the interval of the same exact test, so that interval and p never disagree);
- a sweep that picks its best point: :func:`holm` (corrected p values), or choose on one split and report
  on another (:func:`split_indices`).

Example:
    >>> lo, hi = wilson(45, 50)
    >>> round(lo, 3), round(hi, 3)
    (0.786, 0.957)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from thinklens.errors import ThinklensError

LEVEL = 0.95


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ThinklensError.of("confidence level", level, "a number in (0, 1)", "use 0.95")


def _check_counts(k: int, n: int) -> None:
    if not (isinstance(k, (int, np.integer)) and isinstance(n, (int, np.integer))) or n < 0 or not 0 <= k <= n:
        raise ThinklensError.of("count", (k, n), "integers 0 <= k <= n", "pass the number of successes and of trials")


# ---------------------------------------------------------------- intervals


def wilson(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Wilson score interval of a proportion ``k / n``; ``(0, 1)`` when ``n == 0``.

    Example:
        >>> wilson(0, 10)[0], round(wilson(0, 10)[1], 4)
        (0.0, 0.2775)
    """
    _check_counts(k, n)
    _check_level(level)
    if n == 0:
        return 0.0, 1.0
    from scipy.stats import binomtest  # lazy: CLI start-up (scipy)

    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return float(max(0.0, ci.low)), float(min(1.0, ci.high))


def clopper_pearson(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of a proportion ``k / n``; ``(0, 1)`` when ``n == 0``.

    Example:
        >>> round(clopper_pearson(1, 20)[1], 4)
        0.2487
    """
    _check_counts(k, n)
    _check_level(level)
    if n == 0:
        return 0.0, 1.0
    from scipy.stats import binomtest  # lazy: CLI start-up (scipy)

    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def _as_array(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ThinklensError.of(what, f"an array of shape {arr.shape}", "one value per unit (a 1-d array)", "flatten per problem")
    if not np.all(np.isfinite(arr)):
        raise ThinklensError.of(what, "non-finite values", "finite numbers", "drop the NaN units first")
    return arr


def bootstrap_ci(values: Sequence[float] | np.ndarray, *, stat=np.mean, n_boot: int = 2000, seed: int = 0,
                 level: float = LEVEL) -> tuple[float, float]:
    """Percentile bootstrap interval of ``stat`` over units (one value per problem or trajectory).

    ``stat`` maps a 2-d array ``[n_boot, n]`` along axis 1 (``np.mean``, ``np.median``) to ``[n_boot]``.
    Resamples are drawn with a local generator, so the interval is a function of ``seed``.

    Example:
        >>> lo, hi = bootstrap_ci([1.0] * 5 + [0.0] * 5)
        >>> lo < 0.5 < hi
        True
    """
    arr = _as_array(values, "bootstrap values")
    _check_level(level)
    if arr.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arr.size, size=(n_boot, arr.size))  # [n_boot, n]
    boots = np.asarray(stat(arr[idx], axis=1), dtype=np.float64)  # [n_boot]
    a = (1.0 - level) / 2.0
    return float(np.quantile(boots, a)), float(np.quantile(boots, 1.0 - a))


def bootstrap_units(n: int, stat, *, n_boot: int = 2000, seed: int = 0, level: float = LEVEL) -> tuple[float, float]:
    """Percentile bootstrap interval of a statistic of resampled units, when it needs more than one value per
    unit (a ratio of sums, an AUROC): ``stat(idx)`` maps integer unit ids ``[n_boot, n]`` to ``[n_boot]``.

    Example:
        >>> num, den = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])
        >>> lo, hi = bootstrap_units(3, lambda idx: num[idx].sum(1) / den[idx].sum(1))
        >>> 0.5 <= lo < 1.0 < hi <= 1.5
        True
    """
    return bootstrap_ci(np.arange(n), stat=lambda v, axis: stat(v.astype(np.int64)), n_boot=n_boot, seed=seed,
                        level=level)


def rate_difference(k1: int, n1: int, k2: int, n2: int) -> tuple[float, tuple[float, float]]:
    """``k1/n1 - k2/n2`` of two independent proportions with Newcombe's hybrid score interval (from the two
    Wilson intervals; Newcombe 1998, method 10).

    Example:
        >>> d, (lo, hi) = rate_difference(30, 40, 10, 40)
        >>> d, round(lo, 3), round(hi, 3)
        (0.5, 0.285, 0.653)
    """
    p1, p2 = k1 / n1, k2 / n2
    (l1, u1), (l2, u2) = wilson(k1, n1), wilson(k2, n2)
    d = p1 - p2
    return d, (d - ((p1 - l1) ** 2 + (u2 - p2) ** 2) ** 0.5, d + ((u1 - p1) ** 2 + (p2 - l2) ** 2) ** 0.5)


# ---------------------------------------------------------------- paired comparisons


@dataclass(frozen=True)
class PairedResult:
    """A paired comparison of ``a`` against ``b`` on the same units."""

    diff: float
    """Mean of ``a - b``."""
    ci: tuple[float, float]
    """Bootstrap interval of the mean difference."""
    p: float
    """Two-sided p value."""
    n: int
    """Units compared."""


def paired_bootstrap(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, n_boot: int = 2000, seed: int = 0,
                     level: float = LEVEL) -> PairedResult:
    """Mean difference ``a - b`` over paired units with its bootstrap interval and the sign-flip p value.

    Example:
        >>> r = paired_bootstrap([1.0, 2.0, 3.0, 4.0] * 5, [0.0, 1.0, 2.0, 3.0] * 5)
        >>> r.diff, r.ci, r.p < 0.01
        (1.0, (1.0, 1.0), True)
    """
    a_arr, b_arr = _as_array(a, "paired values a"), _as_array(b, "paired values b")
    if a_arr.shape != b_arr.shape:
        raise ThinklensError.of("paired values", (a_arr.size, b_arr.size), "two arrays over the same units",
                                "compare the same problems on both sides")
    d = a_arr - b_arr  # [n]
    if d.size == 0:
        return PairedResult(float("nan"), (float("nan"), float("nan")), 1.0, 0)
    return PairedResult(float(d.mean()), bootstrap_ci(d, n_boot=n_boot, seed=seed, level=level),
                        sign_flip_test(d, seed=seed), int(d.size))


def sign_flip_test(diffs: Sequence[float] | np.ndarray, *, n_perm: int = 10000, seed: int = 0,
                   alternative: Literal["two-sided", "greater", "less"] = "two-sided") -> float:
    """Paired permutation test of mean ``diffs == 0``: every unit's sign flipped at random.

    Exact (all 2^n flips) when ``n <= 16``; else ``n_perm`` random flips with the +1 correction, so the p
    value is never 0. ``greater``: the alternative that the mean difference is positive.

    Example:
        >>> sign_flip_test([0.5] * 20, alternative="greater") < 1e-3
        True
        >>> sign_flip_test([1.0, -1.0] * 10)
        1.0
    """
    d = _as_array(diffs, "paired differences")
    n = d.size
    if n == 0 or not np.any(d):
        return 1.0
    observed = d.mean()
    if n <= 16:
        signs = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1  # [2^n, n]
        extra = 0
    else:
        rng = np.random.default_rng(seed)
        signs = rng.choice((-1.0, 1.0), size=(n_perm, n))  # [n_perm, n]
        extra = 1
    null = (signs * d).mean(axis=1)  # [n_perm]
    tol = 1e-12 * max(1.0, abs(observed))
    if alternative == "greater":
        hits = np.sum(null >= observed - tol)
    elif alternative == "less":
        hits = np.sum(null <= observed + tol)
    else:
        hits = np.sum(np.abs(null) >= abs(observed) - tol)
    return float(min(1.0, (hits + extra) / (null.size + extra)))


def _discordant(a: Sequence[bool] | Sequence[int] | np.ndarray, b: Sequence[bool] | Sequence[int] | np.ndarray) -> tuple[int, int]:
    """``(only_a, only_b)``: the discordant pairs of paired 0/1 outcomes, each side's (what McNemar's test counts)."""
    a_arr, b_arr = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if a_arr.shape != b_arr.shape or a_arr.ndim != 1:
        raise ThinklensError.of("paired outcomes", (a_arr.shape, b_arr.shape), "two 1-d arrays over the same problems",
                                "grade the same problems on both sides")
    only_a, only_b = int(np.sum(a_arr & ~b_arr)), int(np.sum(~a_arr & b_arr))
    return only_a, only_b


def mcnemar(a: Sequence[bool] | Sequence[int] | np.ndarray, b: Sequence[bool] | Sequence[int] | np.ndarray) -> float:
    """Exact McNemar test (two-sided) of paired 0/1 outcomes: a binomial test on the discordant pairs.

    Example:
        >>> mcnemar([1] * 20 + [0] * 5, [0] * 20 + [0] * 5) < 1e-4
        True
        >>> mcnemar([1, 0] * 10, [0, 1] * 10)
        1.0
    """
    only_a, only_b = _discordant(a, b)
    if only_a + only_b == 0:
        return 1.0
    from scipy.stats import binomtest  # lazy: CLI start-up (scipy)

    return float(binomtest(only_a, only_a + only_b, 0.5).pvalue)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p values (in the input order), for a sweep that reports its best point.

    Example:
        >>> holm([0.01, 0.04, 0.03])
        [0.03, 0.06, 0.06]
    """
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return [round(float(x), 12) for x in adjusted]


def split_indices(n: int, *, fraction: float = 0.5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint seeded index sets over ``n`` units: choose on the first, report on the second.

    Example:
        >>> sel, rep = split_indices(10)
        >>> sorted(np.concatenate([sel, rep]).tolist()) == list(range(10)), len(sel)
        (True, 5)
    """
    if n < 2 or not 0.0 < fraction < 1.0:
        raise ThinklensError.of("split", (n, fraction), "n >= 2 units and a fraction in (0, 1)", "use more problems")
    perm = np.random.default_rng(seed).permutation(n)
    cut = min(n - 1, max(1, int(round(n * fraction))))
    return np.sort(perm[:cut]), np.sort(perm[cut:])


def mcnemar_interval(a: Sequence[bool] | Sequence[int] | np.ndarray, b: Sequence[bool] | Sequence[int] | np.ndarray,
                     level: float = LEVEL) -> tuple[float, float]:
    """The interval of the paired difference ``mean(a) - mean(b)`` of 0/1 outcomes that belongs to :func:`mcnemar`:
    exact, conditional on the ``m`` discordant pairs (the Clopper-Pearson interval of the share ``only_a / m``,
    mapped to ``(2 share - 1) m / n``). It excludes 0 exactly when McNemar's p < ``1 - level``, so an interval and
    a p value of one comparison never disagree (a bootstrap interval of the same difference may exclude 0 at
    p = 0.11). With no discordant pair: ``[-u, u]``, ``u`` the exact upper bound of the discordant rate (0 of n).

    Example:
        >>> a, b = [1] * 8 + [0] * 2 + [0] * 190, [0] * 8 + [1] * 2 + [0] * 190
        >>> lo, hi = mcnemar_interval(a, b)
        >>> round(mcnemar(a, b), 3), lo < 0 < hi
        (0.109, True)
    """
    _check_level(level)
    only_a, only_b = _discordant(a, b)
    n = int(np.asarray(a).size)
    if n == 0:
        return float("nan"), float("nan")
    m = only_a + only_b
    if m == 0:
        u = clopper_pearson(0, n, level)[1]
        return -u, u
    lo, hi = clopper_pearson(only_a, m, level)
    return (2.0 * lo - 1.0) * m / n, (2.0 * hi - 1.0) * m / n
