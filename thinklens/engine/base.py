"""BaseHookedModel: what every part of the core reads of a model -- the HF module with its tokenizer and adapter, its
sites, tokenization, one forward with the hook context set, the embeddings and the interop wrappers.

:class:`~thinklens.engine.model.HookedModel` adds loading, capture, traced generation and interventions on top. The
hooks, the interventions, the parity check, the decode loop and the nnsight backend take a ``BaseHookedModel``, so
they sit below ``HookedModel`` and never call back into the module that calls them (docs/architecture.md, "Layers").

Example:
    >>> enc = left_pad([[5, 6], [7]], 0)
    >>> enc["input_ids"].tolist(), BaseHookedModel.position_ids(enc["attention_mask"]).tolist()
    ([[5, 6], [0, 7]], [[0, 1], [0, 0]])
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from jaxtyping import Float, Int
from torch import Tensor

from thinklens.engine.adapters import Adapter, adapter_for_model, get_module
from thinklens.engine.context_window import context_length
from thinklens.engine.forward_context import ContextHolder, ForwardContext
from thinklens.engine.sites import TOKEN_MIXER_PATTERN, Site, all_sites, parse_sites
from thinklens.engine.tokenization import adds_bos, without_template_bos
from thinklens.errors import ThinklensError


def left_pad(rows: Sequence[Sequence[int]], pad_id: int, *, device: Any = None) -> dict[str, Tensor]:
    """Token-id rows -> ``{"input_ids", "attention_mask"}`` ``[batch, pos]``, left padded (rows end together): the one
    left-padder (:meth:`BaseHookedModel.tokenize` of id rows, the decode loop, the latent trainers).

    Example:
        >>> left_pad([[5, 6, 7], [8]], 0)["input_ids"].tolist()
        [[5, 6, 7], [0, 0, 8]]
    """
    if not rows:
        raise ThinklensError.of("token rows", rows, "at least one row", "pass a non-empty list of token-id lists")
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)  # [batch, pos]
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if len(r):
            ids[i, width - len(r):] = torch.as_tensor(list(r), dtype=torch.long)
            mask[i, width - len(r):] = 1
    return {"input_ids": ids.to(device) if device is not None else ids,
            "attention_mask": mask.to(device) if device is not None else mask}


class BaseHookedModel:
    """An HF causal LM with its tokenizer and adapter: sites, tokenization and one forward with the hook context set.

    Args:
        hf_model: a ``*ForCausalLM`` module.
        tokenizer: its tokenizer (copied if it must be changed; the caller's is never mutated).
        name: a display name.
        adapter: the model's module paths, overriding discovery (see :func:`thinklens.engine.adapters.adapter_for_model`).
    """

    source: dict[str, Any] | None = None
    """Where converted weights came from (a GGUF's name, SHA-256, ``dequantized``), or None for an ordinary folder."""
    remote: bool | str = False
    """True: the weights are on NDIF (calls go through nnsight); "local": nnsight's local simulation of that."""

    def __init__(self, hf_model: torch.nn.Module, tokenizer: Any, *, name: str | None = None, remote: bool | str = False,
                 adapter: Adapter | None = None):
        self.hf = hf_model
        self.name = name or getattr(hf_model.config, "_name_or_path", "model")
        self.config = hf_model.config
        self.adapter: Adapter = adapter_for_model(hf_model, adapter)
        self.remote = remote
        if tokenizer.pad_token_id is None:
            tokenizer = copy.deepcopy(tokenizer)
            tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer = tokenizer
        self.context = ContextHolder()
        self._adds_bos: bool | None = None  # whether the tokenizer prepends a BOS (asked once, on first need)
        self._nnsight = None


    # ---- structure -------------------------------------------------------------------------
    @property
    def family(self) -> str:
        """The adapter family (llama for every llama-shaped model: Qwen2/3, Mistral, ...); see :attr:`model_type`."""
        return self.adapter.family

    @property
    def model_type(self) -> str:
        """The model's own type from its config (``qwen3``), which :attr:`family` may share with others."""
        return str(getattr(self.config, "model_type", "") or self.family)

    @property
    def n_layers(self) -> int:
        return len(get_module(self.hf, self.adapter.layers))

    @property
    def d_model(self) -> int:
        return int(self.config.hidden_size if hasattr(self.config, "hidden_size") else self.config.n_embd)

    @property
    def vocab_size(self) -> int:
        return int(self.hf.get_output_embeddings().weight.shape[0])

    @property
    def max_context(self) -> int | None:
        """The model's context in tokens (:func:`thinklens.engine.context_window.context_length`), None when unknown."""
        return context_length(self.config, self.tokenizer)

    @property
    def device(self) -> torch.device:
        """Where the weights are; the CPU for a remote model (its weights stay on NDIF, its results arrive here)."""
        return torch.device("cpu") if self.remote is True else next(self.hf.parameters()).device

    @property
    def sites(self) -> list[Site]:
        """Every site of this model in forward order (``router_logits`` only on the MoE blocks of MoE models;
        in hybrid models each block's own parts: ``attn_out`` or ``mixer_out``, ``mlp_out`` where it has one)."""
        return all_sites(self.n_layers, self.adapter.router_layers, self.adapter.part_kinds(self.n_layers))

    def resolve_site(self, site: Site | str) -> Site:
        """Parse and range-check a site for this model (negative layers count from the end)."""
        site = Site.parse(site, self.n_layers)
        if site.kind in ("router_logits", "attn_out", "mixer_out", "mlp_out"):
            self.adapter.module_path(site)  # a clear error on a dense model or block, or a block without that part
        return site

    def resolve_sites(self, sites: "Sequence[Site | str] | Site | str") -> list[Site]:
        """Sites for this model, in order and each once: ``kind.*`` patterns expand to every layer,
        negative layers count from the end, a comma-separated string is a list.

        What :meth:`capture` and :meth:`generate` (and the CLI) accept as ``sites``.
        """
        if isinstance(sites, str):
            items: list[Site | str] = [s.strip() for s in sites.split(",")]
        else:
            items = [sites] if isinstance(sites, Site) else list(sites)
        # router_logits.* means the MoE blocks only (dense blocks of an MoE model have no router)
        routers = [f"router_logits.{i}" for i in self.adapter.router_layers]
        items = [x for s in items for x in (routers if s == "router_logits.*" else self._part_pattern(s))]
        return [self.resolve_site(s) for s in parse_sites(items, n_layers=self.n_layers)]

    def _part_pattern(self, item: "Site | str") -> "list[Site | str]":
        """``attn_out.*`` / ``mixer_out.*`` / ``mlp_out.*`` -> the blocks that have that part; ``token_mixer.*`` ->
        each block's token mixer (``attn_out.i`` or ``mixer_out.i``); anything else unchanged."""
        kinds = {"attn_out.*": ("attn_out",), "mixer_out.*": ("mixer_out",), "mlp_out.*": ("mlp_out",),
                 TOKEN_MIXER_PATTERN: ("attn_out", "mixer_out")}.get(item) if isinstance(item, str) else None
        if kinds is None or (not self.adapter.block_parts and item != TOKEN_MIXER_PATTERN):
            return [item]
        return [f"{k}.{i}" for i in range(self.n_layers) for k in kinds if k in self.adapter.parts(i)]

    def site_shape(self, site: Site | str) -> tuple[int, ...]:
        """The trailing shape of ``site``'s activation after ``[batch, pos]``: ``(width,)``, or ``(streams, d)``
        for the residual sites of a multi-stream residual (DeepSeek-V4's hyper-connections; ``(streams * d,)``
        where the streams lie side by side, Qwen4-Exp)."""
        site = self.resolve_site(site)
        streams = self.adapter.residual_streams
        if streams > 1 and site.kind in ("resid_pre", "resid_post"):
            return (streams * self.d_model,) if self.adapter.residual_layout == "flat" else (streams, self.d_model)
        return (self.site_width(site),)

    def site_width(self, site: Site) -> int:
        if site.kind == "router_logits":
            router = get_module(self.hf, self.adapter.module_path(self.resolve_site(site))[0])
            return int(getattr(router, "num_experts", 0) or router.weight.shape[0])
        return self.vocab_size if site.kind == "logits" else self.d_model

    def __repr__(self) -> str:
        family = self.family if self.model_type == self.family else f"{self.family} (model_type {self.model_type})"
        return f"{type(self).__name__}({self.name!r}, family={family}, n_layers={self.n_layers}, d_model={self.d_model})"

    # ---- inputs ----------------------------------------------------------------------------
    def tokenize(self, inputs: Any) -> dict[str, Tensor]:
        """Left-padded ``input_ids`` and ``attention_mask`` on the model's device.

        ``inputs``: prompt strings, token-id rows (``list[list[int]]``, or one ``list[int]``), an
        ``[batch, pos]`` tensor, or an encoding dict (``input_ids``, optional ``attention_mask``).
        """
        if isinstance(inputs, Tensor):
            ids = inputs if inputs.ndim == 2 else inputs[None]
            enc = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        elif isinstance(inputs, dict):
            enc = {"input_ids": inputs["input_ids"], "attention_mask": inputs.get("attention_mask")}
            if enc["attention_mask"] is None:
                enc["attention_mask"] = torch.ones_like(enc["input_ids"])
        elif isinstance(inputs, (list, tuple)) and inputs and not isinstance(inputs[0], str):
            rows = [inputs] if isinstance(inputs[0], int) else inputs  # one row of ids, or a batch of rows
            enc = left_pad(rows, self.tokenizer.pad_token_id)
        else:
            prompts = [inputs] if isinstance(inputs, str) else list(inputs)
            if not prompts or any(not isinstance(p, str) or not p for p in prompts):
                raise ThinklensError.of("prompts", prompts[:3] if prompts else prompts, "a non-empty list of non-empty strings",
                                        "remove empty lines from the prompt file")
            prompts = self._without_template_bos(prompts)
            enc = dict(self.tokenizer(prompts, return_tensors="pt", padding=True, padding_side="left"))
            enc = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        ctx = self.max_context
        if ctx is not None and enc["input_ids"].shape[1] > ctx:
            raise ThinklensError.of("prompt length", f"{enc['input_ids'].shape[1]} tokens", f"at most {ctx} tokens (the model's context)",
                                    "shorten the prompt")
        dev = self.device
        return {k: v.to(dev) for k, v in enc.items()}

    def _without_template_bos(self, prompts: list[str]) -> list[str]:
        """Prompts whose text already starts with the BOS token (a chat template's output, as Llama 3 and the
        R1 distills write it) lose that leading text when the tokenizer adds a BOS itself: one BOS, never two
        (:func:`thinklens.engine.tokenization.without_template_bos`, the one rule of every path)."""
        bos = getattr(self.tokenizer, "bos_token", None)
        if not bos or not any(p.startswith(bos) for p in prompts):
            return prompts
        if self._adds_bos is None:
            self._adds_bos = adds_bos(self.tokenizer)
        return without_template_bos(self.tokenizer, prompts, tokenizer_adds_bos=self._adds_bos)

    @staticmethod
    def position_ids(attention_mask: Tensor) -> Tensor:
        """Logical positions as HF ``generate`` computes them (left padding excluded)."""
        return (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)


    # ---- forward passes --------------------------------------------------------------------
    def _forward(self, enc: dict[str, Tensor], *, step: int = -1, cache: Any = None, position_ids: Tensor | None = None,
                 inputs_embeds: Tensor | None = None, token_mask: Tensor | None = None,
                 output_hidden_states: bool = False) -> Any:
        """One HF forward with the hook context set (our single call site of the HF model)."""
        mask = enc["attention_mask"]
        if position_ids is None:
            position_ids = self.position_ids(mask)
        q = position_ids.shape[1]
        if token_mask is None:
            token_mask = mask[:, -q:].bool()
        ctx = ForwardContext(position_ids=position_ids, token_mask=token_mask, step=step, cache=cache)
        kw: dict[str, Any] = {"attention_mask": mask, "position_ids": position_ids, "use_cache": cache is not None}
        if output_hidden_states:
            kw["output_hidden_states"] = True
        if cache is not None:
            kw["past_key_values"] = cache
        if inputs_embeds is not None:
            kw["inputs_embeds"] = inputs_embeds
        else:
            kw["input_ids"] = enc["input_ids"]
        with self.context.use(ctx):
            return self.hf(**kw)

    @contextmanager
    def frozen(self) -> Iterator[None]:
        """The weights require no gradient inside the block (only other tensors, e.g. latents or a
        steering vector, are optimised); each parameter's flag is restored on exit."""
        flags = [(p, p.requires_grad) for p in self.hf.parameters()]
        try:
            for p, _ in flags:
                p.requires_grad_(False)
            yield
        finally:
            for p, f in flags:
                p.requires_grad_(f)

    def forward(self, inputs: Any, *, position_ids: Tensor | None = None, output_hidden_states: bool = False,
                logits_at: Tensor | None = None) -> Any:
        """One forward pass over ``inputs`` (see :meth:`tokenize`) with the hook context set; returns the HF
        output (``logits``, ``hidden_states``). Gradients flow unless the caller disables them (trainers).

        ``logits_at``: a ``[batch, pos]`` boolean mask; the LM head then runs on those positions only and ``logits``
        is ``[n, vocab]``, row ``i`` the ``i``-th True position in row-major order (``full.logits[logits_at]``, with
        whatever the model applies after its head, e.g. Gemma's soft-capping). A loss on a few positions of long
        sequences needs ``n x vocab`` floats instead of ``batch x pos x vocab`` (with a 262k vocabulary, gigabytes).
        """
        enc = self.tokenize(inputs)
        if logits_at is None:
            return self._forward(enc, position_ids=position_ids, output_hidden_states=output_hidden_states)
        keep = logits_at.to(self.device).bool()

        def only_kept(_module: Any, args: tuple) -> tuple:
            hidden = args[0]
            if hidden.shape[:2] != keep.shape:
                raise ThinklensError.of("logits_at", tuple(keep.shape), f"a mask shaped like the LM head's input "
                                        f"{tuple(hidden.shape[:2])}", "pass one boolean per input position")
            return (hidden[keep][None], *args[1:])

        handle = get_module(self.hf, self.adapter.lm_head).register_forward_pre_hook(only_kept)
        try:
            out = self._forward(enc, position_ids=position_ids, output_hidden_states=output_hidden_states)
        finally:
            handle.remove()
        out.logits = out.logits[0]
        return out


    # ---- embeddings ------------------------------------------------------------------------
    @property
    def embedding_weight(self) -> Float[Tensor, "vocab d"]:
        """The input embedding matrix (the parameter itself: writes under ``torch.no_grad()`` change the model)."""
        return self.hf.get_input_embeddings().weight

    def embed(self, input_ids: Int[Tensor, "batch pos"]) -> Float[Tensor, "batch pos d"]:
        """Token embeddings as the model's embedding module computes them (the ``embed`` site)."""
        return self.hf.get_input_embeddings()(input_ids.to(self.device))

    def unembed(self, hidden: Float[Tensor, "... d"], *, apply_norm: bool = True) -> Float[Tensor, "... vocab"]:
        """Logit lens: final norm (unless ``apply_norm=False``) then the LM head."""
        if apply_norm:
            hidden = get_module(self.hf, self.adapter.final_norm)(hidden)
        return get_module(self.hf, self.adapter.lm_head)(hidden)

    # ---- interop ---------------------------------------------------------------------------
    def to_transformer_lens(self):
        """A TransformerLens ``TransformerBridge`` over a copy of the HF model.

        A copy, because the bridge rewires the modules it wraps (our KV-cached generation on the
        original would break). Canonical hook names: ``blocks.{i}.hook_out`` equals our ``resid_post.i``.
        """
        from transformer_lens.model_bridge import TransformerBridge  # lazy: import cost (transformer_lens: seconds)

        return TransformerBridge.boot_transformers(
            self.config._name_or_path or self.name, hf_model=copy.deepcopy(self.hf), tokenizer=self.tokenizer,
            device=str(self.device), dtype=next(self.hf.parameters()).dtype,
        )

    def to_nnsight(self):
        """An nnsight ``LanguageModel`` wrapping the same HF module and tokenizer."""
        if self._nnsight is None:
            from nnsight import LanguageModel  # lazy: import cost (nnsight: mounts .save on every object)

            with warnings.catch_warnings():  # 0.8 deprecates LanguageModel for TransformersModel; both wrap the module
                warnings.simplefilter("ignore")
                self._nnsight = LanguageModel(self.hf, tokenizer=self.tokenizer)
        return self._nnsight

