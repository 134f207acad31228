"""Capture and traced generation on real weights (SmolLM2-135M-Instruct, `make real`) against plain transformers.

Greedy generation of chat-template prompts: plain HF ``generate`` vs thinklens ``generate`` capturing one residual
site (the middle block's); and a forward pass capturing every ``resid_post`` vs plain HF ``output_hidden_states``.
Ratios are measured in one run with the candidates interleaved (best of N). Without the real packages the bench
prints ``real_skipped=1`` and why, and exits 0.

Prints name=value lines; the headline (last line) is ``real_generate_overhead=`` (thinklens with capture over plain
HF, per generated token).
"""

from __future__ import annotations

import sys

import torch

from bench._common import interleaved, n_params
from bench._targets import print_target

PROMPTS = ["Write a short story about a lighthouse keeper.", "Explain why the sky is blue.",
           "List three uses of a paperclip.", "What makes a good breakfast?"]


def main() -> None:
    from thinklens import HookedModel
    from thinklens.engine.real_models import installed

    name = sys.argv[1] if len(sys.argv) > 1 else "smollm2-135m"
    if not installed(name):
        print(f"real_skipped=1  # {name} is not installed: run `make real`")
        return
    torch.set_num_threads(2)
    m = HookedModel.load(name)
    tok = m.tokenizer
    prompts = [tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False)
               if tok.chat_template else p for p in PROMPTS]
    new = 64
    enc = m.tokenize(prompts)
    site = f"resid_post.{m.n_layers // 2}"

    @torch.no_grad()
    def plain():
        return m.hf.generate(**enc, max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=tok.pad_token_id)

    def ours():
        return m.generate(prompts, max_new_tokens=new, capture=[site])

    ref, got = plain(), ours()
    start = enc["input_ids"].shape[1]
    eos = tok.eos_token_id
    # HF is forced past EOS (min_new_tokens masks it), so a row of ours that stopped at EOS is compared up to it
    same = all(tr.token_ids[:len(tr) - (tr.token_ids[-1:] == [eos])] == ref[r, start:].tolist()[:len(tr) - (tr.token_ids[-1:] == [eos])]
               for r, tr in enumerate(got))
    n_ours, n_plain = sum(len(t) for t in got), ref[:, start:].numel()
    t = interleaved({"plain": plain, "ours": ours}, repeats=3)
    gen_ratio = (t["ours"] / n_ours) / (t["plain"] / n_plain)

    sites = [f"resid_post.{i}" for i in range(m.n_layers)]

    @torch.no_grad()
    def hf_states():
        return m.hf(**enc, output_hidden_states=True).hidden_states

    def capture():
        return m.capture(enc["input_ids"], sites=sites)

    c = interleaved({"hf": hf_states, "ours": capture}, repeats=5)
    print(f"real_model={name}")
    print(f"real_params={n_params(m)}")
    print(f"real_batch={len(prompts)}")
    print(f"real_new_tokens={new}")
    print(f"real_tokens_equal_hf={int(same)}")
    print(f"real_plain_tokens_per_s={n_plain / t['plain']:.1f}")
    print(f"real_ours_tokens_per_s={n_ours / t['ours']:.1f}")
    print(f"real_capture_s={c['ours']:.4f}")
    print(f"real_hidden_states_s={c['hf']:.4f}")
    print(f"real_capture_overhead={c['ours'] / c['hf']:.3f}")
    print_target("real_generate_overhead")
    print(f"real_generate_overhead={gen_ratio:.3f}")


if __name__ == "__main__":
    main()
