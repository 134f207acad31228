"""Capture and traced generation through nnsight: the path of remote (NDIF) models, cross-checked against our hooks.

Both run the same nnsight code whether the model is local or remote; only ``remote=`` differs, so the
tests run this exact path on local models and compare it with the hook-based capture and decode loop.

Generation (:func:`decode_with_nnsight`) is one ``LanguageModel.generate`` trace: HF ``generate`` decodes
(greedy or sampled, our EOS ids, no processor of the model's own generation config), and a loop over
``tracer.all()`` saves, at every step, each site's state at the last position and the entropy and top-k
of the next-token distribution, computed where the model runs (no ``[vocab]`` logits travel back).
A second invoke saves the generated ids. Stops (EOS, stop strings) are then read from the ids as the
local loop reads them.

Example:
    >>> # model = HookedModel.load("meta-llama/Llama-3.1-70B", remote=True)
    >>> # traces = model.generate(prompts, max_new_tokens=256, capture=["resid_post.40"])   # on NDIF
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor
from transformers import GenerationConfig

from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.generation.decode_loop import Decoded, mark_stops
from thinklens.generation.generate_config import GenerateConfig
from thinklens.generation.kv_batch import eos_ids

if TYPE_CHECKING:
    from thinklens.engine.base import BaseHookedModel


def _envoy(root: Any, path: str) -> Any:
    node = root
    for part in path.split("."):
        node = node[int(part)] if part.isdigit() else getattr(node, part)
    return node


def site_envoys(model: "BaseHookedModel", lm: Any, sites: list[Site]) -> tuple[list[Site], list[tuple[Any, bool, bool]]]:
    """``sites`` in forward order (nnsight serves requests in that order), and per site ``(envoy, is_input,
    first_of_tuple)``: plain values only, because a remote trace body ships (pickled) every name it reads, and
    the server has nnsight and torch but not thinklens."""
    order = {s: i for i, s in enumerate(model.sites)}
    ordered = sorted(sites, key=order.__getitem__)
    envoys = []
    for site in ordered:
        path, where = model.adapter.module_path(site)
        envoys.append((_envoy(lm, path), where == "input", site.kind == "attn_out"))
    return ordered, envoys


@contextmanager
def remote_errors(model: "BaseHookedModel", remote: bool | str) -> Iterator[None]:
    """Around an nnsight trace: on NDIF (``remote is True``) any failure but our own errors becomes one clear
    error naming the server and the key (connection errors surface as many types); elsewhere errors pass as they are."""
    try:
        yield
    except ThinklensError:
        raise
    except Exception as e:  # noqa: BLE001 - connection errors surface as many types
        if remote is True:
            raise ThinklensError.of("remote execution", model.name, "a reachable NDIF server and an API key",
                                    f"check your network and NDIF key ({type(e).__name__}: {str(e)[:120]})") from None
        raise


def capture_with_nnsight(model: "BaseHookedModel", enc: dict[str, Tensor], sites: list[Site], *,
                         remote: bool | str = False) -> dict[Site, Tensor]:
    """Save the activations at ``sites`` inside one ``LanguageModel.trace`` (``remote``: see :func:`decode_with_nnsight`)."""
    lm = model.to_nnsight()
    sites, envoys = site_envoys(model, lm, sites)
    saved: list[Any] = []  # nnsight 0.8: locals created inside a trace body do not propagate out
    position_ids = model.position_ids(enc["attention_mask"])
    with remote_errors(model, remote):
        with lm.trace({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"], "position_ids": position_ids},
                      remote=remote):
            for env, is_input, first in envoys:
                if is_input:
                    saved.append(env.input.save())
                elif first:
                    saved.append(env.output[0].save())
                else:
                    saved.append(env.output.save())
    out = {}
    for site, val in zip(sites, saved):
        val = getattr(val, "value", val)
        out[site] = (val[0] if isinstance(val, tuple) else val).detach()
    return out


def generation_config(model: "BaseHookedModel", cfg: GenerateConfig, eos: list[int]) -> Any:
    """An HF ``GenerationConfig`` that decodes as :func:`thinklens.generation.decode_loop.decode` does: every processor set to
    its neutral value (so none of the model's own ``generation_config.json`` applies), our EOS ids and padding."""
    neutral = {k: v for k, v in GenerationConfig()._get_default_generation_params().items() if v is not None}
    neutral.pop("max_length", None)
    return GenerationConfig(**{**neutral, "max_new_tokens": cfg.max_new_tokens, "do_sample": cfg.do_sample,
                               "temperature": cfg.temperature, "top_p": cfg.top_p,
                               "top_k": 0 if cfg.do_sample else neutral["top_k"],  # our sampler has no top-k cut
                               "pad_token_id": model.tokenizer.pad_token_id, "eos_token_id": eos})


@torch.no_grad()
def decode_with_nnsight(model: "BaseHookedModel", enc: dict[str, Tensor], cfg: GenerateConfig, sites: list[Site], *,
                        remote: bool | str = False, reseed: bool = True) -> Decoded:
    """One batch decoded by HF ``generate`` inside an nnsight generation trace (on NDIF with ``remote``).

    ``remote``: True runs on NDIF; ``"local"`` is nnsight's simulation of it (the request is serialized, then
    deserialized with the non-installed modules hidden and run here); False runs the trace here directly.

    Returns what :func:`thinklens.generation.decode_loop.decode` returns for the same batch: tokens (padding after each
    row's stop), lengths, stop reasons, per-site states ``[batch, step, d]`` and the per-step entropy and top-k.
    Sampling seeds torch's global generator inside the trace (the server's, remotely) with ``cfg.seed``
    (unless ``reseed`` is False: a later batch continues it), which gives the samples of the local loop's
    seeded generator.
    """
    from nnsight import save  # lazy: import cost (nnsight: mounts .save on every object)

    lm = model.to_nnsight()
    eos = sorted(eos_ids(model))
    sites, envoys = site_envoys(model, lm, sites)
    b, width = enc["input_ids"].shape
    k = cfg.top_k_stats
    seed = None if not (cfg.do_sample and reseed) else (0 if cfg.seed is None else cfg.seed)
    states: list[list[Tensor]] = [[] for _ in envoys]  # per site, per step [batch, d]
    stats: list[tuple[Tensor, Tensor, Tensor]] = []  # per step (entropy, top-k ids, top-k probs)
    result: dict[str, Tensor] = {}
    inputs = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
    with remote_errors(model, remote), warnings.catch_warnings():
        # the open loop over steps ends, by design, on a request for a step after the last one
        warnings.filterwarnings("ignore", message=".*was never reached")
        with lm.generate(generation_config=generation_config(model, cfg, eos), remote=remote) as tracer:
            with tracer.invoke(inputs):
                save(states)  # the containers come back filled (from the server, remotely)
                save(stats)
                if seed is not None:
                    torch.manual_seed(seed)
                for _ in tracer.all():
                    for j, (env, is_input, first) in enumerate(envoys):
                        act = env.input if is_input else env.output
                        act = act[0] if first or isinstance(act, tuple) else act
                        states[j].append(act.reshape(b, -1, act.shape[-1])[:, -1])  # [batch, d]
                    logp = lm.output.logits[:, -1].float().log_softmax(-1)  # [batch, vocab]
                    p, i = logp.exp().topk(min(k, logp.shape[-1]), dim=-1)
                    stats.append((-(logp.exp() * logp).sum(-1), i, p))
            with tracer.invoke():
                save(result)
                result["ids"] = tracer.result
    ids = result["ids"][:, width:].cpu()  # [batch, steps]; HF pads a row after its EOS
    n = min(ids.shape[1], len(stats))
    tokens = [ids[:, t] for t in range(n)]
    done = torch.zeros(b, dtype=torch.bool)
    lengths, reasons = [cfg.max_new_tokens] * b, ["max_new_tokens"] * b
    tail = max((len(s) for s in cfg.stop), default=0) + 4
    pad = model.tokenizer.pad_token_id
    for t in range(n):  # the local loop's stop rules on the same tokens (HF does not know our stop strings)
        tokens[t] = torch.where(done, torch.full_like(tokens[t], pad), tokens[t])
        mark_stops(model.tokenizer, tokens[t], tokens[: t + 1], t, set(eos), cfg.stop, tail, done, lengths, reasons)
        if bool(done.all()):
            n = t + 1
            break
    lengths = [min(x, n) for x in lengths]
    out = Decoded(torch.stack(tokens[:n], 1), lengths, reasons,
                  {site: torch.stack([s.cpu() for s in states[j][:n]], 1) for j, site in enumerate(sites)})
    out.entropy, out.topk_ids, out.topk_probs = (torch.stack([st[x].cpu() for st in stats[:n]], 1) for x in range(3))
    return out
