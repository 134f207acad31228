"""``thinklens run sae-eval``: sae-lens's metrics of any sae-lens SAE folder (or ``sae`` run) on a model.

Writes ``results/metrics.json`` (explained variance, L0, dead features, CE loss recovered, KL) and
prints it.

Example:
    >>> JOB.name, SAEEvalConfig().n_batches
    ('sae-eval', 8)
    >>> # thinklens run sae-eval --sae data/saes/tiny-think-resid_post.2-topk32 --model tiny-think
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from thinklens.errors import ThinklensError
from thinklens.jobs import Job, JobContext
from thinklens.problemsets import DataOptions


@dataclass(frozen=True)
class SAEEvalConfig(DataOptions):
    """``thinklens run sae-eval``: which SAE, on which model and texts."""

    model: str = "tiny-think"
    """Zoo name, local model folder or hub id (the model the SAE reads)."""
    sae: str = ""
    """An sae-lens SAE folder (cfg.json + sae_weights.safetensors) or an `sae` run folder."""
    site: str | None = None
    """Site of the SAE (None: from its metadata)."""
    data: str = "zoo:think"
    """Texts: zoo:<style> (rendered zoo problems), a .txt/.jsonl file of texts, or a problem set (each problem's
    prompt in --prompt-format followed by its worked solution; see `thinklens run sae --help`)."""
    n_texts: int = 400
    """Texts evaluated."""
    n_batches: int = 8
    """Batches of 32 texts."""
    seed: int = 1
    """Seed of the zoo texts (SAE training draws seed 0 by default)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_texts < 1 or self.n_batches < 1:
            raise ThinklensError.of("sizes", (self.n_texts, self.n_batches), "n_texts >= 1 and n_batches >= 1",
                                    "pass --n-texts 400 --n-batches 8")


def run(config: SAEEvalConfig, ctx: JobContext) -> dict[str, Any]:
    """Load the SAE on the model's device and compute sae-lens's metrics over the texts."""
    from steering.data import corpus
    from steering.sae import evaluate_sae, load_sae, sae_folder

    sae = load_sae(sae_folder(config.sae)[0], device=str(ctx.model.device))
    texts = corpus(config.data, config.n_texts, seed=config.seed, model=ctx.model, prompt_format=config.prompt_format,
                   data_fields=config.data_fields)
    metrics = evaluate_sae(ctx.model, sae, texts, site=config.site, n_batches=config.n_batches)
    ctx.run.write_result("metrics", metrics)
    return metrics


def summary(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: metrics.get(k) for k in ("site", "explained_variance", "l0", "dead_features", "ce_loss_recovered")}


JOB = Job(
    "sae-eval", SAEEvalConfig, run, summary=summary,
    help="sae-lens metrics of any sae-lens SAE folder on a model",
    description="Evaluates an SAE folder in sae-lens's format (or an `sae` run folder) at its site of --model on "
    "local texts with sae-lens's run_evals: explained variance, L0, dead features, CE loss recovered and KL.",
)
