"""The KV-cached state of one decoding batch (:class:`Decoder`).

:class:`Decoder` owns one batch's growing sequence: ``prefill``, ``step`` (a token or an input
embedding per row), ``extend`` (k tokens in one forward), ``append`` (a masked segment, returning
the whole HF output), ``rollback`` and ``rerun`` (redo the last forward, e.g. under an
intervention), and ``fork`` (a copy of some rows' state). Its forwards keep gradients unless the
caller disables them, so latent trainers and LatentSeek use the same object as generation. The
loop over it is :func:`thinklens.generation.decode_loop.decode`.

Example:
    >>> # dec = Decoder(model, ["Q: 3+4 ="]); logits = dec.prefill()
    >>> # logits = dec.step(logits.argmax(-1)); dec.rollback(1); logits = dec.step(tok)
"""

from __future__ import annotations

import copy
import inspect
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Float, Int
from torch import Tensor
from transformers import DynamicCache
from transformers.cache_utils import Cache, DynamicLayer

from thinklens.engine.base import left_pad as left_pad  # the one left-padder, importable here too, as before
from thinklens.engine.hooks import ForwardContext, site_hooks
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.generation.presized_cache import PresizedLayer, presize_cache

if TYPE_CHECKING:
    from thinklens.engine.base import BaseHookedModel


_CACHE_KW: dict[type, str] = {}


def cache_kwarg(hf: torch.nn.Module) -> str:
    """``cache`` in transformers >= 5.2x, ``past_key_values`` before."""
    cls = type(hf)
    if cls not in _CACHE_KW:
        params = inspect.signature(hf.forward).parameters
        _CACHE_KW[cls] = "cache" if "cache" in params else "past_key_values"
    return _CACHE_KW[cls]


_LOGITS_TO_KEEP: dict[type, bool] = {}


def takes_logits_to_keep(hf: torch.nn.Module) -> bool:
    """Whether ``hf.forward`` takes ``logits_to_keep`` (HF ``generate`` then passes 1: the LM head runs on the
    last position only, which saves a ``[batch, pos, vocab]`` tensor and gives HF's own logits, same kernel shapes)."""
    cls = type(hf)
    if cls not in _LOGITS_TO_KEEP:
        _LOGITS_TO_KEEP[cls] = "logits_to_keep" in inspect.signature(hf.forward).parameters
    return _LOGITS_TO_KEEP[cls]


def eos_ids(model: "BaseHookedModel") -> set[int]:
    """Every end-of-sequence id the tokenizer, the config and the generation config name."""
    ids: set[int] = set()
    for src in (model.tokenizer.eos_token_id, getattr(model.config, "eos_token_id", None),
                getattr(getattr(model.hf, "generation_config", None), "eos_token_id", None)):
        if isinstance(src, int):
            ids.add(src)
        elif isinstance(src, (list, tuple)):
            ids.update(int(x) for x in src)
    return ids


def new_cache(model: "BaseHookedModel") -> Any:
    """An empty KV cache for ``model``. Sliding-window layers (Mistral, Gemma 2/3, OLMo 3, gpt-oss) keep
    their past until cropped, so :meth:`Decoder.rollback` and ``RepeatBlock`` work past the window (the
    attention still sees only the window; memory as a full-attention layer)."""
    own = own_cache_class(model.hf)
    if own is not None:  # a family whose forward takes its own cache class only (MiniMax)
        return own()
    cache = DynamicCache(config=model.config)
    cache.activate_past_recording()
    return cache


#: Model types whose HF ``generate`` passes the attention mask at the prefill only (Mamba's mixers multiply their
#: input by the mask, which must then be the new tokens' own).
MASK_AT_PREFILL_ONLY = frozenset({"mamba", "mamba2", "falcon_mamba"})

#: Model types whose forward accepts only the cache class of their own modeling module.
OWN_CACHE_TYPES = frozenset({"minimax"})


def own_cache_class(hf: torch.nn.Module) -> Any:
    """The cache class defined in ``hf``'s modeling module for :data:`OWN_CACHE_TYPES`, else None."""
    if getattr(hf.config, "model_type", None) not in OWN_CACHE_TYPES:
        return None
    module = sys.modules.get(type(hf).__module__)
    found = [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, Cache)
             and c.__module__ == module.__name__] if module is not None else []
    return found[0] if len(found) == 1 else None


