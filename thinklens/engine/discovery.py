"""Finding the :class:`~thinklens.engine.module_paths.Adapter` of a model the table does not list.

Two sources, in order: TransformerLens's bridge architecture adapters (their component mapping names the
embedding, block list, final norm, unembedding, attention and MLP modules of about 140 architectures),
then structural discovery on the loaded modules (the ``ModuleList`` of ``num_hidden_layers`` blocks,
``get_input_embeddings`` / ``get_output_embeddings``, the norm registered after the blocks, the attention
and MLP children of a block by name and type). MoE routers come from the model's own declaration of its
router outputs (HF's ``_can_record_outputs["router_logits"]``). Hybrid and recurrent models (Jamba,
Qwen3-Next, Nemotron-H, LFM2, Mamba, ...) get, per block, its token mixer (attention, or a non-attention
mixer: Mamba / SSM, gated linear attention, short convolution, RG-LRU) and its MLP where it has one
(:func:`with_block_parts`). Parts thinklens cannot run (a cache that is not a transformers ``Cache``, fused
modules, a multi-stream residual whose blocks a hook cannot see) are refused at load with one line
(:func:`refuse_unsupported`). ``HookedModel.load`` checks whatever was found against HF ``output_hidden_states``.

Example:
    >>> from transformers import GPT2Config, GPT2LMHeadModel
    >>> gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=50, n_positions=32))
    >>> a = adapter_from_structure(gpt2)
    >>> a.layers, a.embed, a.final_norm, a.lm_head, a.attn, a.mlp, a.pos_embed, a.source
    ('transformer.h', 'transformer.wte', 'transformer.ln_f', 'lm_head', 'attn', 'mlp', 'transformer.wpe', 'structure')
"""

from __future__ import annotations

import logging
import re
import warnings
from dataclasses import replace
from typing import Any

from torch import nn
from transformers import AutoConfig
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

from thinklens.engine.module_paths import Adapter
from thinklens.engine.sites import PART_KINDS
from thinklens.errors import ThinklensError

_ATTN_NAME = re.compile(r"(^|_)(self_?)?attn$|attention$", re.IGNORECASE)
_MLP_NAMES = ("mlp", "feed_forward", "ffn", "block_sparse_moe", "moe", "mixer_mlp")
_MLP_CLASS = re.compile(r"MLP|MoE|Moe|FeedForward|Experts|SparseMoe", re.IGNORECASE)
_NORM = re.compile(r"norm|^ln_?f$|^ln_final$", re.IGNORECASE)
# Non-attention token mixers by class name (Jamba/Mamba/Bamba/Nemotron-H mixers, Gated DeltaNet, Kimi's delta
# attention, MiniMax's lightning attention, LFM's short convolution, RecurrentGemma's RG-LRU block, RWKV's time mix).
_MIXER_CLASS = re.compile(r"(Mixer|GatedDeltaNet|DeltaAttention|LightningAttention|LinearAttention|ShortConv|"
                          r"RecurrentBlock|MambaLayer|Mamba\d?)$|^Rwkv\w*Attention$")
_ATTN_CLASS = re.compile(r"(Attention|Attn)$")
_PART_MLP_CLASS = re.compile(r"(MLP|Mlp|MoE|Moe|MoeBlock|FeedForward|Experts)$")


def _transformer_lens():
    """TransformerLens's adapter factory and config mapping, or None where it cannot be imported.

    Importing its HF source module lowers the ``transformers`` logger to ERROR for the whole process;
    the level is restored, so loading a model through this path leaves the user's logging alone.
    """
    logger = logging.getLogger("transformers")
    level = logger.level
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # heavy (seconds): imported on first use, only for a family the adapter table does not list
            from transformer_lens.config import TransformerBridgeConfig  # lazy: optional dependency (transformer_lens)
            from transformer_lens.factories.architecture_adapter_factory import (  # lazy: optional dependency (transformer_lens)
                ArchitectureAdapterFactory,
            )
            from transformer_lens.model_bridge.sources.transformers import (  # lazy: optional dependency (transformer_lens)
                determine_architecture_from_hf_config,
                map_default_transformer_lens_config,
            )
    except ImportError:  # pragma: no cover - TransformerLens is a dependency; structure still works without it
        return None
    finally:
        logger.setLevel(level)
    return TransformerBridgeConfig, ArchitectureAdapterFactory, determine_architecture_from_hf_config, map_default_transformer_lens_config


