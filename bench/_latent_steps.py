"""The pair the latent benchmarks time: one CODI training step (teacher + student with 6 latents + distillation)
and one CoT-SFT step (the token-level baseline of ``thinklens.latent.sft``: cross-entropy on chain + answer + eos) on the
same batch of the same model, sharing one AdamW. Used by ``bench/latent.py`` (the zoo) and
``bench/gpu/bench_gpu.py`` (a real model's shape on the device).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def codi_and_cot_steps(model: Any, rows: list, *, lr: float, dtype: torch.dtype | None = None) -> dict[str, Callable[[], None]]:
    """``{"codi": step, "cot": step}``: each call runs one forward, backward and optimizer step on ``rows``
    (``thinklens.latent.segments.Example`` rows). ``dtype``: the CODI module's dtype (default: the model's)."""
    from thinklens.latent.codi import CODI
    from thinklens.latent.segments import latent_tokens
    from thinklens.latent.sft import SFT

    tokens = latent_tokens(model.tokenizer)
    torch.manual_seed(0)  # the projection's init draws from the global RNG
    codi = CODI(model, tokens, n_latents=6)
    if dtype is not None:
        codi.to(device=model.device, dtype=dtype)
    codi.train()
    opt = torch.optim.AdamW(codi.parameters(), lr=lr)
    sft = SFT(model, tokens)

    def step(module: torch.nn.Module, batch: dict) -> Callable[[], None]:
        def run() -> None:
            module(batch)["loss"].backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        return run

    return {"codi": step(codi, codi.collate(rows)), "cot": step(sft, sft.collate(rows))}