class Decoder:
    """Step-level KV-cached decoding of one left-padded batch.

    Args:
        model: the HookedModel.
        inputs: what :meth:`HookedModel.tokenize` takes (prompts, token-id rows, an encoding);
            None starts empty (the first :meth:`append` is then the prefill).
        output_hidden_states: ask the HF model for every layer's states in :meth:`append`'s output.
        capture: sites whose states this decoder records (see :meth:`watch`).

    Example:
        >>> # dec = Decoder(model, model.tokenize(prompts)); logits = dec.prefill()
        >>> # logits = dec.step(logits.argmax(-1)); dec.rollback(1); logits = dec.step(tok)
    """

    def __init__(self, model: "BaseHookedModel", inputs: Any = None, *, output_hidden_states: bool = False,
                 capture: Sequence[Site | str] = ()):
        self.model = model
        self.states: dict[Site, dict[int, Tensor]] = {}
        self.watch(capture)
        self.prompt = model.tokenize(inputs) if inputs is not None else None
        self.output_hidden_states = output_hidden_states
        self.cache = new_cache(model)
        b = 0 if self.prompt is None else self.prompt["input_ids"].shape[0]
        dev = model.device
        self.ids = torch.zeros((b, 0), dtype=torch.long, device=dev)  # [batch, seen] every input so far
        self.mask = torch.zeros((b, 0), dtype=torch.long, device=dev)  # [batch, seen]
        self.positions = torch.zeros((b, 0), dtype=torch.long, device=dev)  # [batch, seen] logical positions
        self.step_index = -1
        self._last_pos: Tensor | None = None  # [batch, 1] logical position of each row's last real input
        self._last_call: tuple[Tensor, Tensor, Tensor | None] | None = None
        self._reserved: int | None = None  # positions the cache was pre-sized for (reserve)

    def reserve(self, positions: int) -> int:
        """Pre-size the KV cache for ``positions`` positions in all (prompt columns included), before the first
        forward: full-attention layers then write into buffers (:func:`presized_layer`) instead of growing by
        ``torch.cat``. A no-op once the cache holds anything, and for layers that are not plain attention (the
        dynamic cache is the fallback). Returns how many layers were pre-sized."""
        if self._last_pos is not None or self.length:  # (a linear-attention-only cache has no seq length to ask)
            return 0
        self._reserved = positions
        return presize_cache(self.cache, positions)

    def watch(self, sites: Sequence[Site | str]) -> None:
        """Record, from now on, the state at ``sites`` at the last position of every forward of this
        decoder: ``states[site][step]`` ``[batch, d]`` (a re-run step overwrites its own entry)."""
        for site in sites:
            self.states.setdefault(self.model.resolve_site(site), {})

    def _saver(self, site: Site):
        def fn(act: Tensor, ctx: ForwardContext) -> None:
            self.states[site][ctx.step] = act[:, -1].detach()
        return fn

    @property
    def input_ids(self) -> Tensor:
        """The prompt's ``[batch, pos]`` ids (left padded)."""
        return self.prompt["input_ids"] if self.prompt is not None else self.ids

    @classmethod
    def from_cache(cls, model: "BaseHookedModel", cache: Any, attention_mask: Tensor, last_positions: Tensor) -> "Decoder":
        """A decoder that continues after a prefix already in ``cache`` (e.g. a slice of a longer rollout's cache).

        Args:
            attention_mask: ``[batch, cached]`` mask of the cached positions.
            last_positions: ``[batch]`` logical position of each row's last cached token.
        """
        dec = cls(model)
        pos = model.position_ids(attention_mask)
        last = last_positions.reshape(-1, 1).to(pos.device)
        dec.cache, dec.step_index, dec._last_pos = cache, 0, last
        dec.mask = attention_mask.long()
        dec.positions = (pos + last - pos[:, -1:]).masked_fill(attention_mask == 0, 0)
        dec.ids = torch.zeros_like(dec.mask)
        return dec

    # ---- forwards --------------------------------------------------------------------------------
    def append(self, ids: Int[Tensor, "batch n"] | None = None, mask: Tensor | None = None, *,
               inputs_embeds: Float[Tensor, "batch n d"] | None = None, last_logits_only: bool = False) -> Any:
        """Append a segment (ids, or input embeddings) and run the model over it; returns the HF output.

        With both ``ids`` and ``inputs_embeds`` the model reads the embeddings and the sequence records
        the ids (e.g. a ``<latent>`` placeholder where a latent vector was fed).

        ``mask`` (1 = real) allows left padding in the first segment and right padding after it;
        padded slots get harmless positions and are masked out of attention. Gradients flow unless
        the caller disables them (the cache keeps the graph, as trainers need). ``last_logits_only``: the
        output's logits are the last position's only (``[batch, 1, vocab]``), as HF ``generate`` computes them.
        """
        if ids is None and inputs_embeds is None:
            raise ThinklensError.of("decoder input", None, "token ids or inputs_embeds", "pass one of them")
        dev = self.model.device
        shape = (ids if ids is not None else inputs_embeds).shape[:2]
        if ids is None:
            ids = torch.zeros(shape, dtype=torch.long, device=dev)
        ids = ids.to(dev)
        if inputs_embeds is not None:  # as the embedding module would give them (a latent made in float32)
            weight = self.model.hf.get_input_embeddings().weight
            inputs_embeds = inputs_embeds.to(weight.device, weight.dtype)
        mask = torch.ones(shape, dtype=torch.long, device=dev) if mask is None else mask.to(dev).long()
        if self.ids.shape[0] == 0 and self._last_pos is None:  # an empty decoder learns its batch size here
            self.ids, self.mask, self.positions = (t.new_zeros((shape[0], 0)) for t in (self.ids, self.mask, self.positions))
        if self._last_pos is None:  # the prefill
            pos = self.model.position_ids(mask)  # [batch, n]
        else:
            pos = (self._last_pos + mask.cumsum(1)).clamp_min(0)  # padding after a row's end repeats its position
        self.ids = torch.cat([self.ids, ids], 1)
        self.mask = torch.cat([self.mask, mask], 1)
        self.positions = torch.cat([self.positions, pos], 1)
        self._last_pos = self._row_last(pos, mask, self._last_pos)
        self.step_index += 1
        self._last_call = (ids, mask, inputs_embeds)
        return self._run(ids, pos, mask, inputs_embeds, last_logits_only)

    @staticmethod
    def _row_last(pos: Tensor, mask: Tensor, prev: Tensor | None) -> Tensor:
        last = (pos * mask).max(1, keepdim=True).values  # [batch, 1]
        if prev is None:
            return last
        return torch.where(mask.sum(1, keepdim=True) > 0, last, prev)

    def _run(self, ids: Tensor, position_ids: Tensor, new_mask: Tensor, inputs_embeds: Tensor | None,
             last_logits_only: bool = False) -> Any:
        m = self.model
        ctx = ForwardContext(position_ids=position_ids, token_mask=new_mask.bool(), step=self.step_index, cache=self.cache)
        kw: dict[str, Any] = {"attention_mask": self.mask, "position_ids": position_ids, "use_cache": True,
                              cache_kwarg(m.hf): self.cache}
        if self.step_index > 0 and getattr(m.config, "model_type", None) in MASK_AT_PREFILL_ONLY:
            kw["attention_mask"] = None  # as their generate: the mask zeroes the prompt's padding, steps take none
        if self.output_hidden_states:
            kw["output_hidden_states"] = True
        if last_logits_only and takes_logits_to_keep(m.hf):
            kw["logits_to_keep"] = 1
        if inputs_embeds is not None:
            kw["inputs_embeds"] = inputs_embeds
        else:
            kw["input_ids"] = ids
        with m.context.use(ctx), site_hooks(m, [(s, self._saver(s)) for s in self.states]):
            return m.hf(**kw)

    def _started(self, what: str) -> None:
        if self._last_pos is None:
            raise ThinklensError.of("decoder state", f"{what} before prefill()", "prefill() first",
                                    "call dec.prefill() once per batch")

    def prefill(self) -> Float[Tensor, "batch vocab"]:
        """Run the prompt; returns the logits for the first new token."""
        if self.prompt is None:
            raise ThinklensError.of("decoder prompt", None, "a decoder built with inputs", "pass Decoder(model, prompts)")
        self.step_index = -1
        return self.append(self.prompt["input_ids"], self.prompt["attention_mask"], last_logits_only=True).logits[:, -1].float()

    def step(self, tokens: Int[Tensor, " batch"] | None, inputs_embeds: Tensor | None = None,
             mask: Tensor | None = None) -> Float[Tensor, "batch vocab"]:
        """Append ``tokens`` (or ``inputs_embeds`` ``[batch, 1, d]``) and return the next logits; ``mask``
        ``[batch, 1]`` (default ones): 0 appends masked padding to a finished row (its position does not move)."""
        self._started("step()")
        ids = None if tokens is None else tokens.reshape(-1, 1)
        return self.append(ids, mask, inputs_embeds=inputs_embeds, last_logits_only=True).logits[:, -1].float()

    def extend(self, tokens: Int[Tensor, "batch k"], mask: Tensor | None = None) -> Float[Tensor, "batch vocab"]:
        """Append ``k`` tokens to every row in ONE forward (e.g. a fixed exit string); returns the next logits.

        Counts as ``k`` steps for :meth:`rollback`; the same logits as ``k`` calls of :meth:`step`.
        """
        self._started("extend()")
        b = self.mask.shape[0]
        if tokens.ndim != 2 or tokens.shape[0] != b or tokens.shape[1] < 1:
            raise ThinklensError.of("extend tokens", tuple(tokens.shape), f"[{b}, k >= 1]", "pass one row per batch row")
        logits = self.append(tokens, mask, last_logits_only=True).logits[:, -1].float()
        self.step_index += tokens.shape[1] - 1
        return logits

    def rollback(self, n: int = 1) -> None:
        """Undo the last ``n`` positions (KV cache, mask and positions), so they can be re-run.

        ``n`` may reach into the prompt (a steering window over the last n positions); then
        :attr:`step_index` goes below 0.
        """
        if not 1 <= n <= self.length:
            raise ThinklensError.of("rollback", n, f"1..{self.length} positions", "roll back only decoded positions")
        recurrent = [i for i, lay in enumerate(getattr(self.cache, "layers", ()))
                     if any(getattr(lay, "is_recurrent_states_initialized", {}).values())]
        own = sorted({type(lay).__name__ for lay in getattr(self.cache, "layers", ())
                      if not type(lay).__module__.startswith("transformers.cache_utils")
                      and not getattr(lay, "crops_exactly", False)})
        if own:  # a family's own cache layers (DeepSeek-V4's compressed attention): their crop is not exact
            raise ThinklensError.of("rollback", f"{n} positions of a cache with {', '.join(own)} layers",
                                    "a cache of transformers' own attention or convolution layers",
                                    "re-run from the prompt with a fresh Decoder")
        if recurrent or self.model.adapter.module_state or getattr(type(self.cache), "is_croppable", True) is False:
            # transformers' crop leaves a recurrent (SSM / linear-attention) state advanced: refuse
            where = f"layers {recurrent}" if recurrent else f"{type(self.cache).__name__} of {self.model.family}"
            raise ThinklensError.of("rollback", f"{n} positions of a cache with recurrent states ({where})",
                                    "a cache of attention or convolution layers only",
                                    "re-run from the prompt with a fresh Decoder (a recurrent state cannot be rolled back)")
        self.cache.crop(-n)
        self.ids, self.mask, self.positions = self.ids[:, :-n], self.mask[:, :-n], self.positions[:, :-n]
        empty = torch.full_like(self._last_pos, -1)
        self._last_pos = self._row_last(self.positions, self.mask, empty) if self.length else empty
        self.step_index -= n
        self._last_call = None

    def rerun(self) -> Float[Tensor, "batch vocab"]:
        """Redo the last forward call (the prefill or a step), e.g. inside ``model.intervene([...])``;
        returns its logits. The redone call replaces the first in the cache."""
        if self._last_call is None:
            raise ThinklensError.of("rerun", "no forward to redo", "a prefill or step just before",
                                    "call rerun() right after prefill() or step()")
        ids, mask, embeds = self._last_call
        if self.step_index == 0 and self.length == ids.shape[1]:  # the prefill: start from an empty cache
            self.cache = new_cache(self.model)
            if self._reserved is not None:
                presize_cache(self.cache, self._reserved)
            self.ids, self.mask, self.positions = self.ids[:, :0], self.mask[:, :0], self.positions[:, :0]
            self._last_pos, self.step_index = None, -1
            return self.append(ids, mask, inputs_embeds=embeds, last_logits_only=True).logits[:, -1].float()
        index = self.step_index
        self.rollback(ids.shape[1])
        out = self.append(ids, mask, inputs_embeds=embeds, last_logits_only=True).logits[:, -1].float()
        self.step_index = index
        return out

    def fork(self, rows: Sequence[int] | Tensor, repeats: int = 1) -> "Decoder":
        """A new decoder holding a copy of ``rows``' state, each row repeated ``repeats`` times (this one is untouched)."""
        index = torch.as_tensor(list(rows) if not isinstance(rows, Tensor) else rows, dtype=torch.long,
                                device=self.mask.device).repeat_interleave(repeats)
        dec = Decoder(self.model, output_hidden_states=self.output_hidden_states)
        cache = copy.copy(self.cache)
        cache.layers = [copy.copy(layer) for layer in self.cache.layers]
        for layer in cache.layers:
            layer.batch_select_indices(index)  # new tensors: the original layers keep theirs
        dec.cache = cache
        dec.ids, dec.mask, dec.positions = self.ids[index], self.mask[index], self.positions[index]
        dec._last_pos = None if self._last_pos is None else self._last_pos[index]
        dec.step_index = self.step_index
        return dec

    # ---- continuous batching: rows replaced while the others run ----------------------------------------
    def can_splice(self) -> bool:
        """Whether :meth:`splice` can replace rows: every cache layer keeps the keys and values of every position
        (full attention), no state lives in the modules, and every step takes the attention mask."""
        layers = getattr(self.cache, "layers", None)
        return (isinstance(layers, list) and bool(layers) and not self.model.adapter.module_state
                and getattr(self.model.config, "model_type", None) not in MASK_AT_PREFILL_ONLY
                and all(type(lay) is DynamicLayer or isinstance(lay, PresizedLayer) for lay in layers))

    def splice(self, rows: Sequence[int], other: "Decoder") -> None:
        """Replace ``rows`` of this decoder by the rows of ``other`` (a decoder that ran its own prompts, e.g. their
        prefill), right-aligned to this decoder's columns after masked padding: the admission of continuous
        batching. Both must :meth:`can_splice`."""
        if len(rows) != other.mask.shape[0]:
            raise ThinklensError.of("splice rows", list(rows), f"{other.mask.shape[0]} rows (one per row of the other decoder)",
                                    "pass one row index per admitted prompt")
        width, n = self.length, other.length
        if n > width:
            self._pad_left(n - width)
            width = n
        idx = torch.as_tensor(list(rows), dtype=torch.long, device=self.mask.device)
        for mine, theirs in zip(self.cache.layers, other.cache.layers):
            for name in ("keys", "values"):
                dst, src = getattr(mine, name), getattr(theirs, name)  # [batch, head, pos, d_head]
                dst[idx] = torch.cat([dst.new_zeros((len(rows), *dst.shape[1:2], width - n, *dst.shape[3:])),
                                      src.to(dst.dtype)], 2)  # in place: a pre-sized layer's view writes its buffer
        for name in ("ids", "mask", "positions"):
            dst, src = getattr(self, name), getattr(other, name)
            dst[idx] = torch.cat([src.new_zeros((len(rows), width - n)), src], 1)
        self._last_pos[idx] = other._last_pos.to(self._last_pos.device)

    def _pad_left(self, k: int) -> None:
        """Prepend ``k`` masked columns to every row (a longer prompt is being admitted)."""
        for layer in self.cache.layers:
            layer.keys = torch.cat([layer.keys.new_zeros((*layer.keys.shape[:2], k, layer.keys.shape[3])), layer.keys], 2)
            layer.values = torch.cat([layer.values.new_zeros((*layer.values.shape[:2], k, layer.values.shape[3])),
                                      layer.values], 2)
        self.ids, self.mask, self.positions = (torch.cat([t.new_zeros((t.shape[0], k)), t], 1)
                                               for t in (self.ids, self.mask, self.positions))

    def compact(self, at_least: int = 1) -> int:
        """Drop the leading columns that every row masks (rows admitted after others finished leave them), when
        there are at least ``at_least``; returns how many were dropped. Attention then reads fewer positions."""
        used = self.mask.bool().any(0)  # [pos] columns some row attends to
        first = int(used.long().argmax()) if bool(used.any()) else self.length
        if first < max(1, at_least):
            return 0
        for layer in self.cache.layers:  # a pre-sized layer moves the rest into a buffer at its next write
            layer.keys, layer.values = layer.keys[:, :, first:], layer.values[:, :, first:]
        self.ids, self.mask, self.positions = self.ids[:, first:], self.mask[:, first:], self.positions[:, first:]
        return first

    @property
    def length(self) -> int:
        """Positions seen so far (prompt columns included)."""
        return int(self.mask.shape[1])

    @property
    def cache_length(self) -> int:
        return self.cache.get_seq_length()
