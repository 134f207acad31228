"""``thinklens run thought-anchors``: which sentences of a reasoning trace matter (Bogdan, Macar, Nanda, Conmy 2025,
arXiv 2506.19143), by four measures.

The model completes ``--n-traces`` problems (the synthetic task, or ``--data``) greedily in its own format, up to
``--max-new-tokens``; each completion is split into sentences by the paper's rules
(:mod:`thinklens.analyses.anchors.sentences`) and its first ``--max-sentences`` are scored:

- forced-answer importance: ``--n-forced`` answers sampled right after each prefix (the format's exit string
  appended), accuracy and KL between consecutive prefixes;
- counterfactual resampling importance: ``--n-rollouts`` rollouts of ``--rollout-tokens`` tokens from each prefix
  (one prefill, its KV cache forked), rollouts whose new sentence overlaps the original by less than ``--similarity``
  (word overlap, the stated substitute of the paper's embedding cosine) against the rollouts after the sentence;
- attention suppression (the sentence-by-sentence KL matrix) and receiver heads (kurtosis of sentence-level attention
  received), on local weights.

Intervals: Newcombe's for accuracy differences, bootstrap over samples for KLs, bootstrap over traces for the
findings (:mod:`thinklens.analyses.anchors.anchor_findings`). The run folder holds ``results/anchors.json`` (every
trace, every measure, the rollouts' first sentences and answers) and the figures ``importance`` and ``suppression``
(the first trace). Planted and null settings: :mod:`thinklens.analyses.anchors.validation`.

Example:
    >>> JOB.name, JOB.config.__name__
    ('thought-anchors', 'ThoughtAnchorsConfig')
    >>> ThoughtAnchorsConfig(n_rollouts=4).measure_names
    ('forced', 'resampling', 'white-box')
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thinklens.data.problemsets import DataOptions
from thinklens.errors import ThinklensError, opt
from thinklens.runs.folders import to_jsonable
from thinklens.runs.jobs import Job, JobContext
from thinklens.tasks import StepRange

MEASURES = ("forced", "resampling", "white-box")


@dataclass(frozen=True)
class ThoughtAnchorsConfig(DataOptions, StepRange):
    """Settings of ``thinklens run thought-anchors`` (one option per field)."""

    model: str = "tiny-overthink"
    """The model: zoo name, packaged real model (smollm2-135m), local model folder or hub id."""
    seed: int = 0
    """Seed of the problems, the sampled answers and rollouts, and the intervals."""
    n_traces: int = 2
    """Problems whose greedy traces are scored (the units of the findings)."""
    max_new_tokens: int = 96
    """New tokens of each trace."""
    max_sentences: int = 6
    """Sentences of each trace scored (its first ones)."""
    n_forced: int = 8
    """Answers sampled after each prefix for forced-answer importance."""
    n_rollouts: int = 8
    """Rollouts from each prefix for resampling importance (the paper: 100)."""
    rollout_tokens: int = 32
    """New tokens of each rollout before its answer is forced (a rollout that stops by itself keeps its answer)."""
    temperature: float = 1.0
    """Sampling temperature of the forced answers and rollouts (0: greedy forced answers)."""
    similarity: float = 0.8
    """Word overlap at or above which a rollout's new sentence counts as the original (not a replacement)."""
    proximity: int = 2
    """Sentences right before a receiver left out of its vertical attention score."""
    top_k_heads: int = 4
    """Receiver heads kept (highest kurtosis)."""
    measures: str = "forced,resampling,white-box"
    """Comma-separated measures to run: forced, resampling, white-box."""

    @property
    def measure_names(self) -> tuple[str, ...]:
        return tuple(m.strip() for m in self.measures.split(",") if m.strip())

    def check(self) -> None:
        if min(self.n_traces, self.max_new_tokens, self.max_sentences, self.n_forced, self.rollout_tokens, self.top_k_heads) < 1 \
                or self.n_rollouts < 2 or self.proximity < 1 or self.temperature < 0 or not 0 < self.similarity <= 1:
            raise ThinklensError.of("n_traces / max_new_tokens / max_sentences / n_forced / n_rollouts / rollout_tokens / "
                                    "temperature / similarity / proximity / top_k_heads",
                                    (self.n_traces, self.max_new_tokens, self.max_sentences, self.n_forced, self.n_rollouts,
                                     self.rollout_tokens, self.temperature, self.similarity, self.proximity, self.top_k_heads),
                                    "n_rollouts >= 2, temperature >= 0, 0 < similarity <= 1, the others >= 1",
                                    f"pass e.g. {opt('n_rollouts', 8)} {opt('similarity', 0.8)}")
        bad = [m for m in self.measure_names if m not in MEASURES]
        if bad or not self.measure_names:
            raise ThinklensError.of("measures", self.measures, f"a comma-separated subset of {', '.join(MEASURES)}",
                                    f"pass e.g. {opt('measures', 'forced,resampling')}")


