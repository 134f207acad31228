"""Interventions: small value objects applied by context managers.

``with model.intervene([AddVector(site, v, scale=2.0)]): ...`` installs the hooks and removes
them on exit, also when the body raises. :meth:`HookedModel.generate` and
:meth:`HookedModel.forward_with` take the same objects.

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
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Union

import torch
from torch import Tensor

from thinklens.adapters import get_module
from thinklens.errors import ThinklensError
from thinklens.hooks import ForwardContext, SiteFn, site_hooks
from thinklens.sites import Site

if TYPE_CHECKING:
    from thinklens.model import HookedModel

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


class Intervention:
    """Base class: subclasses give ``hooks(model)`` or override :meth:`install`."""

    def hooks(self, model: "HookedModel") -> list[tuple[Site, SiteFn]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def install(self, model: "HookedModel"):
        """A context manager that applies this intervention to ``model`` while open."""
        return site_hooks(model, self.hooks(model))


def _check_width(model: "HookedModel", site: Site, width: int, what: str) -> None:
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

    def hooks(self, model: "HookedModel") -> list[tuple[Site, SiteFn]]:
        site = model.resolve_site(self.site)
        _check_width(model, site, self.vector.shape[-1], "steering vector")
        vec = self.vector

        def fn(act: Tensor, ctx: ForwardContext) -> Tensor:
            v = vec.to(act.device, act.dtype)
            v = v[:, None, :] if v.ndim == 2 else v  # [batch, 1, d] or [d]
            mask = position_mask(self.positions, ctx)[..., None]  # [batch, pos, 1]
            return torch.where(mask, act + self.scale * v, act)

        return [(site, fn)]


@dataclass(frozen=True)
class ReplaceActivation(Intervention):
    """Replace the activation at ``site``.

    ``values`` is ``[d]`` (every selected position), ``[n, d]`` or ``[batch, n, d]`` with
    ``positions`` a list of n logical positions, or a callable ``fn(act, ctx) -> act'``.
    """

    site: Site
    values: "Tensor | Callable[[Tensor, ForwardContext], Tensor | None]"
    positions: Positions = None

    def hooks(self, model: "HookedModel") -> list[tuple[Site, SiteFn]]:
        site = model.resolve_site(self.site)
        values = self.values
        if callable(values) and not isinstance(values, Tensor):
            pos = self.positions

            def call_fn(act: Tensor, ctx: ForwardContext) -> Tensor | None:
                new = values(act, ctx)
                if new is None:
                    return None
                return torch.where(position_mask(pos, ctx)[..., None], new, act)

            return [(site, call_fn)]
        _check_width(model, site, values.shape[-1], "replacement")
        if values.ndim == 1:

            def fill(act: Tensor, ctx: ForwardContext) -> Tensor:
                mask = position_mask(self.positions, ctx)[..., None]
                return torch.where(mask, values.to(act.device, act.dtype), act)

            return [(site, fill)]
        if self.positions is None or isinstance(self.positions, str) or len(self.positions) != values.shape[-2]:
            raise ThinklensError.of("positions", self.positions, f"a list of {values.shape[-2]} positions, one per row of values",
                                    "pass positions=[p0, p1, ...] matching values")
        plist = list(self.positions)

        def scatter(act: Tensor, ctx: ForwardContext) -> Tensor:
            vals = values.to(act.device, act.dtype)
            for j, p in enumerate(plist):
                row = vals[..., j, :]  # [d] or [batch, d]
                row = row[:, None, :] if row.ndim == 2 else row
                mask = ((ctx.position_ids == p) & ctx.token_mask)[..., None]
                act = torch.where(mask, row, act)
            return act

        return [(site, scatter)]


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

    def hooks(self, model: "HookedModel") -> list[tuple[Site, SiteFn]]:
        return [(model.resolve_site(self.site), self.fn)]


@dataclass(frozen=True)
class RepeatBlock(Intervention):
    """Run block ``layer`` a second time for the selected tokens (representation recycling).

    The second pass takes the block's own output as input at the selected positions; the blocks
    above see the recycled output. The KV cache of that block keeps only the second pass's
    keys and values (the first pass's are cropped first), so its length stays right.

    Args:
        layer: block index (negative counts from the end).
        positions: which tokens; ``"last"`` during generation means every new token.
        when: optional ``fn(ctx) -> Bool[batch]`` choosing rows per forward call.
    """

    layer: int
    positions: Positions = None
    when: "Callable[[ForwardContext], Tensor] | None" = None

    def install(self, model: "HookedModel"):
        return self._install(model)

    @contextmanager
    def _install(self, model: "HookedModel") -> Iterator[None]:
        from transformers.cache_utils import Cache

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
            if cache is not None:
                # the first pass appended this call's keys/values (attention updates any cache it is given;
                # Gemma 2/3 and OLMo 3 pass no use_cache to their blocks); the second pass appends them again
                cache.layers[layer].crop(-h_in.shape[1])
            new_in = torch.where(mask[..., None], h_out, h_in)
            rest = {k: v for k, v in kwargs.items() if k != "hidden_states"}
            state["inside"] = True
            try:
                out2 = mod.forward(new_in, *args[1:], **rest)
            finally:
                state["inside"] = False
            h2 = out2[0] if isinstance(out2, tuple) else out2
            h2 = torch.where(mask[..., None], h2, h_out)
            return (h2, *out[1:]) if isinstance(out, tuple) else h2

        handle = block.register_forward_hook(hook, with_kwargs=True, prepend=True)
        try:
            yield
        finally:
            handle.remove()
