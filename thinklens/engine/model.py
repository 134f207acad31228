"""HookedModel: one hook layer over any Hugging Face causal LM.

Example:
    >>> import torch
    >>> model = HookedModel.load("tiny-think", device="cpu", dtype=torch.float32)  # doctest: +SKIP
    >>> batch = model.capture(["Q: ..."], sites=["resid_post.1"])                  # doctest: +SKIP
    >>> batch["resid_post.1"].shape                                                # doctest: +SKIP
    torch.Size([1, 7, 128])
"""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import torch
from jaxtyping import Float, Int
from torch import Tensor

from thinklens.engine.adapters import Adapter, adapter_for_model, get_module
from thinklens.engine.hooks import ContextHolder, ForwardContext, site_hooks
from thinklens.engine.interventions import Intervention, Positions, position_mask
from thinklens.engine.parity import check_site_parity
from thinklens.engine.sites import Site, all_sites, parse_sites
from thinklens.errors import ThinklensError
from thinklens.generation.trace import ActivationBatch, Trace

Inputs = "str | Sequence[str] | dict[str, Tensor] | Tensor"


def _hub_reachable(host: str = "huggingface.co") -> bool:
    """A DNS lookup only: offline, fail at once instead of after the hub client's retries."""
    import socket

    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    try:
        socket.getaddrinfo(host, 443)
        return True
    except OSError:
        return False


def resolve_model_path(name_or_path: str) -> str:
    """Zoo name -> its folder; a packaged real model's name or a ``*.gguf`` file -> its converted (cached) folder
    (:mod:`thinklens.engine.real_models`); an existing folder -> itself; anything else is treated as a hub id."""
    from thinklens.engine.real_models import is_real_name, real_model_folder

    if is_real_name(name_or_path) or str(name_or_path).endswith(".gguf"):
        return str(real_model_folder(name_or_path))
    try:
        from thinklens.zoo.registry import check_zoo_name, is_zoo_name, zoo_dir
    except ImportError:  # pragma: no cover - the zoo package is optional for the core
        is_zoo_name = None
    p = Path(name_or_path).expanduser()
    if is_zoo_name is not None and is_zoo_name(name_or_path):
        zp = zoo_dir() / name_or_path
        if not (zp / "config.json").exists():
            raise ThinklensError.of("zoo model", name_or_path, f"weights in {zp}",
                                    f"train it with `thinklens run zoo-train --model {name_or_path}`")
        return str(zp)
    if p.is_dir():
        if not (p / "config.json").exists():
            raise ThinklensError.of("model folder", str(p), "a folder with config.json (save_pretrained output)",
                                    "point at the folder written by save_pretrained")
        return str(p)
    if is_zoo_name is not None and name_or_path.startswith("tiny-"):
        check_zoo_name(name_or_path)  # raises with did-you-mean
    looks_like_path = name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1
    if looks_like_path:
        raise ThinklensError.of("model", name_or_path, "a zoo name, an existing model folder or a hub id like org/name",
                                "check the path, or run `thinklens run zoo-eval` to list zoo models")
    if not _hub_reachable():
        raise ThinklensError.of("model", name_or_path, "a zoo name or a local model folder (the hub is unreachable offline)",
                                "save the model with save_pretrained on a machine with network and pass its folder")
    return name_or_path


def model_source(path: str | Path) -> dict[str, Any] | None:
    """The provenance record of a converted folder (``thinklens_source.json``: GGUF name and hash), or None."""
    import json

    from thinklens.engine.gguf import SOURCE_FILE

    f = Path(path) / SOURCE_FILE
    return json.loads(f.read_text()) if f.is_file() else None


def load_tokenizer(path: str):
    """``AutoTokenizer``, except that a plain ``tokenizer.json`` (no model-specific class) loads as such.

    transformers 5 maps some model types (qwen2) to their own tokenizer class even when the folder
    holds a generic ``tokenizers`` file, which then tokenizes to nothing.
    """
    import json

    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    cfg = Path(path) / "tokenizer_config.json"
    if cfg.exists():
        cls = json.loads(cfg.read_text()).get("tokenizer_class")
        if cls in ("TokenizersBackend", "PreTrainedTokenizerFast"):
            return PreTrainedTokenizerFast.from_pretrained(path)
    return AutoTokenizer.from_pretrained(path)