def run(config: ThoughtAnchorsConfig, ctx: JobContext) -> dict[str, Any]:
    """Generate the traces, score every sentence by each measure, write the results, figures and findings."""

    import torch  # lazy: CLI start-up

    from thinklens.analyses.anchors.anchor_findings import anchor_findings  # lazy: CLI start-up (torch)
    from thinklens.analyses.anchors.figures import figure_importance, figure_suppression  # lazy: CLI start-up (torch)
    from thinklens.analyses.anchors.per_trace import TraceAnchors, anchors_of_trace  # lazy: CLI start-up (torch)
    from thinklens.analyses.anchors.sentences import sentences_of  # lazy: CLI start-up (torch)
    from thinklens.calibration.findings import findings_doc  # lazy: CLI start-up (torch)
    from thinklens.data.formats import format_for  # lazy: CLI start-up (torch)

    model, log = ctx.model, (ctx.progress.log if ctx.progress.enabled else None)
    if "anchors" not in ctx.run.pending(("anchors",)):
        rows = ctx.run.read_result("anchors")
    else:
        t0 = time.perf_counter()
        problems = list(config.problems(config.n_traces, seed=config.seed))
        fmt = format_for(model, config.prompt_format)
        prompts = fmt.render_problems(problems, model.tokenizer)
        traces = model.generate(prompts, max_new_tokens=config.max_new_tokens)
        rows = []
        for k, (p, prompt, tr) in enumerate(zip(problems, prompts, traces)):
            sents = sentences_of(prompt, tr.text, max_sentences=config.max_sentences)
            with torch.no_grad():
                got = anchors_of_trace(model, sents, p.answer, problem=p.id, exit_string=fmt.lynx_exit, n_forced=config.n_forced,
                                       n_rollouts=config.n_rollouts, rollout_tokens=config.rollout_tokens,
                                       temperature=config.temperature, similarity=config.similarity, proximity=config.proximity,
                                       top_k=config.top_k_heads, measures=config.measure_names, seed=config.seed + 7919 * k, log=log)
            rows.append(to_jsonable({**got.to_dict(), "trace": tr.text}))
            if log is not None:
                log(f"trace {k + 1}/{len(problems)} scored ({', '.join(f'{m} {s:.1f}s' for m, s in got.seconds.items())})")
        ctx.run.write_result("anchors", rows)
        ctx.run.mark_done("anchors")
        if log is not None:
            log(f"all traces in {time.perf_counter() - t0:.1f}s")
    findings = anchor_findings(rows, model=config.model, seed=config.seed)
    first = rows[0]
    ctx.run.write_figure("importance", figure_importance(first["sentences"], first["scores"],
                                                         title=f"{config.model}, {first['problem']}: sentence importance"))
    if first.get("suppression"):
        ctx.run.write_figure("suppression", figure_suppression(first["sentences"], first["suppression"]["matrix"],
                                                               title=f"{config.model}, {first['problem']}: attention suppression"))
    summary = {"model": config.model, "n_traces": len(rows), "measures": list(config.measure_names),
               "traces": [{"problem": r["problem"], "gold": r["gold"], "sentences": len(r["sentences"]),
                           "top": {m: TraceAnchors.ranks(v)[0] for m, v in r["scores"].items()},
                           "seconds": r["seconds"]} for r in rows],
               "findings": findings_doc(findings)}
    summary = to_jsonable(summary)
    ctx.run.finish(summary)
    return summary


def report(summary: dict[str, Any]) -> str:
    """The headline numbers the CLI prints after the run folder."""
    lines = [f"{summary['model']}: {summary['n_traces']} traces scored by {', '.join(summary['measures'])}"]
    for t in summary["traces"]:
        tops = ", ".join(f"{m} {k}" for m, k in t["top"].items())
        secs = ", ".join(f"{m} {s:.1f}s" for m, s in t["seconds"].items())
        lines.append(f"{t['problem']} ({t['sentences']} sentences): top sentence by {tops}; {secs}")
    return "\n".join(lines)


def headline(summary: dict, folder: Path) -> str:
    """The run in a line: whether the forced-answer anchor is also the resampling anchor, never more than its verdict.

    Example:
        >>> headline({"model": "m", "n_traces": 2, "findings": [{"verdict": "too few samples"}]}, Path("."))
        'm: forced-answer anchors not shown to be resampling anchors (too few samples; 2 traces)'
    """
    f = (summary.get("findings") or [{}])[0]
    if f.get("verdict") == "effect":
        return f"{summary.get('model')}: forced-answer anchors are resampling anchors ({summary.get('n_traces')} traces)"
    return (f"{summary.get('model')}: forced-answer anchors not shown to be resampling anchors ({f.get('verdict')}; "
            f"{summary.get('n_traces')} traces)")


JOB = Job("thought-anchors", ThoughtAnchorsConfig, run, report=report, headline=headline, order=36, page="pages/5_Trace_viewer.py",
          help="thought anchors (Bogdan et al. 2025): forced-answer, resampling, attention-suppression and receiver-head "
               "importance of each sentence",
          findings="thinklens.analyses.anchors.anchor_findings:anchor_findings", capability="Thought anchors",
          validations={"thought-anchors": "thinklens.analyses.anchors.validation:SETTINGS"},
          smallest=("--model", "tiny-overthink", "--n-traces", "1", "--max-new-tokens", "40", "--max-sentences", "3",
                    "--n-forced", "2", "--n-rollouts", "2", "--rollout-tokens", "8"))
