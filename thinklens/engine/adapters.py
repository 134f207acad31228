"""Architecture adapters: where each :class:`Site` lives in a loaded model (one place knows module paths).

An :class:`Adapter` names a model's token embedding, block list, final norm, LM head, and the attention,
MLP and (MoE) router modules of a block; in hybrid and recurrent models, per block, which token mixer it has
(attention, or a non-attention mixer such as a Mamba / linear-attention / convolution layer) and whether it
has an MLP (:attr:`Adapter.block_parts`). :func:`adapter_for_model` finds it for any decoder-only HF causal
LM, in this order: an override passed by the caller; the table below (a few families, checked in the tests
against TransformerLens's own adapters, so the common families load without importing TransformerLens);
TransformerLens's bridge architecture adapter for the model's architecture (thinklens/engine/discovery.py
reads its component mapping); structural discovery otherwise. ``HookedModel.load`` then checks the result
against HF ``output_hidden_states``. Other libraries' names of a site (TransformerLens hook names, sae-lens's
HF module paths) and the parameter groups of a model (attention / MLP / norms / embeddings, per layer) are
derived here too.

Example:
    >>> ADAPTERS["llama"].layer_path(3)
    'model.layers.3'
    >>> transformer_lens_name(Site("resid_post", 3)), str(site_of_transformer_lens("blocks.3.hook_out"))
    ('blocks.3.hook_resid_post', 'resid_post.3')
    >>> ADAPTERS["gpt2"].parameter_group("transformer.h.1.attn.c_attn.weight")
    ParameterGroup(kind='attention', layer=1)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from torch import nn

from thinklens.engine.discovery import (
    adapter_from_model_type,
    adapter_from_structure,
    adapter_from_transformer_lens,
    refuse_unsupported,
    with_block_parts,
    with_router,
)
from thinklens.engine.module_paths import PARAMETER_KINDS, Adapter, ParameterGroup, get_module
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError

__all__ = [
    "ADAPTERS", "MODEL_TYPES", "PARAMETER_KINDS", "Adapter", "ParameterGroup", "adapter_for", "adapter_for_model",
    "check_paths", "get_module", "parameter_groups", "register_adapter", "site_of_transformer_lens", "transformer_lens_name",
]


_LLAMA = Adapter("llama", "model.layers", "model.embed_tokens", "model.norm", "lm_head", "self_attn", "mlp")
#: Hand-written adapters: the families the zoo and the tests load most often, so that they load without
#: importing TransformerLens (seconds); each entry is checked against TransformerLens's adapter in the tests.
ADAPTERS: dict[str, Adapter] = {
    "llama": _LLAMA,
    "gpt2": Adapter("gpt2", "transformer.h", "transformer.wte", "transformer.ln_f", "lm_head", "attn", "mlp",
                    pos_embed="transformer.wpe"),
    "gemma": Adapter("gemma", "model.layers", "model.embed_tokens", "model.norm", "lm_head", "self_attn", "mlp"),
}
# HF `config.model_type` -> table family. Llama-style decoders share one layout.
MODEL_TYPES: dict[str, str] = {
    "llama": "llama", "qwen2": "llama", "qwen3": "llama", "mistral": "llama", "olmo2": "llama",
    "gpt2": "gpt2",
    "gemma": "gemma", "gemma2": "gemma",
}


def register_adapter(model_type: str, adapter: Adapter) -> None:
    """Use ``adapter`` for every model of HF ``model_type`` (an override of discovery; see :func:`adapter_for_model`).

    Example:
        >>> register_adapter("my_llama", Adapter("my_llama", "model.layers", "model.embed_tokens", "model.norm",
        ...                                      "lm_head", "self_attn", "mlp"))
        >>> adapter_for("my_llama").family
        'my_llama'
        >>> _ = MODEL_TYPES.pop("my_llama"), ADAPTERS.pop("my_llama")
    """
    if not isinstance(adapter, Adapter):
        raise ThinklensError.of("adapter", type(adapter).__name__, "an Adapter", "build one with Adapter(family, layers, ...)")
    ADAPTERS[adapter.family] = replace(adapter, source="override")
    MODEL_TYPES[model_type] = adapter.family


def adapter_for(model_type: str) -> Adapter:
    """The adapter for an HF ``model_type`` without a loaded model: the table, else TransformerLens's
    adapter for the type's causal-LM class (no MoE router layers: those need the model, see
    :func:`adapter_for_model`); a clear error when neither knows the type.
    """
    fam = MODEL_TYPES.get(model_type)
    if fam is not None:
        return ADAPTERS[fam]
    found = adapter_from_model_type(model_type)
    if found is None:
        raise ThinklensError.of(
            "architecture", model_type, "a model type TransformerLens's bridge or the adapter table knows "
            f"(table: {', '.join(sorted(MODEL_TYPES))})",
            "load the model itself (HookedModel.load discovers the layout from the modules), or register an "
            "Adapter with thinklens.engine.adapters.register_adapter",
        )
    return found


def adapter_for_model(hf: nn.Module, override: Adapter | None = None) -> Adapter:
    """The adapter of a loaded HF causal LM: ``override``, else the table by ``model_type``, else
    TransformerLens's bridge adapter for its architecture, else structural discovery; the MoE router
    of each block is found from the model's own declaration of its router outputs.

    Every path is checked to exist on ``hf``; a clear error names the one that does not.
    """
    model_type = getattr(getattr(hf, "config", None), "model_type", None)
    if override is not None:
        if not isinstance(override, Adapter):
            raise ThinklensError.of("adapter", type(override).__name__, "an Adapter", "build one with Adapter(family, layers, ...)")
        found = override if override.source == "override" else replace(override, source="override")
    elif model_type in MODEL_TYPES:
        found = ADAPTERS[MODEL_TYPES[model_type]]
    else:
        refuse_unsupported(hf)  # one line naming the part (module or cache) thinklens cannot run
        found = adapter_from_transformer_lens(hf) or adapter_from_structure(hf)
        found = with_block_parts(hf, found)  # hybrid / recurrent blocks: which token mixer each block has
    found = with_router(hf, found)
    check_paths(hf, found)
    return found


def check_paths(hf: nn.Module, adapter: Adapter) -> None:
    """Every module path of ``adapter`` exists on ``hf`` (a clear error naming the first one missing)."""
    paths = [adapter.layers, adapter.embed, adapter.final_norm, adapter.lm_head, adapter.pos_embed]
    n = len(get_module(hf, adapter.layers, adapter))
    for i in range(n):
        paths += [f"{adapter.layer_path(i)}.{p}" for p in adapter.parts(i).values()]
    paths += [f"{adapter.layer_path(i)}.{adapter.router}" for i in adapter.router_layers]
    for p in paths:
        if p is not None:
            get_module(hf, p, adapter)


def parameter_groups(model: Any) -> dict[ParameterGroup, list[str]]:
    """``{group: parameter names}`` of an HF causal LM (or a HookedModel), in ``named_parameters`` order
    (tied parameters once), from its family's adapter.

    Example:
        >>> # parameter_groups(HookedModel.load("tiny-think"))[ParameterGroup("mlp", 0)]
        >>> # ['model.layers.0.mlp.gate_proj.weight', 'model.layers.0.mlp.up_proj.weight', ...]
    """
    hf = getattr(model, "hf", model)
    adapter = getattr(model, "adapter", None) or adapter_for_model(hf)
    groups: dict[ParameterGroup, list[str]] = {}
    for name, _ in hf.named_parameters():
        groups.setdefault(adapter.parameter_group(name), []).append(name)
    return groups


# ---------------------------------------------------------------- TransformerLens hook names

# HookedTransformer's names (the TransformerBridge has them too), except the final norm and the logits,
# which only the bridge hooks as module outputs (HookedTransformer's ln_final.hook_normalized is taken
# before an RMSNorm's weight, not our final_norm).
_TL_GLOBAL = {"embed": "hook_embed", "final_norm": "ln_final.hook_out", "logits": "unembed.hook_out"}
# The bridge's aliases, accepted when reading a name.
_TL_GLOBAL_ALIASES = {"embed.hook_out": "embed"}
_TL_BLOCK_ALIASES = {"in": "resid_pre", "out": "resid_post"}


def transformer_lens_name(site: Site) -> str:
    """The TransformerLens hook name of ``site`` (``blocks.3.hook_resid_post``, ``hook_embed``, ...).

    Example:
        >>> transformer_lens_name(Site("mlp_out", 0)), transformer_lens_name(Site("final_norm"))
        ('blocks.0.hook_mlp_out', 'ln_final.hook_out')
    """
    site = Site.parse(site)
    if site.kind == "router_logits":
        raise ThinklensError.of("site", str(site), "a site TransformerLens hooks by name (router logits have none)",
                                "capture router_logits with HookedModel.capture")
    if site.layer is None:
        return _TL_GLOBAL[site.kind]
    return f"blocks.{site.layer}.hook_{site.kind}"


def site_of_transformer_lens(name: str) -> Site | None:
    """The site a TransformerLens hook name denotes (HookedTransformer's names and the bridge's
    ``blocks.i.hook_in`` / ``hook_out``), or None for names that are not a site.

    Example:
        >>> [str(site_of_transformer_lens(n)) for n in ("blocks.1.hook_resid_pre", "blocks.1.hook_in", "hook_embed")]
        ['resid_pre.1', 'resid_pre.1', 'embed']
        >>> site_of_transformer_lens("blocks.1.attn.hook_pattern") is None
        True
    """
    for kind, tl in _TL_GLOBAL.items():
        if name == tl:
            return Site(kind)
    if name in _TL_GLOBAL_ALIASES:
        return Site(_TL_GLOBAL_ALIASES[name])
    head, _, hook = name.partition(".hook_")  # blocks.<i>.hook_<kind>
    block, _, index = head.partition(".")
    if block != "blocks" or not index.isdigit():
        return None
    kind = _TL_BLOCK_ALIASES.get(hook, hook)
    if kind not in ("resid_pre", "resid_post", "attn_out", "mlp_out"):
        return None
    return Site(kind, int(index))
