"""``thinklens run sae``: train an SAE with sae-lens at a site, evaluate it held out, scan traces for features.

The run folder holds the SAE in sae-lens's format (``sae/``: ``cfg.json`` + ``sae_weights.safetensors``),
``results/metrics.json`` (sae-lens's metrics on held-out texts), ``results/feature_stats.json`` (top
contexts, thinking-word and correctness correlations over generated traces) and the figures
sae_metrics, feature_density and feature_correlation. ``thinklens run steer --sae <run folder>`` uses
both the SAE and its statistics.

Example:
    >>> JOB.name, SAEJobConfig().site, SAEJobConfig().model
    ('sae', 'resid_post.2', 'tiny-think')
    >>> # thinklens run sae --model tiny-think --site resid_post.2 --d-sae 1024 --k 32 --run-id think-rp2-k32
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from steering.configs import SAETrainConfig
from thinklens.errors import ThinklensError
from thinklens.jobs import Job, JobContext
from thinklens.tasks.protocol import HELD_OUT

if TYPE_CHECKING:
    from thinklens.model import HookedModel
    from thinklens.runs import RunFolder


@dataclass(frozen=True)
class SAEJobConfig(SAETrainConfig):
    """``thinklens run sae``: the sae-lens training settings, plus the data and the feature statistics."""

    model: str = "tiny-think"
    """Zoo name, local model folder or hub id."""
    data: str = "zoo:think"
    """Training texts: zoo:<style> (rendered zoo problems) or a .txt/.jsonl file (one text per line)."""
    n_texts: int = 6000
    """Training texts drawn (zoo) or read (file)."""
    eval_texts: int = 400
    """Held-out texts for the metrics (zoo data only; a file is evaluated on its first texts)."""
    stats_traces: int = 200
    """Generated traces scanned for feature statistics (0 skips)."""
    stats_min_steps: int = 2
    """Fewest steps of the problems whose traces are scanned (zoo)."""
    stats_max_steps: int = 6
    """Most steps of the problems whose traces are scanned (zoo)."""
    stats_sample: bool = True
    """Sample the scanned traces (temperature 1, seeded) rather than decode greedily: greedy zoo traces never
    say wait or hmm (each is drawn with p < 0.5 in training), so only sampled traces show their features."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_texts < 1 or self.eval_texts < 1 or self.stats_traces < 0:
            raise ThinklensError.of("text counts", (self.n_texts, self.eval_texts, self.stats_traces),
                                    "n_texts >= 1, eval_texts >= 1, stats_traces >= 0", "pass --n-texts 6000 --eval-texts 400")
        if not 1 <= self.stats_min_steps <= self.stats_max_steps:
            raise ThinklensError.of("stats steps", (self.stats_min_steps, self.stats_max_steps),
                                    "1 <= stats_min_steps <= stats_max_steps", "pass --stats-min-steps 2 --stats-max-steps 6")


def run(config: SAEJobConfig, ctx: JobContext) -> dict[str, Any]:
    """Train, evaluate (held out), scan traces for feature statistics, write figures; returns the summary."""
    from steering import figures
    from steering.data import corpus
    from steering.sae import evaluate_sae, train_sae

    model, run, log = ctx.model, ctx.run, ctx.progress.log
    texts = corpus(config.data, config.n_texts, seed=config.seed)
    log(f"training {config.architecture} SAE ({config.d_sae} features, k={config.k}) at {config.site} on {len(texts)} texts")
    sae, train_metrics = train_sae(model, texts, config, out_dir=run.path / "sae")
    held = (corpus(config.data, config.eval_texts, seed=config.seed + 1_000_003) if config.data.startswith("zoo:")
            else texts[: config.eval_texts])
    metrics = evaluate_sae(model, sae, held, n_batches=max(1, min(16, len(held) // 32)), batch_prompts=32)
    metrics["train_split"] = {k: train_metrics.get(k) for k in ("explained_variance", "l0", "ce_loss_recovered", "dead_features")}
    run.write_result("metrics", metrics)
    run.write_figure("sae_metrics", figures.figure_sae_metrics(metrics))
    summary = {k: metrics.get(k) for k in ("explained_variance", "l0", "dead_features", "ce_loss_recovered")}
    log("held-out metrics: " + " ".join(f"{k}={v:.4g}" for k, v in summary.items() if isinstance(v, (int, float))))
    if config.stats_traces > 0:
        stats = write_feature_stats(model, sae, config, run)
        summary["stats_accuracy"] = stats.accuracy
        summary["stats_word_counts"] = stats.word_counts
    summary["sae"] = str(run.path / "sae")
    return summary


def write_feature_stats(model: "HookedModel", sae: Any, config: SAEJobConfig, run: "RunFolder"):
    """Generate ``config.stats_traces`` traces, compute :class:`FeatureStats`, write them and their figures."""
    from steering import figures
    from steering.data import prompt_set
    from steering.features import feature_stats
    from thinklens.answers import parse_answer

    seed = HELD_OUT["sampling"]
    prompts, answers, max_new = prompt_set(config.data, config.stats_traces, seed=seed, min_steps=config.stats_min_steps,
                                           max_steps=config.stats_max_steps)
    site = model.resolve_site(config.site)
    trs = model.generate(prompts, max_new_tokens=max_new, capture=[site], batch_size=64, do_sample=config.stats_sample,
                         seed=seed, temperature=1.0)
    correct = [parse_answer(t.text) == a for t, a in zip(trs, answers)] if answers is not None else None
    stats = feature_stats(sae, trs, site, tokenizer=model.tokenizer, correct=correct)
    run.write_result("feature_stats", stats.to_json())
    run.write_figure("feature_density", figures.figure_feature_density(stats))
    run.write_figure("feature_correlation", figures.figure_feature_correlation(stats, "wait"))
    return stats


def report(summary: dict[str, Any]) -> str:
    lines = [f"SAE (sae-lens format): {summary['sae']}",
             "held-out: " + " ".join(f"{k}={summary[k]:.4g}" for k in ("explained_variance", "l0", "dead_features",
                                                                        "ce_loss_recovered") if isinstance(summary.get(k), (int, float)))]
    if "stats_accuracy" in summary:
        lines.append(f"scanned traces: accuracy {summary['stats_accuracy']}, thinking words {summary['stats_word_counts']}")
    return "\n".join(lines)


JOB = Job(
    "sae", SAEJobConfig, run, report=report,
    help="train an SAE (sae-lens) at a site from local data; held-out metrics and feature statistics",
    description="Trains an SAE with sae-lens's own training runner at --site of --model on local texts (zoo:<style> "
    "or a .txt/.jsonl file), saves it in sae-lens's format under <run>/sae, evaluates it on held-out texts with "
    "sae-lens's metrics (explained variance, L0, dead features, CE loss recovered), then scans generated traces for "
    "feature statistics (top contexts, correlations with the next thinking word and with correctness). "
    "--architecture: any trainable one in sae-lens's registry (topk, batchtopk, standard, jumprelu, gated, ...).",
)
