"""``thinklens run mi-peaks``: every field of :class:`MIPeaksJobConfig` is an option whose help is
the field's docstring (tuples are comma-separated, booleans are --flag / --no-flag).

``--preset NAME`` (default, demo, paper) starts from a named config; explicit options override its
fields. The run folder is ``<--runs>/mi-peaks/<--run-id>`` (or exactly ``--out``); re-running the
same command with the same ``--run-id`` resumes after the finished stages.

Example:
    >>> import argparse
    >>> p = argparse.ArgumentParser(); jobs = p.add_subparsers(dest="job")
    >>> add_parser(jobs, "mi-peaks")
    >>> a = p.parse_args(["mi-peaks", "--n-problems", "8", "--estimators", "reference,l2", "--suppression"])
    >>> cfg = config_from_args(a)
    >>> cfg.n_problems, cfg.estimators, cfg.suppression, cfg.k
    (8, ('reference', 'l2'), True, 20)
    >>> cfg = config_from_args(p.parse_args(["mi-peaks", "--preset", "demo", "--n-problems", "6", "--no-ttts"]))
    >>> cfg.model, cfg.n_problems, cfg.ttts, cfg.recycling
    ('tiny-think', 6, False, True)
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from analyses.mi.jobconfig import PRESETS, MIPeaksJobConfig, preset
from thinklens.configcli import add_config_arguments


def add_parser(jobs: Any, name: str = "mi-peaks") -> None:
    """Add the job as sub-command ``name`` of the ``thinklens run`` sub-parsers ``jobs``."""
    p = jobs.add_parser(name, help="MI peaks and thinking tokens (Qian et al. 2025)",
                        description="Greedy trajectories of a reasoning model and its non-reasoning siblings on the "
                        "synthetic task or a GSM8k JSONL file; nHSIC with the golden answer per token at several "
                        "sites (reference, median-sigma and L2 variants, shuffled-answer control); peaks by top-k "
                        "and IQR; thinking-token enrichment with CIs; optionally the suppression test, "
                        "Representation Recycling (with a layer sweep) and thinking-token test-time scaling. "
                        "`--preset demo` runs all of it on the zoo in a few CPU minutes.")
    g = p.add_argument_group("job")
    g.add_argument("--preset", default="default", choices=sorted(PRESETS),
                   help="start from a named config (demo: the zoo, every stage, a few CPU minutes); "
                   "explicit options override it")
    # options not given are absent (SUPPRESS): only those on the command line override the preset
    add_config_arguments(g, MIPeaksJobConfig)
    r = p.add_argument_group("run folder and device")
    r.add_argument("--runs", default=None, help="root of the run folders (default: $THINKLENS_RUNS or ./runs)")
    r.add_argument("--run-id", default=None, help="run id (default: a timestamp); the same id and config resumes")
    r.add_argument("--out", default=None, help="write the run to exactly this folder (overrides --runs/--run-id)")
    r.add_argument("--device", default="cpu", help="device of the model (cpu, cuda, cuda:1)")
    r.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"), help="weight dtype")
    r.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.set_defaults(func=cmd_mi_peaks)


def config_from_args(args: argparse.Namespace) -> MIPeaksJobConfig:
    """The preset with every option given on the command line applied."""
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(MIPeaksJobConfig) if hasattr(args, f.name)}
    return preset(getattr(args, "preset", "default"), **given)


def cmd_mi_peaks(args: argparse.Namespace) -> int:
    """Run the job; prints the run folder and the headline numbers."""
    import torch

    from analyses.mi.job import run_mi_peaks
    from thinklens.model import HookedModel
    from thinklens.runs import RunFolder, default_runs_root

    cfg = config_from_args(args)
    model = HookedModel.load(cfg.model, device=args.device, dtype=getattr(torch, args.dtype))
    if args.out:
        out = Path(args.out).expanduser().resolve()
        run = RunFolder.create(out.parent.name, cfg, root=out.parent.parent, run_id=out.name)
    else:
        run = RunFolder.create("mi-peaks", cfg, root=Path(args.runs) if args.runs else default_runs_root(),
                               run_id=args.run_id)
    summary = run_mi_peaks(model, cfg, run, progress=not args.no_progress)
    print(f"run: {run.path}")
    print(f"problems: {summary['n_problems']}; mean tokens: {summary['mean_tokens']:.1f}; "
          f"peak fraction: {summary['mean_peak_fraction']:.3f}")
    print(f"top thinking words: {', '.join(summary['top_words']) or '-'}")
    for key, m in summary.get("models", {}).items():
        print(f"  {key} ({m['style']}): accuracy {m['accuracy']:.3f}, mean MI {m['mean_mi']:.4g}, "
              f"peak fraction top-k {m['peak_fraction']['top_k']:.3f} / iqr {m['peak_fraction']['iqr']:.3f}, "
              f"top words {', '.join(m['top_words']) or '-'}")
    for stage in ("suppression", "recycling", "ttts"):
        if stage in summary:
            print(f"{stage}: {summary[stage]}")
    return 0
