"""The module paths of one architecture family (:class:`Adapter`) and the lookup of a path on a loaded model
(:func:`get_module`): the value type that the adapter table (:mod:`thinklens.engine.adapters`) and discovery
(:mod:`thinklens.engine.discovery`) both build, below both of them.

Example:
    >>> a = Adapter("llama", "model.layers", "model.embed_tokens", "model.norm", "lm_head", "self_attn", "mlp")
    >>> a.layer_path(3), a.module_path(Site("mlp_out", 3))
    ('model.layers.3', ('model.layers.3.mlp', 'output'))
    >>> a.parameter_group("model.layers.1.self_attn.q_proj.weight")
    ParameterGroup(kind='attention', layer=1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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


def get_module(root: nn.Module, path: str, adapter: Adapter | None = None) -> nn.Module:
    """Resolve a dotted path (``model.layers.3``) on ``root``."""
    try:
        return root.get_submodule(path)
    except AttributeError as e:
        src = f" (adapter {adapter.family!r} from {adapter.source})" if adapter is not None else ""
        raise ThinklensError.of("module path", path, f"a submodule of the loaded model{src}",
                                f"pass HookedModel.load(..., adapter=Adapter(...)) with this model's paths ({e})") from None
