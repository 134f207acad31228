"""Findings: one headline claim with its statistic, interval, n, control and verdict (shared/specs/controls.md).

Every job reports its headline claims as :class:`Finding` s (``{claim, statistic, value, ci, n, control,
control_value, verdict}``), built with the functions here from the intervals and tests of
:mod:`thinklens.calibration.stats`, so that no job reaches a verdict its own way.

Verdicts (:data:`VERDICTS`), one meaning each: ``effect`` (the interval excludes the control, or the paired test
is significant, in the claimed direction), ``no effect`` (the control lies inside the interval, the test is not
significant, or the control does significantly better), ``at ceiling`` (a higher-is-better control within
``ceiling_margin`` of the top of its scale, e.g. an accuracy of 1.0: nothing above it to show), ``no headroom``
(the control leaves too little room for any effect to reach significance: :func:`no_headroom`'s 59/60 right, or a
lower-is-better rate already at its floor, e.g. 0: never called "at ceiling"), ``too few samples`` (fewer units
than ``min_n``). Neither ``at ceiling`` nor ``no headroom`` is said where the control wins.

Example:
    >>> f = accuracy_finding("steered accuracy", 45, 50, control="alpha 0", control_k=30, control_n=50)
    >>> f.verdict, f.n
    ('effect', 50)
    >>> accuracy_finding("steered accuracy", 31, 50, control="alpha 0", control_k=30, control_n=50).verdict
    'no effect'
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from thinklens.calibration.stats import _as_array, bootstrap_ci, mcnemar, mcnemar_interval, paired_bootstrap, wilson
from thinklens.errors import ThinklensError

Verdict = Literal["effect", "no effect", "at ceiling", "no headroom", "too few samples"]
VERDICTS: tuple[str, ...] = ("effect", "no effect", "at ceiling", "no headroom", "too few samples")
#: Fewer units than this and a finding says "too few samples" whatever its interval.
MIN_N = 10


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


# ---------------------------------------------------------------- shared controls and curves

MAJORITY = "majority-answer guess"


def majority_correct(golds: Sequence[Any], groups: Sequence[Hashable] | None = None) -> list[bool]:
    """Per problem: whether always answering the most frequent gold answer (of its group, when ``groups`` is given)
    is right. Answers compare as strings (``72`` and ``"72"`` are one answer); ties go to the first seen.

    Example:
        >>> majority_correct([1, 2, 2, 1, 1], groups=["a", "a", "a", "b", "b"])
        [False, True, True, True, True]
    """
    keys = list(groups) if groups is not None else [None] * len(golds)
    top = {g: Counter(str(a) for a, k in zip(golds, keys) if k == g).most_common(1)[0][0] for g in dict.fromkeys(keys)}
    return [str(a) == top[k] for a, k in zip(golds, keys)]


#: Steps per window of :func:`window_change_finding` at most (fewer on short runs: a quarter of the steps each).
WINDOW = 50


def window_change_finding(claim: str, values: Sequence[float], *, statistic: str, higher_is_effect: bool,
                          window: int | None = None, seed: int = 0, otherwise: str = "") -> Finding:
    """How a training curve moved: the mean of its last ``window`` values minus the mean of its first ``window``,
    with a percentile bootstrap interval over the window's step pairs (step i of the first window with step i of
    the last), against no change (0). ``window`` defaults to a quarter of the curve, at most :data:`WINDOW`;
    ``n`` is the window, so a short run says ``too few samples``.

    Example:
        >>> f = window_change_finding("loss falls", [2.0 - 0.01 * i for i in range(100)], statistic="loss change",
        ...                           higher_is_effect=False)
        >>> f.verdict, f.n, round(f.value, 3)
        ('effect', 25, -0.75)
        >>> window_change_finding("loss falls", [1.0, 1.1] * 50, statistic="loss change", higher_is_effect=False).verdict
        'no effect'
    """
    v = np.asarray(values, dtype=np.float64)  # [steps]
    w = int(window) if window else min(WINDOW, v.size // 4)
    extra: dict[str, Any] = {"window": w, "steps": int(v.size), "interval": "bootstrap over the windows' step pairs"}
    if otherwise:
        extra["otherwise"] = otherwise
    if w < 1 or v.size < 2 * w:
        return Finding(claim, statistic, float("nan"), (float("nan"), float("nan")), max(w, 0), "no change", 0.0,
                       "too few samples", extra=extra)
    first, last = v[:w], v[-w:]  # [w] each
    ci = bootstrap_ci(last - first, seed=seed)
    extra.update(first_mean=float(first.mean()), last_mean=float(last.mean()))
    return Finding(claim, statistic, float(last.mean() - first.mean()), ci, w, "no change", 0.0,
                   verdict_from_interval(ci, 0.0, n=w, higher_is_effect=higher_is_effect), extra=extra)
