"""Interventions: small value objects applied by context managers.

``with model.intervene([AddVector(site, v, scale=2.0)]): ...`` installs the hooks and removes
them on exit, also when the body raises. :meth:`HookedModel.generate` and
:meth:`HookedModel.forward_with` take the same objects.

On a multi-stream residual (``[batch, pos, streams, d]``, DeepSeek-V4 / HY-V4 hyper-connections) a ``[d]``
vector edits every stream alike; any other activation shape is refused with the site and its shape.

Positions are logical token positions (0 = the first real token of a row; left padding is never
touched), ``"last"`` (the last input position of every forward call: the last prompt token in a
plain forward, every new token during generation) or ``None`` (every real token).

Example:
    >>> import torch
    >>> v = AddVector(Site("resid_post", 1), torch.ones(8), positions="last", scale=0.5)
    >>> v.scale
    0.5
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Union

import torch
from torch import Tensor
from transformers.cache_utils import Cache, CacheLayerMixin, LinearAttentionCacheLayerMixin

from thinklens.engine.hooks import ForwardContext, SiteFn, site_hooks
from thinklens.engine.module_paths import get_module
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.engine.base import BaseHookedModel

Positions = Union[None, Literal["last"], Sequence[int]]


def position_mask(positions: Positions, ctx: ForwardContext) -> Tensor:
    """``[batch, pos]`` bool mask of the positions selected in the current forward call."""
    if positions is None:
        return ctx.token_mask
    if isinstance(positions, str):
        if positions != "last":
            raise ThinklensError.of("positions", positions, "None, 'last' or a list of ints", "pass positions='last'")
        mask = torch.zeros_like(ctx.token_mask)
        mask[:, -1] = True
        return mask & ctx.token_mask
    want = torch.as_tensor(list(positions), device=ctx.position_ids.device, dtype=ctx.position_ids.dtype)
    return torch.isin(ctx.position_ids, want) & ctx.token_mask


def _streams(mask: Tensor, act: Tensor, site: Site) -> Tensor:
    """``mask`` ``[batch, pos]`` as ``[batch, pos, 1, ...]`` for ``act``: ``[batch, pos, d]``, or a multi-stream
    residual ``[batch, pos, streams, d]`` (DeepSeek-V4's hyper-connections: the edit applies to every stream).
    Any other shape is refused naming the site and the shape."""
    if act.ndim not in (3, 4) or tuple(act.shape[:2]) != tuple(mask.shape):
        raise ThinklensError.of("activation shape", f"{tuple(act.shape)} at {site}",
                                f"[batch, pos, d] or [batch, pos, streams, d] with [batch, pos] = {tuple(mask.shape)}",
                                "intervene at a site of [batch, pos, d] (attn_out, mixer_out, mlp_out) or use HookFn "
                                "with your own function of this shape")
    return mask.reshape(*mask.shape, *([1] * (act.ndim - 2)))


def _rows(v: Tensor, act: Tensor) -> Tensor:
    """A ``[d]`` vector, or ``[batch, d]`` rows, broadcastable over ``act``'s positions (and streams)."""
    if v.ndim == 1:
        return v
    return v.reshape(v.shape[0], *([1] * (act.ndim - 2)), v.shape[-1])


def _stream_view(fn: SiteFn, model: "BaseHookedModel", site: Site, width: int) -> SiteFn:
    """``fn`` (written for ``[..., width]`` activations) applied per stream on a flat multi-stream residual
    ``[batch, pos, streams * width]`` (Qwen4-Exp's hyper-connections), the result flattened back; an activation of
    any other width is refused naming the site and its shape."""

    def wrapped(act: Tensor, ctx: ForwardContext) -> Tensor | None:
        if act.shape[-1] == width:
            return fn(act, ctx)
        streams = model.adapter.residual_streams
        if streams > 1 and act.ndim == 3 and act.shape[-1] == streams * width:
            out = fn(act.unflatten(-1, (streams, width)), ctx)
            return None if out is None else out.flatten(-2)
        raise ThinklensError.of("activation shape", f"{tuple(act.shape)} at {site}",
                                f"[batch, pos, {width}] (or [batch, pos, streams, {width}], or [batch, pos, streams * {width}] "
                                "on a multi-stream residual)", "use HookFn with your own function of this shape")

    return wrapped


class Intervention:
    """Base class: subclasses give ``hooks(model)`` or override :meth:`install`."""

    def hooks(self, model: "BaseHookedModel") -> list[tuple[Site, SiteFn]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def install(self, model: "BaseHookedModel"):
        """A context manager that applies this intervention to ``model`` while open."""
        return site_hooks(model, self.hooks(model))


@contextmanager
def intervene(model: "BaseHookedModel", interventions: Sequence[Intervention] = ()) -> Iterator[None]:
    """Apply ``interventions`` to ``model`` for the duration of the block; all hooks are removed on exit
    (what :meth:`HookedModel.intervene <thinklens.engine.model.HookedModel.intervene>` and the decode loop do)."""
    with ExitStack() as stack:
        for iv in interventions:
            if not isinstance(iv, Intervention):
                raise ThinklensError.of("intervention", type(iv).__name__, "an Intervention (AddVector, ReplaceActivation, ...)",
                                        "wrap a function in HookFn(site, fn)")
            stack.enter_context(iv.install(model))
        yield


def _check_width(model: "BaseHookedModel", site: Site, width: int, what: str) -> None:
    expected = model.site_width(site)
    if width != expected:
        raise ThinklensError.of(
            f"{what} width", width, f"{expected} (the width of {site} on this model)",
            "build the vector at the same site of the same model",
        )


@dataclass(frozen=True)
class AddVector(Intervention):
    """Add ``scale * vector`` at ``site`` (contrastive activation addition, feature steering).

    Args:
        site: where to add.
        vector: ``[d]`` or ``[batch, d]``.
        positions: see module docstring.
        scale: a finite float.
    """

    site: Site
    vector: Tensor
    positions: Positions = None
    scale: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.scale, (int, float)) or not math.isfinite(self.scale):
            raise ThinklensError.of("scale", self.scale, "a finite number", "pass e.g. scale=4.0")
        if self.vector.ndim not in (1, 2) or not torch.isfinite(self.vector).all():
            raise ThinklensError.of("steering vector", tuple(self.vector.shape), "a finite [d] or [batch, d] tensor",
                                    "check for NaN and pass one vector per row or one shared vector")

    def hooks(self, model: "BaseHookedModel") -> list[tuple[Site, SiteFn]]:
        site = model.resolve_site(self.site)
        _check_width(model, site, self.vector.shape[-1], "steering vector")
        vec = self.vector

        def fn(act: Tensor, ctx: ForwardContext) -> Tensor:
            v = _rows(vec.to(act.device, act.dtype), act)  # [batch, 1, (1,) d] or [d]
            mask = _streams(position_mask(self.positions, ctx), act, site)  # [batch, pos, (1,) 1]
            return torch.where(mask, act + self.scale * v, act)

        return [(site, _stream_view(fn, model, site, self.vector.shape[-1]))]


@dataclass(frozen=True)
class ReplaceActivation(Intervention):
    """Replace the activation at ``site``.

    ``values`` is ``[d]`` (every selected position), ``[n, d]`` or ``[batch, n, d]`` with
    ``positions`` a list of n logical positions, or a callable ``fn(act, ctx) -> act'``.
    """

    site: Site
    values: "Tensor | Callable[[Tensor, ForwardContext], Tensor | None]"
    positions: Positions = None

    def hooks(self, model: "BaseHookedModel") -> list[tuple[Site, SiteFn]]:
        site = model.resolve_site(self.site)
        values = self.values
        if callable(values) and not isinstance(values, Tensor):
            pos = self.positions

            def call_fn(act: Tensor, ctx: ForwardContext) -> Tensor | None:
                new = values(act, ctx)
                if new is None:
                    return None
                return torch.where(_streams(position_mask(pos, ctx), act, site), new, act)

            return [(site, call_fn)]
        _check_width(model, site, values.shape[-1], "replacement")
        if values.ndim == 1:

            def fill(act: Tensor, ctx: ForwardContext) -> Tensor:
                mask = _streams(position_mask(self.positions, ctx), act, site)
                return torch.where(mask, values.to(act.device, act.dtype), act)

            return [(site, _stream_view(fill, model, site, values.shape[-1]))]
        if self.positions is None or isinstance(self.positions, str) or len(self.positions) != values.shape[-2]:
            raise ThinklensError.of("positions", self.positions, f"a list of {values.shape[-2]} positions, one per row of values",
                                    "pass positions=[p0, p1, ...] matching values")
        plist = list(self.positions)

        def scatter(act: Tensor, ctx: ForwardContext) -> Tensor:
            vals = values.to(act.device, act.dtype)
            for j, p in enumerate(plist):
                row = _rows(vals[..., j, :], act)  # [d] or [batch, 1, (1,) d]
                mask = _streams((ctx.position_ids == p) & ctx.token_mask, act, site)
                act = torch.where(mask, row, act)
            return act

        return [(site, _stream_view(scatter, model, site, values.shape[-1]))]


@dataclass(frozen=True)
class InjectEmbeddings(ReplaceActivation):
    """Feed given vectors as input embeddings at ``positions`` (the hook latent reasoning uses).

    Example: ``InjectEmbeddings(values=h_prev[:, None, :], positions=[12])`` makes position 12
    read the hidden state ``h_prev`` instead of its token embedding (Coconut).
    """

    site: Site = field(default_factory=lambda: Site("embed"))
    values: "Tensor | Callable[[Tensor, ForwardContext], Tensor | None]" = None  # type: ignore[assignment]
    positions: Positions = None

    def __post_init__(self) -> None:
        if self.values is None:
            raise ThinklensError.of("embeddings", None, "a tensor or a callable", "pass values=...")
        if self.site != Site("embed"):
            raise ThinklensError.of("site", str(self.site), "embed", "use ReplaceActivation for other sites")


@dataclass(frozen=True)
class HookFn(Intervention):
    """A generic site hook ``fn(act, ctx) -> act' | None`` (None leaves the activation alone)."""

    site: Site
    fn: "Callable[[Tensor, ForwardContext], Tensor | None]"

    def hooks(self, model: "BaseHookedModel") -> list[tuple[Site, SiteFn]]:
        return [(model.resolve_site(self.site), self.fn)]


@dataclass(frozen=True)
class RepeatBlock(Intervention):
    """Run block ``layer`` a second time for the selected tokens (representation recycling).

    The second pass takes the block's own output as input at the selected positions; the blocks
    above see the recycled output. The KV cache of that block keeps only the second pass's
    keys and values (the first pass's are cropped first), so its length stays right. A recurrent or
    linear-attention block (Mamba, Gated DeltaNet, short convolution: a transformers linear-attention cache
    layer) has its conv and recurrent states put back as they were before the first pass, so the cache
    again holds the second pass's state only. A cache thinklens cannot put back is refused in one line.

    Args:
        layer: block index (negative counts from the end).
        positions: which tokens; ``"last"`` during generation means every new token.
        when: optional ``fn(ctx) -> Bool[batch]`` choosing rows per forward call.
    """

    layer: int
    positions: Positions = None
    when: "Callable[[ForwardContext], Tensor] | None" = None

    def install(self, model: "BaseHookedModel"):
        return self._install(model)

    @contextmanager
    def _install(self, model: "BaseHookedModel") -> Iterator[None]:
        layer = model.resolve_site(Site("resid_post", self.layer)).layer
        block = get_module(model.hf, model.adapter.layer_path(layer))
        holder = model.context
        state = {"inside": False}

        def hook(mod, args, kwargs, out):
            if state["inside"]:
                return None
            h_in = args[0] if args else kwargs["hidden_states"]
            h_out = out[0] if isinstance(out, tuple) else out
            ctx = holder.get(h_in)
            mask = position_mask(self.positions, ctx)  # [batch, pos]
            if self.when is not None:
                mask = mask & self.when(ctx).to(mask.device)[:, None]
            if not bool(mask.any()):
                return None
            # the block's cache, by keyword or by position (GPT-2 passes it positionally)
            cache = next((a for a in (*args, *kwargs.values()) if isinstance(a, Cache)), None)
            if cache is None:
                _refuse_foreign_cache(model, args, kwargs, layer)
            if cache is not None and "saved" in state:  # a linear-attention / SSM layer: its state as before the first pass
                _restore_linear_state(cache.layers[layer], state.pop("saved"), h_in.shape[1])
            elif cache is not None and "saved_linear" in state:
                n_before, before = state.pop("saved_linear")
                if before is None:  # the prefill: no state yet
                    cache.linear_cache = cache.linear_cache[:n_before]
                else:
                    cache.set_linear_cache(layer, before)
            elif cache is not None:
                # the first pass appended this call's keys/values (attention updates any cache it is given;
                # Gemma 2/3 and OLMo 3 pass no use_cache to their blocks); the second pass appends them again
                cache.layers[layer].crop(-h_in.shape[1])
            site = Site("resid_pre", layer)
            new_in = torch.where(_streams(mask, h_in, site), h_out, h_in)
            rest = {k: v for k, v in kwargs.items() if k != "hidden_states"}
            state["inside"] = True
            try:
                out2 = mod.forward(new_in, *args[1:], **rest)
            finally:
                state["inside"] = False
            h2 = out2[0] if isinstance(out2, tuple) else out2
            h2 = torch.where(_streams(mask, h2, site), h2, h_out)
            return (h2, *out[1:]) if isinstance(out, tuple) else h2

        def pre_hook(mod, args, kwargs):
            state.pop("saved", None)
            state.pop("saved_linear", None)
            if state["inside"]:
                return None
            cache = next((a for a in (*args, *kwargs.values()) if isinstance(a, Cache)), None)
            if cache is not None and model.adapter.module_state:
                raise ThinklensError.of("RepeatBlock", f"block {layer} of {model.family} during cached decoding",
                                        "a model whose recurrent state is in its cache (this family keeps it in its modules: "
                                        "running the block twice would advance it twice)",
                                        "use RepeatBlock in a plain forward (forward_with / capture), or "
                                        "ReplaceActivation at resid_pre")
            if cache is not None and len(getattr(cache, "layers", ())) > model.n_layers:
                raise ThinklensError.of("RepeatBlock", f"block {layer} of {model.family} during cached decoding",
                                        f"a cache of one layer per block (this one has {len(cache.layers)} for "
                                        f"{model.n_layers} blocks)", "use RepeatBlock in a plain forward "
                                        "(forward_with / capture), or ReplaceActivation at resid_pre")
            own = cache is not None and layer < len(getattr(cache, "layers", ())) and \
                not type(cache.layers[layer]).__module__.startswith("transformers.cache_utils") and \
                not getattr(cache.layers[layer], "crops_exactly", False)
            if own:  # a family's own cache layer (DeepSeek-V4's compressed attention): its crop is not exact
                raise ThinklensError.of("RepeatBlock", f"block {layer} of {model.family} with a "
                                        f"{type(cache.layers[layer]).__name__} cache layer during cached decoding",
                                        "a block whose cache layer is one of transformers' own (attention, sliding "
                                        "window, linear attention)",
                                        "use RepeatBlock in a plain forward (forward_with / capture), or "
                                        "ReplaceActivation at resid_pre")
            if cache is not None and _is_linear_layer(cache, layer):
                state["saved"] = _save_linear_state(cache.layers[layer])
            elif cache is not None and hasattr(cache, "get_linear_cache") and "mixer_out" in model.adapter.parts(layer):
                before = cache.get_linear_cache(layer)  # MiniMax's own cache: one state tensor per linear layer
                state["saved_linear"] = (len(cache.linear_cache), None if before is None else before.clone())
            return None

        handles = [block.register_forward_pre_hook(pre_hook, with_kwargs=True),
                   block.register_forward_hook(hook, with_kwargs=True, prepend=True)]
        try:
            yield
        finally:
            for h in handles:
                h.remove()


def _is_linear_layer(cache, layer: int) -> bool:
    layers = getattr(cache, "layers", None)
    return layers is not None and layer < len(layers) and isinstance(layers[layer], LinearAttentionCacheLayerMixin)


_LINEAR_FIELDS = ("conv_states", "recurrent_states", "is_conv_states_initialized", "is_recurrent_states_initialized",
                  "has_previous_state", "conv_kernel_size")


def _save_linear_state(cache_layer) -> dict:
    """A copy of a linear-attention cache layer's conv / recurrent states (recurrent states are updated in place)."""
    saved = {f: dict(getattr(cache_layer, f)) for f in _LINEAR_FIELDS}
    for f in ("conv_states", "recurrent_states"):
        saved[f] = {k: None if v is None else v.clone() for k, v in saved[f].items()}
    return saved


def _restore_linear_state(cache_layer, saved: dict, n_new: int) -> None:
    """Put a linear-attention cache layer back as :func:`_save_linear_state` saw it; a layer that also keeps
    attention keys (transformers' hybrid layers) drops the ``n_new`` keys of the first pass."""
    for f in _LINEAR_FIELDS:
        setattr(cache_layer, f, dict(saved[f]))
    if isinstance(cache_layer, CacheLayerMixin) and getattr(cache_layer, "keys", None) is not None:
        # the attention half's own crop (full or sliding window), not the linear half's
        kv = next(c for c in type(cache_layer).__mro__ if issubclass(c, CacheLayerMixin) and "crop" in c.__dict__
                  and not issubclass(c, LinearAttentionCacheLayerMixin))
        kv.crop(cache_layer, -n_new)


def _refuse_foreign_cache(model: "BaseHookedModel", args, kwargs, layer: int) -> None:
    """A block given a state object that is not a transformers ``Cache`` (a family's own cache class): running it
    twice would advance that state twice, so RepeatBlock refuses in one line instead of decoding wrongly."""
    for a in (*args, *kwargs.values()):
        if a is not None and type(a).__name__.endswith(("Cache", "State", "Params")) and not isinstance(a, Tensor):
            raise ThinklensError.of("RepeatBlock", f"block {layer} of {model.family} with a {type(a).__name__}",
                                    "a block whose cache is a transformers Cache (attention or linear-attention layers)",
                                    "use RepeatBlock in a plain forward (no cache), or ReplaceActivation at resid_pre")
