"""Benchmark: held-out accuracy of every committed zoo model by number of steps.

Prints ``name=value`` lines, e.g. ``zoo_cot_acc_steps3=0.97``; the last line is the headline
``zoo_think_acc_2to4=``. Usage: ``python -m bench.zoo [N_PER_STEPS]`` (default 50).
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from thinklens.zoo.accuracy import evaluate_zoo_model
from thinklens.zoo.registry import zoo_path

MODELS = ("tiny-pre", "tiny-direct", "tiny-cot", "tiny-think-carry", "tiny-think")  # headline last
SEED = 777  # held out: training batches come from [seed, step] streams, zoo.json evals use 10000


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    torch.set_num_threads(1)  # fastest on a shared 2-core machine (see thinklens/zoo/jobs/zoo_train.py)
    think_headline = float("nan")
    for name in MODELS:
        if zoo_path(name) is None:
            print(f"zoo_{name.removeprefix('tiny-')}_missing=1")
            continue
        t0 = time.monotonic()
        r = evaluate_zoo_model(name, n_per_steps=n, steps=range(1, 9), seed=SEED)
        short = name.removeprefix("tiny-").replace("-", "_")
        for steps, acc in r.accuracy.items():
            print(f"zoo_{short}_acc_steps{steps}={acc:.3f}")
        if name != "tiny-think":  # its 2-4 figure is the headline, printed last
            print(f"zoo_{short}_acc_2to4={r.mean_accuracy([2, 3, 4]):.3f}")
        print(f"zoo_{short}_acc_6to8={r.mean_accuracy([6, 7, 8]):.3f}")
        if r.prompt_format == "think":
            print(f"zoo_{short}_reflection_rate={r.reflection_rate:.3f}")
            print(f"zoo_{short}_corrections={r.n_corrections}")
            rate = r.correction_right_rate
            print(f"zoo_{short}_correction_right_rate={'nan' if rate is None else round(rate, 3)}")
            print(f"zoo_{short}_sampled_hmm_wait_rate={r.sampled_reflection_rate:.3f}")
            print(f"zoo_{short}_sampled_corrections={r.sampled_corrections}")
            rate = r.sampled_correction_right_rate
            print(f"zoo_{short}_sampled_correction_right_rate={'nan' if rate is None else round(rate, 3)}")
            print(f"zoo_{short}_sampled_accuracy={r.sampled_accuracy:.3f}")
            if name == "tiny-think":
                think_headline = r.mean_accuracy([2, 3, 4])
        print(f"zoo_{short}_eval_s={time.monotonic() - t0:.1f}")
    print(f"zoo_think_acc_2to4={think_headline:.3f}")


if __name__ == "__main__":
    main()
