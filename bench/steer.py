"""Steered vs unsteered traced generation (same prompts, same length): the cost of steering hooks.

Steering adds ``c * v`` at one residual site on every token (an AddVector, the intervention feature
steering, activation vectors and hybrid steering all use), and, separately, clamps an SAE feature with
the error term kept (encode + two decodes per token). Prints name=value lines; the headline (last line)
is steer_overhead= (AddVector, worst of the two sizes; <= 1.2 expected).

Timing: one torch thread, candidates interleaved, the *minimum* process CPU time over 7 repeats. On the
shared 2-core machines other jobs come and go; wall-clock medians swung 2x between identical runs, while
CPU time of this process (one thread) is what steering actually costs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from bench._common import build, n_params, random_prompts
from bench._targets import print_target


def cpu_min(fns: dict[str, Callable[[], object]], repeats: int = 7) -> dict[str, float]:
    """Minimum process CPU seconds per call, candidates interleaved (one warm-up round first)."""
    for f in fns.values():
        f()
    best = {k: float("inf") for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t = time.process_time()
            f()
            best[k] = min(best[k], time.process_time() - t)
    return best


def main() -> None:
    from sae_lens import TopKSAE, TopKSAEConfig

    from thinklens.steering.feature_steering import add_feature, clamp_feature

    torch.set_num_threads(1)
    worst = 0.0
    for size in ("1m", "25m"):
        m = build(size)
        m.hf.generation_config.eos_token_id = None
        ids = random_prompts(m, 8, 32)
        prompts = [m.tokenizer.decode(r) for r in ids]
        site = f"resid_post.{m.n_layers // 2}"
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            sae = TopKSAE(TopKSAEConfig(d_in=m.d_model, d_sae=8 * m.d_model, k=32)).eval()
        add = [add_feature(site, sae, 3, 4.0)]
        clamp = [clamp_feature(site, sae, 3, 2.0)]
        new = 48

        def plain():
            return m.generate(prompts, max_new_tokens=new)

        def steered():
            return m.generate(prompts, max_new_tokens=new, interventions=add)

        def clamped():
            return m.generate(prompts, max_new_tokens=new, interventions=clamp)

        # per decoding step of the batch (its longest row): a steered row may stop at EOS earlier or later
        n = {k: max(len(t) for t in f()) for k, f in {"plain": plain, "steered": steered, "clamped": clamped}.items()}
        t = cpu_min({"plain": plain, "steered": steered, "clamped": clamped})
        per = {k: t[k] / n[k] for k in t}
        ratio, ratio_clamp = per["steered"] / per["plain"], per["clamped"] / per["plain"]
        worst = max(worst, ratio)
        print(f"steer_params_{size}={n_params(m)}")
        print(f"steer_steps_plain_{size}={n['plain']}")
        print(f"steer_steps_add_{size}={n['steered']}")
        print(f"steer_plain_s_{size}={t['plain']:.4f}")
        print(f"steer_add_s_{size}={t['steered']:.4f}")
        print(f"steer_clamp_s_{size}={t['clamped']:.4f}")
        print(f"steer_clamp_overhead_{size}={ratio_clamp:.3f}")
        print(f"steer_overhead_{size}={ratio:.3f}")
    print_target("steer_overhead")
    print(f"steer_overhead={worst:.3f}")


if __name__ == "__main__":
    main()
