"""HookedModel: one hook layer over any Hugging Face causal LM.

What a model is (sites, tokenization, one forward, embeddings) is :class:`~thinklens.engine.base.BaseHookedModel`, which
the hooks, the interventions and the decode loop take; ``HookedModel`` adds what a user calls on it: loading (a zoo name,
a packaged real model, a folder, a hub id, NDIF), capture, traced generation and interventions. It sits above the
generation package, which never imports it (docs/architecture.md, "Layers").

Example:
    >>> import torch
    >>> model = HookedModel.load("tiny-think", device="cpu", dtype=torch.float32)  # doctest: +SKIP
    >>> batch = model.capture(["Q: ..."], sites=["resid_post.1"])                  # doctest: +SKIP
    >>> batch["resid_post.1"].shape                                                # doctest: +SKIP
    torch.Size([1, 7, 128])
"""

from __future__ import annotations

import json
import os
import socket
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from jaxtyping import Float
from torch import Tensor
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

from thinklens.engine.adapters import Adapter
from thinklens.engine.base import BaseHookedModel
from thinklens.engine.gguf import SOURCE_FILE
from thinklens.engine.hooks import ForwardContext, site_hooks
from thinklens.engine.interventions import Intervention, Positions, intervene, position_mask
from thinklens.engine.load_errors import folder_problem, quiet_load_report, unused_weights_warning, weights_problem
from thinklens.engine.nnsight_backend import capture_with_nnsight
from thinklens.engine.parity import check_site_parity
from thinklens.engine.real_models import is_real_name, real_model_folder
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.generation.budgets import prompt_budgets, token_lengths
from thinklens.generation.decode_loop import row_budgets
from thinklens.generation.generate import GenerateConfig, generate
from thinklens.generation.trace import ActivationBatch, Trace
from thinklens.zoo.registry import check_zoo_name, is_zoo_name, zoo_dir

Inputs = "str | Sequence[str] | dict[str, Tensor] | Tensor"


def _hub_reachable(host: str = "huggingface.co") -> bool:
    """A DNS lookup only: offline, fail at once instead of after the hub client's retries."""
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
    if is_real_name(name_or_path) or str(name_or_path).endswith(".gguf"):
        return str(real_model_folder(name_or_path))
    p = Path(name_or_path).expanduser()
    if is_zoo_name(name_or_path):
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
    if name_or_path.startswith("tiny-"):
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
    f = Path(path) / SOURCE_FILE
    return json.loads(f.read_text()) if f.is_file() else None


def load_tokenizer(path: str):
    """``AutoTokenizer``, except that a plain ``tokenizer.json`` (no model-specific class) loads as such.

    transformers 5 maps some model types (qwen2) to their own tokenizer class even when the folder
    holds a generic ``tokenizers`` file, which then tokenizes to nothing.
    """
    cfg = Path(path) / "tokenizer_config.json"
    if cfg.exists():
        cls = json.loads(cfg.read_text()).get("tokenizer_class")
        if cls in ("TokenizersBackend", "PreTrainedTokenizerFast"):
            return PreTrainedTokenizerFast.from_pretrained(path)
    return AutoTokenizer.from_pretrained(path)


class HookedModel(BaseHookedModel):
    """An HF causal LM with typed sites, capture, traced generation and interventions.

    Args:
        hf_model: a ``*ForCausalLM`` module.
        tokenizer: its tokenizer (copied if it must be changed; the caller's is never mutated).
        name: a display name.
        adapter: the model's module paths, overriding discovery (see :func:`thinklens.engine.adapters.adapter_for_model`).
    """

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
        path = resolve_model_path(name_or_path)
        if str(device) == "auto" and device_map is None:
            device_map = "auto"
        if remote is True:
            return cls._load_remote(path, adapter)
        if Path(path).is_dir():
            problem = folder_problem(path)  # the real cause (broken config, encoder-decoder, no weights) in the headline
            if problem is not None:
                raise problem
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
        from nnsight import LanguageModel  # lazy: import cost (nnsight: mounts .save on every object)

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

    # ---- forward passes --------------------------------------------------------------------
    @contextmanager
    def intervene(self, interventions: Sequence[Intervention] = ()) -> Iterator[None]:
        """Apply interventions for the duration of the block; all hooks are removed on exit
        (:func:`thinklens.engine.interventions.intervene`)."""
        with intervene(self, interventions):
            yield

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

    # ---- interop ---------------------------------------------------------------------------
    def _capture_nnsight(self, enc: dict[str, Tensor], sites: list[Site]) -> dict[Site, Tensor]:
        """Capture through an nnsight trace (used for remote models; cross-checked in the tests)."""
        return capture_with_nnsight(self, enc, sites, remote=self.remote)
