"""Typed activation sites.

A :class:`Site` names one place in a model: a kind (``resid_post``, ...) and, for per-layer kinds,
a layer index. Strings such as ``"resid_post.3"`` appear only at the edges (CLI, files, UI) and
are parsed here, in one place, with a did-you-mean error on typos.

Conventions (checked against HF ``output_hidden_states`` in the tests):

- ``embed``: output of the token-embedding module (what HF calls ``inputs_embeds``; Gemma's is
  already scaled by sqrt(d)). For GPT-2 the position embedding is added after this site.
- ``resid_pre.i``: input of block ``i`` (``hidden_states[i]`` of HF).
- ``resid_post.i``: output of block ``i``, before the final norm (``hidden_states[i + 1]`` of HF
  for ``i < n_layers - 1``; HF's last entry has the final norm applied).
- ``mixer_out.i``: the output of block ``i``'s token mixer when that mixer is not attention (a Mamba / SSM
  layer, gated linear attention such as Gated DeltaNet, a short convolution, an RG-LRU recurrence): hybrid
  models (Jamba, Qwen3-Next, Nemotron-H, LFM2, ...) have ``attn_out.i`` on their attention blocks and
  ``mixer_out.i`` on the others; pure recurrent models (Mamba) only ``mixer_out``. ``attn_out.*`` and
  ``mixer_out.*`` expand to the blocks that have one, ``token_mixer.*`` to each block's token mixer of either
  kind (``attn_out.i`` or ``mixer_out.i``), and ``mlp_out.*`` to the blocks that have an MLP.
- Multi-stream residuals (DeepSeek-V4 / HY-V4 hyper-connections): ``resid_pre`` / ``resid_post`` are
  ``[batch, pos, streams, d]`` (``HookedModel.site_shape`` says so); AddVector / ReplaceActivation with a ``[d]``
  vector edit every stream alike, any other shape is refused naming the site and the shape.
- ``attn_out.i`` / ``mlp_out.i``: the output of the attention / MLP module of block ``i`` (TransformerLens's
  ``hook_attn_out`` / ``hook_mlp_out``): what it adds to the residual stream in pre-norm families (Gemma 2/3
  and OLMo 2/3 add a post-norm of it, Granite a scaled copy). On MoE blocks ``mlp_out`` is the sparse
  block's output (routed experts plus any shared experts).
- ``router_logits.i``: the router's logits over experts (``[batch, pos, n_experts]``) of an MoE block;
  listed only for MoE models and their sparse layers; read-only (routing is decided inside the router).
- ``final_norm``: output of the final norm (``hidden_states[-1]`` of HF, the LM-head input).
- ``logits``: output of the LM head, before a family's own final scaling or soft-capping, which HF applies
  after the head: Cohere / Cohere 2 multiply by ``config.logit_scale``, Granite divides by
  ``config.logits_scaling``, and the soft-capped families (Gemma 2/3/3n/4, VaultGemma, nanochat,
  Mistral-Large-4, ...) apply ``cap * tanh(logits / cap)`` with ``config.final_logit_softcapping``; the
  returned logits (and generation) are HF's own, after that step.

Example:
    >>> Site.parse("resid_post.3")
    Site(kind='resid_post', layer=3)
    >>> str(Site("final_norm"))
    'final_norm'
    >>> Site.parse("resid_post.-1", n_layers=6)
    Site(kind='resid_post', layer=5)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Literal, get_args

from thinklens.errors import ThinklensError, did_you_mean

SiteKind = Literal["embed", "resid_pre", "resid_post", "attn_out", "mixer_out", "mlp_out", "final_norm", "logits",
                   "router_logits"]
SITE_KINDS: tuple[str, ...] = get_args(SiteKind)
LAYER_KINDS: frozenset[str] = frozenset({"resid_pre", "resid_post", "attn_out", "mixer_out", "mlp_out", "router_logits"})
#: The kinds of a block's parts (the modules inside it), in forward order; a block has some of them.
PART_KINDS: tuple[str, ...] = ("attn_out", "mixer_out", "mlp_out")
#: The pattern that expands to each block's token mixer, whichever kind it is (``attn_out.i`` or ``mixer_out.i``).
TOKEN_MIXER_PATTERN = "token_mixer.*"
#: Kinds that exist only on some models (MoE blocks), listed in ``HookedModel.sites`` only there.
MOE_KINDS: frozenset[str] = frozenset({"router_logits"})


@dataclass(frozen=True, order=True)
class Site:
    """One activation site.

    Attributes:
        kind: one of ``SITE_KINDS``.
        layer: the block index for per-layer kinds, ``None`` otherwise.
    """

    kind: str
    layer: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in SITE_KINDS:
            raise ThinklensError.of("site kind", self.kind, f"one of {', '.join(SITE_KINDS)}", did_you_mean(self.kind, SITE_KINDS))
        if self.kind in LAYER_KINDS:
            if not isinstance(self.layer, int) or isinstance(self.layer, bool):
                raise ThinklensError.of("site", f"{self.kind} without a layer", f"{self.kind}.<layer>", f"write e.g. {self.kind}.0")
        elif self.layer is not None:
            raise ThinklensError.of("site", f"{self.kind}.{self.layer}", f"{self.kind} (no layer)", f"write {self.kind}")

    def __str__(self) -> str:
        return self.kind if self.layer is None else f"{self.kind}.{self.layer}"

    def __repr__(self) -> str:
        return f"Site(kind={self.kind!r}, layer={self.layer!r})"

    @classmethod
    def parse(cls, text: "str | Site", n_layers: int | None = None) -> "Site":
        """Parse ``"kind"`` or ``"kind.layer"``; negative layers count from the end when ``n_layers`` is given."""
        if isinstance(text, Site):
            site = text
        else:
            if not isinstance(text, str) or not text.strip():
                raise ThinklensError.of("site", text, "a site such as resid_post.3 or final_norm",
                                        "see `thinklens info MODEL` for the list")
            kind, _, layer_s = text.strip().partition(".")
            if kind not in SITE_KINDS:
                raise ThinklensError.of("site", text, f"a kind among {', '.join(SITE_KINDS)}", did_you_mean(kind, SITE_KINDS))
            layer: int | None = None
            if layer_s:
                try:
                    layer = int(layer_s)
                except ValueError:
                    raise ThinklensError.of("site", text, f"{kind}.<integer layer>", f"write e.g. {kind}.0") from None
            site = cls(kind, layer)
        if n_layers is not None and site.layer is not None:
            layer = site.layer + n_layers if site.layer < 0 else site.layer
            if not 0 <= layer < n_layers:
                raise ThinklensError.of(
                    "layer", str(site), f"a layer in 0..{n_layers - 1} (this model has {n_layers} layers)",
                    f"use e.g. {site.kind}.{n_layers - 1} or a negative index such as {site.kind}.-1",
                )
            site = cls(site.kind, layer)
        return site


def parse_sites(texts: "str | Site | list[str | Site] | tuple[str | Site, ...]", n_layers: int | None = None) -> list[Site]:
    """Parse a list (or a comma-separated string) of sites; ``kind.*`` expands to every layer."""
    if isinstance(texts, (str, Site)):
        texts = [t for t in str(texts).split(",")] if isinstance(texts, str) else [texts]
    out: list[Site] = []
    for t in texts:
        if isinstance(t, str) and t.strip().endswith(".*"):
            kind = t.strip()[:-2]
            if n_layers is None:
                raise ThinklensError.of("site", t, "a model to expand '.*' against", "pass explicit layers")
            out.extend(Site.parse(f"{kind}.{i}", n_layers) for i in range(n_layers))
        else:
            out.append(Site.parse(t, n_layers))
    return list(dict.fromkeys(out))


def all_sites(n_layers: int, router_layers: "tuple[int, ...] | list[int]" = (),
              block_parts: "Sequence[Sequence[str]] | None" = None) -> list[Site]:
    """Every site of a model with ``n_layers`` blocks, in forward order; ``router_layers`` are the MoE
    blocks (their ``router_logits`` come before the block's ``mlp_out``); ``block_parts``: per block, the
    part kinds it has (``PART_KINDS``; default ``attn_out`` and ``mlp_out`` in every block).

    Example:
        >>> [str(s) for s in all_sites(1, router_layers=[0])]
        ['embed', 'resid_pre.0', 'attn_out.0', 'router_logits.0', 'mlp_out.0', 'resid_post.0', 'final_norm', 'logits']
        >>> [str(s) for s in all_sites(2, block_parts=[("mixer_out", "mlp_out"), ("attn_out",)])][1:7]
        ['resid_pre.0', 'mixer_out.0', 'mlp_out.0', 'resid_post.0', 'resid_pre.1', 'attn_out.1']
    """
    routers = set(router_layers)
    sites = [Site("embed")]
    for i in range(n_layers):
        parts = ("attn_out", "mlp_out") if block_parts is None else tuple(block_parts[i])
        sites.append(Site("resid_pre", i))
        sites += [Site(k, i) for k in PART_KINDS if k in parts and k != "mlp_out"]
        sites += [Site("router_logits", i)] if i in routers else []
        sites += [Site("mlp_out", i)] if "mlp_out" in parts else []
        sites.append(Site("resid_post", i))
    return sites + [Site("final_norm"), Site("logits")]


def hidden_state_site(index: int, n_layers: int) -> Site:
    """The site whose activation is HF ``hidden_states[index]`` (``output_hidden_states=True``).

    ``0`` -> ``resid_pre.0`` (the input of the first block: embeddings, plus GPT-2's position
    embedding), ``i`` in ``1..n_layers-1`` -> ``resid_post.(i-1)``, ``n_layers`` -> ``final_norm`` (HF
    applies the final norm to its last entry). Negative indices count from the end, as in Python.

    Example:
        >>> [str(hidden_state_site(i, 3)) for i in range(4)]
        ['resid_pre.0', 'resid_post.0', 'resid_post.1', 'final_norm']
        >>> str(hidden_state_site(-1, 3))
        'final_norm'
    """
    if isinstance(index, bool) or not isinstance(index, Integral) or not -(n_layers + 1) <= index <= n_layers:
        raise ThinklensError.of("hidden-state index", index, f"an integer in [0, {n_layers}] (or negative from the end)",
                                f"0 is the first block's input and {n_layers} the final (normed) state")
    index = int(index) + n_layers + 1 if index < 0 else int(index)
    if index == 0:
        return Site("resid_pre", 0)
    return Site("final_norm") if index == n_layers else Site("resid_post", index - 1)
