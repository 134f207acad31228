"""Steered vs unsteered traced generation (same prompts, same length): the cost of steering hooks.

Steering adds ``c * v`` at one residual site on every token (an AddVector, the intervention feature
steering, activation vectors and hybrid steering all use), and, separately, clamps an SAE feature with
the error term kept (encode + two decodes per token). Prints name=value lines; the headline (last line)
is steer_overhead= (AddVector, worst of the two sizes; <= 1.2 expected).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import build, interleaved, n_params, random_prompts  # noqa: E402


def main() -> None:
    from sae_lens import TopKSAE, TopKSAEConfig

    from steering.feature_steering import add_feature, clamp_feature

    torch.set_num_threads(2)
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
        t = interleaved({"plain": plain, "steered": steered, "clamped": clamped}, repeats=5)
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
    print(f"steer_overhead={worst:.3f}")


if __name__ == "__main__":
    main()
