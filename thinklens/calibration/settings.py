"""Planted and null settings of the findings themselves (:mod:`thinklens.calibration.stats`): the verdict rules are
an instrument too, so they are calibrated like every method.

- ``findings planted``: accuracies on the same 200 problems with a planted gain (control 0.50, method
  0.65, drawn independently per problem). Over many simulated
  experiments, the share whose :func:`~thinklens.calibration.stats.paired_finding` says ``effect`` (the power) must be
  at least 0.8.
- ``findings null``: the same experiment with no gain (method and control draw from one accuracy,
  independently per problem). The share of ``effect`` verdicts (false positives) must be consistent with
  the test's level 0.05: its exact 95% interval must reach down to 0.05 or below.

Example:
    >>> [s.key for s in SETTINGS]
    ['findings/planted', 'findings/null']
"""

from __future__ import annotations

import numpy as np

from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.calibration.stats import clopper_pearson, paired_finding

ALPHA = 0.05
MIN_POWER = 0.8


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
    hits = simulate_verdicts(0.15, n_problems=200, n_experiments=n_exp, seed=ctx.seed)
    k = int(hits.sum())
    lo, hi = clopper_pearson(k, n_exp)
    return Check("power", k / n_exp, (lo, hi), "recovered" if k / n_exp >= MIN_POWER else "failed", n=n_exp,
                 target=f"power >= {MIN_POWER} for a planted 15-point gain (0.50 -> 0.65) at n=200 (McNemar, alpha {ALPHA})")


def _null(ctx: SettingContext) -> Check:
    n_exp = 200 if ctx.quick else 2000
    hits = simulate_verdicts(0.0, n_problems=100, n_experiments=n_exp, seed=ctx.seed + 1)
    k = int(hits.sum())
    lo, hi = clopper_pearson(k, n_exp)
    verdict = "no-effect" if lo <= ALPHA else "failed"
    return Check("false_positive_rate", k / n_exp, (lo, hi), verdict, n=n_exp,
                 target=f"false-positive rate consistent with alpha {ALPHA} (exact interval reaches {ALPHA} or below)")


SETTINGS = [
    Setting("findings", "planted", "recovered", _planted, help="a planted 15-point paired accuracy gain: power >= 0.8"),
    Setting("findings", "null", "no-effect", _null, help="no gain: effect verdicts at the test's 5% level"),
]
