"""``thinklens run mi-peaks``: MI peaks and thinking tokens (Qian et al. 2025, arXiv 2506.02867).

Greedy trajectories of a reasoning model and its non-reasoning siblings on the synthetic task or any problem set
(GSM8K, MATH-500, AIME, JSONL), each prompted in its own format (chat template, plain, zoo style); nHSIC with the
golden answer (the data set's solution) per token at several sites (reference, median-sigma and L2 variants,
shuffled-answer control); peaks by top-k and IQR; thinking-token enrichment with CIs; optionally the suppression
test, Representation Recycling (with a layer sweep) and thinking-token test-time scaling. ``--preset demo`` runs
all of it on the zoo in a few CPU minutes. Re-running with the same config and run folder resumes after the
finished stages (:mod:`thinklens.analyses.mi.pipeline`; the run-folder format: :mod:`thinklens.analyses.mi.run_format`).

Example:
    >>> JOB.name, JOB.config.__name__, sorted(JOB.presets)
    ('mi-peaks', 'MIPeaksJobConfig', ['default', 'demo', 'paper'])
    >>> cfg = JOB.make_config(preset="demo", n_problems=8)
    >>> cfg.model, cfg.compare, cfg.suppression, cfg.n_problems
    ('tiny-think', ('tiny-cot', 'tiny-direct'), True, 8)
    >>> MIPeaksJobConfig(n_problems=4, k=5).models
    ('tiny-think',)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from thinklens.analyses.mi.config import MIPeaksJobConfig
from thinklens.analyses.mi.mi_findings import mi_headline, saturation_flag, words_headline
from thinklens.calibration.findings import Finding
from thinklens.errors import ThinklensError, opt
from thinklens.generation.budgets import budget_note
from thinklens.runs.folders import to_jsonable
from thinklens.runs.headlines import pct
from thinklens.runs.jobs import DemoRun, Job, JobContext

PRESETS: dict[str, MIPeaksJobConfig] = {
    "default": MIPeaksJobConfig(),
    # `make demo`: the zoo's reasoning model against both siblings, every part of the job, a few
    # minutes on one CPU thread. Zoo traces are 3-50 tokens: k = 3 marks ~10% of the steps (top-k fixes that
    # fraction; the IQR rule measures it: ~13% for tiny-think, above the paper's <5%).
    "demo": MIPeaksJobConfig(
        model="tiny-think", compare=("tiny-cot", "tiny-direct"), n_problems=60, min_steps=2, max_steps=5,
        sites=("resid_post.-1", "resid_post.0", "resid_post.1", "resid_post.2"), max_new_tokens=96, k=3,
        suppression=True, n_random=3, recycling=True, rr_layers=(0, 1, 2), ttts=True,
        ttts_budgets=(0, 8, 16, 32),
    ),
    # The reference settings of the paper, for a real reasoning model on a GPU (pass --model, --data).
    "paper": MIPeaksJobConfig(
        model="deepseek-ai/DeepSeek-R1-Distill-Llama-8B", n_problems=100, max_new_tokens=512, k=20,
        batch_size=8, top_words=10, suppression=True, recycling=True, ttts=True, ttts_budgets=(0, 256, 512),
        prompt_format="plain", estimators=("reference", "median_sigma", "l2"),  # the paper's fixed sigma drives peaks
    ),
}
"""Named starting points (``--preset NAME``); the options given override their fields."""


def run(config: MIPeaksJobConfig, ctx: JobContext) -> dict[str, Any]:
    """Every stage not yet done (see :mod:`thinklens.analyses.mi.pipeline`); returns the summary written to meta.json."""
    from thinklens.analyses.mi import pipeline  # lazy: CLI start-up (torch)

    log = ctx.progress.log if ctx.progress.enabled else None
    problems = config.problems(config.n_problems, seed=config.seed)  # the synthetic stream without --data
    if len(problems) < 2:
        raise ThinklensError.of("problems", len(problems), "at least 2 (the shuffled control needs two)",
                                f"pass more problems ({opt('data')}, {opt('n_problems')})")
    keys = pipeline.model_keys(config)
    main = ctx.shards.is_main  # several processes split the trajectories; the main one runs the other stages
    for stage in ctx.run.pending(pipeline.stage_names(config)):
        out: Any = None
        if stage.startswith("trajectories:"):
            j = keys.index(stage.split(":", 1)[1])
            model = ctx.model if j == 0 else ctx.load(config.models[j])
            pipeline.stage_trajectories(model, j, problems, config, ctx.run, log, shards=ctx.shards)
            if not main:
                continue
        elif not main:
            continue
        elif stage == "enrichment":
            out = pipeline.stage_enrichment(config, ctx.run)
        elif stage == "comparison":
            out = pipeline.stage_comparison(ctx.run)
        else:
            out = pipeline.stage_intervention(stage, ctx.model, problems, config, ctx.run)
        if out is not None:
            ctx.run.write_result(stage, to_jsonable(out))
        ctx.run.mark_done(stage)
        if log is not None:
            log(f"stage done: {stage}")
    if not main:
        return ctx.shards.share(None)
    summary = to_jsonable(pipeline.summary_of(config, ctx.run))
    ctx.run.finish(summary)
    return ctx.shards.share(summary)


def _num(v: float | None) -> str:
    """A number for the report; '-' where the run had none (NaN is stored as null)."""
    return "-" if v is None else f"{v:.3f}"


def _finding_line(f: dict[str, Any]) -> str:
    """One finding of the summary as the CLI prints it (thinklens.calibration.findings.Finding.line on the JSON form)."""
    keep = {k: f.get(k) for k in ("claim", "statistic", "value", "n", "control", "control_value", "verdict", "p")}
    nan = float("nan")
    ci = tuple(nan if v is None else v for v in f.get("ci", (None, None)))
    line = Finding(**{**keep, "value": nan if keep["value"] is None else keep["value"], "ci": ci}).line()
    flag = f.get("extra", {}).get("flag")
    return f"{line} [{flag}]" if flag else line


def report(summary: dict[str, Any]) -> str:
    """The headline numbers the CLI prints after the run folder."""
    findings = summary.get("findings") or []
    main = findings[0]["claim"].split(":", 1)[0] if findings else None
    mine = [f for f in findings if f["claim"].startswith(f"{main}:")]
    mi = [f for f in mine if f["statistic"] == "mean MI"]
    words = [f for f in mine if f["statistic"] == "enrichment"]
    note = summary.get("peak_fraction_note") or {}
    flag = f" [{note['flag']}]" if note.get("flag") else ""
    lines = [f"problems: {summary['n_problems']}; mean tokens: {summary['mean_tokens']:.1f}; "
             f"peak fraction: {summary['mean_peak_fraction']:.3f}{flag}"]
    if findings:
        # one headline per MI finding (all steps, and where the answer is first written), each no more than its verdict
        lines += [mi_headline(f) for f in mi] + [words_headline(words)]
        lines += [f"  finding: {_finding_line(f)}" for f in findings]
    else:
        lines.append(f"top words at peaks (no findings in this run): {', '.join(summary['top_words']) or '-'}")
    for key, m in summary.get("models", {}).items():
        lines.append(f"  {key} ({m['style']}): accuracy {m['accuracy']:.3f}, mean MI {m['mean_mi']:.4g}, "
                     f"peak fraction top-k {m['peak_fraction']['top_k']:.3f} / iqr {m['peak_fraction']['iqr']:.3f}, "
                     f"most frequent words at peaks {', '.join(m['top_words']) or '-'}")
        if budget_note(m.get("budgets") or {}):
            lines.append(f"    {budget_note(m['budgets'])}")
        c, ss = m.get("shuffled_control"), m.get("small_scale")
        if c:
            lines.append(f"    shuffled answer: mean MI {_num(c['mean_mi_shuffled'])}; peak Jaccard own vs shuffled top-k "
                         f"{_num(c['peak_jaccard_shuffled'])} (chance {_num(c['peak_jaccard_chance'])}), iqr "
                         f"{_num(c['iqr_peak_jaccard_shuffled'])} (chance {_num(c['iqr_peak_jaccard_chance'])})")
        if ss:
            lines.append(f"    small scale: mean squared coordinate correlation {_num(ss['mean_corr2'])} (shuffled "
                         f"{_num(ss['mean_corr2_shuffled'])}) vs mean MI {_num(ss['mean_mi'])}; corr over steps "
                         f"{_num(ss['corr_mi_corr2'])} (scale max|x-mean|/sigma: median {_num(ss['median_scale'])})")
            sat = saturation_flag(ss.get("estimator") or "", [ss["median_scale"]] if ss.get("median_scale") is not None else [])
            if sat:
                lines.append(f"    [{sat}]")
            lines.append(f"    answers of different problems: rho^2 {_num(ss.get('answer_corr2'))}, nHSIC "
                         f"{_num(ss.get('answer_nhsic_shuffled'))} (own answer with itself {_num(ss.get('answer_nhsic_self'))})")
    lines += [f"{stage}: {summary[stage]}" for stage in ("suppression", "recycling", "ttts") if stage in summary]
    return "\n".join(lines)


def headline(summary: dict, folder: Path) -> str:
    """The run in a line (Home, ``thinklens runs``): accuracy, and what the findings show: whether the MI is
    answer-specific (against its shuffled-answer control) and the thinking words shown enriched, never more than the
    findings' verdicts (a run without findings states no MI and no word).

    Example:
        >>> s = {"n_problems": 4, "models": {"m": {"accuracy": 0.5}}, "top_words": ["so"], "findings": [
        ...     {"claim": "m: MI with the own answer beats the shuffled answer (all steps)", "statistic": "mean MI",
        ...      "verdict": "no effect"}]}
        >>> headline(s, Path("."))
        'm 50% right, MI not answer-specific (no effect), no thinking word shown (4 problems)'
    """
    models = summary.get("models") or {}
    key = next(iter(models), "?")
    main = models.get(key, {})
    mine = [f for f in summary.get("findings") or [] if str(f.get("claim", "")).startswith(f"{key}:")]
    mi = next((f for f in mine if f.get("statistic") == "mean MI"), None)
    if mi is None:
        mi_part = "MI not checked against its control"
    elif mi.get("verdict") == "effect":
        mi_part = "answer-specific MI"
    else:
        mi_part = f"MI not answer-specific ({mi.get('verdict')})"
    shown = [str(f["claim"]).split("'")[1] for f in mine if f.get("statistic") == "enrichment" and f.get("verdict") == "effect"]
    words = f"thinking words {', '.join(repr(w) for w in shown[:2])}" if shown else "no thinking word shown"
    rest = [f"{k} {pct(v.get('accuracy'))}" for k, v in list(models.items())[1:3]]
    others = f"; vs {', '.join(rest)}" if rest else ""
    return f"{key} {pct(main.get('accuracy'))} right, {mi_part}, {words}{others} ({summary.get('n_problems', '?')} problems)"


DEMO = (
    # A second, harder run (before the main one, so the app opens the main run first, as the newest):
    # the app overlays both runs (two data sets) on one chart.
    DemoRun(("--model", "tiny-think", "--compare", "tiny-cot", "--n-problems", "30", "--min-steps", "5", "--max-steps", "6",
             "--no-suppression", "--no-recycling", "--no-ttts"), run_id="demo-hard"),
    DemoRun(("--preset", "demo")),
)


JOB = Job("mi-peaks", MIPeaksJobConfig, run, order=30, page="pages/2_MI_peaks.py", demo=DEMO, headline=headline,
          presets=PRESETS, report=report,
          help="MI peaks and thinking tokens (Qian et al. 2025)",
          findings="thinklens.analyses.mi.pipeline:findings_of", capability="MI peaks and thinking tokens",
          validations={"mi-peaks": "thinklens.analyses.mi.validation:SETTINGS"}, traces="thinklens.analyses.mi.mi_traces:READER",
          smallest=("--model", "tiny-cot", "--n-problems", "3", "--max-steps", "2", "--max-new-tokens", "24", "--k", "2", "--estimators",
                    "reference", "--ci", "wilson"))
