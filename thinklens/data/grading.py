r"""How far :func:`thinklens.data.answers.is_correct` agrees with a reference's labelled grading cases.

The reference is math-verify's own test suite (``tests/fixtures/math_verify_cases.json``: 268 (gold,
prediction, expected) cases with where each comes from). A case is graded ``is_correct(pred, gold)``;
it agrees when that equals the expected verdict. A false positive is a wrong prediction graded correct,
the error that inflates an accuracy. By default only predictions that state an answer the way
:func:`~thinklens.data.answers.extract_answer` reads one (a box or an answer marker) are counted: a bare
``$\frac{1}{2}$`` or a last number in prose is no answer under the project's policy. The other
readings of such predictions: ``unstated="wrong"`` (what :func:`is_correct` says of them: wrong) and
``unstated="bare"`` (the prediction is the bare answer: :func:`~thinklens.data.answers.answers_equal`, which
measures the equivalence alone).

Example:
    >>> cases = [GradingCase(gold="1", pred=r"\boxed{5} and \boxed{1}", expected=False, source="two boxes, the last one wrong")]
    >>> result = agreement(cases)
    >>> result.n, result.n_agree, len(result.false_positives)
    (1, 1, 0)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from thinklens.data.answers import answers_equal, is_correct, states_answer
from thinklens.data.equivalence import DEFAULT_TIMEOUT
from thinklens.errors import ThinklensError


@dataclass(frozen=True, kw_only=True)
class GradingCase:
    """One labelled case: is ``pred`` a correct answer to ``gold``?"""

    gold: str
    """The gold answer or solution, as the reference wrote it."""
    pred: str
    """The prediction text (a model output or a bare answer)."""
    expected: bool
    """The reference's verdict."""
    source: str
    """Where the case comes from (file, test and line)."""


@dataclass(frozen=True, kw_only=True)
class Agreement:
    """Cases graded as the reference expects, out of ``n``; ``rate`` is derived (0 when n is 0).

    Example:
        >>> Agreement(n=4, n_agree=3, false_positives=(), false_negatives=()).rate
        0.75
    """

    n: int
    """Cases graded."""
    n_agree: int
    """Cases graded as the reference expects."""
    false_positives: tuple[GradingCase, ...]
    """Cases the reference calls wrong and is_correct right."""
    false_negatives: tuple[GradingCase, ...]
    """Cases the reference calls right and is_correct wrong."""
    rate: float = field(init=False)
    """n_agree / n."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "rate", self.n_agree / self.n if self.n else 0.0)

    def disagreements(self) -> str:
        """One line per disagreement (false positives first): verdicts, source, gold and prediction."""
        lines = []
        for kind, cases in (("false positive", self.false_positives), ("false negative", self.false_negatives)):
            for c in cases:
                lines.append(f"{kind} [{c.source}] gold={c.gold[-120:]!r} pred={c.pred[-160:]!r}")
        return "\n".join(lines)


def load_cases(path: str | Path) -> list[GradingCase]:
    """The cases of a fixture file (``{"cases": [{"gold", "pred", "expected", "source"}, ...]}``)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        return [GradingCase(gold=c["gold"], pred=c["pred"], expected=bool(c["expected"]), source=c["source"]) for c in doc["cases"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ThinklensError.of(
            "grading cases", f"{path}: {type(exc).__name__}: {exc}", 'a JSON file {"cases": [{"gold", "pred", "expected", "source"}]}',
            "pass tests/fixtures/math_verify_cases.json or a file of that shape",
        ) from exc


def agreement(
    cases: list[GradingCase],
    *,
    unstated: Literal["skip", "wrong", "bare"] = "skip",
    timeout: float = DEFAULT_TIMEOUT,
    boxes: Literal["group", "last"] = "group",
    decimal_comma: bool = True,
) -> Agreement:
    """Grade every case with :func:`~thinklens.data.answers.is_correct` and count agreement with its verdict.

    Args:
        cases: the labelled cases (:func:`load_cases`).
        unstated: predictions without a box or an answer marker (:func:`~thinklens.data.answers.states_answer`):
            ``"skip"`` them, grade them with ``is_correct`` (``"wrong"``: no answer), or as ``"bare"`` answers.
        timeout, boxes, decimal_comma: passed to :func:`~thinklens.data.answers.is_correct`.
    """
    if unstated not in ("skip", "wrong", "bare"):
        raise ThinklensError.of("unstated", unstated, 'one of "skip", "wrong", "bare"', 'pass unstated="skip" (the default)')
    n = n_agree = 0
    fps: list[GradingCase] = []
    fns: list[GradingCase] = []
    for case in cases:
        stated = states_answer(case.pred)
        if unstated == "skip" and not stated:
            continue
        if unstated == "bare" and not stated:
            got = answers_equal(case.pred, case.gold, timeout=timeout, decimal_comma=decimal_comma)
        else:
            got = is_correct(case.pred, case.gold, timeout=timeout, boxes=boxes, decimal_comma=decimal_comma)
        n += 1
        if got == case.expected:
            n_agree += 1
        else:
            (fps if got else fns).append(case)
    return Agreement(n=n, n_agree=n_agree, false_positives=tuple(fps), false_negatives=tuple(fns))
