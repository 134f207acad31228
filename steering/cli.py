"""CLI of the steering package: ``thinklens sae train|eval`` and the ``thinklens run`` jobs ``steer``,
``reasoning-vector`` and ``hybrid``. Options are generated from the job configs (help = field docstrings).

Mount: ``add_sae_parser(subparsers)`` next to ``zoo``; ``add_steer_jobs(jobs)`` adds all three jobs to the
``thinklens run`` subparsers (``add_steer_jobs(jobs, "steer")`` adds one, for a ``JOBS`` table entry).
Every job writes a run folder ``<--runs>/<job>/<--run-id>`` and returns an exit code.

Example:
    >>> import argparse
    >>> p = argparse.ArgumentParser(); sub = p.add_subparsers(dest="command")
    >>> _ = add_sae_parser(sub)
    >>> run = sub.add_parser("run").add_subparsers(dest="job"); add_steer_jobs(run)
    >>> a = p.parse_args(["run", "steer", "--sae", "runs/sae/x", "--coeffs=-1,0,1"])
    >>> a.coeffs, a.func.__name__
    ((-1.0, 0.0, 1.0), 'cmd_steer')
    >>> p.parse_args(["sae", "train", "tiny-think", "--k", "16"]).k
    16
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from thinklens.configcli import add_config_arguments, config_from_args


def _run_args(p: argparse.ArgumentParser, device: bool = True) -> None:
    g = p.add_argument_group("run folder")
    g.add_argument("--runs", default=None, help="root of the run folders (default: $THINKLENS_RUNS or ./runs)")
    g.add_argument("--run-id", default=None, help="run id (default: a timestamp)")
    g.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1: machines are shared)")
    if device:
        g.add_argument("--device", default="cpu", help="device of the model (cpu, cuda, mps)")


def _run(kind: str, config, args: argparse.Namespace, *, resume: bool = False):
    from thinklens.runs import RunFolder, default_runs_root

    root = Path(args.runs) if args.runs else default_runs_root()
    return RunFolder.create(kind, config, root=root, run_id=args.run_id, resume=resume)


def _threads(args: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(max(1, int(args.threads)))


# ---------------------------------------------------------------- thinklens sae ...

def cmd_sae_train(args: argparse.Namespace) -> int:
    """``thinklens sae train MODEL``: an sae-lens SAE at a site, from local data, into a run folder."""
    from steering.jobs import SAEJobConfig, run_sae_job
    from steering.sae import SAETrainConfig
    from thinklens.model import HookedModel

    _threads(args)
    job = config_from_args(SAEJobConfig, args, model=args.model)
    sae_cfg = config_from_args(SAETrainConfig, args, device=args.device)
    model = HookedModel.load(job.model, device=args.device)
    run = _run("sae", {"job": job, "sae": sae_cfg}, args)
    print(f"run: {run.path}")
    summary = run_sae_job(model, job, sae_cfg, run)
    print(f"SAE (sae-lens format): {run.path / 'sae'}")
    print(json.dumps(summary))
    return 0


def cmd_sae_eval(args: argparse.Namespace) -> int:
    """``thinklens sae eval SAE_DIR MODEL``: sae-lens's metrics for any sae-lens SAE folder."""
    from steering.data import corpus
    from steering.jobs import _sae_source
    from steering.sae import evaluate_sae, load_sae
    from thinklens.model import HookedModel

    _threads(args)
    sae = load_sae(_sae_source(args.sae_dir)[0], device=args.device)
    model = HookedModel.load(args.model, device=args.device)
    texts = corpus(args.data, args.n_texts, seed=args.seed)
    metrics = evaluate_sae(model, sae, texts, site=args.site, n_batches=args.n_batches)
    print(json.dumps(metrics, indent=2))
    return 0


