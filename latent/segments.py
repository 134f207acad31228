"""Training and evaluation examples for the latent trainers, tokenised segment by segment.

An :class:`Example` keeps the prompt, each CoT step and the answer segment (marker + number) as
separate token lists, so a trainer can drop, replace or compress steps without re-tokenising, and
the answer segment has the same ids in every sequence it is part of (the CODI distillation position
is found by searching for it). A number may be several tokens (BPE tokenizers split digits): the
answer segment is the marker's tokens, then the number's, whatever their count.
:mod:`thinklens.latent.examples` builds examples from problems in a model's prompt format.

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
from dataclasses import dataclass
from typing import Any

import torch

from thinklens.engine.model import HookedModel
from thinklens.engine.tokenization import prompt_ids
from thinklens.errors import ThinklensError, opt
from thinklens.tasks import ANSWER_MARKER, Problem, render_prompt, spaced

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


def latent_tokens(tokenizer: Any, required: tuple[str, ...] = SPECIAL) -> LatentTokens:
    """The special-token ids of ``tokenizer``; a clear error when some of ``required`` are missing.

    A token the method does not use (not in ``required``; token-level SFT uses none) and the tokenizer lacks gets the
    id -1, which no sequence holds.

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
            if t in required:
                missing.append(t)
            i = -1
        ids[t] = i
    if missing:
        raise ThinklensError.of(
            "tokenizer", f"no single-token {' '.join(missing)}", f"a tokenizer with {' '.join(required)} (the zoo tokenizer has them)",
            f"pass {opt('add_tokens', True)} to the job (or call thinklens.latent.segments.add_latent_tokens(model)) to add them "
            "and resize the embeddings",
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
    tok = copy.deepcopy(model.tokenizer)
    missing = [t for t in SPECIAL if tok.convert_tokens_to_ids(t) in (None, tok.unk_token_id)]
    if missing:  # the tokenizer's own special tokens (chat roles) stay special
        tok.add_special_tokens({"additional_special_tokens": missing}, replace_extra_special_tokens=False)
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
            if i >= 0:  # a token the method does not use may be absent (latent_tokens gives it -1)
                emb[i] = row


@dataclass(frozen=True)
class Example:
    """One problem as token segments: prompt (with bos and cue), CoT steps, answer (marker + number)."""

    prompt: tuple[int, ...]
    """Prompt ids as generation reads the prompt (:func:`thinklens.engine.tokenization.prompt_ids`: one BOS)."""
    steps: tuple[tuple[int, ...], ...]
    """One id tuple per CoT step (``<< a + b = c >>`` in the zoo's words, ``<<a+b=c>>`` for other tokenizers)."""
    answer: tuple[int, ...]
    """Answer segment ids: the marker (``####``, ``The answer is:``) then the number (one or more tokens)."""
    marker_len: int
    """How many leading ids of ``answer`` come before the number (the marker, and a lone space token)."""
    gold: str
    """The gold answer as written (``82``); outputs are graded with :func:`thinklens.data.answers.is_correct`."""

    @property
    def cot(self) -> list[int]:
        return [t for s in self.steps for t in s]


def _ids(tokenizer: Any, text: str) -> tuple[int, ...]:
    return tuple(tokenizer(" " + text, add_special_tokens=False)["input_ids"])


def marker_length(tokenizer: Any, marker: tuple[int, ...], answer: tuple[int, ...]) -> int:
    """Ids of ``answer`` (marker + number) before the number: the prefix shared with ``marker``, then any
    whitespace-only tokens (Qwen and Llama 3 write the space before a number as its own token).

    Example:
        >>> from thinklens.zoo.tokenizer import build_zoo_tokenizer
        >>> tok = build_zoo_tokenizer()
        >>> marker_length(tok, _ids(tok, "####"), _ids(tok, "#### 82"))
        1
    """
    n = 0
    while n < min(len(marker), len(answer) - 1) and marker[n] == answer[n]:
        n += 1
    while n < len(answer) - 1 and not tokenizer.decode([answer[n]]).strip():
        n += 1
    return n


def make_example(tokenizer: Any, prompt: str, steps: list[str], gold: int | str, *, marker: str = ANSWER_MARKER) -> Example:
    """Tokenise a prompt, its CoT steps and the answer (``marker`` then ``gold``) into an :class:`Example`."""
    marker_ids = _ids(tokenizer, marker)
    answer = _ids(tokenizer, f"{marker} {gold}")
    return Example(tuple(prompt_ids(tokenizer, prompt)), tuple(_ids(tokenizer, s) for s in steps), answer,
                   marker_length(tokenizer, marker_ids, answer), str(gold))


def example_from_problem(problem: Problem, tokenizer: Any) -> Example:
    """An :class:`Example` of the zoo's cot format from a synthetic problem (cot-style prompt, one step per equation)."""
    return make_example(tokenizer, render_prompt(problem, "cot"), [spaced(s.equation) for s in problem.steps], problem.answer)


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
