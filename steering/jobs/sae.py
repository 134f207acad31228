"""``thinklens run sae``: train an SAE with sae-lens at a site, evaluate it held out, scan traces for features.

Trains an SAE with sae-lens's own training runner at ``--site`` of ``--model`` on local texts (``--data``), saves
it in sae-lens's format (``sae/``: ``cfg.json`` + ``sae_weights.safetensors``), evaluates it on held-out texts with
sae-lens's metrics (explained variance, L0, dead features, CE loss recovered: ``results/metrics.json``), then scans
generated traces for feature statistics (top contexts, correlations with the next thinking word and with
correctness: ``results/feature_stats.json``); figures sae_metrics, feature_density and feature_correlation.
``--architecture``: any trainable one in sae-lens's registry (topk, batchtopk, standard, jumprelu, gated, ...).
``thinklens run steer --sae <run folder>`` uses both the SAE and its statistics.

``--data``: the zoo's rendered problems (``zoo:<style>``), a text file (.txt/.jsonl), or any problem set (GSM8K,
MATH-500, your JSONL, ``synthetic:MIN-MAX``): its problems become their prompt in the model's
``--prompt-format`` followed by their worked solution (training texts), and the scanned traces are the
model's own completions of those prompts, graded by :func:`thinklens.answers.is_correct`, with each
feature's firing frequency inside the reasoning span of the format (``<think>`` ... ``</think>``).

Example:
    >>> JOB.name, SAEJobConfig().site, SAEJobConfig().model
    ('sae', 'resid_post.2', 'tiny-think')
    >>> # thinklens run sae --model tiny-think --site resid_post.2 --d-sae 1024 --k 32 --run-id think-rp2-k32
    >>> # thinklens run sae --model tiny-r1 --data gsm8k_train.jsonl --prompt-format chat --site resid_post.2
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from steering.configs import SAETrainConfig
from thinklens.errors import ThinklensError
from thinklens.jobs import Job, JobContext
from thinklens.problemsets import DataOptions
from thinklens.tasks.protocol import HELD_OUT

if TYPE_CHECKING:
    from thinklens.model import HookedModel
    from thinklens.runs import RunFolder


@dataclass(frozen=True)
class SAEJobConfig(SAETrainConfig, DataOptions):
    """``thinklens run sae``: the sae-lens training settings, plus the data and the feature statistics."""

    model: str = "tiny-think"
    """Zoo name, local model folder or hub id."""
    data: str = "zoo:think"
    """Training texts: zoo:<style> (rendered zoo problems), a .txt/.jsonl file of texts (one per line, or a text
    field), or a problem set (.jsonl/.json/.parquet/.csv, HF datasets folder, cached hub id, synthetic:MIN-MAX):
    each problem's prompt in --prompt-format followed by its worked solution."""
    n_texts: int = 6000
    """Training texts drawn (zoo), read (file) or made (the first problems of a problem set)."""
    eval_texts: int = 400
    """Held-out texts for the metrics (zoo: other problems; a problem set: the problems after the training ones when
    it has more; a text file: its first texts)."""
    stats_traces: int = 200
    """Generated traces scanned for feature statistics (0 skips)."""
    stats_min_steps: int = 2
    """Fewest steps of the problems whose traces are scanned (zoo)."""
    stats_max_steps: int = 6
    """Most steps of the problems whose traces are scanned (zoo)."""
    stats_sample: bool = True
    """Sample the scanned traces (temperature 1, seeded) rather than decode greedily: greedy zoo traces never
    say wait or hmm (each is drawn with p < 0.5 in training), so only sampled traces show their features."""
    max_new_tokens: int | None = None
    """New tokens of each scanned trace; None: the task protocol's budget for a zoo style, 1024 for a real model's
    format (capped by its context), 64 for a text file."""

    def __post_init__(self) -> None:
        SAETrainConfig.__post_init__(self)
        DataOptions.__post_init__(self)
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
    source = dict(model=model, prompt_format=config.prompt_format, data_fields=config.data_fields)
    texts = corpus(config.data, config.n_texts, seed=config.seed, **source)
    log(f"training {config.architecture} SAE ({config.d_sae} features, k={config.k}) at {config.site} on {len(texts)} texts")
    sae, train_metrics = train_sae(model, texts, config, out_dir=run.path / "sae")
    held = held_out_texts(config, texts, source)
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


def held_out_texts(config: SAEJobConfig, texts: list[str], source: dict[str, Any]) -> list[str]:
    """Texts for the held-out metrics: other zoo problems; the problems after the training ones (else the first
    texts) of a problem set; the first texts of a text file."""
    from steering.data import corpus, is_text_file

    if config.data.startswith("zoo:"):
        return corpus(config.data, config.eval_texts, seed=config.seed + 1_000_003, **source)
    if not is_text_file(config.data):
        try:
            return corpus(config.data, config.eval_texts, seed=config.seed, offset=config.n_texts, **source)
        except ThinklensError:  # no problem left after the training ones
            pass
    return texts[: config.eval_texts]


def write_feature_stats(model: "HookedModel", sae: Any, config: SAEJobConfig, run: "RunFolder"):
    """Generate ``config.stats_traces`` traces, compute :class:`FeatureStats`, write them and their figures."""
    from steering import figures
    from steering.data import is_text_file, read_texts
    from steering.features import feature_stats
    from steering.problems import PromptSet, data_format, load_data, max_steps_of, prompt_set, zoo_stream

    seed = HELD_OUT["sampling"]
    if config.data.startswith("zoo:"):
        problems = zoo_stream(config.stats_traces, seed=seed, min_steps=config.stats_min_steps, max_steps=config.stats_max_steps)
        ps = prompt_set(model, data_format(model, config.prompt_format, config.data), problems,
                        max_new_tokens=config.max_new_tokens, max_steps=config.stats_max_steps)
    elif is_text_file(config.data):
        ps = PromptSet(read_texts(config.data)[: config.stats_traces], None, config.max_new_tokens or 64, None)
    else:
        problems = list(load_data(config.data, config.data_fields))[: config.stats_traces]
        ps = prompt_set(model, data_format(model, config.prompt_format), problems, max_new_tokens=config.max_new_tokens,
                        max_steps=max_steps_of(problems, config.stats_max_steps))
    site = model.resolve_site(config.site)
    trs = model.generate(ps.prompts, max_new_tokens=ps.max_new_tokens, capture=[site], batch_size=64,
                         do_sample=config.stats_sample, seed=seed, temperature=1.0)
    fmt = ps.fmt
    reasoning = [fmt.split_trace(t).reasoning for t in trs] if fmt is not None and fmt.span is not None else None
    stats = feature_stats(sae, trs, site, tokenizer=model.tokenizer, correct=ps.correct([t.text for t in trs]),
                          reasoning=reasoning, span=fmt.span.family if reasoning else None)
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


JOB = Job("sae", SAEJobConfig, run, report=report,
          help="train an SAE (sae-lens) at a site from local data; held-out metrics and feature statistics")