def add_sae_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``sae train`` and ``sae eval`` to the top-level subparsers; returns the ``sae`` parser."""
    from steering.jobs import SAEJobConfig
    from steering.sae import SAETrainConfig

    sae = subparsers.add_parser("sae", help="train and evaluate sparse autoencoders (sae-lens)")
    sub = sae.add_subparsers(dest="sae_command", required=True)
    tr = sub.add_parser("train", help="train an SAE at a site from local data (sae-lens format, metrics, feature stats)",
                        # static text: listing sae-lens's registry here would import sae-lens (seconds)
                        # for every `thinklens` call; a wrong --architecture gets the list in its error
                        description="architectures: any trainable one in sae-lens's registry "
                                    "(topk, batchtopk, standard, jumprelu, gated, ...)")
    tr.add_argument("model", help="zoo name (tiny-think), local model folder or hub id")
    add_config_arguments(tr, SAEJobConfig, skip=("model",), group="data and statistics")
    add_config_arguments(tr, SAETrainConfig, skip=("device",), group="SAE (sae-lens)")
    _run_args(tr)
    tr.set_defaults(func=cmd_sae_train)
    ev = sub.add_parser("eval", help="sae-lens metrics of any sae-lens SAE folder on a model")
    ev.add_argument("sae_dir", help="an sae-lens SAE folder (cfg.json + sae_weights.safetensors) or an `sae` run folder")
    ev.add_argument("model", help="zoo name, local model folder or hub id")
    ev.add_argument("--site", default=None, help="site of the SAE (default: from its metadata)")
    ev.add_argument("--data", default="zoo:think", help="zoo:<style> or a .txt/.jsonl file")
    ev.add_argument("--n-texts", type=int, default=400, help="texts evaluated")
    ev.add_argument("--n-batches", type=int, default=8, help="batches of 32 texts")
    ev.add_argument("--seed", type=int, default=1, help="seed of zoo texts")
    ev.add_argument("--device", default="cpu")
    ev.add_argument("--threads", type=int, default=1)
    ev.set_defaults(func=cmd_sae_eval)
    return sae


# ---------------------------------------------------------------- thinklens run <job>

def cmd_steer(args: argparse.Namespace) -> int:
    from steering.jobs import SteerJobConfig, run_steer_job
    from thinklens.model import HookedModel

    _threads(args)
    from steering.jobs import _sae_source

    cfg = config_from_args(SteerJobConfig, args)
    _sae_source(cfg.sae)  # a bad --sae fails before the model loads
    model = HookedModel.load(cfg.model, device=args.device)
    run = _run("steer", cfg, args)
    print(f"run: {run.path}")
    print(json.dumps(run_steer_job(model, cfg, run)))
    return 0


def cmd_reasoning_vector(args: argparse.Namespace) -> int:
    from steering.jobs import ReasoningVectorJobConfig, run_reasoning_vector_job

    _threads(args)
    cfg = config_from_args(ReasoningVectorJobConfig, args)
    run = _run("reasoning-vector", cfg, args)
    print(f"run: {run.path}")
    print(json.dumps(run_reasoning_vector_job(cfg, run)))
    return 0


def cmd_hybrid(args: argparse.Namespace) -> int:
    from steering.hybrid import HybridConfig
    from steering.jobs import HybridJobConfig, run_hybrid_job

    _threads(args)
    job = config_from_args(HybridJobConfig, args)
    hcfg = config_from_args(HybridConfig, args)
    run = _run("hybrid", {"job": job, "hybrid": hcfg}, args, resume=True)  # stages resume after a kill
    print(f"run: {run.path}")
    print(json.dumps(run_hybrid_job(job, hcfg, run)))
    return 0


def add_steer_jobs(jobs, name: str | None = None) -> None:
    """Add ``steer``, ``reasoning-vector`` and ``hybrid`` (or only ``name``) to ``thinklens run``'s subparsers."""
    from steering.hybrid import HybridConfig
    from steering.jobs import HybridJobConfig, ReasoningVectorJobConfig, SteerJobConfig

    want = {name} if name else {"steer", "reasoning-vector", "hybrid"}
    if "steer" in want:
        p = jobs.add_parser("steer", help="steer generation with an SAE feature vs equal-norm baselines")
        add_config_arguments(p, SteerJobConfig)
        _run_args(p)
        p.set_defaults(func=cmd_steer)
    if "reasoning-vector" in want:
        p = jobs.add_parser("reasoning-vector", help="weight-space reasoning vector a - b added to a target; alpha sweep")
        add_config_arguments(p, ReasoningVectorJobConfig)
        _run_args(p, device=False)
        p.set_defaults(func=cmd_reasoning_vector)
    if "hybrid" in want:
        p = jobs.add_parser("hybrid", help="hybrid base/thinking steering (Venhoff et al.) with ablations")
        add_config_arguments(p, HybridJobConfig, group="models and data")
        add_config_arguments(p, HybridConfig, group="hybrid steering")
        _run_args(p, device=False)
        p.set_defaults(func=cmd_hybrid)
