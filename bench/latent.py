"""Benchmark: one CODI training step (teacher + student with N=6 latents + distillation) against one
CoT-SFT step (CE on prompt + chain + answer) on the same batch of the same model.

Prints ``name=value`` lines; the last is the headline ``codi_step_ratio=`` (target <= 3).
Usage: ``python -m bench.latent [BATCH]`` (default 32). Uses tiny-cot when trained, else a random
model of the zoo's shape.
"""

from __future__ import annotations

import os
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from bench._common import interleaved
from bench._targets import print_target


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
    from bench._latent_steps import codi_and_cot_steps
    from thinklens.latent.examples import ExampleSource

    batch_size = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    torch.set_num_threads(1)
    model, name = zoo_model()
    rows = ExampleSource(model.tokenizer, seed=0, min_steps=3, max_steps=3).batch(0, batch_size)
    t = interleaved(codi_and_cot_steps(model, rows, lr=1e-4), repeats=7, warmup=2)
    print(f"latent_bench_model={name}")
    print(f"latent_bench_batch={batch_size}")
    print(f"cot_tokens_per_row={sum(len(ex.prompt) + len(ex.cot) + len(ex.answer) + 1 for ex in rows) / len(rows):.1f}")
    print(f"cot_step_s={t['cot']:.4f}")
    print(f"codi_step_s={t['codi']:.4f}")
    print_target("codi_step_ratio")
    print(f"codi_step_ratio={t['codi'] / t['cot']:.2f}")


if __name__ == "__main__":
    main()
