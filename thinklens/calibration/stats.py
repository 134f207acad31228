"""Intervals, paired tests and findings: the one place a thinklens number gets its uncertainty.

Every job reports its headline claims as :class:`Finding` s (``{claim, statistic, value, ci, n, control,
control_value, verdict}``; shared/specs/controls.md), built with the functions here, so that no job
computes an interval or a verdict its own way:

- accuracies: :func:`wilson` (default) or :func:`clopper_pearson` (exact; used for bounds a guarantee
  must not overstate);
- two independent proportions: :func:`rate_difference` (Newcombe's interval of their difference);
- a statistic over problems or trajectories: :func:`bootstrap_ci` (percentile bootstrap over the units);
- a comparison on the same units: :func:`paired_bootstrap` (difference of means with its interval and a
  two-sided p value), :func:`sign_flip_test` (paired permutation), :func:`mcnemar` (exact, paired 0/1) with
  :func:`mcnemar_interval` (the interval of the same exact test, so that interval and p never disagree);
- a sweep that picks its best point: :func:`holm` (corrected p values), or choose on one split and report
  on another (:func:`split_indices`).

Verdicts (:data:`VERDICTS`), one meaning each: ``effect`` (the interval excludes the control, or the paired test
is significant, in the claimed direction), ``no effect`` (the control lies inside the interval, the test is not
significant, or the control does significantly better), ``at ceiling`` (a higher-is-better control within
``ceiling_margin`` of the top of its scale, e.g. an accuracy of 1.0: nothing above it to show), ``no headroom``
(the control leaves too little room for any effect to reach significance: :func:`no_headroom`'s 59/60 right, or a
lower-is-better rate already at its floor, e.g. 0: never called "at ceiling"), ``too few samples`` (fewer units
than ``min_n``). Neither ``at ceiling`` nor ``no headroom`` is said where the control wins.

Example:
    >>> lo, hi = wilson(45, 50)
    >>> round(lo, 3), round(hi, 3)
    (0.786, 0.957)
    >>> f = accuracy_finding("steered accuracy", 45, 50, control="alpha 0", control_k=30, control_n=50)
    >>> f.verdict, f.n
    ('effect', 50)
    >>> accuracy_finding("steered accuracy", 31, 50, control="alpha 0", control_k=30, control_n=50).verdict
    'no effect'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from thinklens.errors import ThinklensError

Verdict = Literal["effect", "no effect", "at ceiling", "no headroom", "too few samples"]
VERDICTS: tuple[str, ...] = ("effect", "no effect", "at ceiling", "no headroom", "too few samples")
LEVEL = 0.95
#: Fewer units than this and a finding says "too few samples" whatever its interval.
MIN_N = 10


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
    from scipy.stats import binomtest

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
    from scipy.stats import binomtest

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
    from scipy.stats import binomtest

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


# ---------------------------------------------------------------- findings


@dataclass(frozen=True)
class Finding:
    """One headline claim with what it is measured against (shared/specs/controls.md)."""

    claim: str
    """What is claimed, in words a reader can check (``"LYNX saves reasoning tokens at delta 0.1"``)."""
    statistic: str
    """The name of the measured quantity (``saving``, ``accuracy``, ``mean MI``)."""
    value: float
    """Its value."""
    ci: tuple[float, float]
    """Its 95% interval."""
    n: int
    """Units it rests on (problems, trajectories, events)."""
    control: str
    """What it is compared against (``"shuffled answers"``, ``"alpha 0"``); empty for none."""
    control_value: float | None
    """The control's value of the same statistic."""
    verdict: Verdict
    """effect, no effect, at ceiling, no headroom or too few samples (:data:`VERDICTS`)."""
    p: float | None = None
    """The paired test's p value, when a test decided the verdict."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Anything else a reader needs (the test used, the chosen point, per-split values)."""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ThinklensError.of("verdict", self.verdict, " / ".join(VERDICTS), "build findings with thinklens.calibration.stats")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form a summary holds (the ``findings`` list)."""
        doc = asdict(self)
        doc["ci"] = [_num(self.ci[0]), _num(self.ci[1])]
        doc["value"] = _num(self.value)
        doc["control_value"] = None if self.control_value is None else _num(self.control_value)
        if self.p is None:
            doc.pop("p")
        else:
            doc["p"] = _num(self.p)
        if not self.extra:
            doc.pop("extra")
        return doc

    @property
    def is_effect(self) -> bool:
        """Whether the verdict is ``effect`` (the only verdict a headline may state as a finding)."""
        return self.verdict == "effect"

    def line(self) -> str:
        """One printable line: ``claim: statistic=value [lo, hi] (n=..., control ... = ...) -> verdict``."""
        ctrl = f", {self.control} {_fmt(self.control_value)}" if self.control else ""
        p = f", p={_fmt(self.p)}" if self.p is not None else ""
        return (f"{self.claim}: {self.statistic}={_fmt(self.value)} [{_fmt(self.ci[0])}, {_fmt(self.ci[1])}] "
                f"(n={self.n}{ctrl}{p}) -> {self.verdict}")


def _num(x: float) -> float | None:
    x = float(x)
    return None if math.isnan(x) else round(x, 6)


def _fmt(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "nan"
    return f"{x:.4g}"


def verdict_from_interval(ci: tuple[float, float], control_value: float | None, *, n: int, higher_is_effect: bool = True,
                          min_n: int = MIN_N, ceiling: float | None = None, ceiling_margin: float = 0.0) -> Verdict:
    """The verdict of a value whose interval is compared with a control value.

    ``effect`` when the interval lies wholly on the claimed side of the control (above it when
    ``higher_is_effect``); when the control is within ``ceiling_margin`` of ``ceiling`` (the best value of the
    claimed direction) and the interval is not wholly on the other side of it: ``at ceiling`` for a higher-is-better
    value, ``no headroom`` for a lower-is-better one (a rate already at 0 is at its floor, not at a ceiling);
    ``too few samples`` below ``min_n`` units.

    Example:
        >>> verdict_from_interval((0.6, 0.8), 0.5, n=100), verdict_from_interval((0.4, 0.8), 0.5, n=100)
        ('effect', 'no effect')
        >>> verdict_from_interval((0.97, 1.0), 0.99, n=100, ceiling=1.0, ceiling_margin=0.02)
        'at ceiling'
        >>> verdict_from_interval((0.0, 0.05), 0.0, n=100, higher_is_effect=False, ceiling=0.0)
        'no headroom'
        >>> verdict_from_interval((0.5, 0.7), 1.0, n=100, ceiling=1.0)  # the control wins: not "at ceiling"
        'no effect'
    """
    if n < min_n:
        return "too few samples"
    if control_value is None:
        raise ThinklensError.of("control value", None, "a number to compare the interval with", "give the control")
    lo, hi = ci
    control_wins = hi < control_value if higher_is_effect else lo > control_value
    if ceiling is not None and abs(ceiling - control_value) <= ceiling_margin and not control_wins:
        return "at ceiling" if higher_is_effect else "no headroom"
    if higher_is_effect:
        return "effect" if lo > control_value else "no effect"
    return "effect" if hi < control_value else "no effect"


def verdict_from_test(p: float, diff: float, *, n: int, alpha: float = 0.05, higher_is_effect: bool = True,
                      min_n: int = MIN_N) -> Verdict:
    """The verdict of a paired test: ``effect`` when ``p < alpha`` and the difference has the claimed sign.

    Example:
        >>> verdict_from_test(0.001, 0.2, n=50), verdict_from_test(0.001, -0.2, n=50), verdict_from_test(0.2, 0.2, n=50)
        ('effect', 'no effect', 'no effect')
    """
    if n < min_n:
        return "too few samples"
    right_way = diff > 0 if higher_is_effect else diff < 0
    return "effect" if p < alpha and right_way else "no effect"


def no_headroom(control_k: int, control_n: int, *, higher_is_effect: bool = True, alpha: float = 0.05) -> bool:
    """Whether a control at ``control_k / control_n`` leaves no room for an effect to show: even a method that fixed
    every problem the control gets wrong (or broke every one it gets right, when lower is the effect) and changed
    nothing else would not reach ``p < alpha`` in an exact McNemar test (``2 * 0.5 ** room``).

    The test is two-sided (as :func:`mcnemar` is), so 55/60 (five to fix: one-sided 0.031, two-sided 0.0625) has
    no headroom.

    Example:
        >>> no_headroom(59, 60), no_headroom(55, 60), no_headroom(54, 60), no_headroom(59, 60, higher_is_effect=False)
        (True, True, False, False)
    """
    room = control_n - control_k if higher_is_effect else control_k
    return min(1.0, 2.0 * 0.5 ** room) >= alpha


def accuracy_finding(claim: str, k: int, n: int, *, control: str = "", control_k: int | None = None,
                     control_n: int | None = None, control_value: float | None = None, statistic: str = "accuracy",
                     ceiling_margin: float = 0.0, min_n: int = MIN_N, higher_is_effect: bool = True) -> Finding:
    """An accuracy ``k / n`` with its Wilson interval against an unpaired control (its own ``k / n`` or a fixed value).

    ``effect``: the control's point lies outside the interval on the claimed side and, when the control has its own
    counts, the two Wilson intervals do not overlap (a conservative unpaired test). For a control graded on the
    same problems use :func:`paired_accuracy_finding`.

    ``no headroom`` when the difference is not significant and :func:`no_headroom` says no method could have shown
    one; never where the control's interval lies wholly on the claimed side of the method's (the control wins).

    Example:
        >>> accuracy_finding("x", 10, 10, control="alpha 0", control_k=10, control_n=10, ceiling_margin=0.01).verdict
        'at ceiling'
        >>> accuracy_finding("x", 55, 60, control="alpha 0", control_k=57, control_n=60).verdict
        'no headroom'
    """
    ci = wilson(k, n)
    value = k / n if n else float("nan")
    extra: dict[str, Any] = {"interval": "wilson"}
    if control_k is not None and control_n is not None:
        control_value = control_k / control_n if control_n else float("nan")
        cci = wilson(control_k, control_n)
        extra["control_ci"] = [_num(cci[0]), _num(cci[1])]
        verdict = verdict_from_interval(ci, control_value, n=min(n, control_n), min_n=min_n, ceiling=1.0 if higher_is_effect else 0.0,
                                        ceiling_margin=ceiling_margin, higher_is_effect=higher_is_effect)
        if verdict == "effect" and (ci[0] <= cci[1] if higher_is_effect else ci[1] >= cci[0]):
            verdict = "no effect"
        control_wins = ci[1] < cci[0] if higher_is_effect else ci[0] > cci[1]
        if control_wins:
            verdict, extra["control_wins"] = ("too few samples" if verdict == "too few samples" else "no effect"), True
        elif verdict == "no effect" and no_headroom(control_k, control_n, higher_is_effect=higher_is_effect):
            verdict = "no headroom"
    elif control_value is not None:
        verdict = verdict_from_interval(ci, control_value, n=n, min_n=min_n, ceiling=1.0 if higher_is_effect else 0.0,
                                        ceiling_margin=ceiling_margin, higher_is_effect=higher_is_effect)
    else:
        verdict = "too few samples" if n < min_n else "effect"
    return Finding(claim, statistic, value, ci, n, control, control_value, verdict, extra=extra)


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


def paired_finding(claim: str, values: Sequence[float] | np.ndarray, control_values: Sequence[float] | np.ndarray, *,
                   control: str, statistic: str, alpha: float = 0.05, higher_is_effect: bool = True, min_n: int = MIN_N,
                   seed: int = 0, ceiling: float | None = None, ceiling_margin: float = 0.0, binary: bool = False) -> Finding:
    """A statistic over units against its control on the same units (paired).

    ``value`` and ``ci`` are the method's mean with its interval (Wilson for 0/1 outcomes, else bootstrap);
    ``control_value`` the control's mean; the verdict comes from the paired test on the difference, so correlated
    units do not inflate it. ``extra`` holds the difference (``diff``), its interval (``diff_ci``) and the names of
    both (``test``, ``diff_interval``). 0/1 outcomes (``binary``): exact McNemar, and the difference's interval is
    that test's own (:func:`mcnemar_interval`: it excludes 0 exactly when p < alpha at level 1 - alpha). Otherwise
    the sign-flip permutation test and a percentile bootstrap interval of the mean difference: two statistics,
    each named. A control that does significantly better is ``no effect`` (``extra["control_wins"]``), never
    ``at ceiling`` or ``no headroom``.

    Example:
        >>> f = paired_finding("MI beats shuffled", [0.5, 0.6, 0.7] * 10, [0.1, 0.1, 0.2] * 10, control="shuffled", statistic="mean MI")
        >>> f.verdict, round(f.extra["diff"], 3), f.extra["test"]
        ('effect', 0.467, 'sign-flip permutation')
    """
    a, b = _as_array(values, f"{statistic} values"), _as_array(control_values, f"{control} values")
    pr = paired_bootstrap(a, b, seed=seed)
    if binary:
        p = mcnemar(a.astype(bool), b.astype(bool))
        ci = wilson(int(a.sum()), int(a.size)) if a.size else (float("nan"), float("nan"))
        diff_ci = mcnemar_interval(a.astype(bool), b.astype(bool), level=1.0 - alpha)
        names = {"test": "mcnemar", "diff_interval": f"exact McNemar ({1 - alpha:.0%}, conditional on discordant pairs)"}
    else:
        p = pr.p
        ci = bootstrap_ci(a, seed=seed) if a.size else (float("nan"), float("nan"))
        diff_ci = pr.ci
        names = {"test": "sign-flip permutation", "diff_interval": "percentile bootstrap over units (95%)"}
    control_value = float(b.mean()) if b.size else float("nan")
    verdict = verdict_from_test(p, pr.diff, n=pr.n, alpha=alpha, higher_is_effect=higher_is_effect, min_n=min_n)
    control_wins = verdict == "no effect" and p < alpha and (pr.diff < 0 if higher_is_effect else pr.diff > 0)
    at_bound = ceiling is not None and abs(ceiling - control_value) <= ceiling_margin
    if verdict in ("effect", "no effect") and at_bound and not control_wins:
        verdict = "at ceiling" if higher_is_effect else "no headroom"
    if verdict == "no effect" and binary and not control_wins and no_headroom(
            int(b.sum()), int(b.size), higher_is_effect=higher_is_effect, alpha=alpha):
        verdict = "no headroom"
    value = float(a.mean()) if a.size else float("nan")
    extra: dict[str, Any] = {"diff": _num(pr.diff), "diff_ci": [_num(diff_ci[0]), _num(diff_ci[1])], **names}
    if control_wins:
        extra["control_wins"] = True
    return Finding(claim, statistic, value, ci, pr.n, control, control_value, verdict, p=p, extra=extra)


def ratio_finding(claim: str, value: float, ci: tuple[float, float], *, n: int, statistic: str = "enrichment",
                  control: str = "no enrichment", null: float = 1.0, min_n: int = MIN_N) -> Finding:
    """A ratio (enrichment, speed-up) whose interval must exclude its null value (1 by default).

    Example:
        >>> ratio_finding("'wait' at peaks", 1.007, (0.33, 1.80), n=40).verdict
        'no effect'
    """
    verdict = verdict_from_interval(ci, null, n=n, min_n=min_n)
    return Finding(claim, statistic, float(value), (float(ci[0]), float(ci[1])), n, control, null, verdict)


def findings_doc(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """The ``findings`` list of a summary."""
    return [f.to_dict() for f in findings]


def headline(finding: Finding | dict[str, Any], *, effect: str, otherwise: str) -> str:
    """A headline that never states a claim whose verdict is not ``effect`` as if it were one.

    Example:
        >>> f = ratio_finding("'so' at peaks", 1.007, (0.33, 1.8), n=40)
        >>> headline(f, effect="thinking word 'so'", otherwise="no thinking word is enriched")
        'no thinking word is enriched (no effect)'
    """
    verdict = finding.verdict if isinstance(finding, Finding) else finding["verdict"]
    return effect if verdict == "effect" else f"{otherwise} ({verdict})"


def finding_sentence(finding: Finding | dict[str, Any]) -> str:
    """A finding in words, as the CLI's closing lines, the Home card and the page headlines state it.

    An ``effect`` is stated as a finding; any other verdict says what was not shown and why (the finding's
    ``extra["otherwise"]`` when the job gave a wording of its own, e.g. "random vectors do as well").

    Example:
        >>> f = ratio_finding("'so' is enriched at MI peaks", 1.007, (0.33, 1.8), n=40)
        >>> finding_sentence(f)
        "not shown (no effect): 'so' is enriched at MI peaks; enrichment 1.007 [0.33, 1.8] against no enrichment 1, n=40"
        >>> finding_sentence(ratio_finding("'wait' is enriched at MI peaks", 3.2, (2.1, 4.5), n=40))
        "'wait' is enriched at MI peaks: enrichment 3.2 [2.1, 4.5] against no enrichment 1, n=40"
    """
    d = finding.to_dict() if isinstance(finding, Finding) else dict(finding)
    ci = d.get("ci") or [None, None]
    value = "" if d.get("control_value") is None else f" {_fmt(d.get('control_value'))}"
    against = f" against {d['control']}{value}" if d.get("control") else ""
    numbers = f"{d.get('statistic', '?')} {_fmt(d.get('value'))} [{_fmt(ci[0])}, {_fmt(ci[1])}]{against}, n={d.get('n', '?')}"
    if d.get("verdict") == "effect":
        return f"{d.get('claim', '?')}: {numbers}"
    otherwise = (d.get("extra") or {}).get("otherwise")
    what = otherwise or f"not shown ({d.get('verdict', '?')}): {d.get('claim', '?')}"
    return f"{what}; {numbers}" if not otherwise else f"{what} ({d.get('verdict', '?')}; {numbers})"
