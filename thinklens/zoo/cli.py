"""CLI commands of the zoo, mounted by the main CLI as ``thinklens zoo train`` / ``thinklens zoo eval``.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="thinklens")
    >>> _ = add_zoo_parser(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["zoo", "train", "tiny-cot", "--seed", "1"])
    >>> args.name, args.seed, args.func.__name__
    ('tiny-cot', 1, 'cmd_zoo_train')
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from thinklens.zoo.registry import LATENT_ZOO_NAMES, ZOO_DESCRIPTIONS, ZOO_NAMES, check_zoo_name


def add_zoo_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``zoo train`` and ``zoo eval`` to an argparse subparsers object; returns the ``zoo`` parser."""
    from thinklens.zoo.recipes import RECIPES

    zoo = subparsers.add_parser("zoo", help="train and evaluate the embedded model zoo")
    sub = zoo.add_subparsers(dest="zoo_command", required=True)
    names = "; ".join(f"{n}: {ZOO_DESCRIPTIONS[n]}" for n in RECIPES)
    train = sub.add_parser("train", help="train one zoo model (reproducible, resumable)", description=names)
    train.add_argument("name", help=f"one of {', '.join(RECIPES)}")
    train.add_argument("--seed", type=int, default=0, help="init and data seed (default 0)")
    train.add_argument("--minutes", type=float, default=30.0, help="wall-clock cap in minutes (default 30)")
    train.add_argument("--out", type=Path, default=None, help="output folder (default data/zoo/NAME)")
    # One thread by default: on a shared 2-core machine, 2 OpenMP threads stall at every barrier when
    # another process holds a core (measured: median step 2.2 s with 2 threads vs 0.47 s with 1).
    train.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1; max useful 2)")
    train.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    train.set_defaults(func=cmd_zoo_train)
    ev = sub.add_parser("eval", help="accuracy by number of steps on held-out problems")
    ev.add_argument("names", nargs="*", help=f"zoo names or folders (default: all of {', '.join(ZOO_NAMES)})")
    ev.add_argument("--n", type=int, default=50, help="problems per step count (default 50)")
    ev.add_argument("--steps", type=str, default="1-8", help="step counts, e.g. 1-8 or 2,3,4 (default 1-8)")
    ev.add_argument("--seed", type=int, default=10_000, help="held-out problem seed (default 10000)")
    ev.add_argument("--style", choices=("direct", "cot", "think"), default=None, help="override the prompt style")
    ev.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ev.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    ev.set_defaults(func=cmd_zoo_eval)
    return zoo


def parse_steps(text: str) -> list[int]:
    """``"1-8"`` -> [1..8]; ``"2,3,5"`` -> [2, 3, 5].

    Example:
        >>> parse_steps("2-4"), parse_steps("1,8")
        ([2, 3, 4], [1, 8])
    """
    from thinklens.errors import ThinklensError

    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            out = list(range(lo, hi + 1))
        else:
            out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise ThinklensError.of("--steps", text, "a range like 1-8 or a list like 2,3,4", "pass --steps 1-8")
    return out


def cmd_zoo_train(args: argparse.Namespace) -> int:
    """``thinklens zoo train NAME [--seed --minutes --out]``: train and write data/zoo/NAME."""
    import torch

    from thinklens.zoo.train import train_zoo_model

    check_zoo_name(args.name)
    torch.set_num_threads(args.threads)
    meta = train_zoo_model(
        args.name, seed=args.seed, out_dir=args.out, max_minutes=args.minutes, progress=not args.no_progress
    )
    acc = meta.get("eval", {}).get("accuracy", {})
    print(f"{args.name}: {meta['steps']} steps in {meta['train_wall_s']:.0f}s"
          + (" (TRUNCATED by --minutes)" if meta["truncated"] else ""))
    if acc:
        print("accuracy by steps: " + " ".join(f"{k}:{v:.2f}" for k, v in acc.items()))
    return 0


def format_table(results: list) -> str:
    """A plain-text table: one row per model, one column per step count.

    Example:
        >>> from thinklens.zoo.evaluate import ZooEvalResult
        >>> r = ZooEvalResult("m", "cot", 0, 10, {1: 1.0, 2: 0.5}, {1: 1.0, 2: 0.9})
        >>> print(format_table([r]))
        model  style     1    2
        m      cot    1.00 0.50
    """
    steps = sorted({s for r in results for s in r.accuracy})
    width = max([5, *(len(r.model) for r in results)])
    lines = [f"{'model':<{width}}  style  " + " ".join(f"{s:>4}" for s in steps)]
    for r in results:
        cells = " ".join(f"{r.accuracy[s]:4.2f}" if s in r.accuracy else "   -" for s in steps)
        lines.append(f"{r.model:<{width}}  {r.style:<6} {cells}")
    return "\n".join(lines)


def cmd_zoo_eval(args: argparse.Namespace) -> int:
    """``thinklens zoo eval [NAME ...]``: print accuracy by number of steps (and think statistics)."""
    import torch

    from thinklens.errors import ThinklensError
    from thinklens.zoo.evaluate import evaluate_zoo_model
    from thinklens.zoo.registry import zoo_path

    torch.set_num_threads(args.threads)
    names = args.names or [n for n in ZOO_NAMES if zoo_path(n) is not None and n not in LATENT_ZOO_NAMES]
    for n in names:
        if n in LATENT_ZOO_NAMES:
            raise ThinklensError.of("zoo eval model", n, "a token-level zoo model",
                                    f"latent models are evaluated with `thinklens latent eval --models {n}`")
    steps = parse_steps(args.steps)
    results = [evaluate_zoo_model(n, n_per_steps=args.n, steps=steps, seed=args.seed, style=args.style) for n in names]
    if args.json:
        print(json.dumps([r.to_json() for r in results], indent=1))
        return 0
    print(format_table(results))
    for r in results:
        if r.style == "think":
            corr = "n/a" if r.correction_right_rate is None else f"{r.correction_right_rate:.2f}"
            print(f"{r.model}: greedy: traces with reflection words {r.reflection_rate:.2f}; "
                  f"corrections right {corr} (of {r.n_corrections})")
            if r.sampled_corrections is not None:
                s_corr = "n/a" if r.sampled_correction_right_rate is None else f"{r.sampled_correction_right_rate:.2f}"
                print(f"{r.model}: sampled (T=1): traces with hmm/wait {r.sampled_reflection_rate:.2f}; "
                      f"corrections right {s_corr} (of {r.sampled_corrections}); accuracy {r.sampled_accuracy:.2f}")
    return 0
