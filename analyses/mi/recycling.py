"""Representation Recycling (RR): give the model a second pass through one block right where it is
about to emit a thinking token.

Greedy KV-cached decoding (the core's decode loop with :class:`RecycleChoice`). When the argmax
candidate is a thinking token, with probability ``probability`` (seeded), the forward of the current
input token is redone (:meth:`thinklens.generation.kv_batch.Decoder.rerun`) with block L run twice
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

from thinklens.analyses.mi.suppression import accuracy_of
from thinklens.analyses.mi.vocab import flat_ids, token_ids_for_words
from thinklens.engine.interventions import RepeatBlock
from thinklens.errors import ThinklensError
from thinklens.generation.decode_loop import DecodeState, TokenChoice, decode
from thinklens.generation.kv_batch import Decoder

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel


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


class RecycleChoice(TokenChoice):
    """Greedy, except that where the argmax is a thinking token (and a seeded coin says so) the step is
    redone with block ``layer`` run twice and the token re-chosen from the recycled logits."""

    def __init__(self, model: HookedModel, think: torch.Tensor, layer: int, probability: float, gen: torch.Generator):
        self.model, self.think, self.layer, self.probability, self.gen = model, think, layer, probability, gen
        self.recycled: list[list[int]] | None = None

    def choose(self, logits: torch.Tensor, state: DecodeState) -> torch.Tensor:
        b = logits.shape[0]
        if self.recycled is None:
            self.recycled = [[] for _ in range(b)]
        cand = logits.argmax(-1).cpu()
        coin = torch.rand(b, generator=self.gen) < self.probability
        want = torch.isin(cand, self.think) & coin & ~state.done  # [batch]
        if bool(want.any()):
            rows = want.to(logits.device)
            repeat = RepeatBlock(self.layer, positions="last", when=lambda ctx, rows=rows: rows)
            with self.model.intervene([repeat]):
                again = state.decoder.rerun()  # the regular pass (prefill or step) again, recycled
            logits = torch.where(rows[:, None], again, logits)  # other rows keep their regular logits
            for r in want.nonzero()[:, 0].tolist():
                self.recycled[r].append(state.t)
        return logits.argmax(-1)


def _recycle_batch(model: HookedModel, prompts: list[str], think: torch.Tensor, layer: int, probability: float,
                   gen: torch.Generator, max_new_tokens: int, stop: Sequence[str]) -> list[RecycledTrace]:
    dec = Decoder(model, prompts)
    choice = RecycleChoice(model, think, layer, probability, gen)
    out = decode(dec, choice, max_new_tokens=max_new_tokens, stop=stop)
    cache_lengths = tuple(int(layer_cache.get_seq_length()) for layer_cache in dec.cache.layers)
    traces = []
    for r in range(len(prompts)):
        ids = out.row(r)
        traces.append(RecycledTrace(prompt=prompts[r], token_ids=tuple(ids), stop_reason=out.stop_reasons[r],
                                    text=model.tokenizer.decode(ids, skip_special_tokens=True),
                                    recycled_steps=tuple(s for s in choice.recycled[r] if s < out.lengths[r]),
                                    cache_lengths=cache_lengths))
    return traces


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


def recycling_eval(model: HookedModel, prompts: Sequence[str], answers: Sequence[str | int | None],
                   thinking_words: Sequence[str], *, layer: int | None = None, probability: float = 0.5,
                   seed: int = 0, max_new_tokens: int = 512, stop: Sequence[str] = (),
                   batch_size: int | None = None, plain_texts: Sequence[str] | None = None) -> RecyclingResult:
    """Accuracy of plain greedy decoding vs RR (graded by ``thinklens.data.answers.is_correct``).

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
