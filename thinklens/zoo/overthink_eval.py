"""The proof that tiny-overthink overthinks: on its own greedy generations, how often it re-checks, how much
of its reasoning comes after it already wrote the answer (the oracle saving), and what LYNX's forced exit
answers at ``answer_known_at`` and at each cue (:func:`thinklens.zoo.overthink.trace_truth`), graded against the
answer and against the ground truth's value there.

Example:
    >>> from thinklens.engine.model import HookedModel
    >>> m = HookedModel.load("data/zoo/tiny-overthink")  # doctest: +SKIP
    >>> r = measure_overthinking(m, n_per_steps=2, steps=[2, 4])  # doctest: +SKIP
    >>> r.oracle_saving > 0.3 and r.forced_at_known.rate >= 0.8  # doctest: +SKIP
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from thinklens.data.answers import extract_answer, is_correct
from thinklens.generation.decode_loop import Greedy, decode
from thinklens.generation.kv_batch import Decoder, eos_ids
from thinklens.tasks import TaskConfig
from thinklens.tasks.protocol import HELD_OUT, problems_by_steps
from thinklens.zoo.overthink import EXIT_STRING, TraceTruth, trace_truth
from thinklens.zoo.r1 import user_message
from thinklens.zoo.recipes import RECIPES


@dataclass(frozen=True)
class Rate:
    """``k`` of ``n`` (``rate`` None when ``n`` is 0)."""

    k: int
    n: int

    @property
    def rate(self) -> float | None:
        return self.k / self.n if self.n else None

    def to_json(self) -> dict:
        return {"k": self.k, "n": self.n, "rate": self.rate}


@dataclass(frozen=True)
class OverthinkReport:
    """The planted effect measured on greedy generations of held-out problems."""

    n: int
    """Generations measured."""
    accuracy: float
    """Share whose ``\\boxed{}`` answer is right."""
    with_rounds: float
    """Share with at least one re-check round."""
    mean_rounds: float
    """Mean re-check rounds per generation."""
    known: float
    """Share that write the answer at all (``answer_known_at`` found)."""
    oracle_saving: float
    """Mean over generations of the share of reasoning tokens after ``answer_known_at`` (0 when never known)."""
    oracle_saving_pooled: float
    """Reasoning tokens after ``answer_known_at`` over all reasoning tokens, pooled."""
    first_conclusion_slips: Rate
    """Generations whose first conclusion states a wrong value (of those with one)."""
    forced_at_known: Rate
    """Forced exits at ``answer_known_at`` that answer right."""
    forced_pre_answer_cues: Rate
    """Forced exits at cues before ``answer_known_at`` that answer right."""
    forced_post_answer_cues: Rate
    """Forced exits at cues after ``answer_known_at`` that answer right."""
    forced_matches_construction: Rate
    """Forced exits (known point and cues) whose answer is the ground truth's value there."""
    by_steps: dict[int, dict[str, float]]
    """Step count -> accuracy, with_rounds, mean_rounds, oracle_saving."""

    def to_json(self) -> dict:
        out = asdict(self)
        for key in ("first_conclusion_slips", "forced_at_known", "forced_pre_answer_cues", "forced_post_answer_cues",
                    "forced_matches_construction"):
            out[key] = getattr(self, key).to_json()
        out["by_steps"] = {str(k): v for k, v in self.by_steps.items()}
        return out


@dataclass(frozen=True)
class WithOverthinking:
    """A :class:`thinklens.zoo.accuracy.ZooEvalResult` with the overthinking measurement beside it (its JSON gains
    ``overthinking``; its other attributes are the result's)."""

    result: Any
    overthinking: OverthinkReport

    def __getattr__(self, name: str) -> Any:
        return getattr(self.result, name)

    def to_json(self) -> dict:
        return {**self.result.to_json(), "overthinking": self.overthinking.to_json()}


@torch.no_grad()
def forced_answers(model: Any, prefixes: Sequence[list[int]], *, max_answer_tokens: int = 8,
                   batch_size: int = 32) -> list[str | None]:
    """What the model answers when each prefix (prompt + generated ids) is cut and LYNX's exit string
    (:data:`thinklens.zoo.overthink.EXIT_STRING`) appended: greedy, read with :func:`thinklens.data.answers.extract_answer`."""
    exit_ids = model.tokenizer(EXIT_STRING, add_special_tokens=False)["input_ids"]
    rows = [list(p) + exit_ids for p in prefixes]
    order = sorted(range(len(rows)), key=lambda k: len(rows[k]))
    answers: list[str | None] = [None] * len(rows)
    for lo in range(0, len(rows), batch_size):
        chunk = order[lo:lo + batch_size]
        out = decode(Decoder(model, [rows[k] for k in chunk]), Greedy(), max_new_tokens=max_answer_tokens,
                     eos=eos_ids(model))
        for r, k in enumerate(chunk):
            answers[k] = extract_answer(model.tokenizer.decode(exit_ids + out.row(r), skip_special_tokens=True))
    return answers


