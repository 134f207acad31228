"""``thinklens run eval``: accuracy and token counts of any model on any problem set.

Greedy or sampled completions (``--temperature``, ``--top-p``, ``--samples`` per problem) of any model (zoo name,
folder or hub id) on any problem set (GSM8K, MATH-500, AIME, JSONL, synthetic), generated in batches in the
model's prompt format (its chat template, plain text or a zoo style), graded by
:func:`thinklens.data.answers.is_correct` against the gold answers (boxed or marked answers, math-verify equivalence),
with total, reasoning and answer token counts (reasoning vs answer by the format's thinking span) and stop
reasons. The run folder holds every completion (``completions/batch-NNNNN.json``, written per batch: a re-run
resumes after the last finished batch), ``results/eval_problems.json`` (one row per completion, without the
text), ``results/eval.json`` (the summary overall and by metadata group: n_steps, level, subject, and its findings:
the accuracy against the majority-answer guess on the same problems, reasoning against answer tokens;
:mod:`thinklens.analyses.eval_findings`) and the figure ``eval``.

Example:
    >>> JOB.name, JOB.config.__name__
    ('eval', 'EvalJobConfig')
    >>> cfg = EvalJobConfig(model="tiny-r1", data="gsm8k_test.jsonl", temperature=0.6, top_p=0.95)
    >>> cfg.sampled, cfg.prompt_format
    (True, 'auto')
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from thinklens.analyses.eval_findings import eval_findings
from thinklens.data.formats import format_for
from thinklens.data.problemsets import DataOptions, SamplingOptions
from thinklens.errors import ThinklensError, opt
from thinklens.generation.budgets import budget_note, budgets_for
from thinklens.runs.folders import atomic_write_json, to_jsonable
from thinklens.runs.jobs import Job, JobContext


@dataclass(frozen=True)
class EvalJobConfig(DataOptions, SamplingOptions):
    """Settings of ``thinklens run eval`` (one option per field). Greedy by default; the R1 distills recommend
    sampling at temperature 0.6 with top-p 0.95."""

    model: str = "tiny-r1"
    """The model: zoo name, local model folder or hub id."""
    data: str = "synthetic:2-4"
    """Problems: a .jsonl/.json/.parquet/.csv file, a saved HF datasets folder, a cached hub id (a @split suffix picks a
    split), or synthetic:MIN-MAX[:N] (the project's task, N per step count)."""
    n_problems: int = 0
    """Evaluate the first n problems of --data (0: all of them)."""
    max_new_tokens: int = 1024
    """Generation budget per completion (capped by the model's context)."""
    samples: int = 1
    """Completions per problem (more than one needs --temperature > 0)."""
    seed: int = 0
    """Seed of the sampling (batch b draws from seed + b, so a resumed run samples the same)."""
    batch_size: int = 16
    """Completions generated at once; the run resumes per batch."""
    stop: tuple[str, ...] = ()
    """Extra stop strings besides the end-of-sequence token, e.g. for base models."""
    group_by: tuple[str, ...] = ()
    """Metadata fields to summarize by (default: every field with 2-30 values: n_steps, level, subject)."""

    def check(self) -> None:
        if self.n_problems < 0 or self.max_new_tokens < 1 or self.batch_size < 1 or self.samples < 1:
            raise ThinklensError.of("n_problems / max_new_tokens / batch_size / samples",
                                    (self.n_problems, self.max_new_tokens, self.batch_size, self.samples),
                                    "n_problems >= 0 and the others >= 1", f"pass e.g. {opt('max_new_tokens', 1024)}")
        if self.samples > 1 and not self.sampled:
            raise ThinklensError.of("samples", self.samples, "1 for greedy decoding (every sample would be the same)",
                                    f"pass {opt('temperature', 0.6)} to sample, or {opt('samples', 1)}")
        if not self.data:
            raise ThinklensError.of("data", self.data, "a problem source", f"e.g. {opt('data', 'gsm8k_test.jsonl')} or synthetic:2-4")


def _batches(n_problems: int, samples: int, batch_size: int) -> list[list[tuple[int, int]]]:
    items = [(i, s) for i in range(n_problems) for s in range(samples)]
    return [items[k : k + batch_size] for k in range(0, len(items), batch_size)]


def run(config: EvalJobConfig, ctx: JobContext) -> dict[str, Any]:
    """Generate and grade every batch not yet done; returns the summary (also ``results/eval.json``)."""
    from thinklens.analyses.evaluation import completion_row, figure_eval, group_fields, summarize_eval  # lazy: CLI start-up (plotly)

    model = ctx.model
    problems = config.load(limit=config.n_problems or None)
    groups = group_fields(problems, config.group_by)
    fmt = format_for(model, config.prompt_format)
    prompts = fmt.render_problems(problems, model.tokenizer)
    budgets = budgets_for(model, prompts, config.max_new_tokens)  # each prompt its own, inside the context
    batches = _batches(len(problems), config.samples, config.batch_size)
    folder = ctx.run.path / "completions"
    names = [f"batch-{b:05d}" for b in range(len(batches))]
    todo = list(ctx.run.pending(names))
    for name in ctx.progress.iter(todo, desc="eval batches", total=len(todo)):
        b = names.index(name)
        items = batches[b]
        traces = model.generate([prompts[i] for i, _ in items], max_new_tokens=[budgets.per_prompt[i] for i, _ in items],
                                **config.decoding(), seed=config.seed + b if config.sampled else None, stop=config.stop)
        rows = [completion_row(problems[i], i, s, tr, fmt, budgets.per_prompt[i]) for (i, s), tr in zip(items, traces)]
        atomic_write_json(folder / f"{name}.json", to_jsonable(rows))
        ctx.run.mark_done(name)
    rows = [r for name in names for r in json.loads((folder / f"{name}.json").read_text())]
    summary = summarize_eval(rows, groups)
    summary = {**summary, "model": config.model, "data": config.data, "prompt_format": fmt.name,
               "thinking_span": fmt.span.family if fmt.span is not None else None, "budgets": budgets.summary(),
               "decoding": {"temperature": config.temperature, "top_p": config.top_p, "samples": config.samples}
               if config.sampled else {"greedy": True}}
    summary["findings"] = eval_findings(rows, model=config.model, data=config.data,  # vs the majority guess
                                        thinking_span=fmt.span is not None)
    ctx.run.write_result("eval", to_jsonable(summary))
    ctx.run.write_result("eval_problems", to_jsonable([{k: v for k, v in r.items() if k != "text"} for r in rows]))
    ctx.run.write_figure("eval", figure_eval(summary, title=f"{config.model} on {config.data}"))
    return summary


def report(summary: dict[str, Any]) -> str:
    """The headline numbers the CLI prints after the run folder."""
    o = summary["overall"]
    stops = ", ".join(f"{k} {v}" for k, v in sorted(o["stop_reasons"].items()))
    lines = [f"{summary['model']} on {summary['data']} ({summary['prompt_format']}): accuracy {o['accuracy']:.3f} "
             f"({o['n_correct']}/{o['n']})",
             f"tokens: mean {o['mean_tokens']:.1f} (reasoning {o['mean_reasoning_tokens']:.1f}, answer "
             f"{o['mean_answer_tokens']:.1f}); thinking span closed {o['closed_fraction']:.2f}; stops: {stops}"]
    if budget_note(summary.get("budgets", {})):
        lines.append(budget_note(summary["budgets"]))
    for g in summary["groups"]:
        cells = ", ".join(f"{v}: {s['accuracy']:.2f}" for v, s in summary["by"][g].items())
        lines.append(f"  by {g}: {cells}")
    return "\n".join(lines)


JOB = Job("eval", EvalJobConfig, run, report=report, help="accuracy and token counts of a model on a problem set",
          findings="thinklens.analyses.eval_findings:eval_findings", capability="Models and sites",
          smallest=("--model", "tiny-cot", "--data", "synthetic:2-2:3", "--max-new-tokens", "24", "--batch-size", "1"))
