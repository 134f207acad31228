"""``thinklens run lynx`` and ``thinklens run probe``: options generated from the job configs.

Every config field is an option (``--n-train``, ``--cue-words hmm,wait``, ``--deltas 0.05,0.1``) whose
help is the field's docstring. The run folder is ``<--runs>/<job>/<--run-id>`` (or exactly ``--out``);
re-running the same command with the same ``--run-id`` resumes from the cached stages. Bad input
(a delta outside (0, 1), too few calibration events for a delta, no cue events, unknown cue words, a
probe trained on other sites) stops with one line on stderr and exit code 2.

Example:
    >>> import argparse
    >>> p = argparse.ArgumentParser(); jobs = p.add_subparsers(dest="job")
    >>> add_lynx_parser(jobs, "lynx"); add_probe_parser(jobs, "probe")
    >>> a = p.parse_args(["lynx", "--n-train", "50", "--deltas", "0.1,0.2", "--run-id", "demo"])
    >>> a.n_train, a.deltas, a.run_id
    (50, (0.1, 0.2), 'demo')
"""

from __future__ import annotations

import argparse
from pathlib import Path

from thinklens.configcli import add_config_arguments, config_from_args

DTYPES = ("float32", "bfloat16", "float16")


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("run folder and device")
    g.add_argument("--runs", default=None, help="root of the run folders (default: $THINKLENS_RUNS or ./runs)")
    g.add_argument("--run-id", default=None, help="run id (default: a timestamp); the same id and config resumes")
    g.add_argument("--out", default=None, help="write the run to exactly this folder (overrides --runs/--run-id)")
    g.add_argument("--device", default="cpu", help="device of the model (cpu, cuda, cuda:1, mps)")
    g.add_argument("--dtype", default="float32", choices=DTYPES, help="weight dtype")
    g.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    g.add_argument("--no-progress", action="store_true", help="hide progress bars")


def _run_folder(kind: str, config, args: argparse.Namespace):
    from thinklens.runs import RunFolder, default_runs_root

    if args.out:
        out = Path(args.out).expanduser().resolve()
        return RunFolder.create(out.parent.name, config, root=out.parent.parent, run_id=out.name)
    root = Path(args.runs) if args.runs else default_runs_root()
    return RunFolder.create(kind, config, root=root, run_id=args.run_id)


def _load_model(name: str, args: argparse.Namespace):
    import torch

    from thinklens.model import HookedModel

    if args.threads:
        torch.set_num_threads(int(args.threads))
    return HookedModel.load(name, device=args.device, dtype=getattr(torch, args.dtype))


def _fmt(x, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def cmd_lynx(args: argparse.Namespace) -> int:
    """Run the LYNX job; prints the run folder and the per-delta table."""
    from probes.pipeline import LynxJobConfig, run_lynx

    config = config_from_args(LynxJobConfig, args)
    model = _load_model(config.model, args)
    run = _run_folder("lynx", config, args)
    result = run_lynx(model, config, run, progress=not args.no_progress)
    s = result.summary
    print(f"run: {run.path}")
    print(f"label base rate (test): {_fmt(s['splits']['test']['label_base_rate'])}; probe test AUROC: "
          f"{_fmt(s['test_auroc'])}; calibration events: {s['calibration']['n_pos']} pos / {s['calibration']['n_neg']} neg")
    print(f"{'policy':<18}{'accuracy':>9}{'Δacc':>8}{'tokens':>8}{'saving':>8}{'exit':>7}  P(S={{1}}|y=0) [95% upper]")
    full = result.report.get("full").accuracy
    rows = {r["delta"]: r for r in result.per_delta}
    for o in result.report.outcomes:
        tail = ""
        if o.policy == "lynx":
            r = rows[o.param]
            tail = f"  {_fmt(r['rate'])} [{_fmt(r['upper'])}]"
        print(f"{o.label:<18}{o.accuracy:>9.3f}{o.accuracy - full:>+8.3f}{o.mean_tokens:>8.1f}{o.saving:>8.1%}"
              f"{o.exit_rate:>7.1%}{tail}")
    if s.get("skipped_deltas"):
        print(f"skipped deltas (calibration too small): {s['skipped_deltas']}")
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    """Run the probe job; prints the run folder and the layer sweep."""
    from probes.probe_job import ProbeJobConfig, run_probe_job

    config = config_from_args(ProbeJobConfig, args)
    model = _load_model(config.model, args)
    run = _run_folder("probe", config, args)
    doc = run_probe_job(model, config, run, progress=not args.no_progress)
    print(f"run: {run.path}")
    for name, sw in doc["sweeps"].items():
        cells = "  ".join(f"{site}={m:.3f}±{sd:.3f}" for site, m, sd in zip(sw["sites"], sw["mean"], sw["std"]))
        print(f"{name}: {cells}")
    print(f"best site: {doc['best_site']} (probe saved in {run.path / 'probe'})")
    return 0


def add_lynx_parser(jobs, name: str = "lynx") -> None:
    """Add the LYNX job as sub-command ``name`` of the ``thinklens run`` sub-parsers ``jobs``."""
    from probes.pipeline import LynxJobConfig

    p = jobs.add_parser(name, help="LYNX: conformal early exit from hidden-state probes",
                        description="LYNX (arXiv 2512.05325): rollouts, cue events, "
                        "forced-exit labels, probe, class-conditional conformal calibration, exits vs baselines, "
                        "validity P(S={1}|y=0) vs delta. The guarantee is per cue event, under exchangeability.")
    add_config_arguments(p, LynxJobConfig, group="job")
    _add_run_arguments(p)
    p.set_defaults(func=cmd_lynx)


def add_probe_parser(jobs, name: str = "probe") -> None:
    """Add the probe job (layer sweep + intention metrics) as sub-command ``name`` of ``jobs``."""
    from probes.probe_job import ProbeJobConfig

    p = jobs.add_parser(name, help="layer sweep of probes decoding the running value or answer correctness",
                        description="Per-site cross-validated probes against the task's ground truth: ridge R^2 "
                        "of the running intermediate value, or logistic AUROC/accuracy of eventual correctness "
                        "(with intention metrics). Saves the best probe (safetensors + JSON).")
    add_config_arguments(p, ProbeJobConfig, group="job")
    _add_run_arguments(p)
    p.set_defaults(func=cmd_probe)

