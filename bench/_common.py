"""Shared helpers of the benchmarks: random models of a real family, interleaved timing."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable

import torch

SIZES = {  # name -> build_tiny_model kwargs; parameter counts printed by the benches
    "1m": dict(d_model=128, n_layers=4, n_heads=4, d_mlp=352, vocab_size=512, n_ctx=512),
    "25m": dict(d_model=512, n_layers=6, n_heads=8, d_mlp=1376, vocab_size=8192, n_ctx=512),
}


def build(size: str, family: str = "llama"):
    from thinklens import HookedModel
    from tools.testing import build_tiny_model

    with tempfile.TemporaryDirectory(prefix=f"bench-{size}-") as tmp:
        path = build_tiny_model(family, tmp, **SIZES[size])
        model = HookedModel.load(str(path))
        for p in model.hf.parameters():  # own the weights before the folder goes (safetensors may be mapped)
            p.data = p.data.clone()
        return model


def n_params(model) -> int:
    return sum(p.numel() for p in model.hf.parameters())


def interleaved(fns: dict[str, Callable[[], object]], repeats: int = 5, warmup: int = 1) -> dict[str, float]:
    """Best-of-N seconds per call; the candidates alternate so drift hits them alike.

    The minimum, not the median: on a shared 2-core machine other processes only ever add time,
    so the fastest of several alternating runs is the best estimate of each candidate's own cost.
    """
    for _ in range(warmup):
        for f in fns.values():
            f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: min(v) for k, v in times.items()}


def random_prompts(model, n: int, length: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, model.vocab_size, (n, length), generator=g)
