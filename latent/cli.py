"""``thinklens latent ...``: train Coconut / CODI / Latent-SFT, run LatentSeek, build the comparison table.

Mounted by the main CLI with :func:`add_latent_parser`. Options come from the config dataclasses
(their field docstrings are the help). Every job writes a run folder; re-running the same command
resumes it.

Example:
    >>> import argparse
    >>> p = argparse.ArgumentParser(prog="thinklens")
    >>> _ = add_latent_parser(p.add_subparsers(dest="command"))
    >>> a = p.parse_args(["latent", "train", "codi", "--n-latents", "6", "--steps", "10"])
    >>> a.func.__name__, config_from_args(a.config_cls, a).steps
    ('cmd_train', 10)
"""

from __future__ import annotations

import argparse
import os

from latent.config import CONFIGS, EvalConfig, LatentSeekConfig
from thinklens.configcli import add_config_arguments, config_from_args


def _common(p: argparse.ArgumentParser, *, out: bool = False) -> None:
    p.add_argument("--runs", default=os.environ.get("THINKLENS_RUNS", "runs"), help="runs folder (default: $THINKLENS_RUNS or runs)")
    p.add_argument("--run-id", default=None, help="run id (default: derived from the job); the same id resumes")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1: the machine is shared)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    if out:
        p.add_argument("--out", default=None, help="also publish the trained model folder here, e.g. data/zoo/tiny-codi")


def add_latent_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``latent train {coconut,codi,latent-sft}``, ``latent seek`` and ``latent eval``."""
    lat = subparsers.add_parser("latent", help="latent reasoning: Coconut, CODI, Latent-SFT, LatentSeek")
    sub = lat.add_subparsers(dest="latent_command", required=True)
    train = sub.add_parser("train", help="train a latent-reasoning model from a CoT model (resumable)")
    methods = train.add_subparsers(dest="method", required=True)
    for name, cls in CONFIGS.items():
        doc = (cls.__doc__ or "").strip().splitlines()[0]
        p = methods.add_parser(name, help=doc, description=doc)
        add_config_arguments(p, cls)
        _common(p, out=True)
        p.set_defaults(func=cmd_train, config_cls=cls)
    seek = sub.add_parser("seek", help="LatentSeek test-time optimisation of a CoT model's latents")
    add_config_arguments(seek, LatentSeekConfig)
    _common(seek)
    seek.set_defaults(func=cmd_seek, config_cls=LatentSeekConfig)
    ev = sub.add_parser("eval", help="the comparison table: accuracy, reasoning positions, compression, train time")
    add_config_arguments(ev, EvalConfig)
    _common(ev)
    ev.set_defaults(func=cmd_eval, config_cls=EvalConfig)
    return lat


def cmd_train(args: argparse.Namespace) -> int:
    """``thinklens latent train METHOD [options]``."""
    import torch

    from latent.train import train_latent

    torch.set_num_threads(args.threads)
    cfg = config_from_args(args.config_cls, args)
    m = train_latent(cfg, run_root=args.runs, run_id=args.run_id, out=args.out, progress=not args.no_progress)
    print(f"{m['method']}: {m['steps']} steps in {m['train_wall_s']:.0f}s on {m['processes']} process(es)")
    if "eval" in m:
        ev = m["eval"]
        print("accuracy by steps: " + " ".join(f"{k}:{v:.2f}" for k, v in ev["accuracy"].items())
              + "; reasoning positions: " + " ".join(f"{k}:{v:.1f}" for k, v in ev["reasoning_positions"].items()))
    return 0


def cmd_seek(args: argparse.Namespace) -> int:
    """``thinklens latent seek [options]``: writes runs/latent-seek/<id>."""
    import torch

    from latent import figures
    from latent.evaluate import _seek_to_json, problems_for, seek_problems, seek_summary
    from latent.methods import load_model
    from thinklens.runs import RunFolder

    torch.set_num_threads(args.threads)
    cfg: LatentSeekConfig = config_from_args(LatentSeekConfig, args)
    run = RunFolder.create("latent-seek", cfg, root=args.runs, run_id=args.run_id or f"{cfg.variant}-{cfg.reward.replace(':', '_')}")
    model = load_model(cfg.model)
    results = seek_problems(model, problems_for(cfg.n, cfg.min_steps, cfg.max_steps, cfg.seed), cfg, run,
                            progress=not args.no_progress)
    summary = seek_summary(results, cfg)
    run.write_result("seek", {"config": cfg, "summary": summary, "problems": [_seek_to_json(r) for r in results]})
    run.write_figure("seek_budget", figures.budget_figure(summary["accuracy_by_budget"], cfg.reward))
    run.finish({"cot_accuracy": summary["cot_accuracy"], "seek_accuracy": summary["seek_accuracy"]})
    print(f"CoT {summary['cot_accuracy']:.3f} -> LatentSeek({cfg.reward}, {cfg.variant}) {summary['seek_accuracy']:.3f} "
          f"on {summary['n']} problems ({cfg.min_steps}-{cfg.max_steps} steps); "
          f"by budget: {' '.join(f'{a:.2f}' for a in summary['accuracy_by_budget'])}")
    print(f"run folder: {run.path}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    """``thinklens latent eval [options]``: writes runs/latent-eval/<id> and prints the table."""
    import torch

    from latent.evaluate import format_table, run_table
    from thinklens.runs import RunFolder

    torch.set_num_threads(args.threads)
    cfg: EvalConfig = config_from_args(EvalConfig, args)
    run = RunFolder.create("latent-eval", cfg, root=args.runs, run_id=args.run_id or "table")
    out = run_table(cfg, run, progress=not args.no_progress)
    print(format_table(out["rows"]))
    print(f"run folder: {run.path}")
    return 0
