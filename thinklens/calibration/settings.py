"""Planted and null settings of the findings themselves (:mod:`thinklens.calibration.stats`): the verdict rules are
an instrument too, so they are calibrated like every method.

- ``findings planted``: accuracies on the same 400 problems with a planted gain (control 0.50, method
  0.65, drawn independently per problem). Over many simulated
  experiments, the share whose :func:`~thinklens.calibration.findings.paired_finding` says ``effect`` (the power) must be
  shown to be at least 0.8: the lower end of its exact 95% interval clears 0.8 (a point estimate of 0.8 with an
  interval [0.708, 0.873] is not a recovery). On 200 problems the power was 0.822 [0.797, 0.845]:
  too close to 0.8 to show it, so the experiment has 400 (power about 0.98).
- ``findings null``: the same experiment with no gain (method and control draw from one accuracy,
  independently per problem). The share of ``effect`` verdicts (false positives) must be shown to stay within
  :data:`FPR_MARGIN` of the test's level 0.05, stated beforehand: the upper end of its exact 95% interval lies below
  0.07 (an equivalence bound; an interval that merely reaches down to 0.05 on few experiments does not pass).

Example:
    >>> [s.key for s in SETTINGS]
    ['findings/planted', 'findings/null']
"""

from __future__ import annotations

import numpy as np

from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.calibration.findings import paired_finding
from thinklens.calibration.stats import clopper_pearson

ALPHA = 0.05
MIN_POWER = 0.8
#: Problems per simulated planted experiment (power about 0.98 for the 15-point gain: clearly above MIN_POWER).
PLANTED_PROBLEMS = 400
#: How far above ALPHA the null's false-positive rate may be and still count as the test's level (stated beforehand).
FPR_MARGIN = 0.02


def power_verdict(ci: tuple[float, float], target: float = MIN_POWER) -> str:
    """``recovered`` only when the lower end of the power's interval clears ``target``.

    Example:
        >>> power_verdict((0.708, 0.873)), power_verdict((0.797, 0.845)), power_verdict((0.93, 0.99))
        ('failed', 'failed', 'recovered')
    """
    return "recovered" if ci[0] >= target else "failed"


def fpr_verdict(ci: tuple[float, float], alpha: float = ALPHA, margin: float = FPR_MARGIN) -> str:
    """``no-effect`` only when the upper end of the false-positive rate's interval lies below ``alpha + margin``.

    Example:
        >>> fpr_verdict((0.012, 0.024)), fpr_verdict((0.0, 0.09))
        ('no-effect', 'failed')
    """
    return "no-effect" if ci[1] < alpha + margin else "failed"


def simulate_verdicts(gain: float, *, n_problems: int, n_experiments: int, base: float = 0.5, seed: int = 0) -> np.ndarray:
    """``[n_experiments]`` booleans: whether :func:`paired_finding` says ``effect`` in each simulated experiment.

    The control is right with probability ``base``, the method, independently per problem, with probability
    ``base + gain`` (``gain`` 0: a null), so discordant pairs go both ways as they do between two models."""
    rng = np.random.default_rng(seed)
    out = np.zeros(n_experiments, dtype=bool)
    for e in range(n_experiments):
        control = rng.random(n_problems) < base  # [n_problems]
        method = rng.random(n_problems) < base + gain  # [n_problems]
        f = paired_finding("sim", method.astype(float), control.astype(float), control="control", statistic="accuracy",
                           binary=True, alpha=ALPHA, seed=seed + e)
        out[e] = f.verdict == "effect"
    return out


def _planted(ctx: SettingContext) -> Check:
    n_exp = 100 if ctx.quick else 1000
    hits = simulate_verdicts(0.15, n_problems=PLANTED_PROBLEMS, n_experiments=n_exp, seed=ctx.seed)
    k = int(hits.sum())
    lo, hi = clopper_pearson(k, n_exp)
    return Check("power", k / n_exp, (lo, hi), power_verdict((lo, hi)), n=n_exp,
                 target=f"power >= {MIN_POWER} shown (the exact interval's lower end) for a planted 15-point gain "
                        f"(0.50 -> 0.65) at n={PLANTED_PROBLEMS} (McNemar, alpha {ALPHA})")


def _null(ctx: SettingContext) -> Check:
    n_exp = 200 if ctx.quick else 2000
    hits = simulate_verdicts(0.0, n_problems=100, n_experiments=n_exp, seed=ctx.seed + 1)
    k = int(hits.sum())
    lo, hi = clopper_pearson(k, n_exp)
    return Check("false_positive_rate", k / n_exp, (lo, hi), fpr_verdict((lo, hi)), n=n_exp,
                 target=f"false-positive rate shown below alpha {ALPHA} + {FPR_MARGIN} (the exact interval's upper end; "
                        "an equivalence bound stated beforehand)")


SETTINGS = [
    Setting("findings", "planted", "recovered", _planted,
            help="a planted 15-point paired accuracy gain: power >= 0.8 shown by its interval"),
    Setting("findings", "null", "no-effect", _null, help="no gain: effect verdicts shown below the test's 5% level + 2 points"),
]