def _same(answer: str | None, value: int | None) -> bool:
    return answer is not None and value is not None and answer.strip() == str(value)


def measure_overthinking(model: Any, *, n_per_steps: int = 10, steps: Sequence[int] = range(1, 9),
                         seed: int = HELD_OUT["eval"], task: TaskConfig | None = None, mix: Any = None,
                         batch_size: int = 64) -> OverthinkReport:
    """Greedy generations of held-out problems (the chat prompt of :func:`thinklens.zoo.r1_train.evaluate_r1_model`), their
    ground truth (:func:`thinklens.zoo.overthink.trace_truth`) and LYNX's forced exits at ``answer_known_at`` and at every
    cue of every generation.

    Args:
        model: a :class:`~thinklens.engine.model.HookedModel` of tiny-overthink (or a model in its format).
        n_per_steps: problems per step count, from the shared held-out stream ``seed``.
        task: the problems' task (default: tiny-overthink's recipe's); ``mix`` its text mix (token budget).
    """
    recipe = RECIPES["tiny-overthink"]
    task, mix = task or recipe.task, mix or recipe.mix
    rows: list[tuple[int, Any, Any, TraceTruth]] = []
    for n_steps in steps:
        problems = problems_by_steps(n_per_steps, n_steps, n_steps, seed=seed, config=task)
        prompts = [model.tokenizer.apply_chat_template([{"role": "user", "content": user_message(p)}],
                                                       add_generation_prompt=True, tokenize=False) for p in problems]
        traces = model.generate(prompts, max_new_tokens=mix.token_budget(n_steps), batch_size=batch_size)
        rows += [(n_steps, p, t, trace_truth(t.tokens, p)) for p, t in zip(problems, traces)]
    # every forced exit: (row, token cut, ground-truth value, kind)
    exits = []
    for i, (_, p, _t, truth) in enumerate(rows):
        if truth.answer_known_at is not None:
            exits.append((i, truth.answer_known_at, p.answer, "known"))
        for cue in truth.cues:
            exits.append((i, cue.start_index, cue.value, "post" if cue.after_answer else "pre"))
    answers = forced_answers(model, [rows[i][2].prompt_ids + rows[i][2].token_ids[:cut] for i, cut, _, _ in exits])
    tally = {kind: [0, 0] for kind in ("known", "pre", "post", "match")}
    for (i, _, value, kind), answer in zip(exits, answers):
        right = _same(answer, rows[i][1].answer)
        tally[kind][0] += right
        tally[kind][1] += 1
        tally["match"][0] += _same(answer, value)
        tally["match"][1] += 1
    correct = [is_correct(t.text, p.answer) for _, p, t, _ in rows]
    by_steps = {}
    for n_steps in steps:
        sel = [(c, r[3]) for c, r in zip(correct, rows) if r[0] == n_steps]
        by_steps[n_steps] = {
            "accuracy": sum(c for c, _ in sel) / len(sel), "with_rounds": sum(t.rounds > 0 for _, t in sel) / len(sel),
            "mean_rounds": sum(t.rounds for _, t in sel) / len(sel), "oracle_saving": sum(t.saving for _, t in sel) / len(sel),
        }
    truths = [r[3] for r in rows]
    concluded = [(t.first_conclusion, r[1].answer) for r, t in zip(rows, truths) if t.first_conclusion is not None]
    after = sum(t.reasoning_tokens - t.answer_known_at for t in truths if t.answer_known_at is not None)
    return OverthinkReport(
        n=len(rows), accuracy=sum(correct) / len(rows), with_rounds=sum(t.rounds > 0 for t in truths) / len(rows),
        mean_rounds=sum(t.rounds for t in truths) / len(rows), known=sum(t.answer_known_at is not None for t in truths) / len(rows),
        oracle_saving=sum(t.saving for t in truths) / len(rows),
        oracle_saving_pooled=after / max(1, sum(t.reasoning_tokens for t in truths)),
        first_conclusion_slips=Rate(sum(v != a for v, a in concluded), len(concluded)),
        forced_at_known=Rate(*tally["known"]), forced_pre_answer_cues=Rate(*tally["pre"]),
        forced_post_answer_cues=Rate(*tally["post"]), forced_matches_construction=Rate(*tally["match"]),
        by_steps=by_steps,
    )
