"""Traced greedy generation capturing two sites vs plain HF generate (same prompts, same tokens).

Prints name=value lines; the headline (last line) is generate_overhead= (worst of the two sizes).
"""

from __future__ import annotations

import torch

from bench._common import build, interleaved, n_params, random_prompts
from bench._targets import print_target


def main() -> None:
    torch.set_num_threads(2)
    worst = 0.0
    for size, (batch, length, new) in {"1m": (8, 32, 48), "25m": (8, 32, 48)}.items():
        m = build(size)
        ids = random_prompts(m, batch, length)
        prompts = [m.tokenizer.decode(r) for r in ids]
        enc = m.tokenize(prompts)
        sites = [f"resid_post.{m.n_layers // 2}", f"resid_post.{m.n_layers - 1}"]

        @torch.no_grad()
        def plain():
            return m.hf.generate(**enc, max_new_tokens=new, min_new_tokens=new, do_sample=False,
                                 pad_token_id=m.tokenizer.pad_token_id)

        def ours():
            return m.generate(prompts, max_new_tokens=new, capture=sites)

        ref = plain()
        got = ours()
        n_ours = sum(len(t) for t in got)
        n_plain = ref[:, enc["input_ids"].shape[1]:].numel()  # min_new_tokens: HF runs every step
        t = interleaved({"plain": plain, "ours": ours}, repeats=5)
        # per generated token, in case our run stopped a row at EOS (HF was forced to continue)
        ratio = (t["ours"] / n_ours) / (t["plain"] / n_plain)
        same = all(tr.token_ids == ref[r, enc["input_ids"].shape[1]:].tolist()[: len(tr)] for r, tr in enumerate(got))
        worst = max(worst, ratio)
        print(f"generate_params_{size}={n_params(m)}")
        print(f"generate_tokens_equal_hf_{size}={int(same)}")
        print(f"generate_plain_s_{size}={t['plain']:.4f}")
        print(f"generate_ours_s_{size}={t['ours']:.4f}")
        print(f"generate_overhead_{size}={ratio:.3f}")
    print_target("generate_overhead")
    print(f"generate_overhead={worst:.3f}")


if __name__ == "__main__":
    main()