def _bridge_adapter(config: Any, architecture: str | None) -> Any:
    """TransformerLens's architecture adapter for an HF config: by ``architecture`` (the loaded class's
    name), else as TransformerLens itself picks one from the config; None where it has none."""
    tl = _transformer_lens()
    if tl is None:
        return None
    bridge_config_cls, factory, determine, map_config = tl
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fields = dict(map_config(config).__dict__)
        except Exception:  # noqa: BLE001 - an unusual config: structural discovery takes over
            return None
        if "num_local_experts" in fields and "num_experts" not in fields:  # as TransformerLens's own boot does
            fields["num_experts"] = fields["num_local_experts"]
        for pick in (lambda: architecture, lambda: determine(config)):
            try:
                bridge_config = bridge_config_cls.from_dict(fields)
                bridge_config.architecture = pick()
                return factory.select_architecture_adapter(bridge_config)
            except Exception:  # noqa: BLE001 - no adapter under that name: try the next way, then structure
                continue
    return None


def _names_of(bridge_adapter: Any) -> dict[str, str | None]:
    """Our adapter fields from a bridge adapter's component mapping (missing entries are left out)."""
    mapping = getattr(bridge_adapter, "component_mapping", None) or {}
    out: dict[str, str | None] = {}
    for ours, theirs in (("embed", "embed"), ("pos_embed", "pos_embed"), ("final_norm", "ln_final"),
                         ("lm_head", "unembed"), ("layers", "blocks")):
        name = getattr(mapping.get(theirs), "name", None)
        if name:
            out[ours] = name
    subs = getattr(mapping.get("blocks"), "submodules", None) or {}
    attn = getattr(subs.get("attn"), "name", None)
    if attn:
        out["attn"] = attn
    mlp = subs.get("mlp")
    if mlp is not None:
        # a block without an MLP container (OPT's fc1/fc2): the MLP's output is its "out" projection
        name = mlp.name or getattr((getattr(mlp, "submodules", None) or {}).get("out"), "name", None)
        if name:
            out["mlp"] = name
    return out


def adapter_from_transformer_lens(hf: nn.Module) -> Adapter | None:
    """The adapter TransformerLens's bridge would use for ``hf`` (by its class, else its config), fields it
    leaves out filled by structural discovery; None where TransformerLens has no adapter for it."""
    config = hf.config
    bridge_adapter = _bridge_adapter(config, type(hf).__name__)
    if bridge_adapter is None:
        return None
    names = _names_of(bridge_adapter)
    if not {"layers", "attn", "mlp"} <= set(names):
        return None
    missing = {"embed", "final_norm", "lm_head"} - set(names)
    if missing:
        names = {**_structure_names(hf), **names}
    return Adapter(family=config.model_type, source="transformer_lens", **names)


def adapter_from_model_type(model_type: str) -> Adapter | None:
    """TransformerLens's adapter for an HF ``model_type`` from its default config (no model needed)."""
    architecture = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(model_type)
    if architecture is None:
        return None
    try:
        config = AutoConfig.for_model(model_type)
    except (ValueError, KeyError):
        return None
    config.architectures = [architecture]
    names = _names_of(_bridge_adapter(config, architecture))
    if not {"layers", "embed", "final_norm", "lm_head", "attn", "mlp"} <= set(names):
        return None
    return Adapter(family=model_type, source="transformer_lens", **names)


# ------------------------------------------------------------------------------------ structure


def _n_layers(config: Any) -> int | None:
    counts = _layer_counts(config)
    return counts[0] if counts else None


