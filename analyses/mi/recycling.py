"""Representation Recycling (RR): give the model a second pass through one block right where it is
about to emit a thinking token.

Greedy KV-cached decoding. When the argmax candidate is a thinking token, with probability
``probability`` (seeded), the forward of the current input token is redone with block L run twice
(:class:`thinklens.RepeatBlock`: its input at that position is replaced by its own output; the
blocks above are recomputed) and the token is re-chosen from the recycled logits. The recycled
keys and values are kept: the decoder rolls back the regular step and RepeatBlock crops the
block's first-pass entries, so each layer's cache holds exactly one entry per position (a naive
port on an in-place cache appends them twice; ``cache_lengths`` records this, and the tests check it).
Default L = round(0.72 * n_layers) (23 of 32 in the paper).

Example:
    >>> # rr = recycle_generate(model, prompts, ["Wait", "So"], max_new_tokens=256)
    >>> # rr[0].recycled_steps   # steps whose token was re-chosen after a recycled pass
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from analyses.mi.suppression import accuracy_of
from analyses.mi.vocab import flat_ids, token_ids_for_words
from thinklens.errors import ThinklensError
from thinklens.generate import Decoder, eos_ids, mark_stops
from thinklens.interventions import RepeatBlock

if TYPE_CHECKING:
    from thinklens.model import HookedModel


@dataclass(frozen=True)
class RecycledTrace:
    """One RR trajectory."""

    prompt: str
    token_ids: tuple[int, ...]
    text: str
    stop_reason: str
    recycled_steps: tuple[int, ...]
    """Steps t whose token was chosen from recycled logits."""
    cache_lengths: tuple[int, ...]
    """Per layer, the KV-cache length at the end of decoding (all equal when the cache is right)."""


def default_layer(n_layers: int) -> int:
    """About 0.72 of the depth, as in the paper (23 of 32).

    Example:
        >>> default_layer(32), default_layer(4)
        (23, 3)
    """
    return min(n_layers - 1, round(0.72 * n_layers))


@torch.no_grad()
def _recycle_batch(model: HookedModel, prompts: list[str], think: torch.Tensor, layer: int, probability: float,
                   gen: torch.Generator, max_new_tokens: int, stop: Sequence[str]) -> list[RecycledTrace]:
    enc = model.tokenize(prompts)
    b = len(prompts)
    dec = Decoder(model, enc)
    eos, pad = eos_ids(model), model.tokenizer.pad_token_id
    done = torch.zeros(b, dtype=torch.bool)
    lengths, reasons = [max_new_tokens] * b, ["max_new_tokens"] * b
    recycled: list[list[int]] = [[] for _ in range(b)]
    tokens: list[torch.Tensor] = []
    tail = max((len(s) for s in stop), default=0) + 4  # tokens enough to hold any stop string
    logits = dec.prefill()  # [batch, vocab]
    prev: torch.Tensor | None = None
    for t in range(max_new_tokens):
        cand = logits.argmax(-1).cpu()
        coin = torch.rand(b, generator=gen) < probability
        want = torch.isin(cand, think) & coin & ~done  # [batch]
        if bool(want.any()):
            rows = want.to(logits.device)
            repeat = RepeatBlock(layer, positions="last", when=lambda ctx, rows=rows: rows)
            if prev is None:  # step 0: the regular pass was the prefill; redo it
                dec = Decoder(model, enc)
                with model.intervene([repeat]):
                    again = dec.prefill()
            else:
                dec.rollback(1)
                with model.intervene([repeat]):
                    again = dec.step(prev)
            logits = torch.where(rows[:, None], again, logits)  # other rows keep their regular logits
            for r in want.nonzero()[:, 0].tolist():
                recycled[r].append(t)
        nxt = logits.argmax(-1)
        nxt = torch.where(done.to(nxt.device), torch.full_like(nxt, pad), nxt)
        tokens.append(nxt.cpu())
        mark_stops(model.tokenizer, nxt, tokens, t, eos, stop, tail, done, lengths, reasons)
        if bool(done.all()) or t == max_new_tokens - 1:
            break
        logits = dec.step(nxt)
        prev = nxt
    cache_lengths = tuple(int(layer_cache.get_seq_length()) for layer_cache in dec.cache.layers)
    mat = torch.stack(tokens, 1)  # [batch, steps]
    out = []
    for r in range(b):
        ids = mat[r, : lengths[r]].tolist()
        out.append(RecycledTrace(prompt=prompts[r], token_ids=tuple(ids), stop_reason=reasons[r],
                                 text=model.tokenizer.decode(ids, skip_special_tokens=True),
                                 recycled_steps=tuple(s for s in recycled[r] if s < lengths[r]),
                                 cache_lengths=cache_lengths))
    return out


def recycle_generate(
    model: HookedModel,
    prompts: Sequence[str],
    thinking_words: Sequence[str] | None = None,
    *,
    thinking_ids: Sequence[int] | None = None,
    layer: int | None = None,
    probability: float = 0.5,
    seed: int = 0,
    max_new_tokens: int = 512,
    stop: Sequence[str] = (),
    batch_size: int | None = None,
    lowercase: bool = False,
) -> list[RecycledTrace]:
    """Greedy generation with Representation Recycling on thinking tokens.

    Args:
        thinking_words: e.g. the paper's top-10 thinking words of this model (all their ids count),
            or pass ``thinking_ids`` directly.
        layer: the recycled block (default :func:`default_layer`; negative counts from the end).
        probability: chance to recycle when the candidate is a thinking token (0.5 in the paper).
        seed: seed of the local generator for those draws.
    """
    if (thinking_words is None) == (thinking_ids is None):
        raise ThinklensError.of("thinking tokens", "both or neither of thinking_words / thinking_ids",
                                "exactly one of them", "pass thinking_words=['Wait', 'So', ...]")
    if not 0.0 <= probability <= 1.0:
        raise ThinklensError.of("probability", probability, "a number in [0, 1]", "use the paper's 0.5")
    if not prompts:
        raise ThinklensError.of("prompts", prompts, "at least one prompt", "pass a non-empty list")
    ids = flat_ids(token_ids_for_words(model.tokenizer, thinking_words, lowercase=lowercase)) \
        if thinking_words is not None else sorted({int(i) for i in thinking_ids or ()})
    think = torch.as_tensor(ids, dtype=torch.long)
    layer_ = model.resolve_site(f"resid_post.{default_layer(model.n_layers) if layer is None else layer}").layer
    gen = torch.Generator().manual_seed(seed)
    bs = batch_size or len(prompts)
    out: list[RecycledTrace] = []
    for i in range(0, len(prompts), bs):
        out.extend(_recycle_batch(model, list(prompts[i:i + bs]), think, int(layer_), probability, gen,
                                  max_new_tokens, stop))
    return out


@dataclass(frozen=True)
class RecyclingResult:
    """Greedy accuracy without and with RR on the same prompts."""

    accuracy_plain: float
    accuracy_rr: float
    n: int
    mean_recycled_steps: float
    layer: int
    probability: float
    seed: int


def recycling_eval(model: HookedModel, prompts: Sequence[str], answers: Sequence[int | None],
                   thinking_words: Sequence[str], *, layer: int | None = None, probability: float = 0.5,
                   seed: int = 0, max_new_tokens: int = 512, stop: Sequence[str] = (),
                   batch_size: int | None = None, plain_texts: Sequence[str] | None = None) -> RecyclingResult:
    """Accuracy of plain greedy decoding vs RR (answers compared with ``parse_answer``).

    ``plain_texts``: the greedy generations of the same prompts, when already computed (a layer
    sweep decodes them once).
    """
    if len(prompts) != len(answers):
        raise ThinklensError.of("answers", f"{len(answers)} answers for {len(prompts)} prompts",
                                "one gold answer per prompt", "pass them in the same order")
    if plain_texts is None:
        plain_texts = [t.text for t in model.generate(list(prompts), max_new_tokens=max_new_tokens, stop=stop,
                                                      batch_size=batch_size)]
    elif len(plain_texts) != len(prompts):
        raise ThinklensError.of("plain_texts", len(plain_texts), f"{len(prompts)} texts", "pass one per prompt")
    rr = recycle_generate(model, prompts, thinking_words, layer=layer, probability=probability, seed=seed,
                          max_new_tokens=max_new_tokens, stop=stop, batch_size=batch_size)
    layer_ = model.resolve_site(f"resid_post.{default_layer(model.n_layers) if layer is None else layer}").layer
    return RecyclingResult(
        accuracy_plain=accuracy_of(list(plain_texts), answers)[1],
        accuracy_rr=accuracy_of([t.text for t in rr], answers)[1], n=len(prompts),
        mean_recycled_steps=sum(len(t.recycled_steps) for t in rr) / len(rr),
        layer=int(layer_), probability=probability, seed=seed,
    )
