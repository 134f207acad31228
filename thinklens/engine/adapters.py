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

from dataclasses import dataclass, replace
from typing import Any, Literal

from torch import nn

from thinklens.engine.sites import Site, all_sites
from thinklens.errors import ThinklensError


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
    pos_embed: str | None = None
    """Path of the learned position-embedding module (GPT-2), if any."""
    router: str | None = None
    """Path, inside a block, of an MoE router (its first output is the logits over experts), if any."""
    router_layers: tuple[int, ...] = ()
    """The blocks that hold a router (MoE models may keep some blocks dense)."""
    source: str = "table"
    """Where the paths came from: ``table``, ``override``, ``transformer_lens`` or ``structure``."""
    block_parts: tuple[tuple[tuple[str, str], ...], ...] = ()
    """Per block, ``(part kind, path inside the block)`` pairs (kinds: ``attn_out``, ``mixer_out``, ``mlp_out``)
    where blocks differ (hybrid and recurrent models); empty: every block has ``attn`` and ``mlp``."""
    hidden_states: str = "inputs"
    """What HF ``output_hidden_states[i]`` is for ``i < n_layers``: ``inputs`` (block ``i``'s input, most families)
    or ``outputs`` (block ``i``'s output: Mamba, Mamba-2 and Falcon-Mamba return no embedding entry)."""
    module_state: bool = False
    """Blocks keep their recurrent state in their own modules, not in the cache object (RecurrentGemma): a cached
    step cannot be rolled back or repeated."""
    residual_layout: str = "stacked"
    """With ``residual_streams > 1``: ``stacked`` (``[batch, pos, streams, d]``, DeepSeek-V4) or ``flat``
    (``[batch, pos, streams * d]``, Qwen4-Exp)."""
    residual_streams: int = 1
    """Parallel residual streams a block reads and writes (DeepSeek-V4's hyper-connections keep 4:
    ``resid_*`` are ``[batch, pos, streams, d]`` there); 1 for ordinary models."""

    def layer_path(self, i: int) -> str:
        return f"{self.layers}.{i}"

    def parts(self, i: int) -> dict[str, str]:
        """``{part kind: path inside the block}`` of block ``i`` (``attn_out`` / ``mixer_out`` / ``mlp_out``)."""
        if not self.block_parts:
            return {"attn_out": self.attn, "mlp_out": self.mlp}
        return dict(self.block_parts[i]) if 0 <= i < len(self.block_parts) else {}

    def part_kinds(self, n_layers: int) -> list[tuple[str, ...]] | None:
        """Per block, the part kinds it has (None: every block has attention and an MLP)."""
        return None if not self.block_parts else [tuple(self.parts(i)) for i in range(n_layers)]

    @property
    def is_hybrid(self) -> bool:
        """Some block's token mixer is not attention (hybrid or recurrent model)."""
        return any(k == "mixer_out" for parts in self.block_parts for k, _ in parts)

    @property
    def is_moe(self) -> bool:
        return bool(self.router_layers)

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
        if site.kind in ("attn_out", "mixer_out", "mlp_out"):
            part = self.parts(site.layer).get(site.kind)  # type: ignore[arg-type]
            if part is None:
                have = [f"{k}.{site.layer}" for k in self.parts(site.layer)]  # type: ignore[arg-type]
                raise ThinklensError.of(
                    "site", str(site), f"a part that block {site.layer} has ({', '.join(have) or 'only resid_pre/resid_post'})",
                    f"use {site.kind}.* for the blocks that have one, token_mixer.* for every block's attention or "
                    "mixer, or list the model's sites with `thinklens info MODEL`")
            return f"{block}.{part}", "output"
        if site.kind == "router_logits":
            if self.router is None or site.layer not in self.router_layers:
                raise ThinklensError.of("site", str(site), "router_logits at an MoE block "
                                        f"({', '.join(map(str, self.router_layers)) or 'this model has none'})",
                                        "list the model's sites with `thinklens info MODEL`")
            return f"{block}.{self.router}", "output"
        raise ThinklensError.of("site", str(site), "a site kind this adapter maps", "list the model's sites with `thinklens info MODEL`")

    def output_path(self, site: Site) -> str | None:
        """The module whose *output* is ``site``'s tensor (``resid_pre.i`` is block ``i - 1``'s output),
        or None (``resid_pre.0``: the embeddings are transformed before block 0 in some families).

        Output hooks are what sae-lens's ``HookedProxyLM`` uses; its hook names are these paths. Router
        logits have none (the router's output is a tuple of flattened tokens).
        """
        if site.kind == "router_logits":
            return None
        path, where = self.module_path(site)
        if where == "output":
            return path
        if site.kind == "resid_pre" and site.layer:
            return self.layer_path(site.layer - 1)
        return None

    def site_of_output(self, path: str, n_layers: int) -> Site | None:
        """The site whose tensor is the output of module ``path`` (inverse of :meth:`output_path`), or None."""
        for site in all_sites(n_layers, (), self.part_kinds(n_layers)):
            if site.kind != "resid_pre" and self.module_path(site) == (path, "output"):
                return site
        return None

    def parameter_group(self, name: str) -> "ParameterGroup":
        """The group of parameter ``name`` (a path relative to the ``*ForCausalLM`` module).

        Inside block ``i``: ``attention`` (the attention sub-module), ``mixer`` (a non-attention token
        mixer: SSM, linear attention, convolution), ``mlp``, else ``norm`` (the block's norms); outside
        blocks: ``embedding`` (token and position embeddings, LM head), ``norm`` (the final norm), else ``other``.
        """
        prefix = self.layers + "."
        if name.startswith(prefix):
            index, _, rest = name[len(prefix):].partition(".")
            if index.isdigit():
                names = {"attn_out": "attention", "mixer_out": "mixer", "mlp_out": "mlp"}
                kind = next((names[k] for k, p in self.parts(int(index)).items() if p and rest.startswith(p + ".")), "norm")
                return ParameterGroup(kind, int(index))
        if any(name.startswith(p + ".") for p in (self.embed, self.lm_head, self.pos_embed) if p):
            return ParameterGroup("embedding")
        if name.startswith(self.final_norm + "."):
            return ParameterGroup("norm")
        return ParameterGroup("other")


#: Kinds of parameter groups (:meth:`Adapter.parameter_group`).
PARAMETER_KINDS: tuple[str, ...] = ("embedding", "attention", "mixer", "mlp", "norm", "other")


@dataclass(frozen=True)
class ParameterGroup:
    """Where a parameter sits: its kind (one of ``PARAMETER_KINDS``) and block index (None outside blocks)."""

    kind: str
    layer: int | None = None


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
    from thinklens.engine.discovery import adapter_from_model_type

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
    from thinklens.engine.discovery import (
        adapter_from_structure,
        adapter_from_transformer_lens,
        refuse_unsupported,
        with_block_parts,
        with_router,
    )

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


def get_module(root: nn.Module, path: str, adapter: Adapter | None = None) -> nn.Module:
    """Resolve a dotted path (``model.layers.3``) on ``root``."""
    try:
        return root.get_submodule(path)
    except AttributeError as e:
        src = f" (adapter {adapter.family!r} from {adapter.source})" if adapter is not None else ""
        raise ThinklensError.of("module path", path, f"a submodule of the loaded model{src}",
                                f"pass HookedModel.load(..., adapter=Adapter(...)) with this model's paths ({e})") from None


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
