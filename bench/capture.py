"""Capture overhead: resid_post at every layer vs a plain HF forward, and vs TransformerLens run_with_cache.

Prints name=value lines; the headline (last line) is capture_overhead= (worst of the two sizes).
"""

from __future__ import annotations

import torch

from bench._common import build, interleaved, n_params, random_prompts
from bench._targets import print_target
from thinklens import Site


def main() -> None:
    torch.set_num_threads(2)
    worst = 0.0
    for size, (batch, length) in {"1m": (16, 128), "25m": (8, 128)}.items():
        m = build(size)
        ids = random_prompts(m, batch, length)
        mask = torch.ones_like(ids)
        sites = [Site("resid_post", i) for i in range(m.n_layers)]
        bridge = m.to_transformer_lens()
        names = [f"blocks.{i}.hook_out" for i in range(m.n_layers)]

        @torch.no_grad()
        def plain():
            m.hf(input_ids=ids, attention_mask=mask)

        def ours():
            m.capture({"input_ids": ids, "attention_mask": mask}, sites)

        @torch.no_grad()
        def tl():
            bridge.run_with_cache(ids, names_filter=lambda n: n in names)

        t = interleaved({"plain": plain, "ours": ours, "tl": tl}, repeats=7)
        ratio = t["ours"] / t["plain"]
        worst = max(worst, ratio)
        print(f"capture_params_{size}={n_params(m)}")
        print(f"capture_plain_s_{size}={t['plain']:.4f}")
        print(f"capture_ours_s_{size}={t['ours']:.4f}")
        print(f"capture_tl_s_{size}={t['tl']:.4f}")
        print(f"capture_tl_ratio_{size}={t['tl'] / t['plain']:.3f}")
        print(f"capture_overhead_{size}={ratio:.3f}")
    print_target("capture_overhead")
    print(f"capture_overhead={worst:.3f}")


if __name__ == "__main__":
    main()
