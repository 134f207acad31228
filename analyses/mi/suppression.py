"""Suppression test: forbid the thinking tokens during generation and measure the accuracy cost,
against forbidding as many random word tokens (several seeded draws).

The paper's claim to reproduce: suppressing thinking tokens hurts accuracy far more than
suppressing as many random tokens. Suppression sets the logits of the chosen ids to the dtype's
lowest finite value: softmax gives them probability exactly 0, as with -inf, without NaN in the
per-step entropy statistics.

Example:
    >>> # res = suppression_test(model, prompts, answers, ["Wait", "So", "Hmm"], n_random=3)
    >>> # [(r.condition, r.accuracy) for r in res.rows]
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from thinklens.analyses.mi.vocab import flat_ids, random_token_ids, token_ids_for_words
from thinklens.data.answers import Tally, is_correct
from thinklens.engine.hooks import ForwardContext
from thinklens.engine.interventions import HookFn
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel


def suppress_tokens(ids: Sequence[int]) -> HookFn:
    """An intervention that makes the given token ids impossible to emit.

    Example:
        >>> suppress_tokens([3, 5]).site
        Site(kind='logits', layer=None)
    """
    index = torch.as_tensor(sorted({int(i) for i in ids}), dtype=torch.long)

    def fn(logits: Tensor, ctx: ForwardContext) -> Tensor:
        if index.numel() == 0:
            return logits
        return logits.index_fill(-1, index.to(logits.device), torch.finfo(logits.dtype).min)

    return HookFn(Site("logits"), fn)


@dataclass(frozen=True)
class SuppressionRow(Tally):
    """Accuracy under one condition."""

    condition: str
    """"none", "thinking" or "random_<draw>"."""
    n_ids: int
    """Token ids suppressed."""


@dataclass(frozen=True)
class SuppressionResult:
    """The suppression table and the ids behind it."""

    rows: tuple[SuppressionRow, ...]
    thinking_words: tuple[str, ...]
    thinking_ids: tuple[int, ...]
    random_ids: tuple[tuple[int, ...], ...]
    seed: int

    def accuracy(self, condition: str) -> float:
        """Accuracy of one condition; "random" is the mean over the random draws."""
        values = [r.accuracy for r in self.rows if r.condition == condition
                  or (condition == "random" and r.condition.startswith("random_"))]
        if not values:
            raise ThinklensError.of("condition", condition, "none, thinking, random or random_<i>", "pick one")
        return statistics.fmean(values)

    def summary(self) -> dict[str, float]:
        """Accuracy drops from the unsuppressed baseline (the headline numbers)."""
        base = self.accuracy("none")
        out = {"accuracy_none": base, "accuracy_thinking": self.accuracy("thinking"),
               "drop_thinking": base - self.accuracy("thinking")}
        if self.random_ids:
            out["accuracy_random_mean"] = self.accuracy("random")
            out["drop_random_mean"] = base - self.accuracy("random")
        return out


def accuracy_of(texts: Sequence[str], answers: Sequence[str | int | None]) -> tuple[int, float]:
    """(number correct, accuracy) graded by ``thinklens.data.answers.is_correct``; a text stating no answer is wrong.

    Example:
        >>> accuracy_of(["so #### 12", "\\\\boxed{\\\\frac{1}{2}}", "no answer"], ["12", "0.5", "3"])
        (2, 0.6666666666666666)
    """
    correct = sum(1 for t, a in zip(texts, answers) if a is not None and is_correct(t, a))
    return correct, correct / len(texts) if texts else 0.0


def suppression_test(
    model: HookedModel,
    prompts: Sequence[str],
    answers: Sequence[str | int | None],
    thinking_words: Sequence[str],
    *,
    n_random: int = 3,
    pool: str = "words",
    lowercase: bool = False,
    seed: int = 0,
    max_new_tokens: int = 512,
    stop: Sequence[str] = (),
    batch_size: int | None = None,
) -> SuppressionResult:
    """Greedy accuracy with nothing, the thinking words, or as many random tokens suppressed.

    Args:
        answers: the gold answer of each prompt (graded by ``thinklens.data.answers.is_correct``).
        thinking_words: e.g. the top words of :func:`thinklens.analyses.mi.thinking_token_enrichment`; all of
            their token ids are suppressed (" So" and "So" alike).
        n_random: random draws of the same number of ids, from word tokens (``pool``), seeded.
    """
    if len(prompts) != len(answers) or not prompts:
        raise ThinklensError.of("answers", f"{len(answers)} answers for {len(prompts)} prompts",
                                "one gold answer per prompt, at least one prompt", "pass them in the same order")
    if not (isinstance(n_random, int) and n_random >= 0):
        raise ThinklensError.of("n_random", n_random, "an int >= 0", "use 3")
    table = token_ids_for_words(model.tokenizer, thinking_words, lowercase=lowercase)
    think = flat_ids(table)
    draws = [random_token_ids(model.tokenizer, len(think), exclude=think, pool=pool, seed=seed + k)
             for k in range(n_random)]
    conditions: list[tuple[str, list[int]]] = [("none", []), ("thinking", think)]
    conditions += [(f"random_{k}", ids) for k, ids in enumerate(draws)]
    rows = []
    for name, ids in conditions:
        traces = model.generate(list(prompts), max_new_tokens=max_new_tokens, stop=stop, batch_size=batch_size,
                                interventions=[suppress_tokens(ids)] if ids else [])
        n_correct, _ = accuracy_of([t.text for t in traces], answers)
        rows.append(SuppressionRow(condition=name, n_ids=len(ids), n_correct=n_correct, n=len(prompts)))
    return SuppressionResult(rows=tuple(rows), thinking_words=tuple(table), thinking_ids=tuple(think),
                             random_ids=tuple(tuple(d) for d in draws), seed=seed)
