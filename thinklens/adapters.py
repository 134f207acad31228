"""Architecture adapters: one table per family mapping a :class:`Site` to a module path.

Adding a family means adding one :class:`Adapter` entry to ``ADAPTERS`` and the ``model_type``
values it covers to ``MODEL_TYPES``; nothing else in the project names module paths.

Example:
    >>> ADAPTERS["llama"].layer_path(3)
    'model.layers.3'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from torch import nn

from thinklens.errors import ThinklensError
from thinklens.sites import Site


@dataclass(frozen=True)
class Adapter:
    """Module paths of one architecture family (relative to the ``*ForCausalLM`` module)."""

    family: str
    """Family name shown to users."""
    layers: str
    """Path of the ``ModuleList`` of decoder blocks."""
    embed: str
    """Path of the token-embedding module."""
    final_norm: str
    """Path of the final norm."""
    lm_head: str
    """Path of the LM head."""
    attn: str
    """Attribute of a block holding self-attention (its output is a tuple, first item added to the residual)."""
    mlp: str
    """Attribute of a block holding the MLP."""

    def layer_path(self, i: int) -> str:
        return f"{self.layers}.{i}"

    def module_path(self, site: Site) -> tuple[str, Literal["input", "output"]]:
        """Module path of ``site`` and whether the site is that module's input or output."""
        if site.kind == "embed":
            return self.embed, "output"
        if site.kind == "final_norm":
            return self.final_norm, "output"
        if site.kind == "logits":
            return self.lm_head, "output"
        block = self.layer_path(site.layer)  # type: ignore[arg-type]
        if site.kind == "resid_pre":
            return block, "input"
        if site.kind == "resid_post":
            return block, "output"
        if site.kind == "attn_out":
            return f"{block}.{self.attn}", "output"
        return f"{block}.{self.mlp}", "output"


_LLAMA = Adapter("llama", "model.layers", "model.embed_tokens", "model.norm", "lm_head", "self_attn", "mlp")
ADAPTERS: dict[str, Adapter] = {
    "llama": _LLAMA,
    "gpt2": Adapter("gpt2", "transformer.h", "transformer.wte", "transformer.ln_f", "lm_head", "attn", "mlp"),
    "gemma": Adapter("gemma", "model.layers", "model.embed_tokens", "model.norm", "lm_head", "self_attn", "mlp"),
}
# HF `config.model_type` -> family. Llama-style decoders share one layout.
MODEL_TYPES: dict[str, str] = {
    "llama": "llama", "qwen2": "llama", "qwen3": "llama", "mistral": "llama", "olmo2": "llama",
    "gpt2": "gpt2",
    "gemma": "gemma", "gemma2": "gemma",
}


def adapter_for(model_type: str) -> Adapter:
    """The adapter for an HF ``model_type``; a clear error for unsupported families."""
    fam = MODEL_TYPES.get(model_type)
    if fam is None:
        raise ThinklensError.of(
            "architecture", model_type, f"one of {', '.join(sorted(MODEL_TYPES))}",
            "add an Adapter for this family in thinklens/adapters.py (module paths of layers, norm, head)",
        )
    return ADAPTERS[fam]


def get_module(root: nn.Module, path: str) -> nn.Module:
    """Resolve a dotted path (``model.layers.3``) on ``root``."""
    try:
        return root.get_submodule(path)
    except AttributeError as e:
        raise ThinklensError.of("module path", path, "a submodule of the loaded model", f"check the adapter table ({e})") from None
