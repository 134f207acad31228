"""The configuration of the synthetic reasoning task (multi-step arithmetic, GSM8k-Aug format).

Example:
    >>> from thinklens.tasks import TaskConfig
    >>> TaskConfig(min_steps=2, max_steps=4).max_value
    99
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from thinklens.errors import ThinklensError, opt
from thinklens.runs.configcli import ConfigGroup

#: Operators the generator knows. ``/`` is exact integer division (the dividend is a multiple).
KNOWN_OPS: tuple[str, ...] = ("+", "-", "*", "/")

#: Which steps can carry a think decoration: every step, or only those where it is "natural".
CORRECTION_MODES: tuple[str, ...] = ("any", "carry")
HMM_MODES: tuple[str, ...] = ("any", "mul")

#: The largest value the zoo tokenizer has a single token for; values above need another tokenizer.
ZOO_MAX_NUMBER = 99


#: Longest problem any job draws: a think trace of 64 steps already fills a few thousand tokens.
MAX_STEPS = 64


def check_step_range(min_steps: int, max_steps: int, *, fix: str | None = None, what: str = "steps range") -> None:
    """Refuse a step range outside ``1 <= min_steps <= max_steps <= MAX_STEPS`` (with what was received; the default
    fix names the options in the caller's terms, :func:`thinklens.errors.opt`)."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (min_steps, max_steps)) \
            or not 1 <= min_steps <= max_steps <= MAX_STEPS:
        raise ThinklensError.of(what, (min_steps, max_steps), f"integers, 1 <= min_steps <= max_steps <= {MAX_STEPS}",
                                fix or f"pass {opt('min_steps', 2)} {opt('max_steps', 4)}")


@dataclass(frozen=True)
class StepRange(ConfigGroup):
    """The step range of synthetic problems: the two fields of every config that draws them (a job redeclares
    a field only to change its default). Its ``check`` runs for every config that has it (:class:`ConfigGroup`)."""

    step_range_fix: ClassVar[str | None] = None  # None: --min-steps 2 --max-steps 4, in the caller's terms
    step_range_what: ClassVar[str] = "steps range"

    min_steps: int = 1
    """Fewest arithmetic steps of a synthetic problem (the task drawn when there is no --data)."""
    max_steps: int = 4
    """Most arithmetic steps of a synthetic problem (a zoo style's token budget is sized for it)."""

    def check(self) -> None:
        check_step_range(self.min_steps, self.max_steps, fix=self.step_range_fix, what=self.step_range_what)


def _check_rate(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ThinklensError.of(f"TaskConfig.{name}", value, "a probability in [0, 1]", f"pass {name}=0.2")


@dataclass(frozen=True)
class TaskConfig(StepRange):
    """How problems are drawn and how their "thinking" traces are decorated.

    All values (start, every intermediate result and the answer) lie in ``0..max_value``, so a
    word-level tokenizer with one token per number up to :data:`ZOO_MAX_NUMBER` covers them.
    """

    max_steps: int = 8
    max_value: int = 99
    """Upper bound of every value: start, intermediate results and the answer."""
    max_operand: int = 10
    """Upper bound of the right operand of ``+`` and ``-`` (drawn from 1..max_operand)."""
    max_factor: int = 4
    """Upper bound of the factor of ``*`` and the divisor of ``/`` (drawn from 2..max_factor)."""
    ops: tuple[str, ...] = ("+", "-", "*")
    """Operators to draw from; a subset of ``+ - * /``."""
    distinct_operands: bool = True
    """Redraw (a few times) so the right operands of one problem differ: each step's number is then
    unambiguous when a model looks it up in the question."""
    distractor_rate: float = 0.0
    """Probability that an irrelevant fact ("Ann has 9 pears .") follows each sentence of the question."""
    correction_rate: float = 0.25
    """Probability, per step of a think trace, of a wrong result followed by ``wait`` and the right one."""
    hmm_rate: float = 0.2
    """Probability, per step of a think trace, of ``hmm`` before the step."""
    conclusion_rate: float = 0.8
    """Probability that a think trace says ``so`` or ``therefore`` before the answer."""
    max_error: int = 3
    """Largest distance between a wrong result in a self-correction and the right one (mode ``any``)."""
    correction_on: str = "any"
    """``any``: every step may get a random near-miss; ``carry``: only steps with a carry or borrow,
    whose wrong result forgets it (45+8=43 wait 45+8=53), so a model can learn WHEN it slips and greedy
    decoding reproduces the corrections when correction_rate > 0.5."""
    hmm_on: str = "any"
    """``any``: ``hmm`` before any step; ``mul``: only before multiplication and division steps."""

    step_range_fix: ClassVar[str] = "pass e.g. min_steps=1, max_steps=8"
    step_range_what: ClassVar[str] = "TaskConfig steps"

    def check(self) -> None:
        if not 2 <= self.max_value <= 10_000:
            raise ThinklensError.of("TaskConfig.max_value", self.max_value, "2..10000", "pass max_value=99")
        if not 1 <= self.max_operand <= self.max_value:
            raise ThinklensError.of(
                "TaskConfig.max_operand", self.max_operand, f"1..max_value ({self.max_value})", "pass max_operand=10"
            )
        if not 2 <= self.max_factor <= self.max_value:
            raise ThinklensError.of(
                "TaskConfig.max_factor", self.max_factor, f"2..max_value ({self.max_value})", "pass max_factor=4"
            )
        if not isinstance(self.ops, tuple) or not self.ops or any(op not in KNOWN_OPS for op in self.ops):
            raise ThinklensError.of(
                "TaskConfig.ops", self.ops, f"a non-empty tuple drawn from {KNOWN_OPS}", "pass ops=('+', '-', '*')"
            )
        if len(set(self.ops)) != len(self.ops):
            raise ThinklensError.of("TaskConfig.ops", self.ops, "no repeated operator", "drop the duplicates")
        for name in ("distractor_rate", "correction_rate", "hmm_rate", "conclusion_rate"):
            _check_rate(name, getattr(self, name))
        if self.correction_on not in CORRECTION_MODES:
            raise ThinklensError.of("TaskConfig.correction_on", self.correction_on, f"one of {CORRECTION_MODES}",
                                    "pass correction_on='carry'")
        if self.hmm_on not in HMM_MODES:
            raise ThinklensError.of("TaskConfig.hmm_on", self.hmm_on, f"one of {HMM_MODES}", "pass hmm_on='mul'")
        if not 1 <= self.max_error <= self.max_value:
            raise ThinklensError.of("TaskConfig.max_error", self.max_error, "1..max_value", "pass max_error=3")