def _layer_counts(config: Any) -> list[int]:
    """The config's block counts, most usual key first (LongCat-Flash's ``num_hidden_layers`` counts sublayers,
    its ``num_layers`` the blocks)."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    out = []
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        v = getattr(text, key, None)
        if isinstance(v, int) and v > 0 and v not in out:
            out.append(v)
    return out


def _path_of(hf: nn.Module, target: nn.Module | None) -> str | None:
    if target is None:
        return None
    return next((name for name, mod in hf.named_modules() if mod is target), None)


def _refuse(hf: nn.Module, what: str) -> ThinklensError:
    model_type = getattr(hf.config, "model_type", type(hf).__name__)
    return ThinklensError.of(
        "architecture", model_type, f"a decoder-only causal LM whose {what} can be found (neither TransformerLens's "
        "bridge nor the module structure names it)",
        "pass HookedModel.load(..., adapter=Adapter(family, layers, embed, final_norm, lm_head, attn, mlp)) with "
        "this model's module paths (print(model) shows them)",
    )


def _structure_names(hf: nn.Module) -> dict[str, str | None]:
    lists: list = []
    for n in _layer_counts(hf.config):
        lists = lists or [(name, mod) for name, mod in hf.named_modules()
                          if isinstance(mod, nn.ModuleList) and len(mod) == n and name]
    n = _n_layers(hf.config)
    if not lists:
        raise _refuse(hf, f"block list (a ModuleList of num_hidden_layers={n} modules)")
    layers, blocks = min(lists, key=lambda item: item[0].count("."))  # the outermost list of that length
    embed = _path_of(hf, hf.get_input_embeddings())
    head = _path_of(hf, hf.get_output_embeddings())
    if embed is None or head is None:
        raise _refuse(hf, "input embedding or output embedding (get_input_embeddings / get_output_embeddings)")
    parent_path, _, list_name = layers.rpartition(".")
    parent = hf.get_submodule(parent_path) if parent_path else hf
    children = list(parent.named_children())
    after = children[[name for name, _ in children].index(list_name) + 1:]  # the final norm follows the blocks
    norm = next((name for name, mod in after + children
                 if _NORM.search(name) or "norm" in type(mod).__name__.lower()), None)
    if norm is None:  # no norm: the module that closes the residual after the blocks (Qwen4-Exp's hyper-connection
        # mixer); the parity self-check confirms it is HF's last hidden state
        norm = next((name for name, mod in reversed(after) if list(mod.parameters())
                     and not re.search(r"rotary|emb", name, re.IGNORECASE)), None)
    if norm is None:
        raise _refuse(hf, "final norm (a norm module next to the block list)")
    pos = next((name for name, mod in children if isinstance(mod, nn.Embedding) and mod is not hf.get_input_embeddings()
                and ("pos" in name or name == "wpe")), None)
    prefix = f"{parent_path}." if parent_path else ""
    block = blocks[0]
    if _hybrid_parts(blocks) is not None:  # blocks differ or their mixer is not attention: per-block parts
        return {"layers": layers, "embed": embed, "final_norm": prefix + norm, "lm_head": head, "attn": "", "mlp": "",
                "pos_embed": prefix + pos if pos else None}
    attn = next((name for name, mod in block.named_children()
                 if _ATTN_NAME.search(name) or type(mod).__name__.endswith("Attention")), None)
    mlp = next((name for name, _ in block.named_children() if name in _MLP_NAMES), None)
    if mlp is None:  # by type; an attention class may carry the family's name ("Qwen3MoeAttention")
        mlp = next((name for name, mod in block.named_children()
                    if name != attn and _MLP_CLASS.search(type(mod).__name__)), None)
    if mlp is None:  # no MLP container: the last projection back to the model width is what the MLP adds
        width = hf.get_input_embeddings().weight.shape[-1]
        linears = [name for name, mod in block.named_children() if isinstance(mod, nn.Linear) and mod.out_features == width]
        mlp = linears[-1] if linears else None
    if attn is None or mlp is None:
        raise _refuse(hf, "attention and MLP modules inside a block")
    return {"layers": layers, "embed": embed, "final_norm": prefix + norm, "lm_head": head, "attn": attn, "mlp": mlp,
            "pos_embed": prefix + pos if pos else None}


def _part_of(name: str, module: nn.Module) -> str | None:
    """The part kind of a block's child (``attn_out``, ``mixer_out``, ``mlp_out``), None for anything else."""
    cls = type(module).__name__
    if isinstance(module, (nn.Linear, nn.Embedding, nn.Dropout)) or "norm" in name.lower() or "Norm" in cls:
        return None
    if _MIXER_CLASS.search(cls):
        return "mixer_out"
    if _ATTN_CLASS.search(cls) or (_ATTN_NAME.search(name) and not name.startswith("linear")):
        return "attn_out"
    if _PART_MLP_CLASS.search(cls) or name in _MLP_NAMES:
        return "mlp_out"
    return None


def _hybrid_parts(blocks: nn.ModuleList) -> tuple[tuple[tuple[str, str], ...], ...] | None:
    """Per block, its ``(part kind, child name)`` pairs, when the model is hybrid or recurrent (some block's
    token mixer is not attention, or the blocks' attention children differ); None for ordinary models.

    A block with two MLP-like children (a routed MoE beside a shared MLP, as Granite-MoE-hybrid) has no
    ``mlp_out`` (no single module's output is what the block adds); a block with two token mixers of one
    kind has neither.
    """
    per_block = []
    for block in blocks:
        found: dict[str, list[str]] = {}
        if any(isinstance(mod, nn.ModuleList) and (_ATTN_NAME.search(name) or name in _MLP_NAMES or name.rstrip("s") in
                                                   _MLP_NAMES) for name, mod in block.named_children()):
            per_block.append({})  # sublayers in lists (LongCat-Flash: two attentions, two MLPs): no single part
            continue
        for name, mod in block.named_children():
            kind = _part_of(name, mod)
            if kind is not None:
                found.setdefault(kind, []).append(name)
        per_block.append({k: v[0] for k, v in found.items() if len(v) == 1})
    mixers = any("mixer_out" in parts for parts in per_block)
    attn_paths = {parts.get("attn_out") for parts in per_block}
    if not mixers and len(attn_paths) == 1 and None not in attn_paths:
        return None

    return tuple(tuple((k, parts[k]) for k in PART_KINDS if k in parts) for parts in per_block)


