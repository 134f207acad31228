"""Benchmark: the fast batched nHSIC estimator against the plain two-inverse formula.

Prints `name=value` lines; the last is the headline `mi_speedup` (plain time / fast time, same inputs).
The plain formula (numpy float64, two explicit inverses per step, as the paper's code does) is slow,
so it is timed on one step and extrapolated linearly (every step has the same shapes and cost);
both timings are best of N, alternating (bench/_common.py). Accuracy is checked on --plain-steps steps.
Both sides run with the same thread count (default 1, for numpy's BLAS too): on a shared machine,
multi-threaded BLAS timings swing by several times from run to run.

Run: python -m bench.mi [--d 1024] [--steps 256] [--plain-steps 8] [--threads 1] [--device cpu]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from bench._common import interleaved
from bench._targets import print_target
from thinklens.analyses.mi.estimator import nhsic_trajectory
from thinklens.analyses.mi.reference import plain_trajectory


def make_inputs(d: int, steps: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A synthetic trajectory that looks like residual-stream states: unit-scale coordinates, a few
    massive ones (as real LLMs have), and a varying share of the answer direction per step."""
    g = torch.Generator().manual_seed(seed)
    answer = torch.randn(d, generator=g) * 3.0
    massive = torch.randperm(d, generator=g)[:4]
    answer[massive] = torch.tensor([250.0, -180.0, 120.0, 90.0])
    share = torch.rand(steps, 1, generator=g)  # [step, 1]
    states = share * answer + (1 - share) * torch.randn(steps, d, generator=g) * 3.0  # [step, d]
    states[:, massive[0]] += 100.0 * torch.rand(steps, generator=g)  # norm changes over the steps
    return states, answer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=256)
    ap.add_argument("--plain-steps", type=int, default=8, help="steps compared with the plain formula")
    ap.add_argument("--repeats", type=int, default=3, help="best-of-N timing")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"], help="cholesky factor")
    ap.add_argument("--method", default="nystrom", choices=["nystrom", "cholesky"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="CPU threads for torch and numpy (0: leave as is)")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
        with threadpool_limits(limits=args.threads):
            run(args)
    else:
        run(args)


def run(args: argparse.Namespace) -> None:
    """Time both implementations on the same inputs and print the figures."""
    states, answer = make_inputs(args.d, args.steps, args.seed)
    dtype = getattr(torch, args.dtype)
    check_steps = min(args.plain_steps, args.steps)
    subset = np.linspace(0, args.steps - 1, check_steps).round().astype(int).tolist()

    def fast() -> torch.Tensor:
        out = nhsic_trajectory(states, answer, dtype=dtype, device=args.device, method=args.method).mi
        if torch.device(args.device).type == "cuda":
            torch.cuda.synchronize()
        return out

    def plain_step() -> np.ndarray:  # every step has the same shapes, hence the same cost
        return plain_trajectory(states.numpy(), answer.numpy(), steps=subset[:1])

    # Best of N, alternating the two so that load from other processes hits both alike.
    best = interleaved({"plain_step": plain_step, "fast": fast}, repeats=args.repeats)
    plain_s = best["plain_step"] * args.steps
    fast_s = best["fast"]
    mi_fast = fast()
    mi_plain = plain_trajectory(states.numpy(), answer.numpy(), steps=subset)
    rel = np.abs(mi_fast.numpy()[subset] - mi_plain) / np.abs(mi_plain)
    print(f"mi_d={args.d}")
    print(f"mi_steps={args.steps}")
    print(f"mi_device={args.device}")
    print(f"mi_method={args.method}")
    if args.method == "cholesky":  # the default Krylov method is float64 throughout
        print(f"mi_factor_dtype={args.dtype}")
    print(f"mi_threads={torch.get_num_threads()}")
    print(f"mi_timing=best of {args.repeats}; plain formula timed per step and extrapolated linearly "
          f"to {args.steps} steps")
    print(f"mi_plain_s={plain_s:.3f}")
    print(f"mi_fast_s={fast_s:.3f}")
    print(f"mi_fast_ms_per_step={1000 * fast_s / args.steps:.2f}")
    print(f"mi_checked_steps={check_steps}")
    print(f"mi_value_range={float(mi_plain.min()):.4g}..{float(mi_plain.max()):.4g}")
    print(f"mi_max_rel_diff={float(rel.max()):.2e}")
    print_target("mi_speedup")
    print(f"mi_speedup={plain_s / fast_s:.1f}")


if __name__ == "__main__":
    main()
