"""Attention heads: their patterns and their ablation, on any HF decoder whose attention ends in an output projection.

A head's contribution to the residual stream is its slice of the output projection's input (``o_proj`` in Llama,
Qwen, Gemma, Mistral; ``out_proj``, ``dense`` or GPT-2's ``c_proj`` elsewhere): ``[batch, pos, n_heads * head_dim]``,
head ``h`` at ``h * head_dim : (h + 1) * head_dim``. :class:`AblateHeads` zeroes those slices (or replaces them by
given means) with a forward pre-hook on the projection, removed on exit like every intervention.
:func:`attention_patterns` runs one forward with eager attention and returns every layer's ``[batch, head, q, k]``.

Example:
    >>> AblateHeads({3: (1, 4)}).heads
    {3: (1, 4)}
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from thinklens.engine.adapters import get_module
from thinklens.engine.interventions import Intervention
from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.engine.base import BaseHookedModel

OUTPUT_PROJECTIONS = ("o_proj", "out_proj", "c_proj", "dense", "wo")
"""Names of an attention module's output projection, by family (the first one present is used)."""


def head_shape(model: "BaseHookedModel") -> tuple[int, int]:
    """``(n_heads, head_dim)`` of the query heads (the output projection's input is their concatenation)."""
    cfg = model.config
    cfg = getattr(cfg, "text_config", None) or cfg
    n_heads = getattr(cfg, "num_attention_heads", None) or getattr(cfg, "n_head", None)
    if not n_heads:
        raise ThinklensError.of("attention heads", type(cfg).__name__, "a config with num_attention_heads",
                                "this model has no attention heads thinklens can address")
    head_dim = getattr(cfg, "head_dim", None) or model.d_model // n_heads
    return int(n_heads), int(head_dim)


def output_projection(model: "BaseHookedModel", layer: int) -> torch.nn.Module:
    """The output projection of block ``layer``'s attention (:data:`OUTPUT_PROJECTIONS`)."""
    parts = model.adapter.parts(layer)
    attn_path = parts.get("attn_out")
    if attn_path is None:
        raise ThinklensError.of("attention heads", f"block {layer}", "a block with an attention module",
                                "pick a layer that has attention (a recurrent block has no heads)")
    attn = get_module(model.hf, f"{model.adapter.layer_path(layer)}.{attn_path}")
    for name in OUTPUT_PROJECTIONS:
        proj = getattr(attn, name, None)
        if isinstance(proj, torch.nn.Module):
            return proj
    raise ThinklensError.of("attention output projection", type(attn).__name__, f"a child named one of {OUTPUT_PROJECTIONS}",
                            "pass the model's attention class to thinklens' adapter table")


@dataclass(frozen=True)
class AblateHeads(Intervention):
    """Zero (or mean-ablate) attention heads: ``{layer: (head, ...)}``, at every position.

    Args:
        heads: the heads to ablate per layer.
        means: optional ``{layer: [n_heads, head_dim]}`` replacement values (mean ablation); zero when absent.
    """

    heads: Mapping[int, Sequence[int]]
    means: "Mapping[int, Tensor] | None" = None

    def install(self, model: "BaseHookedModel"):
        return self._install(model)

    @contextmanager
    def _install(self, model: "BaseHookedModel") -> Iterator[None]:
        n_heads, head_dim = head_shape(model)
        handles = []
        try:
            for layer, heads in self.heads.items():
                layer = model.resolve_site(f"resid_post.{layer}").layer
                bad = [h for h in heads if not 0 <= int(h) < n_heads]
                if bad:
                    raise ThinklensError.of("head", bad, f"heads 0..{n_heads - 1} of layer {layer}", "check the head indices")
                idx = torch.tensor(sorted(int(h) for h in heads), dtype=torch.long)
                mean = None if self.means is None else self.means.get(layer)
                handles.append(output_projection(model, layer).register_forward_pre_hook(
                    _ablate_hook(idx, n_heads, head_dim, mean)))
            yield
        finally:
            for h in handles:
                h.remove()


def _ablate_hook(idx: Tensor, n_heads: int, head_dim: int, mean: Tensor | None):
    def pre_hook(mod, args):
        x = args[0]  # [batch, pos, n_heads * head_dim]
        x = x.reshape(*x.shape[:-1], n_heads, head_dim).clone()  # [batch, pos, head, head_dim]
        i = idx.to(x.device)
        x[..., i, :] = 0.0 if mean is None else mean.to(x.device, x.dtype)[i]
        return (x.reshape(*x.shape[:-2], n_heads * head_dim), *args[1:])
    return pre_hook


@torch.no_grad()
def head_means(model: "BaseHookedModel", input_ids: Tensor, layers: Sequence[int], *, batch_size: int = 16) -> dict[int, Tensor]:
    """``{layer: [n_heads, head_dim]}``: each head's output averaged over every position of ``input_ids`` (what mean
    ablation puts in its place)."""
    n_heads, head_dim = head_shape(model)
    sums = {layer: torch.zeros(n_heads * head_dim, dtype=torch.float64) for layer in layers}
    count = 0

    def saver(layer: int):
        def pre_hook(mod, args):
            sums[layer] += args[0].detach().double().sum(dim=(0, 1)).cpu()  # [n_heads * head_dim]
        return pre_hook

    handles = [output_projection(model, layer).register_forward_pre_hook(saver(layer)) for layer in layers]
    try:
        for i in range(0, len(input_ids), batch_size):
            chunk = input_ids[i:i + batch_size]
            model.hf(input_ids=chunk.to(model.device))
            count += chunk.numel()
    finally:
        for h in handles:
            h.remove()
    return {layer: (s / count).float().reshape(n_heads, head_dim) for layer, s in sums.items()}


def attention_patterns(model: "BaseHookedModel", input_ids: Tensor, attention_mask: Tensor | None = None) -> list[Tensor]:
    """Every layer's attention pattern ``[batch, head, q, k]`` for one forward (eager attention, restored after)."""
    hf = model.hf
    before = getattr(hf.config, "_attn_implementation", None)
    hf.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            out = hf(input_ids=input_ids.to(model.device), attention_mask=None if attention_mask is None
                     else attention_mask.to(model.device), output_attentions=True)
    finally:
        if before is not None and before != "eager":
            hf.set_attn_implementation(before)
    return [a.float() for a in out.attentions]
