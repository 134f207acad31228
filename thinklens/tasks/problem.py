"""Problems with their ground truth at every step.

A :class:`Problem` is a chain ``start -> step_1 -> ... -> step_n``; each :class:`Step` applies one
operator with a right operand taken from the question. The think-trace decorations (``hmm``,
self-corrections, the concluding word) are drawn once at generation time and stored, so rendering
is a pure function of the problem.

Example:
    >>> p = Problem(name="Tom", obj="apples", start=7,
    ...             steps=(Step("+", 7, 5, 12), Step("*", 12, 3, 36)))
    >>> p.cot, p.answer, p.values
    ('<<7+5=12>> <<12*3=36>>', 36, (7, 12, 36))
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from thinklens.errors import ThinklensError

#: One regex splits text into zoo words; the tokenizer's pre-tokenizer uses the same pattern, so a
#: rendered word is exactly one token (alignment per word == alignment per token).
WORD_PATTERN = r"<<|>>|####|</?[a-z]+>|\d+|[A-Za-z]+|[^\sA-Za-z\d]"
_WORD_RE = re.compile(WORD_PATTERN)


def words(text: str) -> list[str]:
    """Split text into zoo words (numbers, words, ``<<``, ``>>``, ``####``, tags, single symbols).

    Example:
        >>> words("Tom has 7 apples. <<7+5=12>>")
        ['Tom', 'has', '7', 'apples', '.', '<<', '7', '+', '5', '=', '12', '>>']
    """
    return _WORD_RE.findall(text)


def spaced(text: str) -> str:
    """The canonical form of a text: its zoo words joined by single spaces (what the tokenizer decodes).

    Example:
        >>> spaced("<<7+5=12>> #### 12")
        '<< 7 + 5 = 12 >> #### 12'
    """
    return " ".join(words(text))


def apply_op(op: str, left: int, right: int) -> int:
    """The exact integer result of ``left op right`` (``/`` must divide exactly).

    Example:
        >>> apply_op("/", 12, 4)
        3
    """
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if op == "/":
        if right == 0 or left % right:
            raise ThinklensError.of("division", f"{left}/{right}", "an exact division", "use a divisor of left")
        return left // right
    raise ThinklensError.of("operator", op, "one of + - * /", "use one of + - * /")


@dataclass(frozen=True)
class Step:
    """One arithmetic step ``left op right = result``; ``left`` is the running value before it."""

    op: str
    """The operator: ``+ - * /``."""
    left: int
    """The running value entering the step."""
    right: int
    """The operand stated in the question."""
    result: int
    """The running value after the step."""

    def __post_init__(self) -> None:
        if apply_op(self.op, self.left, self.right) != self.result:
            raise ThinklensError.of(
                "Step", (self.left, self.op, self.right, self.result), "left op right == result",
                "fix the result",
            )

    @property
    def equation(self) -> str:
        """GSM8k-Aug form, e.g. ``<<12*3=36>>``."""
        return f"<<{self.left}{self.op}{self.right}={self.result}>>"


@dataclass(frozen=True)
class ThinkStep:
    """Decorations of one step in a think trace."""

    hmm: bool = False
    """Say ``hmm`` before the step."""
    wrong: int | None = None
    """A wrong result written first, then ``wait`` and the right equation; None for no correction."""


@dataclass(frozen=True)
class Distractor:
    """An irrelevant fact inserted in the question."""

    after: int
    """Index of the question sentence it follows (0 = the start sentence, i = step i's sentence)."""
    name: str
    """Whose fact it is (never the problem's protagonist)."""
    value: int
    """The irrelevant number."""
    obj: str
    """The irrelevant object."""


@dataclass(frozen=True)
class Problem:
    """A multi-step arithmetic problem with its ground truth and think-trace decorations."""

    name: str
    """The protagonist."""
    obj: str
    """What is counted."""
    start: int
    """The initial value."""
    steps: tuple[Step, ...]
    """The chain; ``steps[i].left`` equals the previous result (or ``start``)."""
    phrasing: tuple[int, ...] = ()
    """Which phrase variant each step's sentence uses (empty: variant 0 for all)."""
    distractors: tuple[Distractor, ...] = ()
    """Irrelevant facts in the question."""
    think: tuple[ThinkStep, ...] = ()
    """Per-step think decorations (empty: none)."""
    conclusion: str | None = None
    """``so`` or ``therefore`` before the answer of a think trace, or None."""
    question: str = field(default="", compare=False)
    """The question text (natural punctuation); filled in from the fields when empty."""

    def __post_init__(self) -> None:
        if not self.steps:
            raise ThinklensError.of("Problem.steps", self.steps, "at least one step", "add a step")
        running = self.start
        for i, step in enumerate(self.steps):
            if step.left != running:
                raise ThinklensError.of(
                    f"Problem.steps[{i}].left", step.left, f"the running value {running}", "chain the steps"
                )
            running = step.result
        for name, seq in (("phrasing", self.phrasing), ("think", self.think)):
            if seq and len(seq) != len(self.steps):
                raise ThinklensError.of(
                    f"Problem.{name}", len(seq), f"{len(self.steps)} entries (one per step) or none", "fix it"
                )
        if self.conclusion not in (None, "so", "therefore"):
            raise ThinklensError.of("Problem.conclusion", self.conclusion, "None, 'so' or 'therefore'", "fix it")
        if not self.question:
            object.__setattr__(self, "question", question_text(self))

    @property
    def n_steps(self) -> int:
        """Number of arithmetic steps."""
        return len(self.steps)

    @property
    def values(self) -> tuple[int, ...]:
        """The running values: start, then each step's result (the ground truth a probe is trained on)."""
        return (self.start, *(s.result for s in self.steps))

    @property
    def answer(self) -> int:
        """The final value."""
        return self.steps[-1].result

    @property
    def cot(self) -> str:
        """The chain in GSM8k-Aug form, e.g. ``<<7+5=12>> <<12*3=36>>``."""
        return " ".join(s.equation for s in self.steps)


# ---------------------------------------------------------------- the question's phrasing

#: Sentence templates per operator; a problem stores which variant each step uses.
PHRASES: dict[str, tuple[str, ...]] = {
    "+": ("{name} buys {n} more.", "{name} finds {n} more."),
    "-": ("{name} sells {n}.", "{name} loses {n}."),
    "*": ("{name} multiplies them by {n}.",),
    "/": ("{name} splits them into {n} equal parts and keeps one.",),
}
START = "{name} has {n} {obj}."
DISTRACTOR = "{name} has {n} {obj}."
FINAL = "How many {obj} does {name} have?"


def question_text(p: Problem) -> str:
    """Render the question of a problem (natural punctuation; see :func:`spaced` for the model form)."""
    sentences = [START.format(name=p.name, n=p.start, obj=p.obj)]
    for i, step in enumerate(p.steps):
        variant = p.phrasing[i] if p.phrasing else 0
        sentences.append(PHRASES[step.op][variant].format(name=p.name, n=step.right))
    out: list[str] = []
    for i, sentence in enumerate(sentences):
        out.append(sentence)
        out.extend(DISTRACTOR.format(name=d.name, n=d.value, obj=d.obj) for d in p.distractors if d.after == i)
    out.append(FINAL.format(obj=p.obj, name=p.name))
    return " ".join(out)
