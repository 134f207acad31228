"""``thinklens run sae``: train an SAE with sae-lens at a site, evaluate it held out, scan traces for features.

Trains an SAE with sae-lens's own training runner at ``--site`` of ``--model`` on local texts (``--data``), saves
it in sae-lens's format (``sae/``: ``cfg.json`` + ``sae_weights.safetensors``), evaluates it on held-out texts with
sae-lens's metrics (explained variance, L0, dead features, CE loss recovered: ``results/metrics.json``; the summary's
``findings``, :mod:`thinklens.steering.sae_findings`: CE and KL recovered against zero ablation and explained variance, scored
on generated tokens with bootstrap intervals over the generated texts), then scans
generated traces for feature statistics (top contexts, correlations with the next thinking word and with
correctness: ``results/feature_stats.json``); figures sae_metrics, feature_density and feature_correlation.
``--architecture``: any trainable one in sae-lens's registry (topk, batchtopk, standard, jumprelu, gated, ...).
``thinklens run steer --sae <run folder>`` uses both the SAE and its statistics.

``--activations``: train on stored activation rows instead of running a model (a ``.safetensors`` file of one
``[rows, d]`` tensor, or an ActivationStore folder, at ``--site``): ``eval_texts`` rows drawn at random are held
out for the metrics (explained variance, L0, dead features; no CE without a model), and no traces are scanned.
Pass ``--model ''`` so that no model is loaded.

``--data``: the zoo's rendered problems (``zoo:<style>``), a text file (.txt/.jsonl), or any problem set (GSM8K,
MATH-500, your JSONL, ``synthetic:MIN-MAX``): its problems become their prompt in the model's
``--prompt-format`` followed by the model's own completion (``--corpus generated``, the default for a problem set in
a real model's format: the SAE learns the states steering reads) or by their worked solution (``--corpus
reference``, the default for the zoo's styles and text files), and the scanned traces are the
model's own completions of held-out prompts, graded by :func:`thinklens.data.answers.is_correct`, with each
feature's firing frequency inside the reasoning span of the format (``<think>`` ... ``</think>``).

Example:
    >>> JOB.name, SAEJobConfig().site, SAEJobConfig().model
    ('sae', 'resid_post.2', 'tiny-think')
    >>> # thinklens run sae --model tiny-think --site resid_post.2 --d-sae 1024 --k 32 --run-id think-rp2-k32
    >>> # thinklens run sae --model tiny-r1 --data gsm8k_train.jsonl --prompt-format chat --site resid_post.2
    >>> # thinklens run sae --model '' --activations acts.safetensors --site resid_post.2 --d-sae 128 --k 4
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thinklens.calibration.findings import findings_doc
from thinklens.data.problemsets import DataOptions
from thinklens.errors import ThinklensError, opt, opt_name
from thinklens.runs.headlines import num, result_json
from thinklens.runs.jobs import DemoRun, Job, JobContext
from thinklens.steering.configs import SAETrainConfig
from thinklens.steering.corpora import check_corpus, corpus, corpus_kind, is_text_file
from thinklens.steering.problems import data_format, held_out_prompts
from thinklens.tasks.protocol import HELD_OUT

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel
    from thinklens.runs.folders import RunFolder


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
    activations: str = ""
    """Stored activation rows to train on instead of a model's texts: a .safetensors file of one [rows, d] tensor
    (or one named after --site), or an ActivationStore folder read at --site; empty: run the model on --data."""
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
    fidelity_traces: int = 64
    """Held-out traces generated from held-out prompts whose generated tokens score CE loss recovered and KL
    (prompt and padding positions are never scored); the scanned traces are the first stats_traces of the same."""
    max_new_tokens: int | None = None
    """New tokens of each scanned trace; None: the task protocol's budget for a zoo style, 1024 for a real model's
    format (capped by its context), 64 for a text file."""
    corpus: str = "auto"
    """What the SAE trains on: generated (the model's own completions of the --data prompts, sampled as the scanned
    traces are: the states steering reads), reference (each prompt followed by the data set's worked solution), or
    auto: generated for a problem set in a real model's format, reference for the zoo's styles (their training
    texts) and text files. With generated, the held-out metrics are also on generated sequences."""

    def check(self) -> None:
        if self.n_texts < 1 or self.eval_texts < 1 or self.stats_traces < 0 or self.fidelity_traces < 1:
            raise ThinklensError.of("text counts", (self.n_texts, self.eval_texts, self.stats_traces),
                                    "n_texts >= 1, eval_texts >= 1, stats_traces >= 0",
                                    f"pass {opt('n_texts', 6000)} {opt('eval_texts', 400)}")
        corpus_kind(self.corpus, self.data)  # a typo fails here, before a model loads
        if not 1 <= self.stats_min_steps <= self.stats_max_steps:
            raise ThinklensError.of("stats steps", (self.stats_min_steps, self.stats_max_steps),
                                    "1 <= stats_min_steps <= stats_max_steps",
                                    f"pass {opt('stats_min_steps', 2)} {opt('stats_max_steps', 6)}")


def run(config: SAEJobConfig, ctx: JobContext) -> dict[str, Any]:
    """Train, evaluate (held out), scan traces for feature statistics, write figures; returns the summary."""
    from thinklens.steering import figures  # lazy: CLI start-up (torch)
    from thinklens.steering.sae import evaluate_sae, train_sae  # lazy: CLI start-up (torch)
    from thinklens.steering.sae_fidelity import sae_fidelity, trace_rows  # lazy: CLI start-up (torch)
    from thinklens.steering.sae_findings import sae_findings, sae_warnings  # lazy: CLI start-up (torch)

    if config.activations:
        return run_on_rows(config, ctx)
    model, run, log = ctx.model, ctx.run, ctx.progress.log
    source = dict(model=model, prompt_format=config.prompt_format, data_fields=config.data_fields)
    kind = corpus_kind(config.corpus, config.data, data_format(model, config.prompt_format, config.data))
    texts = corpus(config.data, config.n_texts, seed=config.seed, kind=kind, max_new_tokens=config.max_new_tokens,
                   sample=config.stats_sample, **source)
    log(f"training {config.architecture} SAE ({config.d_sae} features, k={config.k}) at {config.site} on {len(texts)} "
        f"{'generated sequences' if kind == 'generated' else 'texts'}")
    sae, train_metrics = train_sae(model, texts, config, out_dir=run.path / "sae", progress=ctx.progress.enabled)
    ps, trs = held_out_traces(model, config)
    # held out as trained: the model's own held-out completions, or reference texts
    held = trace_rows_ids(trs[: config.eval_texts]) if kind == "generated" else held_out_texts(config, texts, source)
    metrics = evaluate_sae(model, sae, held, n_batches=max(1, min(16, len(held) // 32)), batch_prompts=32)
    metrics["corpus"] = kind
    metrics["train_split"] = {k: train_metrics.get(k) for k in ("explained_variance", "l0", "dead_features")}
    metrics.update(sae_fidelity(model, sae, trace_rows(trs[: config.fidelity_traces])))
    metrics["findings"] = findings_doc(sae_findings(metrics, seed=config.seed))
    run.write_result("metrics", metrics)
    run.write_figure("sae_metrics", figures.figure_sae_metrics(metrics))
    summary = {k: metrics.get(k) for k in SUMMARY_KEYS}
    summary["warnings"] = sae_warnings(metrics)
    log("held-out metrics: " + metric_line(summary))
    if config.stats_traces > 0:
        stats = write_feature_stats(model, sae, config, run, ps, trs[: config.stats_traces])
        summary["stats_accuracy"] = stats.accuracy
        summary["stats_word_counts"] = stats.word_counts
    summary["sae"] = str(run.path / "sae")
    return summary


SUMMARY_KEYS = ("corpus", "explained_variance", "l0", "dead_features", "d_sae", "generated_explained_variance",
                "ce_loss_recovered", "kl_div_score", "fidelity_tokens", "findings")


def trace_rows_ids(traces) -> list[list[int]]:
    """Each trace as one token-id row, prompt then generated ids (a generated sequence for sae-lens's metrics)."""
    return [list(t.prompt_ids) + list(t.token_ids) for t in traces]


def metric_line(m: dict[str, Any]) -> str:
    """The held-out metrics in one line: L0 as a mean (a whole number when it is one), CE/KL scores with the tokens
    they rest on (their intervals and verdicts are the findings)."""
    from thinklens.steering.sae_findings import format_l0  # lazy: CLI start-up (torch)

    parts = []
    if isinstance(m.get("explained_variance"), (int, float)):
        parts.append(f"explained variance {m['explained_variance']:.3f}")
    if isinstance(m.get("l0"), (int, float)):
        parts.append(f"L0 {format_l0(m['l0'])} (mean active features per token)")
    if isinstance(m.get("dead_features"), (int, float)):
        parts.append(f"dead features {int(m['dead_features'])}")
    if isinstance(m.get("generated_explained_variance"), (int, float)):
        parts.append(f"explained variance at generated tokens {m['generated_explained_variance']:.3f}")
    if isinstance(m.get("ce_loss_recovered"), (int, float)):
        parts.append(f"CE loss recovered {m['ce_loss_recovered']:.3f}, KL score {m.get('kl_div_score', float('nan')):.3f} "
                     f"(on {m.get('fidelity_tokens')} generated tokens)")
    return "; ".join(parts)


def held_out_traces(model: "HookedModel", config: SAEJobConfig):
    """``(prompt set, traces)``: completions of held-out prompts (captured at the site), for fidelity and statistics."""
    n = max(config.stats_traces, config.fidelity_traces)
    ps = held_out_prompts(model, config.data, n, prompt_format=config.prompt_format, data_fields=config.data_fields,
                          min_steps=config.stats_min_steps, max_steps=config.stats_max_steps,
                          max_new_tokens=config.max_new_tokens, offset=config.n_texts)
    site = model.resolve_site(config.site)
    trs = model.generate(ps.prompts, max_new_tokens=ps.max_new_tokens, capture=[site], batch_size=64,
                         do_sample=config.stats_sample, seed=HELD_OUT["sampling"], temperature=1.0)
    return ps, trs


def run_on_rows(config: SAEJobConfig, ctx: JobContext) -> dict[str, Any]:
    """``--activations``: train on stored rows with a held-out random part for the metrics; returns the summary."""
    import torch  # lazy: CLI start-up (torch)

    from thinklens.steering import figures  # lazy: CLI start-up (torch)
    from thinklens.steering.sae import read_activation_rows, train_sae_on_rows  # lazy: CLI start-up (torch)
    from thinklens.steering.sae_findings import rows_variance_finding, sae_warnings  # lazy: CLI start-up (torch)

    rows = read_activation_rows(config.activations, config.site)
    n_held = min(config.eval_texts, len(rows) // 5)
    perm = torch.randperm(len(rows), generator=torch.Generator().manual_seed(config.seed))
    held, train = rows[perm[:n_held]], rows[perm[n_held:]]
    ctx.progress.log(f"training {config.architecture} SAE ({config.d_sae} features, k={config.k}) on {len(train)} stored "
                     f"rows of width {rows.shape[1]} from {config.activations} ({n_held} held out)")
    sae, metrics = train_sae_on_rows(train, config, out_dir=ctx.run.path / "sae", held_out=held if n_held else None,
                                     source=str(config.activations), progress=ctx.progress.enabled)
    warnings = sae_warnings(metrics)
    if n_held:
        metrics["findings"] = findings_doc([rows_variance_finding(sae, held, site=config.site, l0=metrics.get("l0"),
                                                                  seed=config.seed, warning=(warnings or [None])[0])])
    ctx.run.write_result("metrics", metrics)
    ctx.run.write_figure("sae_metrics", figures.figure_sae_metrics(metrics))
    summary = {k: metrics.get(k) for k in ("explained_variance", "l0", "dead_features", "d_sae", "findings") if k in metrics}
    summary.update(sae=str(ctx.run.path / "sae"), n_rows=len(train), held_out_rows=n_held, warnings=warnings)
    return summary


def held_out_texts(config: SAEJobConfig, texts: list[str], source: dict[str, Any]) -> list[str]:
    """Texts for the held-out metrics: other zoo problems; the problems after the training ones (else the first
    texts) of a problem set; the first texts of a text file."""
    if config.data.startswith("zoo:"):
        return corpus(config.data, config.eval_texts, seed=config.seed + 1_000_003, **source)
    if not is_text_file(config.data):
        try:
            return corpus(config.data, config.eval_texts, seed=config.seed, offset=config.n_texts, **source)
        except ThinklensError:  # no problem left after the training ones
            pass
    return texts[: config.eval_texts]


def write_feature_stats(model: "HookedModel", sae: Any, config: SAEJobConfig, run: "RunFolder", ps, trs):
    """Compute :class:`FeatureStats` over the held-out traces ``trs`` (of prompt set ``ps``), write them and their figures."""
    from thinklens.steering import figures  # lazy: CLI start-up (torch)
    from thinklens.steering.features import feature_stats  # lazy: CLI start-up (torch)

    site = model.resolve_site(config.site)
    ps = dataclasses.replace(ps, prompts=ps.prompts[: len(trs)], golds=None if ps.golds is None else ps.golds[: len(trs)])
    fmt = ps.fmt
    reasoning = [fmt.split_trace(t).reasoning for t in trs] if fmt is not None and fmt.span is not None else None
    stats = feature_stats(sae, trs, site, tokenizer=model.tokenizer, correct=ps.correct([t.text for t in trs]),
                          reasoning=reasoning, span=fmt.span.family if reasoning else None)
    run.write_result("feature_stats", stats.to_json())
    run.write_figure("feature_density", figures.figure_feature_density(stats))
    run.write_figure("feature_correlation", figures.figure_feature_correlation(stats, "wait"))
    return stats


def report(summary: dict[str, Any]) -> str:
    lines = [f"SAE (sae-lens format): {summary['sae']}", "held-out: " + metric_line(summary)]
    lines += [f"warning: {w}" for w in summary.get("warnings") or []]
    if "stats_accuracy" in summary:
        lines.append(f"scanned traces: accuracy {summary['stats_accuracy']}, thinking words {summary['stats_word_counts']}")
    return "\n".join(lines)


def headline(summary: dict, folder: Path) -> str:
    """The run in a line (Home, ``thinklens runs``): explained variance, L0 and dead features of the SAE."""
    from thinklens.steering.sae_findings import sae_warnings  # lazy: CLI start-up (torch)

    m = {**summary, **(result_json(folder, "metrics") or {})}
    dead = m.get("dead_features")
    line = (f"explained variance {num(m.get('explained_variance'), 3)}, L0 {num(m.get('l0'), 0)}, "
            f"{dead if dead is not None else '?'} dead of {m.get('d_sae', '?')} features at {m.get('site', '?')}")
    return line + (" (warning: most features dead)" if sae_warnings(m) else "")


# A small SAE for the feature browser and live steering (the full-size one is committed in data/saes).
# 150k activations in steps of 1024 at lr 3e-3: explained variance ~0.99 in about a CPU minute.
DEMO = (DemoRun(("--model", "tiny-think", "--d-sae", "512", "--k", "32", "--training-tokens", "150000",
                 "--train-batch-size-tokens", "1024", "--lr", "0.003", "--n-texts", "1000", "--eval-texts", "100",
                 "--stats-traces", "40", "--n-batches-in-buffer", "16")),)


def preflight(config: SAEJobConfig) -> None:
    """What the job reads, checked before the model loads: the stored rows (``activations``), or the corpus."""
    if config.activations:
        if not Path(config.activations).exists():
            raise ThinklensError.of(opt_name("activations"), config.activations, "an activation store folder or a "
                                    ".safetensors file of rows", "pass the store a `thinklens run capture` wrote (its "
                                    "run folder's store/)")
        return
    check_corpus(config.data, config.data_fields)


JOB = Job("sae", SAEJobConfig, run, preflight=preflight, order=60, page="pages/7_Features.py", demo=DEMO, headline=headline,
          report=report,
          help="train an SAE (sae-lens) at a site from local data; held-out metrics and feature statistics",
          findings="thinklens.steering.sae_findings:sae_findings", capability="Steering",
          validations={"sae-real": "thinklens.steering.sae_real_validation:SETTINGS",
                       "steering": "thinklens.steering.validation:SETTINGS"},
          compare="thinklens.steering.steering_comparisons:SAE",
          smallest=("--model", "tiny-think", "--site", "resid_post.0", "--n-texts", "60", "--eval-texts", "16", "--stats-traces", "6",
                    "--fidelity-traces", "6", "--d-sae", "32", "--k", "4", "--training-tokens", "3000", "--train-batch-size-tokens", "256",
                    "--store-batch-size-prompts", "8", "--n-batches-in-buffer", "4", "--n-eval-batches", "1"))