class HookedModel:
    """An HF causal LM with typed sites, capture, traced generation and interventions.

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

    # ---- loading ---------------------------------------------------------------------------
    @classmethod
    def load(
        cls, name_or_path: str, *, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32,
        device_map: str | dict | None = None, remote: bool | str = False, adapter: Adapter | None = None,
    ) -> "HookedModel":
        """Load a zoo name, a local ``save_pretrained`` folder or a hub id, and check its sites.

        Any decoder-only HF causal LM: the module paths of its sites come from the adapter table,
        TransformerLens's bridge adapters or the module structure (:func:`thinklens.engine.adapters.adapter_for_model`).
        A parity self-check (one forward on a few tokens) compares ``resid_pre.0``, every ``resid_post`` and
        ``final_norm`` with HF ``output_hidden_states`` and refuses the model when one differs.

        Args:
            device: where to put the weights (ignored when ``device_map`` is given); ``"auto"`` means
                ``device_map="auto"`` (what ``--device auto`` asks of a job).
            dtype: weight dtype (float32 for exact comparisons, bfloat16 on accelerators).
            device_map: passed to ``from_pretrained`` (``"auto"`` shards across GPUs).
            remote: build the model on the meta device and run traces through nnsight's remote
                execution (NDIF); needs the network and an NDIF API key (no self-check: no local weights).
                ``"local"``: local weights, but every call goes the remote way through nnsight's local
                simulation of a server (a check that code will run on NDIF, offline).
            adapter: the model's module paths, overriding discovery (when the self-check refuses a model).
        """
        from transformers import AutoModelForCausalLM

        path = resolve_model_path(name_or_path)
        if str(device) == "auto" and device_map is None:
            device_map = "auto"
        if remote is True:
            return cls._load_remote(path, adapter)
        if Path(path).is_dir():
            from thinklens.engine.load_errors import folder_problem

            problem = folder_problem(path)  # the real cause (broken config, encoder-decoder, no weights) in the headline
            if problem is not None:
                raise problem
        from thinklens.engine.load_errors import quiet_load_report, unused_weights_warning, weights_problem

        try:
            tok = load_tokenizer(path)
            kw: dict[str, Any] = {"dtype": dtype}
            if device_map is not None:
                kw["device_map"] = device_map
            with quiet_load_report():  # sizes that differ come back in the report, not as transformers' RuntimeError
                hf, info = AutoModelForCausalLM.from_pretrained(path, output_loading_info=True,
                                                                ignore_mismatched_sizes=True, **kw)
        except (OSError, ValueError) as e:
            raise ThinklensError.of(
                "model", name_or_path, "a zoo name, a local model folder, or a hub id reachable over the network",
                "check the name; offline, save the model with save_pretrained and pass its folder "
                f"({type(e).__name__}: {str(e).splitlines()[0][:160]})",
            ) from None
        except RuntimeError as e:
            if "state_dict" not in str(e) and "size mismatch" not in str(e):
                raise
            raise ThinklensError.of("weights", f"{name_or_path} ({str(e).splitlines()[0][:160]})",
                                    "weights that load into the model its config.json builds",
                                    "restore the config.json saved with these weights, or point at the folder they came from") from None
        problem = weights_problem(path, info)  # random or resized tensors would pass the parity check below
        if problem is not None:
            raise problem
        unused = unused_weights_warning(path, info)
        if unused:
            warnings.warn(unused, stacklevel=2)
        if device_map is None:
            hf = hf.to(device)
        hf.eval()
        model = cls(hf, tok, name=name_or_path, adapter=adapter)
        model.source = model_source(path)
        check_site_parity(model)
        model.remote = remote
        return model

    @classmethod
    def _load_remote(cls, path: str, adapter: Adapter | None = None) -> "HookedModel":
        from nnsight import LanguageModel

        kw: dict[str, Any] = {}
        if Path(path).is_dir():  # a local config (tests, or a model NDIF also serves): no hub lookup for the tokenizer
            kw["tokenizer"] = load_tokenizer(path)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lm = LanguageModel(path, **kw)  # meta device: weights stay on the NDIF servers
        except Exception as e:  # noqa: BLE001 - nnsight raises many kinds when offline
            raise ThinklensError.of("remote model", path, "a hub id that NDIF serves (network needed)",
                                    f"check the id and your connection ({type(e).__name__})") from None
        model = cls(lm._module, lm.tokenizer, name=path, remote=True, adapter=adapter)
        model._nnsight = lm
        return model

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
        """The model's context in tokens (:func:`thinklens.generation.budgets.context_length`), None when unknown."""
        from thinklens.generation.budgets import context_length

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
        from thinklens.engine.sites import TOKEN_MIXER_PATTERN

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
        return f"HookedModel({self.name!r}, family={family}, n_layers={self.n_layers}, d_model={self.d_model})"

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
            from thinklens.generation.kv_batch import left_pad

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
        from thinklens.engine.tokenization import adds_bos, without_template_bos

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
    @contextmanager
    def intervene(self, interventions: Sequence[Intervention] = ()) -> Iterator[None]:
        """Apply interventions for the duration of the block; all hooks are removed on exit."""
        with ExitStack() as stack:
            for iv in interventions:
                if not isinstance(iv, Intervention):
                    raise ThinklensError.of("intervention", type(iv).__name__, "an Intervention (AddVector, ReplaceActivation, ...)",
                                            "wrap a function in HookFn(site, fn)")
                stack.enter_context(iv.install(self))
            yield

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

    def forward(self, inputs: Any, *, position_ids: Tensor | None = None, output_hidden_states: bool = False) -> Any:
        """One forward pass over ``inputs`` (see :meth:`tokenize`) with the hook context set; returns the HF
        output (``logits``, ``hidden_states``). Gradients flow unless the caller disables them (trainers)."""
        enc = self.tokenize(inputs)
        return self._forward(enc, position_ids=position_ids, output_hidden_states=output_hidden_states)

    @torch.no_grad()
    def forward_with(self, inputs: Any, interventions: Sequence[Intervention] = ()) -> Float[Tensor, "batch pos vocab"]:
        """Logits of a forward pass with interventions applied."""
        if self.remote:
            self._local_only("forward_with")
        enc = self.tokenize(inputs)
        with self.intervene(interventions):
            return self._forward(enc).logits

    @torch.no_grad()
    def capture(self, inputs: Any, sites: Sequence[Site | str] | Site | str, positions: Positions = None,
                interventions: Sequence[Intervention] = ()) -> ActivationBatch:
        """Activations at ``sites`` for ``inputs`` (strings are tokenized with left padding).

        Args:
            sites: sites, names (``"resid_post.3"``, ``"resid_post.-1"``) or patterns (``"resid_post.*"``).
            positions: None keeps ``[batch, pos, d]`` for the padded batch; ``"last"`` or a list of
                n logical positions gives ``[batch, n, d]``.
        """
        site_list = self.resolve_sites(sites)
        enc = self.tokenize(inputs)
        store: dict[Site, Tensor] = {}

        def saver(site: Site):
            def fn(act: Tensor, ctx: ForwardContext) -> None:
                store[site] = act.detach()
            return fn

        if self.remote:
            if interventions:
                self._local_only("interventions in capture")
            store = self._capture_nnsight(enc, site_list)
        else:
            with self.intervene(interventions), site_hooks(self, [(s, saver(s)) for s in site_list]):
                self._forward(enc)
        acts = {s: store[s] for s in site_list}
        if positions is not None:
            ctx = ForwardContext(self.position_ids(enc["attention_mask"]), enc["attention_mask"].bool())
            sel = position_mask(positions, ctx)  # [batch, pos]
            counts = sel.sum(1)
            if not bool((counts == counts[0]).all()) or int(counts[0]) == 0:
                raise ThinklensError.of("positions", positions, "positions present in every prompt",
                                        "use positions inside the shortest prompt")
            acts = {s: a[sel].view(a.shape[0], int(counts[0]), *a.shape[2:]) for s, a in acts.items()}
        kept = positions if positions is None or isinstance(positions, str) else list(positions)
        return ActivationBatch(enc["input_ids"], enc["attention_mask"], acts, kept, n_layers=self.n_layers)

    # ---- generation ------------------------------------------------------------------------
    def generate(self, prompts: "str | Sequence[str]", *, max_new_tokens: "int | Sequence[int]" = 64, capture: Sequence[Site | str] = (),
                 interventions: Sequence[Intervention] = (), do_sample: bool = False, seed: int | None = None,
                 temperature: float = 1.0, top_p: float = 1.0, stop: Sequence[str] = (), top_k_stats: int = 5,
                 batch_size: int | None = None, progress: bool = False, stream_to: Any = None, stream_every: int = 64,
                 backend: str | None = None) -> list[Trace]:
        """Traced, KV-cached, batched generation; see :func:`thinklens.generation.generate.generate`.

        A remote model generates through nnsight on NDIF (same traces; no interventions). ``stream_to`` (an
        ActivationStore) writes the states there every ``stream_every`` steps instead of keeping them in memory.

        The model's context bounds every prompt and its completion, by the rule every job follows
        (:func:`thinklens.generation.budgets.prompt_budgets`): a budget that would run past it is cut to fit, with a
        warning, and a prompt that leaves no room for one new token is refused.
        """
        from thinklens.generation.generate import GenerateConfig, generate

        budget = max_new_tokens if isinstance(max_new_tokens, int) else tuple(max_new_tokens)  # one, or one per prompt
        budget = self._within_context(prompts, budget)
        cfg = GenerateConfig(max_new_tokens=budget, do_sample=do_sample, seed=seed, temperature=temperature,
                             top_p=top_p, stop=tuple(stop), top_k_stats=top_k_stats, batch_size=batch_size,
                             stream_every=stream_every)
        return generate(self, prompts, cfg, capture=capture, interventions=interventions, progress=progress,
                        stream_to=stream_to, backend=backend)

    def _within_context(self, prompts: "str | Sequence[str]", budget: "int | tuple[int, ...]") -> "int | tuple[int, ...]":
        """``budget`` (one, or one per prompt) cut so that each prompt and its completion fit :attr:`max_context`,
        with a warning when one was cut; a prompt with no room left is refused (``prompt_budgets``'s error)."""
        from thinklens.generation.budgets import prompt_budgets, token_lengths
        from thinklens.generation.decode_loop import row_budgets

        ctx = self.max_context
        texts = [prompts] if isinstance(prompts, str) else list(prompts)
        if ctx is None or not texts or not all(isinstance(t, str) for t in texts):
            return budget  # unknown context, or input generate() refuses with its own message
        asked = row_budgets(budget, len(texts))
        lengths = token_lengths(self, texts)
        prompt_budgets(lengths, 1, ctx)  # raises for a prompt that leaves no room
        fit = tuple(min(a, ctx - n) for a, n in zip(asked, lengths))
        cut = [k for k, (a, f) in enumerate(zip(asked, fit)) if f < a]
        if not cut:
            return budget
        warnings.warn(f"{len(cut)} of {len(texts)} prompts would run past {self.name}'s {ctx}-token context with "
                      f"max_new_tokens={max(asked[k] for k in cut)}: their budgets are cut to fit (prompt {cut[0]}: "
                      f"{lengths[cut[0]]} tokens, {fit[cut[0]]} new); pass max_new_tokens=budgets_for(model, prompts, n)"
                      ".per_prompt (thinklens.generation.budgets) to choose them, as the jobs do", stacklevel=3)
        return fit

    def _local_only(self, what: str) -> None:
        raise ThinklensError.of(
            "remote call", what, "capture() or generate() on a remote model (NDIF); this call needs local weights",
            "load the model locally (remote=False, device_map='auto' to shard across GPUs) or use model.to_nnsight() directly",
        )

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
        from transformer_lens.model_bridge import TransformerBridge

        return TransformerBridge.boot_transformers(
            self.config._name_or_path or self.name, hf_model=copy.deepcopy(self.hf), tokenizer=self.tokenizer,
            device=str(self.device), dtype=next(self.hf.parameters()).dtype,
        )

    def to_nnsight(self):
        """An nnsight ``LanguageModel`` wrapping the same HF module and tokenizer."""
        if self._nnsight is None:
            from nnsight import LanguageModel

            with warnings.catch_warnings():  # 0.8 deprecates LanguageModel for TransformersModel; both wrap the module
                warnings.simplefilter("ignore")
                self._nnsight = LanguageModel(self.hf, tokenizer=self.tokenizer)
        return self._nnsight

    def _capture_nnsight(self, enc: dict[str, Tensor], sites: list[Site]) -> dict[Site, Tensor]:
        """Capture through an nnsight trace (used for remote models; cross-checked in the tests)."""
        from thinklens.engine.nnsight_backend import capture_with_nnsight

        return capture_with_nnsight(self, enc, sites, remote=self.remote)
