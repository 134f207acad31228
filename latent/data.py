"""Training and evaluation examples for the latent trainers, tokenised segment by segment.

An :class:`Example` keeps the prompt, each CoT step and the answer segment (marker + number) as
separate token lists, so a trainer can drop, replace or compress steps without re-tokenising, and
the answer segment has the same ids in every sequence it is part of (the CODI distillation position
is found by searching for it).

Example:
    >>> from thinklens.zoo.tokenizer import build_zoo_tokenizer
    >>> from thinklens.tasks import generate_problems
    >>> tok = build_zoo_tokenizer()
    >>> ex = example_from_problem(generate_problems(1, seed=0, n_steps=2)[0], tok)
    >>> len(ex.steps), tok.decode(list(ex.answer))
    (2, '#### 82')
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from thinklens.errors import ThinklensError
from thinklens.tasks import ANSWER_MARKER, Problem, TaskConfig, generate_problem, render_prompt, spaced

if TYPE_CHECKING:
    from thinklens.model import HookedModel

#: The special tokens the trainers use; the zoo tokenizer has them all.
SPECIAL = ("<bot>", "<eot>", "<latent>", "<think>", "</think>", "<compress>")
IGNORE = -100


@dataclass(frozen=True)
class LatentTokens:
    """Ids of the special tokens and of eos / pad."""

    bot: int
    eot: int
    latent: int
    think: int
    end_think: int
    compress: int
    eos: int
    pad: int


def latent_tokens(tokenizer: Any) -> LatentTokens:
    """The special-token ids of ``tokenizer``; a clear error when some are missing.

    Example:
        >>> from thinklens.zoo.tokenizer import build_zoo_tokenizer
        >>> latent_tokens(build_zoo_tokenizer()).bot
        6
    """
    ids = {}
    unk = tokenizer.unk_token_id
    missing = []
    for t in SPECIAL:
        i = tokenizer.convert_tokens_to_ids(t)
        if i is None or i == unk or len(tokenizer(t, add_special_tokens=False)["input_ids"]) != 1:
            missing.append(t)
        ids[t] = i
    if missing:
        raise ThinklensError.of(
            "tokenizer", f"no single-token {' '.join(missing)}", f"a tokenizer with {' '.join(SPECIAL)} (the zoo tokenizer has them)",
            "call latent.data.add_latent_tokens(model) (CLI: --add-tokens) to add them and resize the embeddings",
        )
    if tokenizer.eos_token_id is None:
        raise ThinklensError.of("tokenizer", "no eos token", "a tokenizer with an eos token", "set tokenizer.eos_token")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    return LatentTokens(ids["<bot>"], ids["<eot>"], ids["<latent>"], ids["<think>"], ids["</think>"], ids["<compress>"],
                        tokenizer.eos_token_id, pad)


def add_latent_tokens(model: "HookedModel") -> "HookedModel":
    """A HookedModel over the same HF model with the special tokens added to a copy of its tokenizer.

    The HF model's embeddings are resized in place (new rows are initialised later by the trainer
    from the embedding of ``<<``, as Coconut does); the caller's tokenizer is never mutated.
    """
    from thinklens.model import HookedModel

    tok = copy.deepcopy(model.tokenizer)
    tok.add_special_tokens({"additional_special_tokens": [t for t in SPECIAL if tok.convert_tokens_to_ids(t) in (None, tok.unk_token_id)]})
    if len(tok) > model.embedding_weight.shape[0]:
        model.hf.resize_token_embeddings(len(tok))
    return HookedModel(model.hf, tok, name=model.name)


def init_special_embeddings(model: "HookedModel", tokens: LatentTokens, source: str = "<<") -> None:
    """Coconut's init, used by every method: ``<bot> <eot> <latent> <compress>`` rows := the embedding of ``source``.

    With tied embeddings this also sets their LM-head rows; training separates them again.
    """
    src = model.tokenizer(source, add_special_tokens=False)["input_ids"]
    emb = model.embedding_weight
    with torch.no_grad():
        row = emb[src].mean(0)
        for i in (tokens.bot, tokens.eot, tokens.latent, tokens.compress):
            emb[i] = row


@dataclass(frozen=True)
class Example:
    """One problem as token segments: prompt (with bos and cue), CoT steps, answer (marker + number)."""

    prompt: tuple[int, ...]
    """Prompt ids, as the tokenizer encodes the prompt (bos included when it adds one)."""
    steps: tuple[tuple[int, ...], ...]
    """One id tuple per CoT step (``<< a + b = c >>``)."""
    answer: tuple[int, ...]
    """Answer segment ids: the marker (``####``) then the number."""
    marker_len: int
    """How many leading ids of ``answer`` are the marker."""
    value: int
    """The integer answer."""

    @property
    def cot(self) -> list[int]:
        return [t for s in self.steps for t in s]


def _ids(tokenizer: Any, text: str) -> tuple[int, ...]:
    return tuple(tokenizer(" " + text, add_special_tokens=False)["input_ids"])


def make_example(tokenizer: Any, prompt: str, steps: list[str], value: int) -> Example:
    """Tokenise a prompt, its CoT steps and the answer into an :class:`Example`."""
    marker = _ids(tokenizer, ANSWER_MARKER)
    answer = _ids(tokenizer, f"{ANSWER_MARKER} {value}")
    if answer[: len(marker)] != marker:  # a BPE merge across marker and number: keep the whole as marker
        marker = answer[:-1]
    return Example(tuple(tokenizer(prompt)["input_ids"]), tuple(_ids(tokenizer, s) for s in steps), answer, len(marker), value)


def example_from_problem(problem: Problem, tokenizer: Any) -> Example:
    """An :class:`Example` from a synthetic problem (cot-style prompt, one step per equation)."""
    return make_example(tokenizer, render_prompt(problem, "cot"), [spaced(s.equation) for s in problem.steps], problem.answer)


_EQ = re.compile(r"<<[^<>]*>>")


def examples_from_jsonl(path: str, tokenizer: Any, *, need_cot: bool) -> list[Example]:
    """Examples from a GSM8k / GSM8k-Aug .jsonl (see :func:`thinklens.answers.load_gsm8k_jsonl`).

    The prompt is ``question + " steps :"`` (the zoo's cot cue); steps are the ``<<...>>`` equations.
    """
    from thinklens.answers import load_gsm8k_jsonl

    out = []
    for i, rec in enumerate(load_gsm8k_jsonl(path)):
        steps = _EQ.findall(rec.cot)
        if need_cot and not steps:
            raise ThinklensError.of(
                "dataset", f"{path}: record {i} has no chain of thought", "a cot field or <<a+b=c>> equations in every answer",
                "add a GSM8k-Aug cot (e.g. '<<16-3-4=9>> <<9*2=18>>') or train a method that needs no CoT",
            )
        out.append(make_example(tokenizer, f"{spaced(rec.question)} steps :", [spaced(s) for s in steps], rec.answer))
    if not out:
        raise ThinklensError.of("dataset", path, "at least one record", "check the file")
    return out


class ExampleSource:
    """Deterministic batches: batch ``k`` depends only on ``(seed, k)``, so a resumed run continues
    exactly where a straight run would, and every process agrees on the global batch.

    All examples of a batch share one number of CoT steps (the curricula remove steps per row and
    the latent counts must agree across a batch).
    """

    def __init__(self, tokenizer: Any, *, seed: int, min_steps: int, max_steps: int, data: str | None = None,
                 need_cot: bool = True, task: TaskConfig | None = None):
        self.tokenizer, self.seed, self.task = tokenizer, seed, task or TaskConfig()
        self.min_steps, self.max_steps = min_steps, max_steps
        self.buckets: dict[int, list[Example]] | None = None
        if data is not None:
            self.buckets = {}
            for ex in examples_from_jsonl(data, tokenizer, need_cot=need_cot):
                self.buckets.setdefault(len(ex.steps), []).append(ex)

    def batch(self, k: int, size: int) -> list[Example]:
        rng = np.random.default_rng([self.seed, k])
        if self.buckets is not None:
            keys = sorted(self.buckets)
            weights = np.asarray([len(self.buckets[s]) for s in keys], dtype=float)
            n = keys[int(rng.choice(len(keys), p=weights / weights.sum()))]
            pool = self.buckets[n]
            return [pool[int(i)] for i in rng.integers(0, len(pool), size)]
        n = int(rng.integers(self.min_steps, self.max_steps + 1))
        return [example_from_problem(generate_problem(rng, self.task, n_steps=n), self.tokenizer) for _ in range(size)]


def shard(rows: list, rank: int, world: int) -> list:
    """This process's contiguous slice of a global batch (equal sizes; checked by the trainer)."""
    per = len(rows) // world
    return rows[rank * per:(rank + 1) * per]


# ---------------------------------------------------------------- padding helpers


def right_pad(seqs: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, mask)`` ``[batch, pos]`` right padded."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[r, : len(s)] = 1
    return ids, mask


def shifted_labels(ids: torch.Tensor, first_label: list[int], mask: torch.Tensor) -> torch.Tensor:
    """``labels[b, j] = ids[b, j+1]`` for ``j+1 >= first_label[b]`` inside the mask, else IGNORE.

    So ``cross_entropy(logits[b, j], labels[b, j])`` trains position j to predict the next token.
    """
    labels = torch.full_like(ids, IGNORE)
    labels[:, :-1] = ids[:, 1:]
    keep = torch.zeros_like(mask, dtype=torch.bool)
    keep[:, :-1] = mask[:, 1:].bool()
    for r, f in enumerate(first_label):
        keep[r, : max(f - 1, 0)] = False
    return labels.masked_fill(~keep, IGNORE)


def find_subsequence(seq: list[int], sub: list[int] | tuple[int, ...]) -> int:
    """Start index of the LAST occurrence of ``sub`` in ``seq``, or -1.

    Example:
        >>> find_subsequence([5, 1, 2, 7, 1, 2], [1, 2])
        4
    """
    n = len(sub)
    for i in range(len(seq) - n, -1, -1):
        if list(seq[i:i + n]) == list(sub):
            return i
    return -1


def per_example_ce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean CE of each row over its labelled positions -> ``[batch]`` (rows without labels give 0).

    Per-example means (then a batch mean) make the loss independent of how a global batch is split
    across processes, so 1 and 2 processes follow the same curve.
    """
    flat = torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), labels, ignore_index=IGNORE,
                                             reduction="none")  # [batch, pos]
    n = (labels != IGNORE).sum(1).clamp_min(1)
    return flat.sum(1) / n
