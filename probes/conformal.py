"""Class-conditional (Mondrian) split conformal prediction for a binary probe (LYNX step 6).

Given probe probabilities ``p = P(y=1 | x)`` on a calibration set disjoint from the probe's
training data, the nonconformity score of a positive event is ``1 - p`` and of a negative event
``p``. For class c with ``n_c`` calibration scores, ``q_c`` is the k-th smallest with
``k = ceil((n_c + 1)(1 - delta))``. The prediction set of a new event is
``S(x) = {1 if 1 - p <= q_pos} | {0 if p <= q_neg}``; LYNX exits at an event whose set is {1}.

Guarantee (stated precisely). Fix delta and a class c. If the calibration events of class c
and a new event of class c are exchangeable, then ``P(c not in S(x) | y = c) <= delta``, the
probability taken over the calibration draw and the new event together. For c = 0 this bounds
what LYNX needs: ``P(S(x) = {1} | y = 0) <= delta``, i.e. an event whose forced exit would be wrong
is declared safe to exit with probability at most delta. The bound is per cue event, not per
trajectory: a rollout scanned over m events has up to m chances to exit wrongly, and events of one
rollout are not exchangeable with each other in general. It is marginal, not conditional on the
calibration set; a particular calibration set can do worse (the spread shrinks as ``n_c`` grows).
:func:`validity_curve` measures it on a third split, with a one-sided exact binomial test of the bound at
delta and the test's power against a violation of :data:`VIOLATION` (the bound is shown only when it is not
rejected and the test had power :data:`MIN_POWER` to reject a rate of delta + :data:`VIOLATION`).

``delta`` is read as the decimal it prints as (``Fraction(repr(delta))``), so ``k`` is exact:
``ceil(20 * 0.95)`` is 19, not the 20 that floating point rounding can give.

Example:
    >>> import numpy as np
    >>> cal = MondrianCalibrator.fit(p_cal=np.array([0.9, 0.8, 0.7, 0.6, 0.2, 0.1, 0.3, 0.4]),
    ...                              y_cal=np.array([1, 1, 1, 1, 0, 0, 0, 0]))
    >>> cal.thresholds(0.2)  # k = ceil(5 * 0.8) = 4: the largest of 4 scores per class
    (0.4, 0.4)
    >>> cal.prediction_sets(np.array([0.95, 0.5, 0.05]), 0.2).astype(int).tolist()  # [has 0, has 1]
    [[0, 1], [0, 0], [1, 0]]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.stats import binom, binomtest

from thinklens.calibration import stats
from thinklens.errors import ThinklensError

#: The smallest violation of the per-event bound (a true ``P(S={1}|y=0)`` of delta + this) the validity test must
#: detect before a bound that is not rejected counts as shown (19/379 = 0.0501 at delta 0.05 is not shown).
VIOLATION = 0.02
#: The power the validity test needs against delta + :data:`VIOLATION` (below it: "not shown, underpowered").
MIN_POWER = 0.8


def _check_delta(delta: float) -> Fraction:
    try:
        value = float(delta)
    except (TypeError, ValueError):
        value = float("nan")
    if not 0.0 < value < 1.0:
        raise ThinklensError.of("delta", delta, "a miscoverage level strictly between 0 and 1",
                                "use e.g. 0.05 (LYNX sweeps 0.01, 0.02, 0.03, 0.05, 0.10)")
    return Fraction(repr(value))


def min_calibration_events(delta: float) -> int:
    """The smallest class size ``n`` with ``ceil((n + 1)(1 - delta)) <= n`` (non-vacuous quantile).

    Example:
        >>> [min_calibration_events(d) for d in (0.01, 0.05, 0.1, 0.3)]
        [99, 19, 9, 3]
    """
    d = _check_delta(delta)
    return math.ceil((1 - d) / d)


def conformal_rank(n: int, delta: float) -> int:
    """``k = ceil((n + 1)(1 - delta))``, the rank of the class quantile among ``n`` scores.

    Raises a :class:`ThinklensError` when ``k > n``: the quantile would be +inf (every set would
    contain the class) and the reference's clipping to ``n`` would silently void the guarantee.

    Example:
        >>> conformal_rank(19, 0.05), conformal_rank(100, 0.1)
        (19, 91)
    """
    d = _check_delta(delta)
    k = max(1, math.ceil((n + 1) * (1 - d)))
    if n < 1 or k > n:
        need = min_calibration_events(delta)
        raise ThinklensError.of(
            "calibration class size", f"{n} events at delta={delta}",
            f"at least {need} calibration events of each class (ceil((n+1)(1-delta)) <= n)",
            f"collect at least {need} events per class, or raise delta",
        )
    return k


def class_quantile(scores: np.ndarray, delta: float) -> float:
    """The k-th smallest of ``scores`` [n] with ``k = conformal_rank(n, delta)``.

    Example:
        >>> class_quantile(np.array([0.5, 0.1, 0.3, 0.2, 0.4]), 0.3)  # k = ceil(6 * 0.7) = 5
        0.5
    """
    scores = np.sort(np.asarray(scores, dtype=np.float64).ravel())
    return float(scores[conformal_rank(scores.shape[0], delta) - 1])


def prediction_sets(p: np.ndarray, q_pos: float, q_neg: float) -> np.ndarray:
    """Sets for probabilities ``p`` [n] as a bool array [n, 2]: column c says "c is in the set"."""
    p = _check_probabilities(p, "p")
    return np.column_stack([p <= q_neg, 1.0 - p <= q_pos])


@dataclass(frozen=True, eq=False)
class MondrianCalibrator:
    """Sorted calibration scores per class; quantiles for any delta are read off on demand.

    Build with :meth:`fit`; it is a value (frozen), cheap to query at many deltas.
    """

    scores_pos: np.ndarray
    """Sorted nonconformity scores ``1 - p`` of the calibration positives (y = 1)."""
    scores_neg: np.ndarray
    """Sorted nonconformity scores ``p`` of the calibration negatives (y = 0)."""

    @classmethod
    def fit(cls, p_cal: np.ndarray, y_cal: np.ndarray) -> MondrianCalibrator:
        """Calibrate on probabilities ``p_cal`` [n] and binary labels ``y_cal`` [n] (0/1 or bool)."""
        p = _check_probabilities(p_cal, "p_cal")
        y = _check_binary(y_cal, "y_cal", p.shape[0])
        return cls(scores_pos=np.sort(1.0 - p[y == 1]), scores_neg=np.sort(p[y == 0]))

    @property
    def n_pos(self) -> int:
        """Number of calibration positives."""
        return int(self.scores_pos.shape[0])

    @property
    def n_neg(self) -> int:
        """Number of calibration negatives."""
        return int(self.scores_neg.shape[0])

    def thresholds(self, delta: float) -> tuple[float, float]:
        """``(q_pos, q_neg)`` at miscoverage ``delta``; errors if a class is too small for it."""
        try:
            q_pos = class_quantile(self.scores_pos, delta)
            q_neg = class_quantile(self.scores_neg, delta)
        except ThinklensError as err:
            counts = f"(calibration has {self.n_pos} positives, {self.n_neg} negatives)"
            raise ThinklensError(f"{err} {counts}") from None
        return q_pos, q_neg

    def prediction_sets(self, p: np.ndarray, delta: float) -> np.ndarray:
        """Bool [n, 2] sets for probabilities ``p`` [n]; column 0: 0 in set, column 1: 1 in set."""
        return prediction_sets(p, *self.thresholds(delta))

    def exit_mask(self, p: np.ndarray, delta: float) -> np.ndarray:
        """Bool [n]: the set is exactly {1} (LYNX's "safe to exit here")."""
        sets = self.prediction_sets(p, delta)
        return sets[:, 1] & ~sets[:, 0]


@dataclass(frozen=True, eq=False)
class ValidityCurve:
    """Empirical ``P(S = {1} | y = 0)`` per delta on held-out events, with Clopper-Pearson bounds, the one-sided exact
    binomial test of the bound at delta and that test's power against a violation of ``violation``."""

    deltas: np.ndarray
    """The miscoverage levels, [d]."""
    rate: np.ndarray
    """Empirical rate of the set {1} among test negatives, [d] (nan without negatives)."""
    lower: np.ndarray
    """Two-sided Clopper-Pearson lower bound of the rate, [d]."""
    upper: np.ndarray
    """Two-sided Clopper-Pearson upper bound of the rate, [d]."""
    n_neg: int
    """Number of test negatives (the binomial trials)."""
    n_neg_set_one: np.ndarray
    """Test negatives (events whose forced exit is wrong) that get the set {1}, [d] (the binomial successes). These
    are events, not exits: a rollout exits once at most, at its first {1} (:attr:`PolicyOutcome.n_exit` counts those)."""
    confidence: float
    """Confidence level of the bounds; the binomial test's level is ``1 - confidence`` (one-sided)."""
    violation: float = VIOLATION
    """The violation the test must detect: its power is computed at a true rate of delta + ``violation``."""
    min_power: float = MIN_POWER
    """The power against that violation below which a bound that is not rejected is not shown (underpowered)."""

    @property
    def alpha(self) -> float:
        """Level of the one-sided binomial test (0.05 at confidence 0.95)."""
        return round(1.0 - self.confidence, 12)

    @property
    def p_value(self) -> np.ndarray:
        """One-sided exact binomial p value of ``H0: P(S={1}|y=0) <= delta`` per delta, [d] (nan without negatives)."""
        return np.array([violation_p_value(int(k), self.n_neg, float(d))
                         for k, d in zip(self.n_neg_set_one.tolist(), self.deltas.tolist())], dtype=np.float64)

    @property
    def power(self) -> np.ndarray:
        """Exact power of that test at level :attr:`alpha` against a true rate of delta + :attr:`violation`, [d]."""
        return np.array([binomial_power(self.n_neg, float(d), self.violation, self.alpha) for d in self.deltas.tolist()],
                        dtype=np.float64)

    @property
    def margin(self) -> np.ndarray:
        """Upper binomial margin ``upper - rate``, [d]."""
        return self.upper - self.rate

    @property
    def consistent(self) -> np.ndarray:
        """Bool [d]: the data do not reject ``P(S={1} | y=0) <= delta``: the one-sided exact binomial test at delta
        (``P(X >= k | n_neg, delta)``) is not below :attr:`alpha`. Not rejecting is not showing the bound: with few
        negatives almost any rate passes; :attr:`shown` also asks for the power to see a violation.

        Example:
            >>> lo, hi = clopper_pearson(np.array([45]), 319)  # 0.141: its interval [0.105, 0.184] lies above 0.1
            >>> ValidityCurve(np.array([0.1]), np.array([45 / 319]), lo, hi, 319, np.array([45]), 0.95).consistent.tolist()
            [False]
        """
        return ~(self.p_value < self.alpha)

    @property
    def shown(self) -> np.ndarray:
        """Bool [d]: the bound is shown to within :attr:`violation`: not rejected by a test whose power against
        delta + :attr:`violation` is at least :attr:`min_power`.

        Example:
            >>> lo, hi = clopper_pearson(np.array([19, 40]), 379)
            >>> c = ValidityCurve(np.array([0.05, 0.05]), np.array([19, 40]) / 379, lo, hi, 379, np.array([19, 40]), 0.95)
            >>> c.consistent.tolist(), c.shown.tolist(), c.power.round(2).tolist()  # 19/379 = 0.0501: not rejected, not shown
            ([True, False], [False, False], [0.49, 0.49])
        """
        return self.consistent & (self.power >= self.min_power)

    def verdict(self, i: int) -> str:
        """``rejected``, ``shown`` or ``underpowered`` (not rejected, but the test could not see a violation of
        :attr:`violation`) at delta ``deltas[i]``; ``not measured`` without negatives."""
        if self.n_neg == 0:
            return "not measured"
        if not bool(self.consistent[i]):
            return "rejected"
        return "shown" if bool(self.shown[i]) else "underpowered"

    def statement(self, i: int) -> str:
        """What the validity measurement at delta ``deltas[i]`` says, in words, with its exact interval, the test's p
        value and its power.

        Example:
            >>> lo, hi = clopper_pearson(np.array([2]), 40)
            >>> curve = ValidityCurve(np.array([0.1]), np.array([0.05]), lo, hi, 40, np.array([2]), 0.95)
            >>> curve.statement(0)  # doctest: +NORMALIZE_WHITESPACE
            'P(S={1}|y=0) = 2/40 = 0.05, exact 95% interval [0.00611, 0.169]; one-sided exact binomial test of <= 0.1:
            p = 0.92, not rejected at n=40, but its power against 0.12 is 0.1 (< 0.8): not shown (underpowered)'
        """
        d, k, n = float(self.deltas[i]), int(self.n_neg_set_one[i]), self.n_neg
        if n == 0:
            return f"P(S={{1}}|y=0) not measured at delta {d:g}: no test event has y=0"
        head = (f"P(S={{1}}|y=0) = {k}/{n} = {k / n:.3g}, exact {self.confidence:.0%} interval "
                f"[{self.lower[i]:.3g}, {self.upper[i]:.3g}]; one-sided exact binomial test of <= {d:g}: "
                f"p = {self.p_value[i]:.2g}")
        power = f"its power against {d + self.violation:g} is {self.power[i]:.2g}"
        verdict = self.verdict(i)
        if verdict == "rejected":
            return f"{head}: the bound is rejected at n={n}"
        if verdict == "shown":
            return f"{head}, not rejected at n={n}, and {power} (>= {self.min_power:g}): shown to within {self.violation:g}"
        return f"{head}, not rejected at n={n}, but {power} (< {self.min_power:g}): not shown (underpowered)"

    def to_dict(self) -> dict:
        """Plain lists, for a run folder's results json."""
        return {"deltas": self.deltas.tolist(), "rate": self.rate.tolist(), "lower": self.lower.tolist(),
                "upper": self.upper.tolist(), "n_neg": self.n_neg, "n_neg_set_one": self.n_neg_set_one.tolist(),
                "confidence": self.confidence, "violation": self.violation, "min_power": self.min_power,
                "p_value": self.p_value.tolist(), "power": self.power.tolist()}


def violation_p_value(k: int, n: int, delta: float) -> float:
    """One-sided exact binomial p value of ``H0: rate <= delta`` for ``k`` of ``n`` (scipy.stats.binomtest,
    ``alternative="greater"``); nan for ``n = 0``.

    Example:
        >>> round(violation_p_value(19, 379, 0.05), 3), round(violation_p_value(45, 319, 0.1), 4)
        (0.528, 0.012)
    """
    return float("nan") if n <= 0 else float(binomtest(int(k), int(n), float(delta), alternative="greater").pvalue)


def binomial_power(n: int, delta: float, violation: float, alpha: float = 0.05) -> float:
    """Exact power of the one-sided binomial test of ``rate <= delta`` at level ``alpha`` with ``n`` trials, when the
    true rate is ``delta + violation``: ``P(X >= c)`` for the smallest ``c`` with ``P(X >= c | delta) < alpha``.

    Example:
        >>> round(binomial_power(379, 0.05, 0.02), 3), round(binomial_power(1600, 0.1, 0.02), 3)
        (0.491, 0.811)
    """
    if n <= 0:
        return 0.0
    c = int(binom.isf(alpha, n, delta))  # about the critical count; the loops make it exact
    while c <= n and binom.sf(c - 1, n, delta) >= alpha:
        c += 1
    while c > 0 and binom.sf(c - 2, n, delta) < alpha:
        c -= 1
    return float(binom.sf(c - 1, n, min(1.0, delta + violation))) if c <= n else 0.0


def clopper_pearson(k: np.ndarray, n: int, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Exact two-sided binomial interval for ``k`` successes in ``n`` trials, elementwise.

    Example:
        >>> lo, hi = clopper_pearson(np.array([0, 5]), 10)
        >>> lo.round(4).tolist(), hi.round(4).tolist()
        ([0.0, 0.1871], [0.3085, 0.8129])
    """
    k = np.asarray(k)
    bounds = [stats.clopper_pearson(int(ki), int(max(n, 0)), level=confidence) for ki in k.ravel()]  # the one exact interval
    lower = np.array([b[0] for b in bounds], dtype=np.float64).reshape(k.shape)
    upper = np.array([b[1] for b in bounds], dtype=np.float64).reshape(k.shape)
    return lower, upper


def validity_curve(p_test: np.ndarray, y_test: np.ndarray, calibrator: MondrianCalibrator,
                   deltas: np.ndarray | list[float], confidence: float = 0.95, *, violation: float = VIOLATION,
                   min_power: float = MIN_POWER) -> ValidityCurve:
    """Measure the LYNX guarantee on a split disjoint from training and calibration.

    Args:
        p_test: [n] probe probabilities on the test events.
        y_test: [n] binary labels (1 = the forced exit at this event is correct).
        calibrator: fitted on the calibration split.
        deltas: miscoverage levels to evaluate.
        confidence: level of the Clopper-Pearson interval (the binomial test's level is ``1 - confidence``).
        violation: the violation of the bound the test's power is computed against (delta + violation).
        min_power: the power below which a bound that is not rejected is not shown.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> y = rng.integers(0, 2, 4000); p = np.clip(0.5 * y + 0.5 * rng.random(4000), 0, 1)
        >>> cal = MondrianCalibrator.fit(p[:2000], y[:2000])
        >>> bool(validity_curve(p[2000:], y[2000:], cal, [0.05, 0.1]).consistent.all())
        True
    """
    p = _check_probabilities(p_test, "p_test")
    y = _check_binary(y_test, "y_test", p.shape[0])
    deltas = np.asarray(deltas, dtype=np.float64).ravel()
    neg = p[y == 0]
    n_neg = int(neg.shape[0])
    n_one = np.array([int(calibrator.exit_mask(neg, float(d)).sum()) for d in deltas], dtype=np.int64)
    rate = n_one / n_neg if n_neg else np.full(deltas.shape, np.nan)
    lower, upper = clopper_pearson(n_one, n_neg, confidence)
    return ValidityCurve(deltas=deltas, rate=np.asarray(rate, dtype=np.float64), lower=lower, upper=upper,
                         n_neg=n_neg, n_neg_set_one=n_one, confidence=confidence, violation=violation,
                         min_power=min_power)


def _check_probabilities(p: np.ndarray, name: str) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1:
        raise ThinklensError.of(name, f"an array of shape {p.shape}", "a 1-d array of P(y=1) per event",
                                "pass predict_proba(X)[:, 1]")
    if p.size and not (np.all(np.isfinite(p)) and p.min() >= 0.0 and p.max() <= 1.0):
        raise ThinklensError.of(name, f"values in [{np.nanmin(p)}, {np.nanmax(p)}] (finite: "
                                f"{bool(np.all(np.isfinite(p)))})", "probabilities in [0, 1]",
                                "pass probabilities, not logits (predict_proba(X)[:, 1])")
    return p


def _check_binary(y: np.ndarray, name: str, n: int) -> np.ndarray:
    y = np.asarray(y)
    if y.shape != (n,):
        raise ThinklensError.of(name, f"shape {y.shape}", f"shape ({n},) matching the probabilities",
                                "pass one label per event")
    values = set(np.unique(y).tolist())
    if not values <= {0, 1}:
        raise ThinklensError.of(name, f"labels {sorted(values, key=str)[:5]}", "binary labels 0/1",
                                "label events 1 when the forced exit answers correctly, else 0")
    return y.astype(np.int64)
