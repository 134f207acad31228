"""The rule of the latent methods' null settings: "no effect" is shown by an equivalence test, never
read from a difference that is not significant.

A latent null (CODI's and Coconut's noise latents, ``latent/codi_validation.py``; LatentSeek's coin-flip reward,
``latent/validation.py``) grades the method and its control on the same problems, 0 or 1 each. It passes only when
the paired accuracy difference, method minus control per problem, is shown to lie inside a margin of no practical
effect that the setting's module states before the run: two one-sided tests at alpha 0.05 (TOST), the same as the
difference's 90% interval lying inside ``[-margin, +margin]`` (:func:`thinklens.calibration.tost.tost_mean`, with the
exact bound of a 0/1 change where every problem agrees). A method that destroys accuracy fails it as surely as one
that gains; a small difference on too few problems to show it fails too (read as ``too few samples`` by
:func:`thinklens.calibration.validate.validation_findings` while the interval holds 0).

Example:
    >>> null_verdict([True, False] * 150, [True, False] * 150, margin=0.1)[0]  # the same grades on 300 problems
    'no-effect'
    >>> null_verdict([False] * 81 + [True] * 219, [True] * 300, margin=0.1)[0]  # 27 points lost
    'failed'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from thinklens.calibration.tost import tost_mean
from thinklens.errors import ThinklensError

ALPHA = 0.05
"""Each one-sided test's level: the verdict reads the difference's 90% interval."""


def null_verdict(method: Sequence[bool], control: Sequence[bool], *, margin: float) -> tuple[str, dict[str, Any]]:
    """The verdict of a latent null and the TOST it rests on.

    Args:
        method: per problem, whether the method under the null (noise latents, a coin-flip reward) got it right.
        control: per problem, the same problem's grade of the control (the matched No-CoT, the greedy start).
        margin: the margin of no practical effect on accuracy (a share: 0.1 is ten points), stated beforehand.

    Returns:
        ``("no-effect", tost)`` when the difference's 90% interval lies inside ``[-margin, +margin]``, else
        ``("failed", tost)``; ``tost`` as a check's details hold it: ``test``, ``equivalent``, ``margin``, ``mean``
        (method minus control), ``ci90``, ``p`` (the larger one-sided p-value) and ``n`` (problems). Fewer than 2
        problems show nothing: failed, with the whole range as the interval.

    Example:
        >>> verdict, tost = null_verdict([True] * 300, [True] * 300, margin=0.1)  # no problem changed
        >>> verdict, [round(x, 4) for x in tost["ci90"]], tost["n"]
        ('no-effect', [-0.0099, 0.0099], 300)
        >>> null_verdict([True] * 20, [True] * 20, margin=0.1)[0]  # the same, on too few problems to show it
        'failed'
    """
    if len(method) != len(control):
        raise ThinklensError.of("paired grades", f"{len(method)} method and {len(control)} control grades",
                                "one grade of each per problem, on the same problems", "grade both on the same problems")
    d = np.asarray(method, dtype=float) - np.asarray(control, dtype=float)  # [problem] in {-1, 0, 1}
    test = f"TOST on the per-problem paired difference (paired t, alpha {ALPHA} a side: the 90% interval)"
    if len(d) < 2:
        return "failed", {"test": test, "equivalent": False, "margin": margin, "mean": float(d.mean()) if len(d) else None,
                          "ci90": [-1.0, 1.0], "p": 1.0, "n": int(len(d))}
    eq = tost_mean(d, margin=margin, alpha=ALPHA, bounds=(-1.0, 1.0))  # a 0/1 outcome's change lies in [-1, 1]
    tost = {"test": test, "equivalent": eq.equivalent, "margin": margin, "mean": eq.mean, "ci90": [float(x) for x in eq.ci],
            "p": eq.p, "n": eq.n}
    return ("no-effect" if eq.equivalent else "failed"), tost
