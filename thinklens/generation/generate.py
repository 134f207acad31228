"""Traced, KV-cached, batched generation (the core's decode loop, :func:`thinklens.generation.decode_loop.decode`).

Greedy decoding gives the same tokens as HF ``generate`` (same left padding, same position ids);
per step it records the hidden state that produced each token at the requested sites, and the
entropy and top-k of the next-token distribution.

Two backends give the same :class:`~thinklens.generation.trace.Trace` objects: ``hooks`` (our KV-cached loop with
forward hooks; interventions) and ``nnsight`` (HF ``generate`` inside an nnsight generation trace,
:mod:`thinklens.engine.nnsight_backend`), which is how a remote (NDIF) model generates.

Long traces: with ``stream_to`` (an :class:`~thinklens.engine.activation_store.ActivationStore` or one of its writers) the
per-step states go into the store every ``stream_every`` steps instead of accumulating in memory, and
each returned trace's ``hidden`` reads them from the store (:class:`~thinklens.engine.activation_store.StoredStates`).

Example:
    >>> # traces = model.generate(["Q: 3+4 ="], max_new_tokens=8, capture=["resid_post.-1"])
    >>> # traces[0].hidden[Site("resid_post", 3)].shape == (len(traces[0]), model.d_model)
    >>> # long = model.generate(prompts, max_new_tokens=8192, capture=["resid_post.*"], stream_to=ActivationStore("acts"))
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor
from tqdm.auto import tqdm

from thinklens.engine.activation_store import ActivationStore, StoredStates, StoreWriter, TraceStream
from thinklens.engine.interventions import Intervention
from thinklens.engine.nnsight_backend import decode_with_nnsight
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.generation.decode_loop import (
    Decoded,
    Decoder,
    Greedy,
    Sample,
    continuous_ready,
    decode,
    decode_queue,
    row_budgets,
)
from thinklens.generation.generate_config import GenerateConfig
from thinklens.generation.trace import Trace, decoded_texts, open_span_warning

if TYPE_CHECKING:
    from thinklens.engine.base import BaseHookedModel

__all__ = ["BACKENDS", "GenerateConfig", "generate", "traces_of"]

BACKENDS = ("hooks", "nnsight")


def traces_of(model: "BaseHookedModel", prompts: list[str], prompt: dict[str, Tensor], out: Decoded, sites: list[Site],
              stored: "Sequence[StoredStates] | None" = None) -> list[Trace]:
    """One :class:`Trace` per row of a decoded batch (``prompt``: its left-padded encoding); ``stored``: the
    rows' states in a store (streamed), else they are cut from ``out.hidden``. Each keeps both texts (without and with
    the special tokens, :func:`thinklens.generation.trace.decoded_texts`); a warning names the rows that stopped
    inside a thinking span they opened (:func:`thinklens.generation.trace.open_span_warning`)."""
    traces = []
    for r in range(len(prompts)):
        n = out.lengths[r]
        ids = out.row(r)
        plen = int(prompt["attention_mask"][r].sum())
        traces.append(Trace(
            prompt=prompts[r], prompt_ids=prompt["input_ids"][r, -plen:].tolist(), token_ids=ids,
            tokens=[model.tokenizer.decode([i]) for i in ids], **decoded_texts(model.tokenizer, ids),
            stop_reason=out.stop_reasons[r],
            hidden=stored[r] if stored is not None else {s: out.hidden[s][r, :n].clone() for s in sites},
            entropy=out.entropy[r, :n].clone(), topk_ids=out.topk_ids[r, :n].clone(), topk_probs=out.topk_probs[r, :n].clone(),
        ))
    note = open_span_warning(traces, model.tokenizer, what="generated")
    if note:
        warnings.warn(note, stacklevel=2)
    return traces


@torch.no_grad()
def _generate_batch(model: "BaseHookedModel", prompts: list[str], cfg: GenerateConfig, sites: list[Site],
                    interventions: Sequence[Intervention], gen: torch.Generator | None, backend: str,
                    stream: "TraceStream | None", first_batch: bool, budgets: list[int]) -> list[Trace]:
    if backend == "nnsight":  # HF generate: one budget per call (generate splits a batch by budget)
        enc = model.tokenize(prompts)
        # a later batch continues torch's global generator, as the hook loop continues its own
        out = decode_with_nnsight(model, enc, replace(cfg, max_new_tokens=max(budgets)), sites, remote=model.remote,
                                  reseed=first_batch)
        if stream is not None and sites:
            stream.write(out.hidden, 0, out.tokens, out.lengths)
    else:
        dec = Decoder(model, prompts)
        enc = dec.prompt
        choice = Sample(gen, cfg.temperature, cfg.top_p) if cfg.do_sample else Greedy()
        out = decode(dec, choice, max_new_tokens=budgets, stop=cfg.stop, capture=sites,
                     interventions=interventions, top_k_stats=cfg.top_k_stats, sink=stream, sink_every=cfg.stream_every)
    stored = None
    if stream is not None:
        stream.writer.flush()  # the traces read their states back from the store
        stored = [StoredStates(stream.writer.store, tid, sites, model.n_layers) for tid in stream.trace_ids]
    return traces_of(model, prompts, enc, out, sites, stored)


def generate(model: "BaseHookedModel", prompts: "str | Sequence[str]", cfg: GenerateConfig, *, capture: Sequence[Site | str] = (),
             interventions: Sequence[Intervention] = (), progress: bool = False,
             stream_to: Any = None,
             backend: str | None = None) -> list[Trace]:
    """Generate for every prompt; see :class:`GenerateConfig` and :class:`thinklens.generation.trace.Trace`.

    Args:
        stream_to: an :class:`ActivationStore` (or a :class:`StoreWriter` of one; anything else is refused with a
            ThinklensError, so the annotation is ``Any``): the captured states are written there while
            generating (every ``cfg.stream_every`` steps) and each trace's ``hidden`` reads them back
            (trace ids ``<call id>-<prompt index>`` in the rows' metadata).
        backend: ``hooks`` (the local decode loop) or ``nnsight`` (HF ``generate`` in an nnsight trace);
            default: nnsight for a remote model, hooks otherwise. Interventions need ``hooks``.
    """
    prompts = [prompts] if isinstance(prompts, str) else list(prompts)
    if not prompts:
        raise ThinklensError.of("prompts", prompts, "at least one prompt", "pass a non-empty list")
    backend = backend or ("nnsight" if model.remote else "hooks")
    if backend not in BACKENDS:
        raise ThinklensError.of("backend", backend, f"one of {', '.join(BACKENDS)}", "use hooks (local) or nnsight")
    if model.remote and backend != "nnsight":
        raise ThinklensError.of("backend", backend, "nnsight for a remote model (its weights are on NDIF)", "drop backend=")
    if backend == "nnsight" and interventions:
        raise ThinklensError.of("interventions", f"{len(interventions)} with the nnsight backend",
                                "interventions in the local loop (backend='hooks', local weights)",
                                "load the model locally, or write the intervention in nnsight with model.to_nnsight()")
    sites = model.resolve_sites(capture) if capture else []
    gen = None
    if cfg.do_sample and backend == "hooks":
        gen = torch.Generator(device=model.device)
        gen.manual_seed(0 if cfg.seed is None else cfg.seed)
    writer, own_writer = _stream_writer(stream_to)
    call = uuid.uuid4().hex[:8]
    budgets = row_budgets(cfg.max_new_tokens, len(prompts))
    bs = cfg.batch_size or len(prompts)
    starts = range(0, len(prompts), bs)
    out: list[Trace] = []
    queued = (backend == "hooks" and cfg.continuous and not cfg.do_sample and bs < len(prompts)
              and continuous_ready(model, Greedy(), interventions))
    with ExitStack() as stack:
        if own_writer:
            stack.enter_context(writer)
        if queued:
            return _generate_queue(model, prompts, cfg, sites, writer, call, budgets)
        for start in tqdm(starts, desc="generate", disable=not progress or len(starts) < 2):
            rows = list(range(start, min(start + bs, len(prompts))))
            # the hook loop gives each row its own budget; HF generate (nnsight) one per call: runs of equal budget
            parts = [rows] if backend == "hooks" else [[r for r in rows if budgets[r] == n]
                                                       for n in dict.fromkeys(budgets[r] for r in rows)]
            got: dict[int, Trace] = {}
            for part in parts:
                stream = None
                if writer is not None and sites:
                    stream = TraceStream(writer, [f"{call}-{r}" for r in part])
                traces = _generate_batch(model, [prompts[r] for r in part], cfg, sites, interventions, gen, backend,
                                         stream, start == 0 and part is parts[0], [budgets[r] for r in part])
                got.update(zip(part, traces))
            out.extend(got[r] for r in rows)
    return out


def _generate_queue(model: "BaseHookedModel", prompts: list[str], cfg: GenerateConfig, sites: list[Site],
                    writer: "StoreWriter | None", call: str, budgets: list[int]) -> list[Trace]:
    """Every prompt greedily by continuous batching, ``cfg.batch_size`` rows in flight (:func:`decode_queue`)."""
    choice = Greedy()
    streams = None
    if writer is not None and sites:
        streams = [TraceStream(writer, [f"{call}-{r}"]) for r in range(len(prompts))]
    parts = decode_queue(model, prompts, choice, max_new_tokens=budgets, slots=cfg.batch_size, stop=cfg.stop,
                         capture=sites, top_k_stats=cfg.top_k_stats, sinks=streams, sink_every=cfg.stream_every)
    stored = None
    if streams is not None:
        writer.flush()  # the traces read their states back from the store
        stored = [StoredStates(writer.store, st.trace_ids[0], sites, model.n_layers) for st in streams]
    return traces_of(model, prompts, model.tokenize(prompts), _stacked(parts), sites, stored)


def _stacked(parts: Sequence[Decoded]) -> Decoded:
    """One-row results as one batch, each row padded after its end (``traces_of`` cuts each at its length)."""
    n = max(p.lengths[0] for p in parts)

    def pad(x: Tensor) -> Tensor:  # [1, len, ...] -> [1, n, ...]
        return torch.cat([x, x.new_zeros((1, n - x.shape[1], *x.shape[2:]))], 1)

    out = Decoded(torch.cat([pad(p.tokens) for p in parts]), [p.lengths[0] for p in parts],
                  [p.stop_reasons[0] for p in parts],
                  {s: torch.cat([pad(p.hidden[s]) for p in parts]) for s in parts[0].hidden})
    if parts[0].entropy is not None:
        out.entropy, out.topk_ids, out.topk_probs = (torch.cat([pad(getattr(p, k)) for p in parts])
                                                     for k in ("entropy", "topk_ids", "topk_probs"))
    return out


def _stream_writer(stream_to: Any) -> "tuple[StoreWriter | None, bool]":
    """(writer, whether generate opened it) for ``stream_to``."""
    if stream_to is None:
        return None, False
    if isinstance(stream_to, ActivationStore):
        return stream_to.writer(), True
    if isinstance(stream_to, StoreWriter):
        return stream_to, False
    raise ThinklensError.of("stream_to", type(stream_to).__name__, "an ActivationStore or a StoreWriter",
                            "pass stream_to=ActivationStore('acts')")
