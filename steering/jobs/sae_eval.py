"""``thinklens run sae-eval``: sae-lens's metrics of any sae-lens SAE folder (or ``sae`` run) on a model.

Writes ``results/metrics.json`` and prints it: sae-lens's explained variance, L0 and dead features over the
texts, and CE loss recovered and KL score on the tokens the model generates from held-out prompts of the same
data (:mod:`thinklens.steering.sae_fidelity`: never prompt or padding positions). The summary's ``findings``
(:mod:`thinklens.steering.sae_findings`): CE and KL recovered against zero ablation and explained variance at the generated
tokens, each with a bootstrap interval over the generated texts and a verdict.

Example:
    >>> JOB.name, SAEEvalConfig().n_batches
    ('sae-eval', 8)
    >>> # thinklens run sae-eval --sae data/saes/tiny-think-resid_post.2-topk32 --model tiny-think
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from thinklens.calibration.findings import findings_doc
from thinklens.data.problemsets import DataOptions
from thinklens.errors import ThinklensError, opt
from thinklens.runs.jobs import Job, JobContext
from thinklens.steering.corpora import check_corpus, corpus
from thinklens.steering.jobs.sae import metric_line
from thinklens.steering.problems import held_out_prompts
from thinklens.tasks.protocol import HELD_OUT


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
    fidelity_traces: int = 64
    """Completions generated (sampled, seeded) from held-out prompts of --data; CE loss recovered and KL are scored on
    their generated tokens only."""
    max_new_tokens: int | None = None
    """New tokens per completion; None: the task protocol's budget for a zoo style, 64 for a text file."""
    seed: int = 1
    """Seed of the zoo texts (SAE training draws seed 0 by default)."""

    def check(self) -> None:
        if self.n_texts < 1 or self.n_batches < 1 or self.fidelity_traces < 1:
            raise ThinklensError.of("sizes", (self.n_texts, self.n_batches), "n_texts >= 1 and n_batches >= 1",
                                    f"pass {opt('n_texts', 400)} {opt('n_batches', 8)}")


def run(config: SAEEvalConfig, ctx: JobContext) -> dict[str, Any]:
    """Load the SAE on the model's device and compute sae-lens's metrics over the texts."""
    from thinklens.steering.sae import evaluate_sae, load_sae, sae_folder  # lazy: CLI start-up (torch)
    from thinklens.steering.sae_fidelity import sae_fidelity, trace_rows  # lazy: CLI start-up (torch)
    from thinklens.steering.sae_findings import sae_findings, sae_warnings  # lazy: CLI start-up (torch)

    sae = load_sae(sae_folder(config.sae)[0], device=str(ctx.model.device))
    texts = corpus(config.data, config.n_texts, seed=config.seed, model=ctx.model, prompt_format=config.prompt_format,
                   data_fields=config.data_fields)
    metrics = evaluate_sae(ctx.model, sae, texts, site=config.site, n_batches=config.n_batches)
    ps = held_out_prompts(ctx.model, config.data, config.fidelity_traces, prompt_format=config.prompt_format,
                          data_fields=config.data_fields, max_new_tokens=config.max_new_tokens, offset=config.n_texts)
    trs = ctx.model.generate(ps.prompts, max_new_tokens=ps.max_new_tokens, batch_size=64, do_sample=True,
                             seed=HELD_OUT["sampling"], temperature=1.0)
    metrics.update(sae_fidelity(ctx.model, sae, trace_rows(trs), site=config.site))
    metrics["findings"] = findings_doc(sae_findings(metrics, seed=config.seed))
    metrics["warnings"] = sae_warnings(metrics)
    ctx.run.write_result("metrics", metrics)
    return metrics


def summary(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: metrics.get(k) for k in ("site", "explained_variance", "l0", "dead_features", "d_sae",
                                        "generated_explained_variance", "ce_loss_recovered", "kl_div_score",
                                        "fidelity_tokens", "findings", "warnings")}


def report(metrics: dict[str, Any]) -> str:
    return "\n".join([f"SAE at {metrics.get('site')}: " + metric_line(metrics)]
                     + [f"warning: {w}" for w in metrics.get("warnings") or []])


def preflight(config: SAEEvalConfig) -> None:
    """The SAE folder and the corpus, checked before the model loads."""
    from thinklens.steering.sae import sae_folder  # lazy: CLI start-up (torch)

    sae_folder(config.sae)
    check_corpus(config.data, config.data_fields)


JOB = Job(
    "sae-eval", SAEEvalConfig, run, preflight=preflight, summary=summary, report=report,
    help="sae-lens metrics of any sae-lens SAE folder on a model",
    description="Evaluates an SAE folder in sae-lens's format (or an `sae` run folder) at its site of --model: "
    "sae-lens's run_evals on local texts (explained variance, L0, dead features), and CE loss recovered and KL on "
    "the tokens the model generates from held-out prompts (never prompt or padding positions).",
    findings="thinklens.steering.sae_findings:sae_findings", capability="Steering",
    smallest=("--model", "tiny-think", "--sae", "data/saes/tiny-think-resid_post.2-topk32", "--n-texts", "16", "--n-batches", "1",
              "--fidelity-traces", "4"),
)
