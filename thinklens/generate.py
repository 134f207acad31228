"""Traced, KV-cached, batched generation (the core's decode loop, :func:`thinklens.decode.decode`).

Greedy decoding gives the same tokens as HF ``generate`` (same left padding, same position ids);
per step it records the hidden state that produced each token at the requested sites, and the
entropy and top-k of the next-token distribution.

Example:
    >>> # traces = model.generate(["Q: 3+4 ="], max_new_tokens=8, capture=["resid_post.-1"])
    >>> # traces[0].hidden[Site("resid_post", 3)].shape == (len(traces[0]), model.d_model)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from tqdm.auto import tqdm

from thinklens.decode import Decoder, Greedy, Sample, decode
from thinklens.errors import ThinklensError
from thinklens.interventions import Intervention
from thinklens.sites import Site
from thinklens.trace import Trace

if TYPE_CHECKING:
    from thinklens.model import HookedModel


@dataclass(frozen=True)
class GenerateConfig:
    """Decoding settings."""

    max_new_tokens: int = 64
    """Upper bound on generated tokens per prompt."""
    do_sample: bool = False
    """Sample (True) or greedy argmax (False)."""
    seed: int | None = None
    """Seed of the local torch.Generator used for sampling."""
    temperature: float = 1.0
    """Softmax temperature when sampling."""
    top_p: float = 1.0
    """Nucleus mass when sampling (1.0 = off)."""
    stop: tuple[str, ...] = ()
    """Stop once the generated text contains any of these strings."""
    top_k_stats: int = 5
    """How many top tokens (ids, probabilities) to record per step."""
    batch_size: int | None = None
    """Prompts per batch (None = all at once)."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ThinklensError.of("max_new_tokens", self.max_new_tokens, "an integer >= 1", "pass e.g. max_new_tokens=64")
        if not (self.temperature > 0 and math.isfinite(self.temperature)):
            raise ThinklensError.of("temperature", self.temperature, "a finite number > 0", "use do_sample=False for greedy")
        if not 0 < self.top_p <= 1:
            raise ThinklensError.of("top_p", self.top_p, "a number in (0, 1]", "pass top_p=0.95")
        if self.batch_size is not None and self.batch_size < 1:
            raise ThinklensError.of("batch_size", self.batch_size, "an integer >= 1 or None", "pass batch_size=16")
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ThinklensError.of("stop strings", self.stop, "non-empty strings", "remove empty stop strings")


@torch.no_grad()
def _generate_batch(model: "HookedModel", prompts: list[str], cfg: GenerateConfig, sites: list[Site],
                    interventions: Sequence[Intervention], gen: torch.Generator | None) -> list[Trace]:
    dec = Decoder(model, prompts)
    choice = Sample(gen, cfg.temperature, cfg.top_p) if cfg.do_sample else Greedy()
    out = decode(dec, choice, max_new_tokens=cfg.max_new_tokens, stop=cfg.stop, capture=sites,
                 interventions=interventions, top_k_stats=cfg.top_k_stats)
    traces = []
    for r in range(len(prompts)):
        n = out.lengths[r]
        ids = out.row(r)
        plen = int(dec.prompt["attention_mask"][r].sum())
        traces.append(Trace(
            prompt=prompts[r], prompt_ids=dec.prompt["input_ids"][r, -plen:].tolist(), token_ids=ids,
            tokens=[model.tokenizer.decode([i]) for i in ids],
            text=model.tokenizer.decode(ids, skip_special_tokens=True), stop_reason=out.stop_reasons[r],
            hidden={s: out.hidden[s][r, :n].clone() for s in sites}, entropy=out.entropy[r, :n].clone(),
            topk_ids=out.topk_ids[r, :n].clone(), topk_probs=out.topk_probs[r, :n].clone(),
        ))
    return traces


def generate(model: "HookedModel", prompts: "str | Sequence[str]", cfg: GenerateConfig, *, capture: Sequence[Site | str] = (),
             interventions: Sequence[Intervention] = (), progress: bool = False) -> list[Trace]:
    """Generate for every prompt; see :class:`GenerateConfig` and :class:`thinklens.trace.Trace`."""
    prompts = [prompts] if isinstance(prompts, str) else list(prompts)
    if not prompts:
        raise ThinklensError.of("prompts", prompts, "at least one prompt", "pass a non-empty list")
    sites = model.resolve_sites(capture) if capture else []
    gen = None
    if cfg.do_sample:
        gen = torch.Generator(device=model.device)
        gen.manual_seed(0 if cfg.seed is None else cfg.seed)
    bs = cfg.batch_size or len(prompts)
    chunks = [prompts[i:i + bs] for i in range(0, len(prompts), bs)]
    out: list[Trace] = []
    for chunk in tqdm(chunks, desc="generate", disable=not progress or len(chunks) < 2):
        out.extend(_generate_batch(model, chunk, cfg, sites, interventions, gen))
    return out
