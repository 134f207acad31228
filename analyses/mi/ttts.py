"""Thinking-Token Test-Time Scaling (TTTS): after the model's answer, append a thinking word as
plain text, let it generate up to a budget more, then force the final answer; compare with plain
continued generation (no word) at the same token budget.

Every answer, also at budget 0, is forced the same way: ``answer_prompt`` (the prompt format's cue:
`` Final Answer within \\boxed{}:`` and 16 tokens as the reference, the zoo's ``####`` and 8 tokens for
zoo styles; :attr:`thinklens.data.formats.PromptFormat.ttts_cue`) is appended and ``answer_tokens`` more
tokens are generated greedily; ``answer_prompt + continuation`` is graded by
``thinklens.data.answers.is_correct``. Texts are re-tokenized at each stage (the paper works on text too).

Example:
    >>> # res = ttts_eval(model, prompts, answers, words=("Wait", "So"), budgets=(0, 32, 64))
    >>> # [(r.method, r.budget, r.accuracy) for r in res.rows]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from thinklens.analyses.mi.suppression import accuracy_of
from thinklens.data.answers import Tally
from thinklens.data.formats import TTTS_CUE, TTTS_TOKENS
from thinklens.errors import ThinklensError
from thinklens.generation.kv_batch import eos_ids

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel


@dataclass(frozen=True)
class TTTSRow(Tally):
    """Accuracy of one method at one budget."""

    method: str
    """"plain" (continued generation) or "ttts:<word>"."""
    budget: int
    """Extra tokens allowed after the first answer (the forced answer not counted)."""
    mean_extra_tokens: float
    """Extra tokens actually generated (generation may stop early at EOS)."""


@dataclass(frozen=True)
class TTTSResult:
    """Accuracy vs budget for plain continuation and each thinking word."""

    rows: tuple[TTTSRow, ...]
    answer_prompt: str
    first_pass_accuracy: float
    """Accuracy of the first answer as generated (parsed from the first pass, not forced)."""

    def curve(self, method: str) -> list[tuple[int, float]]:
        """(budget, accuracy) pairs of one method."""
        return [(r.budget, r.accuracy) for r in self.rows if r.method == method]


def continuation_text(model: object, trace: object) -> str:
    """The generated text to continue from: special tokens kept (a zoo trace's ``</think>`` must stay
    in the context), end-of-sequence and padding dropped. Falls back to ``trace.text``.

    Example:
        >>> class T: text = "so #### 5"
        >>> continuation_text(object(), T())
        'so #### 5'
    """
    tok = getattr(model, "tokenizer", None)
    ids = getattr(trace, "token_ids", None)
    if tok is None or ids is None:
        return trace.text  # type: ignore[attr-defined]

    drop = eos_ids(model) | {tok.pad_token_id}  # type: ignore[arg-type]
    return tok.decode([i for i in ids if i not in drop], skip_special_tokens=False)


def check_words(model: object, words: Sequence[str]) -> None:
    """Every TTTS word must tokenize without the unknown token (the zoo knows "wait", not "Wait")."""
    tok = getattr(model, "tokenizer", None)
    unk = getattr(tok, "unk_token_id", None)
    if tok is None or unk is None:
        return
    bad = [w for w in words if unk in tok(" " + w.strip(), add_special_tokens=False)["input_ids"]]
    if bad:
        raise ThinklensError.of("TTTS words", bad, "words of this model's vocabulary",
                                "pick words from the enrichment result (zoo words are lowercase: wait, so)")


def _forced(model: HookedModel, contexts: list[str], answer_prompt: str, answer_tokens: int,
            batch_size: int | None) -> list[str]:
    """The forced answers as text to grade: the cue and what the model wrote after it."""
    traces = model.generate([c + answer_prompt for c in contexts], max_new_tokens=answer_tokens,
                            batch_size=batch_size)
    return [answer_prompt + t.text for t in traces]


def ttts_eval(
    model: HookedModel,
    prompts: Sequence[str],
    answers: Sequence[str | int | None],
    *,
    words: Sequence[str] = ("Wait",),
    budgets: Sequence[int] = (0, 32, 64),
    max_new_tokens: int = 512,
    answer_prompt: str = TTTS_CUE,
    answer_tokens: int = TTTS_TOKENS,
    separator: str = " ",
    batch_size: int | None = None,
) -> TTTSResult:
    """TTTS against plain continuation at equal budgets (greedy everywhere).

    Args:
        answers: gold answers (graded by ``thinklens.data.answers.is_correct``).
        words: thinking words to append (one method each), e.g. ("Wait", "So").
        budgets: extra-token budgets; 0 forces the answer right after the first pass.
        max_new_tokens: budget of the first pass.
        answer_prompt: text that asks for the final answer: the prompt format's ``ttts_cue`` (default: the
            reference's `` Final Answer within \\boxed{}:``).
        answer_tokens: tokens generated after it (the format's ``ttts_tokens``; 16 in the reference).
        separator: put between the first pass and the thinking word.
    """
    if len(prompts) != len(answers) or not prompts:
        raise ThinklensError.of("answers", f"{len(answers)} answers for {len(prompts)} prompts",
                                "one gold answer per prompt, at least one prompt", "pass them in the same order")
    if any(not isinstance(b, int) or b < 0 for b in budgets) or not budgets:
        raise ThinklensError.of("budgets", budgets, "non-negative ints", "pass e.g. budgets=(0, 32, 64)")
    if any(not isinstance(w, str) or not w.strip() for w in words):
        raise ThinklensError.of("words", words, "non-empty thinking words", "pass e.g. words=('Wait',)")
    check_words(model, words)
    first = model.generate(list(prompts), max_new_tokens=max_new_tokens, batch_size=batch_size)
    base = [p + continuation_text(model, t) for p, t in zip(prompts, first)]
    first_pass_accuracy = accuracy_of([t.text for t in first], answers)[1]
    rows = []
    methods = [("plain", "")] + [(f"ttts:{w.strip()}", separator + w.strip()) for w in words]
    for budget in sorted(set(budgets)):
        for name, suffix in methods:
            if budget == 0 and name != "plain":
                continue  # nothing generated after the word: same as appending it, not a budget point
            contexts = [b + suffix for b in base]
            extra = [0] * len(prompts)
            if budget > 0:
                ext = model.generate(contexts, max_new_tokens=budget, batch_size=batch_size)
                contexts = [c + continuation_text(model, t) for c, t in zip(contexts, ext)]
                extra = [len(t) for t in ext]
            got = _forced(model, contexts, answer_prompt, answer_tokens, batch_size)
            n_correct, _ = accuracy_of(got, answers)
            rows.append(TTTSRow(method=name, budget=budget, n_correct=n_correct, n=len(prompts),
                                mean_extra_tokens=sum(extra) / len(extra)))
    return TTTSResult(rows=tuple(rows), answer_prompt=answer_prompt, first_pass_accuracy=first_pass_accuracy)
