"""Arithmetic drill for a real organism: bare equations packed into rows with the loss on their results only, and
the per-operation accuracy (teacher-forced) that its training checks as it goes.

smol-r1's first recipe taught the R1 format and not the task: SmolLM2-135M subtracts two-digit numbers almost never
(shared/specs/organism.md). A drill row is the re-check rounds' own notation, equations joined by ", "::

    52 - 7 = 45, 13 + 9 = 22, 23 * 4 = 92, ...

so the arithmetic it drills is written as the chain writes it. Equations are drawn from the task's own operand
ranges (:class:`thinklens.tasks.TaskConfig`), ``+`` and ``-`` weighted toward a carry or a borrow.

Example:
    >>> import numpy as np
    >>> from thinklens.tasks import TaskConfig
    >>> s = draw_equation(np.random.default_rng(0), TaskConfig(), "-", hard=True)
    >>> op_kind(s), s.left - s.right == s.result
    ('- borrow', True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from thinklens.errors import ThinklensError
from thinklens.runs.configcli import ConfigGroup
from thinklens.tasks import TaskConfig
from thinklens.tasks.generator import forgotten_carry
from thinklens.tasks.problem import Step, apply_op
from thinklens.zoo.batches import IGNORE, collate

#: The kinds of equation a drill tells apart (a carry or borrow is the kind the first smol-r1 got wrong).
OP_KINDS: tuple[str, ...] = ("+", "+ carry", "*", "-", "- borrow")
#: The separator between a drill row's equations (the re-check rounds' own).
SEPARATOR = ", "


def op_kind(step: Step) -> str:
    """``+``, ``+ carry``, ``*``, ``-`` or ``- borrow``: the step's operator and whether it carries or borrows."""
    hard = step.op in "+-" and (step.left % 10 + step.right % 10 >= 10 if step.op == "+" else step.left % 10 < step.right % 10)
    return f"{step.op} {'carry' if step.op == '+' else 'borrow'}" if hard else step.op


def equation_text(step: Step) -> str:
    """``left op right = result``, as the chain writes a step."""
    return f"{step.left} {step.op} {step.right} = {step.result}"


