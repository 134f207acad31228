"""Equivalence tests: "no effect" shown, not assumed from a non-significant difference.

A null setting passes only where the measured effect lies inside a margin of no practical effect stated before the
run: two one-sided tests (TOST, Schuirmann 1987) at level alpha, which is the same as the ``1 - 2 alpha`` interval
lying inside ``[-margin, +margin]``. A difference that is merely not significant, on too few units to tell, is
``too few samples``, not ``no effect``.

Example:
    >>> r = tost_mean([0.01, -0.02, 0.0, 0.015, -0.01, 0.005, 0.0, -0.005], margin=0.05)
    >>> r.equivalent, round(r.mean, 4)
    (True, -0.0006)
    >>> tost_mean([0.3, 0.2, 0.25, 0.35], margin=0.05).equivalent
    False
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from thinklens.errors import ThinklensError


@dataclass(frozen=True)
class Equivalence:
    """The result of a TOST on a mean."""

    mean: float
    """The mean difference."""
    ci: tuple[float, float]
    """Its ``1 - 2 alpha`` interval (90% at alpha 0.05): equivalence holds when it lies inside the margin."""
    margin: float
    """The margin of no practical effect, stated beforehand."""
    p: float
    """The TOST p-value (the larger of the two one-sided p-values)."""
    n: int
    """Units."""

    @property
    def equivalent(self) -> bool:
        """Whether the effect is shown to lie within ``[-margin, +margin]``."""
        return -self.margin < self.ci[0] and self.ci[1] < self.margin


def tost_mean(diffs: Sequence[float] | np.ndarray, *, margin: float, alpha: float = 0.05,
              bounds: tuple[float, float] | None = None) -> Equivalence:
    """TOST of ``mean(diffs)`` against ``[-margin, +margin]`` with Student's t (paired differences, one per unit).

    Units that all differ by the same amount give Student's t nothing to go on (a zero-width interval whatever n). With
    ``bounds`` (the range a difference can take: ``(-1, 1)`` for a paired change of a 0/1 outcome) the interval is then
    the exact one: no unit of ``n`` seen to deviate bounds the share of deviating units at ``1 - alpha ** (1 / n)``
    (Clopper-Pearson's one-sided bound for 0 of n), each by at most the distance from the mean to the farther end of the range.
    Without bounds such a sample shows nothing (``p`` 1, an unbounded interval).

    Example:
        >>> [round(x, 4) for x in tost_mean([0.0] * 60, margin=0.02, bounds=(-1, 1)).ci]  # 0 of 60 changed
        [-0.0487, 0.0487]
        >>> tost_mean([0.0] * 60, margin=0.02).equivalent
        False
    """
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 1 or len(d) < 2 or not np.isfinite(d).all():
        raise ThinklensError.of("differences", f"{len(d)} values", "at least 2 finite paired differences",
                                "score more units")
    if not margin > 0:
        raise ThinklensError.of("equivalence margin", margin, "a number > 0", "state the margin of no practical effect")
    n, mean = len(d), float(d.mean())
    se = float(d.std(ddof=1) / np.sqrt(n))
    if se == 0.0:
        if bounds is None:
            return Equivalence(mean, (-np.inf, np.inf), margin, 1.0, n)
        lo, hi = bounds
        half = (1.0 - alpha ** (1.0 / n)) * max(hi - mean, mean - lo)  # share that could deviate unseen x its widest
        inside = -margin < mean - half and mean + half < margin
        return Equivalence(mean, (mean - half, mean + half), margin, alpha if inside else 1.0, n)
    t = stats.t(df=n - 1)
    half = float(t.ppf(1 - alpha)) * se
    p_low = float(t.sf((mean + margin) / se))  # H0: mean <= -margin
    p_high = float(t.cdf((mean - margin) / se))  # H0: mean >= +margin
    return Equivalence(mean, (mean - half, mean + half), margin, max(p_low, p_high), n)


def units_needed(diffs: Sequence[float] | np.ndarray, *, margin: float, alpha: float = 0.05,
                 power: float = 0.8) -> int | None:
    """About how many units a TOST of ``mean(diffs)`` within ``+-margin`` needs to show equivalence with probability
    ``power``, if the true mean and SD are the observed ones: ``n = ((z(1 - alpha) + z(power)) sd / (margin - |mean|))^2``
    (the normal approximation; Chow, Shao and Wang 2008, section 3.2.3). None when ``|mean| >= margin`` (no size shows
    it) or the sample has no spread.

    Example:
        >>> units_needed([0.04, -0.05, 0.01, -0.03, 0.06, -0.02, 0.0, 0.03], margin=0.03)
        14
        >>> units_needed([0.2, 0.3, 0.25], margin=0.05) is None
        True
    """
    d = np.asarray(diffs, dtype=float)
    sd = float(d.std(ddof=1)) if len(d) >= 2 else 0.0
    room = margin - abs(float(d.mean())) if len(d) else 0.0
    if not sd > 0 or not room > 0:
        return None
    z = float(stats.norm.ppf(1 - alpha) + stats.norm.ppf(power))
    return int(np.ceil((z * sd / room) ** 2))
