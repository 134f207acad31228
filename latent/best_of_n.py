"""The oracle best-of-N baseline that LatentSeek(PSRM) must beat.

PSRM knows the gold answer: LatentSeek re-decodes a problem up to ``max_iters`` times and keeps the first
chain the gold answer accepts. The same oracle applied to plain sampling -- N chains of the same frozen
model at a temperature, correct if any is -- costs no optimisation at all; with N = 1 + max_iters it checks
as many chains as LatentSeek at most does (the greedy chain and one per iteration). The ``latent-seek`` job
runs it on the same problems (``baseline_temperatures``, ``baseline_samples``) and writes it next to
LatentSeek's accuracy.

Example:
    >>> s = best_of_n_summary([[False, True, False], [False, False, False]], greedy=[False, True], max_iters=2)
    >>> s["best_of_n"], s["sample_accuracy"], s["best_of_n_by_budget"], s["greedy_or_samples_by_budget"]
    (0.5, 0.16666666666666666, [0.0, 0.5, 0.5], [0.5, 0.5, 1.0])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from thinklens.data.answers import is_correct
from thinklens.generation.decode_loop import Sample, decode
from thinklens.generation.kv_batch import Decoder

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel
    from thinklens.latent.config import LatentSeekConfig


def baseline_size(cfg: "LatentSeekConfig") -> int:
    """Chains per problem: ``baseline_samples``, or 1 + ``max_iters`` (LatentSeek's most checked chains)."""
    return cfg.baseline_samples or 1 + cfg.max_iters


def temperature_key(t: float) -> str:
    """The JSON key of a temperature: ``0.5`` -> ``"0.5"``, ``1`` -> ``"1.0"``."""
    return repr(float(t))


def sample_chains(model: "HookedModel", prompt: list[int], *, n: int, temperature: float, max_new_tokens: int,
                  generator: torch.Generator) -> list[str]:
    """``n`` chains sampled at ``temperature`` from token ids ``prompt`` in one batch (the core's decode loop)."""
    tok = model.tokenizer
    eos = tok.eos_token_id
    out = decode(Decoder(model, [list(prompt)] * n), Sample(generator, temperature), max_new_tokens=max_new_tokens,
                 eos={eos})
    texts = []
    for r in range(n):
        ids = out.row(r)
        if out.stop_reasons[r] == "eos":
            ids = ids[:-1]
        texts.append(tok.decode(ids, skip_special_tokens=True))
    return texts


def oracle_samples(model: "HookedModel", prompt: list[int], gold: int | str, cfg: "LatentSeekConfig", *,
                   max_new_tokens: int, seed: int) -> dict[str, list[bool]]:
    """Per temperature of ``cfg.baseline_temperatures``, the correctness of each of :func:`baseline_size` chains."""
    out = {}
    for k, t in enumerate(cfg.baseline_temperatures):
        gen = torch.Generator().manual_seed(seed * 31 + k)
        texts = sample_chains(model, prompt, n=baseline_size(cfg), temperature=t, max_new_tokens=max_new_tokens,
                              generator=gen)
        out[temperature_key(t)] = [is_correct(text, gold) for text in texts]
    return out


def best_of_n_summary(correct: list[list[bool]], greedy: list[bool], max_iters: int) -> dict:
    """One temperature's baseline over problems (``correct[i]``: problem i's chains; ``greedy[i]``: its greedy chain).

    ``best_of_n``: any of the N chains correct; ``sample_accuracy``: one chain; ``best_of_n_by_budget[b]``: any of
    the first b + 1 chains; ``greedy_or_samples_by_budget[b]`` (b = 0..max_iters): the greedy chain or any of the
    first b samples -- as many chains as LatentSeek's ``accuracy_by_budget[b]`` may check, the greedy one first.
    """
    n = len(correct)
    if n == 0:
        return {}
    size = min(len(c) for c in correct)
    return {
        "n": n, "samples": size,
        "best_of_n": sum(any(c) for c in correct) / n,
        "sample_accuracy": sum(sum(c) for c in correct) / sum(len(c) for c in correct),
        "best_of_n_by_budget": [sum(any(c[: b + 1]) for c in correct) / n for b in range(size)],
        "greedy_or_samples_by_budget": [sum(g or any(c[:b]) for c, g in zip(correct, greedy)) / n
                                        for b in range(min(max_iters, size) + 1)],
    }
