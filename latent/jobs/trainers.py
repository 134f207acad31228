"""``thinklens run codi | coconut | latent-sft | sft``: the latent trainers, one job per row of the method table.

Each job comes from its row of :data:`thinklens.latent.methods.METHODS` (:func:`training_job`), so a new latent
method is its config, its module and one table row: this list (registered once in pyproject.toml as
``latent-trainers = "thinklens.latent.jobs.trainers:JOBS"``) makes it ``thinklens run <name>``. Each trains from a CoT model
into its own ``runs/<name>/<id>`` folder; its summary's findings (:func:`thinklens.latent.latent_findings.training_findings`): the
held-out accuracy against the majority guess and the training-loss change of the last phase. ``sft`` is the
token-level baseline of the latent table (CoT-SFT, or No-CoT with ``--cot false``) on the same batches.

Example:
    >>> [(j.name, j.config.__name__) for j in JOBS], all(j.run_kind == j.name for j in JOBS)
    ([('coconut', 'CoconutConfig'), ('codi', 'CODIConfig'), ('latent-sft', 'LatentSFTConfig'), ('sft', 'SFTConfig')], True)
    >>> # thinklens run codi --steps 400 --run-id codi-400 --publish data/zoo/tiny-codi
    >>> # thinklens run sft --cot false --steps 15000 --run-id nocot-15k
"""

from __future__ import annotations

from typing import Any

from thinklens.data.problemsets import load_problems
from thinklens.latent.config import TrainConfig
from thinklens.latent.latent_findings import with_training_findings
from thinklens.latent.methods import METHODS
from thinklens.runs.headlines import num, pct, result_json
from thinklens.runs.jobs import Job, JobContext


def run_training(config: TrainConfig, ctx: JobContext) -> dict[str, Any]:
    """Train ``config`` in the job's run folder (resuming its checkpoint) on the job's device and dtype."""
    # torch and the training loop: imported when the job runs, not when the CLI lists it
    import torch  # lazy: CLI start-up (torch)

    from thinklens.latent.training_loop import train_latent  # lazy: CLI start-up (torch)

    if ctx.options.threads is None:
        torch.set_num_threads(1)  # fastest on a shared 2-core machine; --threads overrides
    return train_latent(config, ctx.run, device=ctx.options.device, dtype=ctx.options.torch_dtype,
                        progress=ctx.progress.enabled)


def report_training(metrics: dict[str, Any]) -> str:
    """Steps, time and the held-out accuracy of a finished training run.

    Example:
        >>> print(report_training({"method": "codi", "steps": 10, "train_wall_s": 3.0, "processes": 1}))
        codi: 10 steps in 3s on 1 process(es)
    """
    lines = [f"{metrics['method']}: {metrics['steps']} steps in {metrics['train_wall_s']:.0f}s on {metrics['processes']} process(es)"]
    if metrics.get("eval"):
        ev = metrics["eval"]
        lines.append("accuracy by steps: " + " ".join(f"{k}:{v:.2f}" for k, v in ev["accuracy"].items())
                     + "; reasoning positions: " + " ".join(f"{k}:{v:.1f}" for k, v in ev["reasoning_positions"].items()))
    return "\n".join(lines)


def training_headline(summary: dict[str, Any], folder: Any) -> str:
    """A training run in a line (Home, ``thinklens runs``): method, steps, time and held-out accuracy.

    Example:
        >>> training_headline({"method": "codi", "steps": 10, "train_wall_s": 3.0, "eval": {"accuracy": 0.5}}, "/none")
        'codi: 10 steps in 3 s, held-out accuracy 50%'
    """
    m = result_json(folder, "metrics") or summary
    ev = (m.get("eval") or {}).get("mean_accuracy", (m.get("eval") or {}).get("accuracy"))
    held_out = ev if isinstance(ev, dict) else pct(ev)
    return f"{m.get('method', '?')}: {m.get('steps', '?')} steps in {num(m.get('train_wall_s'), 0)} s, held-out accuracy {held_out}"


def training_preflight(config: TrainConfig) -> None:
    """What a trainer reads, checked before its model loads: ``--data`` (the training problems) and, when it
    evaluates (``--n-eval`` > 0), ``--eval-data`` (a missing, malformed or empty file costs no load)."""
    if config.data:
        config.load()
    if config.eval_data and config.n_eval:
        load_problems(config.eval_data, limit=config.n_eval)


def training_job(name: str) -> Job:
    """The job training method ``name``: run folders ``runs/<name>/<id>`` (older runs, ``runs/latent-train/<id>``,
    are still this job's, as the app and ``thinklens runs`` read them)."""
    method = METHODS[name]
    doc = " ".join((method.config.__doc__ or "").split())
    return Job(name, method.config, run_training, preflight=training_preflight, help=doc or name,
               description=f"{doc} Starts from a CoT model (or continues a saved {method.label} model); the trained "
               "model is written to <run folder>/model and, with --publish, to a model folder. Re-running the same "
               "--run-id resumes from the last checkpoint; `accelerate launch -m thinklens.cli run ...` trains on "
               "several processes.",
               models=(), report=report_training, headline=training_headline, order=110,
               page="pages/6_Latent_reasoning.py", former_kinds=("latent-train",),
               findings="thinklens.latent.latent_findings:training_findings", capability="Latent reasoning",
               validations=dict(method.validations), smallest=method.smallest)


JOBS = [with_training_findings(training_job(name)) for name in METHODS]  # summaries hold the accuracy and loss findings
