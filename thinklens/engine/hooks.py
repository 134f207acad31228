"""Context-managed hooks on sites.

Every hook registered here is removed in a ``finally`` block, so an exception inside the
``with`` body (or inside a hook) leaves the model exactly as it was.

A site hook is ``fn(act, ctx) -> Tensor | None``: ``act`` is the activation at the site for the
current forward call (``[batch, pos, d]``), ``ctx`` the :class:`ForwardContext` of that call;
returning a tensor replaces the activation.

Example:
    >>> # with site_hooks(model, [(Site("resid_post", 1), lambda a, ctx: a * 0)]):
    >>> #     model.hf(input_ids)   # block 1 output zeroed
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from thinklens.engine.forward_context import ContextHolder, ForwardContext
from thinklens.engine.module_paths import get_module
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.engine.base import BaseHookedModel

__all__ = ["ContextHolder", "ForwardContext", "SiteFn", "site_hooks"]

SiteFn = Callable[[Tensor, "ForwardContext"], "Tensor | None"]


def _first(out: Any) -> Tensor:
    return out[0] if isinstance(out, tuple) else out


def _replace_first(out: Any, new: Tensor) -> Any:
    return (new, *out[1:]) if isinstance(out, tuple) else new


@contextmanager
def site_hooks(model: "BaseHookedModel", hooks: Sequence[tuple[Site, SiteFn]]) -> Iterator[None]:
    """Register ``(site, fn)`` pairs for the duration of the block; removal is guaranteed.

    Hooks on the same site run in the order given, each seeing the previous one's result.
    ``router_logits`` sites are read-only: a hook there that returns a tensor is an error.
    """
    handles: list[Any] = []
    try:
        for site, fn in hooks:
            site = model.resolve_site(site)
            fn = _naming_site(site, fn)
            path, where = model.adapter.module_path(site)
            module = get_module(model.hf, path, model.adapter)
            if site.kind in _INSIDE_BLOCK:
                block = get_module(model.hf, model.adapter.layer_path(site.layer), model.adapter)  # type: ignore[arg-type]
                handles += _register_inside_block(block, module, fn, model.context, site)
            else:
                handles.append(_register(module, where, fn, model.context))
        yield
    finally:
        for h in handles:
            h.remove()


def _naming_site(site: Site, fn: SiteFn) -> SiteFn:
    """``fn``, whose exceptions carry a note naming the site it ran on (the type is kept, so a caller's ``except``
    still matches; the traceback shows the note)."""

    def call(act: Tensor, ctx: ForwardContext) -> Tensor | None:
        try:
            return fn(act, ctx)
        except Exception as e:
            e.add_note(f"raised by the hook on site {site} ({getattr(fn, '__qualname__', fn)!s})")
            raise

    return call


def _register(module: torch.nn.Module, where: str, fn: SiteFn, holder: ContextHolder):
    if where == "output":

        def out_hook(_mod, _args, out):
            act = _first(out)
            new = fn(act, holder.get(act))
            return None if new is None else _replace_first(out, new)

        return module.register_forward_hook(out_hook)

    def pre_hook(_mod, args, kwargs):
        if args:
            act = args[0]
            new = fn(act, holder.get(act))
            return None if new is None else ((new, *args[1:]), kwargs)
        act = kwargs["hidden_states"]
        new = fn(act, holder.get(act))
        return None if new is None else (args, {**kwargs, "hidden_states": new})

    return module.register_forward_pre_hook(pre_hook, with_kwargs=True)


#: Sites at a module inside a block, whose output may hold the block's tokens flattened.
_INSIDE_BLOCK = frozenset({"attn_out", "mixer_out", "mlp_out", "router_logits"})


def _register_inside_block(block: torch.nn.Module, module: torch.nn.Module, fn: SiteFn, holder: ContextHolder,
                           site: Site) -> list:
    """Hooks showing ``fn`` the output of a module inside a block as ``[batch, pos, d]``.

    Some modules see the block's tokens flattened (``[batch * pos, d]``: MoE routers, OPT's MLP); the
    block's input, seen by a pre-hook on the block, gives back the batch and position axes, and a
    replacement is flattened again. Router logits are read-only.
    """
    shape: dict[str, tuple[int, int]] = {}

    def block_pre_hook(_mod, args, kwargs):
        act = args[0] if args else kwargs["hidden_states"]
        shape["bp"] = (act.shape[0], act.shape[1])

    def out_hook(_mod, _args, out):
        act = _first(out)
        flat = act.ndim == 2
        if flat:
            b, p = shape.get("bp", (1, act.shape[0]))
            act = act.reshape(b, p, act.shape[-1])  # [batch, pos, d]
        new = fn(act, holder.get(act))
        if new is None:
            return None
        if site.kind == "router_logits":
            raise ThinklensError.of("intervention site", str(site), "a residual, attention or MLP site (router "
                                    "logits are read-only: routing is decided inside the router)",
                                    "capture router_logits; steer at mlp_out or resid_pre of that block instead")
        return _replace_first(out, new.reshape(-1, new.shape[-1]) if flat else new)

    return [block.register_forward_pre_hook(block_pre_hook, with_kwargs=True), module.register_forward_hook(out_hook)]
