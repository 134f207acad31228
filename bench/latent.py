"""Benchmark: one CODI training step (teacher + student with N=6 latents + distillation) against one
CoT-SFT step (CE on prompt + chain + answer) on the same batch of the same model.

Prints ``name=value`` lines; the last is the headline ``codi_step_ratio=`` (target <= 3).
Usage: ``python bench/latent.py [BATCH]`` (default 32). Uses tiny-cot when trained, else a random
model of the zoo's shape.
"""

from __future__ import annotations

import os
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
from _common import interleaved  # noqa: E402

# This file is named like the `latent` package: drop bench/ from the path so `import latent` finds the package.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))


def zoo_model():
    from thinklens import HookedModel
    from thinklens.zoo.registry import zoo_path

    if zoo_path("tiny-cot") is not None:
        return HookedModel.load("tiny-cot"), "tiny-cot"
    from thinklens.zoo.modeling import ZooModelConfig, build_model, save_zoo_folder
    from thinklens.zoo.tokenizer import zoo_vocab

    path = os.path.join(tempfile.mkdtemp(prefix="bench-latent-"), "m")
    save_zoo_folder(build_model(ZooModelConfig(), len(zoo_vocab()), seed=0), __import__("pathlib").Path(path), meta={},
                    half=False)
    return HookedModel.load(path), "random-zoo-shape"


def main() -> None:
    from latent.codi import CODI
    from latent.data import latent_tokens, per_example_ce, right_pad, shifted_labels
    from latent.examples import ExampleSource

    batch_size = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    torch.set_num_threads(1)
    model, name = zoo_model()
    tokens = latent_tokens(model.tokenizer)
    torch.manual_seed(0)
    codi = CODI(model, tokens, n_latents=6)
    opt = torch.optim.AdamW(codi.parameters(), lr=1e-4)
    rows = ExampleSource(model.tokenizer, seed=0, min_steps=3, max_steps=3).batch(0, batch_size)
    codi_batch = codi.collate(rows)
    seqs = [list(ex.prompt) + ex.cot + list(ex.answer) + [tokens.eos] for ex in rows]
    ids, mask = right_pad(seqs, tokens.pad)
    labels = shifted_labels(ids, [len(ex.prompt) for ex in rows], mask)

    def codi_step():
        codi(codi_batch)["loss"].backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def cot_step():
        logits = model.forward({"input_ids": ids, "attention_mask": mask}).logits
        per_example_ce(logits, labels).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    t = interleaved({"codi": codi_step, "cot": cot_step}, repeats=7, warmup=2)
    print(f"latent_bench_model={name}")
    print(f"latent_bench_batch={batch_size}")
    print(f"cot_tokens_per_row={sum(len(s) for s in seqs) / len(seqs):.1f}")
    print(f"cot_step_s={t['cot']:.4f}")
    print(f"codi_step_s={t['codi']:.4f}")
    print(f"codi_step_ratio={t['codi'] / t['cot']:.2f}")


if __name__ == "__main__":
    main()
