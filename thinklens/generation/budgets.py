"""Generation budgets: one per prompt, inside the model's context.

Every job that generates asks here how many new tokens each prompt may take: the requested
``max_new_tokens`` (:func:`new_token_budget`: else the task protocol's budget for a zoo style, else a real
model's default), cut so that the prompt, its completion and ``reserve`` more tokens (a forced answer)
fit in the model's context. A batch never shares one budget (a long prompt does not cut its batch-mates),
so results do not depend on the batch size, and the number of prompts that were cut is reported.

Example:
    >>> b = prompt_budgets([10, 300, 500], 256, context=512)
    >>> b.per_prompt, b.n_capped
    ((256, 212, 12), 2)
    >>> b.summary()
    {'max_new_tokens': 256, 'context': 512, 'capped_prompts': 2, 'min_budget': 12}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from thinklens.engine.context_window import context_length as context_length  # importable here too, as before
from thinklens.errors import ThinklensError, opt
from thinklens.tasks.protocol import token_budget

ANSWER_TOKENS = 1024
"""New tokens of a completion in a real model's format when a job is not told (--max-new-tokens): steering,
latent-eval. R1 distills often think longer on MATH: raise it there."""
ROLLOUT_TOKENS = 4096
"""New tokens of a rollout that must reach the end of the thinking when a job is not told (the probes' answers,
LYNX's rollouts, whose cue events and forced exits need the whole trace)."""


def new_token_budget(fmt: Any, requested: int | None, *, max_steps: int | None = None, default: int = ANSWER_TOKENS) -> int:
    """New tokens per completion before the context cuts it (:func:`budgets_for`, :func:`prompt_budgets`):
    ``requested``, else the task protocol's budget of a zoo style (``fmt``, a
    :class:`~thinklens.data.formats.PromptFormat`) for ``max_steps`` steps, else ``default``.

    Example:
        >>> from thinklens.data.formats import PromptFormat
        >>> [new_token_budget(PromptFormat(k), None, max_steps=4) for k in ("think", "cot", "plain")]
        [72, 34, 1024]
        >>> new_token_budget(PromptFormat("think"), 50), new_token_budget(PromptFormat("chat"), None, default=ROLLOUT_TOKENS)
        (50, 4096)
    """
    if requested is not None:
        if isinstance(requested, bool) or not isinstance(requested, int) or requested < 1:
            raise ThinklensError.of("max_new_tokens", requested, "None or an integer >= 1", f"pass e.g. {opt('max_new_tokens', 256)}")
        return requested
    if not fmt.is_zoo:
        return default
    if max_steps is None:
        raise ThinklensError.of(f"budget of the {fmt.name} prompt format", "no max_steps", "the most steps of the problems "
                                "(a zoo style's budget is sized by steps)", "pass max_steps, or max_new_tokens")
    return token_budget(fmt.name, max_steps)


@dataclass(frozen=True)
class Budgets:
    """New-token budgets of a list of prompts."""

    per_prompt: tuple[int, ...]
    """Budget of each prompt, in order (each >= 1)."""
    max_new_tokens: int
    """What was asked for every prompt."""
    context: int | None
    """The model's context (None: unknown, nothing cut)."""

    @property
    def shared(self) -> int:
        """One budget for every prompt (the smallest; ``max_new_tokens`` without prompts): for a job whose prompts
        share one setting (a config's ``max_new_tokens``)."""
        return min(self.per_prompt, default=self.max_new_tokens)

    @property
    def n_capped(self) -> int:
        """Prompts whose budget the context cut below ``max_new_tokens``."""
        return sum(b < self.max_new_tokens for b in self.per_prompt)

    def summary(self) -> dict[str, Any]:
        """What a job's summary reports about its budgets."""
        return {"max_new_tokens": self.max_new_tokens, "context": self.context, "capped_prompts": self.n_capped,
                "min_budget": min(self.per_prompt, default=self.max_new_tokens)}



def budget_note(summary: dict[str, Any]) -> str:
    """One line for a job's report from :meth:`Budgets.summary` ('' when no prompt was cut).

    Example:
        >>> budget_note(prompt_budgets([10, 300], 256, context=512).summary())
        'budgets: 1 prompt cut below 256 new tokens by the 512-token context (smallest 212)'
    """
    n = summary.get("capped_prompts", 0)
    if not n:
        return ""
    return (f"budgets: {n} prompt{'s' if n > 1 else ''} cut below {summary['max_new_tokens']} new tokens by the "
            f"{summary['context']}-token context (smallest {summary['min_budget']})")


def prompt_budgets(prompt_lengths: Sequence[int], max_new_tokens: int, context: int | None, *,
                   reserve: int = 0) -> Budgets:
    """Per prompt, ``min(max_new_tokens, context - length - reserve)``.

    Args:
        prompt_lengths: tokens of each prompt as generation reads it (:func:`token_lengths`).
        context: the model's context (:func:`context_length`); None cuts nothing.
        reserve: tokens kept free after the completion (e.g. an exit string and a forced answer).

    Raises:
        ThinklensError: a prompt that leaves no room for one new token.
    """
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ThinklensError.of("max_new_tokens", max_new_tokens, "an integer >= 1", f"pass e.g. {opt('max_new_tokens', 256)}")
    if reserve < 0:
        raise ThinklensError.of("reserve", reserve, "an integer >= 0", "pass reserve=0")
    out = []
    for i, n in enumerate(prompt_lengths):
        room = max_new_tokens if context is None else min(max_new_tokens, context - int(n) - reserve)
        if room < 1:
            raise ThinklensError.of("prompt length", f"prompt {i}: {int(n)} tokens (+{reserve} reserved)",
                                    f"fewer than the model's context ({context} tokens)",
                                    "use shorter problems or a model with a longer context")
        out.append(room)
    return Budgets(tuple(out), max_new_tokens, context)


def token_lengths(model: Any, prompts: Sequence[str], *, chunk: int = 64) -> list[int]:
    """Tokens of each prompt exactly as :meth:`HookedModel.generate` reads it (:meth:`HookedModel.tokenize`:
    one BOS even when a chat template writes one)."""
    out: list[int] = []
    for k in range(0, len(prompts), chunk):
        enc = model.tokenize(list(prompts[k:k + chunk]))
        out.extend(int(n) for n in enc["attention_mask"].sum(1).tolist())
    return out


def budgets_for(model: Any, prompts: Sequence[str], max_new_tokens: int, *, reserve: int = 0) -> Budgets:
    """:func:`prompt_budgets` of ``prompts`` for ``model`` (a HookedModel): the one budget rule of every job.

    Example:
        >>> # b = budgets_for(model, prompts, 1024); model.generate(prompts, max_new_tokens=b.per_prompt)
    """
    return prompt_budgets(token_lengths(model, prompts), max_new_tokens, model.max_context, reserve=reserve)