def draw_equation(rng: np.random.Generator, task: TaskConfig, op: str, *, hard: bool) -> Step:
    """One equation of ``op`` inside the task's ranges (left in ``0..max_value``, right operand ``1..max_operand``,
    factor ``2..max_factor``, result in range); ``hard``: ``+`` with a carry, ``-`` with a borrow (ignored for ``*``)."""
    if op not in ("+", "-", "*"):
        raise ThinklensError.of("drill operator", op, "one of + - *", "drop it from the drill's op_weights")
    for _ in range(1000):
        if op == "*":
            right = int(rng.integers(2, task.max_factor + 1))
            left = int(rng.integers(1, task.max_value // right + 1))
        else:
            right = int(rng.integers(1, task.max_operand + 1))
            left = int(rng.integers(right if op == "-" else 0, (task.max_value - right if op == "+" else task.max_value) + 1))
        step = Step(op, left, right, apply_op(op, left, right))
        if op == "*" or (forgotten_carry(step) is not None) == hard:
            return step
    raise ThinklensError.of("drill task", task, f"a task with {'hard' if hard else 'easy'} {op} equations in range",
                            "raise max_value or max_operand")


@dataclass(frozen=True)
class DrillMix(ConfigGroup):
    """How many drill rows each optimizer step adds and which equations they hold."""

    rows: int = 2
    """Packed drill rows per optimizer step (0: no drill)."""
    row_tokens: int = 256
    """Tokens per drill row (equations are added while they fit)."""
    op_weights: tuple[tuple[str, float], ...] = (("+", 0.3), ("-", 0.45), ("*", 0.25))
    """``(operator, weight)`` of the drilled equations."""
    hard_rate: float = 0.6
    """Share of ``+`` / ``-`` equations drawn with a carry / borrow (about 0.45 of the task's own)."""

    def check(self) -> None:
        if self.rows < 0 or self.row_tokens < 16:
            raise ThinklensError.of("DrillMix rows", (self.rows, self.row_tokens), "rows >= 0, row_tokens >= 16",
                                    "pass rows=2, row_tokens=256")
        if not 0.0 <= self.hard_rate <= 1.0:
            raise ThinklensError.of("DrillMix.hard_rate", self.hard_rate, "a probability in [0, 1]", "pass 0.6")
        if not self.op_weights or any(op not in ("+", "-", "*") or w < 0 for op, w in self.op_weights) \
                or not sum(w for _, w in self.op_weights) > 0:
            raise ThinklensError.of("DrillMix.op_weights", self.op_weights,
                                    "(operator, weight >= 0) pairs over + - *, not all 0", "pass (('+', 0.5), ('-', 0.5))")

    def draw(self, rng: np.random.Generator, task: TaskConfig) -> Step:
        """One drilled equation: its operator by weight, hard at ``hard_rate``."""
        ops = [op for op, _ in self.op_weights]
        weights = np.asarray([w for _, w in self.op_weights], dtype=float)
        op = ops[int(rng.choice(len(ops), p=weights / weights.sum()))]
        return draw_equation(rng, task, op, hard=bool(rng.random() < self.hard_rate))

    def describe(self) -> str:
        ops = ", ".join(f"{op} {w:.0%}" for op, w in self.op_weights)
        return (f"{self.rows} rows of about {self.row_tokens} tokens of bare equations per step ('52 - 7 = 45, 13 + 9 = 22'; "
                f"{ops}; {self.hard_rate:.0%} of + / - with a carry / borrow), the loss on the results only")


def encode_equations(backend: Any, steps: Sequence[Step]) -> tuple[list[int], list[int]]:
    """``(ids, labels)`` of equations joined by ", ": labels are the ids on the tokens of each result, else ignored.

    ``backend`` is a tokenizer's Rust backend (``tokenizer.backend_tokenizer``); a token is a result's when its
    characters lie inside that result's span (SmolLM2 writes one token per digit)."""
    text, spans = "", []
    for k, step in enumerate(steps):
        head = ("" if k == 0 else SEPARATOR) + f"{step.left} {step.op} {step.right} = "
        text += head
        spans.append((len(text), len(text) + len(str(step.result))))
        text += str(step.result)
    enc = backend.encode(text, add_special_tokens=False)
    labels = [IGNORE] * len(enc.ids)
    for t, (start, end) in enumerate(enc.offsets):
        if any(s <= start and end <= e for s, e in spans) and end > start:
            labels[t] = enc.ids[t]
    return list(enc.ids), labels


def drill_rows(rng: np.random.Generator, task: TaskConfig, drill: DrillMix, backend: Any) -> list[tuple[list[int], list[int]]]:
    """``drill.rows`` rows of equations, each filled while it stays within ``drill.row_tokens`` tokens."""
    rows = []
    for _ in range(drill.rows):
        steps: list[Step] = [drill.draw(rng, task)]
        while True:
            nxt = drill.draw(rng, task)
            ids, _ = encode_equations(backend, [*steps, nxt])
            if len(ids) > drill.row_tokens:
                break
            steps.append(nxt)
        rows.append(encode_equations(backend, steps))
    return rows


def with_rows(batch: dict[str, torch.Tensor], rows: Sequence[tuple[list[int], list[int]]], pad: int) -> dict[str, torch.Tensor]:
    """``batch`` (input_ids / attention_mask / labels, right-padded) with ``rows`` appended, all padded to one width."""
    if not rows:
        return batch
    width = max(batch["input_ids"].shape[1], *(len(ids) for ids, _ in rows))
    out = {}
    for key, fill in (("input_ids", pad), ("attention_mask", 0), ("labels", IGNORE)):
        old = batch[key]
        grown = torch.full((old.shape[0] + len(rows), width), fill, dtype=old.dtype)  # [batch, pos]
        grown[: old.shape[0], : old.shape[1]] = old
        for r, (ids, labels) in enumerate(rows):
            values = {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels}[key]
            grown[old.shape[0] + r, : len(ids)] = torch.tensor(values)
        out[key] = grown
    return out


def held_out_equations(task: TaskConfig, *, n_per_kind: int, seed: int) -> dict[str, list[Step]]:
    """``n_per_kind`` equations of each kind of :data:`OP_KINDS` from stream ``seed`` (a held-out seed: the equation
    space is small, so single equations recur in training; the held-out measure is the greedy evaluation)."""
    rng = np.random.default_rng(seed)
    out = {}
    for kind in OP_KINDS:
        op, hard = kind[0], " " in kind
        out[kind] = [draw_equation(rng, task, op, hard=hard) for _ in range(n_per_kind)]
    return out


#: The equations every checked equation follows (as a re-check round's last equation follows the earlier ones): a
#: result is predicted in the context the chain gives it. Alone at the start of a row, with nothing that says the
#: text is arithmetic, SmolLM2 after 86 steps of this drill got 2 in 20 borrows right; after these, 17 in 20.
CONTEXT: tuple[Step, ...] = (Step("+", 12, 5, 17), Step("-", 40, 3, 37), Step("*", 11, 3, 33))


@torch.no_grad()
def equation_accuracy(model: torch.nn.Module, backend: Any, equations: dict[str, list[Step]], *, pad: int,
                      context: Sequence[Step] = CONTEXT) -> dict[str, list[int]]:
    """Per kind, ``[right, n]``: equations whose every result token is the model's top token, teacher-forced, each
    after the ``context`` equations in its own row (only its own result is scored; the model called as a causal LM:
    ``model(input_ids=..., attention_mask=...).logits``)."""
    out = {}
    n_context = sum(label != IGNORE for label in encode_equations(backend, context)[1]) if context else 0
    for kind, steps in equations.items():
        encoded = [encode_equations(backend, [*context, s]) for s in steps]
        batch = collate([(ids, 0) for ids, _ in encoded], pad)
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits  # [batch, pos, vocab]
        top = logits[:, :-1].argmax(-1)  # [batch, pos - 1]: the prediction of token t + 1
        right = 0
        for row, (_, labels) in enumerate(encoded):
            wanted = [(t, label) for t, label in enumerate(labels) if label != IGNORE][n_context:]  # its own result
            right += all(int(top[row, t - 1]) == label for t, label in wanted)
        out[kind] = [right, len(steps)]
    return out