def with_block_parts(hf: nn.Module, adapter: Adapter) -> Adapter:
    """``adapter`` with per-block parts when the model is hybrid or recurrent (:func:`_hybrid_parts`); the
    attention and MLP paths of the first block that has them stay as ``attn`` / ``mlp`` for display."""
    text = hf.config.get_text_config() if hasattr(hf.config, "get_text_config") else hf.config
    streams = getattr(text, "hc_mult", None)  # hyper-connections: the residual is [batch, pos, streams, d]
    if isinstance(streams, int) and streams > 1:
        adapter = replace(adapter, residual_streams=streams)
    flat = getattr(text, "hc_count", None)  # Qwen4-Exp: the streams side by side, [batch, pos, streams * d]
    if isinstance(flat, int) and flat > 1:
        adapter = replace(adapter, residual_streams=flat, residual_layout="flat")
    blocks = hf.get_submodule(adapter.layers)
    if getattr(text, "model_type", None) in OUTPUT_HIDDEN_STATES:
        adapter = replace(adapter, hidden_states="outputs")
    if any(hasattr(mod, "recurrent_states") or hasattr(mod, "_setup_cache") for mod in blocks.modules()):
        adapter = replace(adapter, module_state=True)
    parts = _hybrid_parts(blocks)
    if parts is None:
        if not adapter.attn or not adapter.mlp:
            raise _refuse(hf, "attention and MLP modules inside a block")
        return adapter
    attn = next((dict(p)["attn_out"] for p in parts if "attn_out" in dict(p)), "")
    mlp = next((dict(p)["mlp_out"] for p in parts if "mlp_out" in dict(p)), "")
    return replace(adapter, attn=attn, mlp=mlp, block_parts=parts, router=None if adapter.router is None else adapter.router)


#: Model types whose HF ``output_hidden_states`` are the blocks' outputs (no embedding entry) and the final norm's.
OUTPUT_HIDDEN_STATES = frozenset({"mamba", "mamba2", "falcon_mamba"})

#: Model types refused at load, with the part thinklens cannot run (checked before any module path is looked for).
UNSUPPORTED: dict[str, str] = {
    "rwkv": "RWKV's recurrent state (a list of tensors passed as `state`, not a transformers Cache)",
    "xlstm": "xLSTM's own recurrent cache (`rnn_state`, not a transformers Cache)",
}


def refuse_unsupported(hf: nn.Module) -> None:
    """A one-line ThinklensError when ``hf`` holds a part thinklens cannot run (see :data:`UNSUPPORTED`)."""
    model_type = getattr(hf.config, "model_type", None)
    reason = UNSUPPORTED.get(model_type)
    if reason is not None:
        raise ThinklensError.of("architecture", model_type, "a model whose blocks thinklens can hook and whose cache it "
                                f"can drive (not supported: {reason})",
                                "use the model through transformers directly, or pass HookedModel.load(..., adapter=...) "
                                "if your version of the model differs")


def adapter_from_structure(hf: nn.Module) -> Adapter:
    """Module paths found from the structure of ``hf`` alone (a clear error naming what was not found)."""
    return Adapter(family=getattr(hf.config, "model_type", type(hf).__name__), source="structure", **_structure_names(hf))


# ------------------------------------------------------------------------------------ MoE routers


def _router_class(hf: nn.Module) -> type | None:
    """The router module class HF records ``router_logits`` from (index 0 of its output), if declared."""
    spec = (getattr(hf, "_can_record_outputs", None) or {}).get("router_logits")
    if spec is None:
        return None
    if isinstance(spec, type):
        return spec
    if getattr(spec, "index", 0) != 0:
        return None
    return getattr(spec, "target_class", None)


def with_router(hf: nn.Module, adapter: Adapter) -> Adapter:
    """``adapter`` with the MoE router path and the blocks that hold one (dense blocks of an MoE model
    have none); unchanged for dense models."""
    blocks = hf.get_submodule(adapter.layers)
    if adapter.router is not None:
        layers = tuple(i for i, b in enumerate(blocks) if _has(b, adapter.router))
        return replace(adapter, router_layers=layers)
    cls = _router_class(hf)
    if cls is None:
        return adapter
    found: dict[int, str] = {}
    for i, block in enumerate(blocks):
        name = next((n for n, mod in block.named_modules() if n and isinstance(mod, cls)), None)
        if name is not None:
            found[i] = name
    if not found:
        return adapter
    path = max(set(found.values()), key=list(found.values()).count)
    return replace(adapter, router=path, router_layers=tuple(i for i, p in sorted(found.items()) if p == path))


def _has(block: nn.Module, path: str) -> bool:
    try:
        block.get_submodule(path)
        return True
    except AttributeError:
        return False
