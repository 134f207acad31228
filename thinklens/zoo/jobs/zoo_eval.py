"""``thinklens run zoo-eval``: held-out accuracy of zoo models by number of steps (and think statistics).

Greedy answers of each zoo model (default: every trained token-level one) to held-out problems of each step
count, graded by the shared answer parser; for models answering in the think format also how often traces reflect (hmm / wait) and
how often a correction is right, greedy and sampled at T=1. Results go to ``zoo_eval.json`` in the run folder (every
graded answer to ``zoo_problems.json``, :func:`problem_records`); the
summary holds each accuracy's Wilson interval and the findings (:func:`zoo_findings`).

Example:
    >>> JOB.name, ZooEvalConfig().step_counts
    ('zoo-eval', (1, 2, 3, 4, 5, 6, 7, 8))
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from thinklens.calibration.findings import MAJORITY, accuracy_finding, findings_doc, majority_correct
from thinklens.calibration.stats import wilson
from thinklens.errors import ThinklensError, opt
from thinklens.runs.configcli import ConfigGroup
from thinklens.runs.headlines import pct
from thinklens.runs.jobs import DemoRun, Job, JobContext
from thinklens.runs.run_views import paired_records
from thinklens.tasks.protocol import HELD_OUT, problems_by_steps
from thinklens.tasks.render import check_style
from thinklens.zoo.registry import LATENT_ZOO_NAMES, ZOO_NAMES, zoo_path


@dataclass(frozen=True)
class ZooEvalConfig(ConfigGroup):
    """What ``zoo-eval`` evaluates."""

    model: str = ""
    """A zoo name or model folder (evaluated before ``models``; both empty: every trained token-level zoo model)."""
    models: tuple[str, ...] = ()
    """More zoo names or folders, comma-separated."""
    n_eval: int = 50
    """Held-out problems evaluated per step count."""
    step_counts: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)
    """Step counts of the held-out problems, comma-separated."""
    seed: int = HELD_OUT["eval"]
    """Seed of the held-out problems."""
    prompt_format: str | None = None
    """Prompt format of every model: a zoo format, direct, cot or think (default: each model's own)."""
    renamed: ClassVar[dict[str, str]] = {"n": "n_eval", "steps": "step_counts", "style": "prompt_format"}

    def check(self) -> None:
        if self.n_eval < 1:
            raise ThinklensError.of("n_eval", self.n_eval, "an integer >= 1", f"pass {opt('n_eval', 50)}")
        if not self.step_counts or min(self.step_counts) < 1:
            raise ThinklensError.of("step_counts", self.step_counts, "step counts >= 1, e.g. 1,2,3",
                                    f"pass {opt('step_counts', (1, 2, 3, 4))}")
        if self.prompt_format is not None:
            check_style(self.prompt_format)
        for name in self.names():
            if name in LATENT_ZOO_NAMES:
                raise ThinklensError.of("zoo-eval model", name, "a token-level zoo model",
                                        f"latent models are evaluated with `thinklens run latent-eval --models {name}`")

    def names(self) -> list[str]:
        """The models asked for (empty: the default set, resolved at run time)."""
        return ([self.model] if self.model else []) + list(self.models)


def run(config: ZooEvalConfig, ctx: JobContext) -> list:
    """One :class:`~thinklens.zoo.accuracy.ZooEvalResult` per model; all of them written to ``zoo_eval.json``."""
    import torch  # lazy: CLI start-up (torch: `thinklens run --help` imports every job's config)

    from thinklens.zoo.accuracy import evaluate_zoo_model  # lazy: CLI start-up (torch)

    if ctx.options.threads is None:
        torch.set_num_threads(1)  # fastest on a shared 2-core machine (see zoo-train)
    names = config.names() or [n for n in ZOO_NAMES if n not in LATENT_ZOO_NAMES and zoo_path(n) is not None]
    results = []
    for name in ctx.progress.iter(names, desc="zoo-eval", total=len(names)):
        results.append(evaluate_zoo_model(name, n_per_steps=config.n_eval, steps=list(config.step_counts), seed=config.seed,
                                          prompt_format=config.prompt_format))
    ctx.run.write_result("zoo_eval", [r.to_json() for r in results])
    ctx.run.write_result(PROBLEMS, problem_records(results))
    return results


PROBLEMS = "zoo_problems"
"""The result (``results/zoo_problems.json``) holding every graded answer, one per (model, problem)."""


def problem_records(results: list) -> list[dict[str, Any]]:
    """Every graded answer of the models that kept them (:attr:`ZooEvalResult.problems`), each against the first such
    model on its problem (:func:`thinklens.runs.run_views.paired_records`; ``point``: the model): the problems each
    model gets wrong, and those it broke or fixed against the first. [] when none kept them (tiny-r1's chats)."""
    kept = [r for r in results if r.problems]
    if not kept:
        return []
    first = kept[0].problems
    kept = [r for r in kept if [q["gold"] for q in r.problems] == [q["gold"] for q in first]]  # the same problems
    points = [(r.model, [q["text"] for q in r.problems], [q["correct"] for q in r.problems]) for r in kept]
    return paired_records(points, kept[0].model, [q["prompt"] for q in first], [q["gold"] for q in first])


def format_table(results: list) -> str:
    """A plain-text table: one row per model, one column per step count.

    Example:
        >>> from thinklens.zoo.accuracy import ZooEvalResult
        >>> r = ZooEvalResult("m", "cot", 0, 10, {1: 1.0, 2: 0.5}, {1: 1.0, 2: 0.9})
        >>> print(format_table([r]))
        model  format    1    2
        m      cot    1.00 0.50
    """
    steps = sorted({s for r in results for s in r.accuracy})
    width = max([5, *(len(r.model) for r in results)])
    lines = [f"{'model':<{width}}  format " + " ".join(f"{s:>4}" for s in steps)]
    for r in results:
        cells = " ".join(f"{r.accuracy[s]:4.2f}" if s in r.accuracy else "   -" for s in steps)
        lines.append(f"{r.model:<{width}}  {r.prompt_format:<6} {cells}")
    return "\n".join(lines)


def report(results: list) -> str:
    """The table, then the reflection statistics of the models evaluated in the think format."""
    lines = [format_table(results)]
    for r in results:
        if r.prompt_format == "think":
            corr = "n/a" if r.correction_right_rate is None else f"{r.correction_right_rate:.2f}"
            lines.append(f"{r.model}: greedy: traces with reflection words {r.reflection_rate:.2f}; "
                         f"corrections right {corr} (of {r.n_corrections})")
            if r.sampled_corrections is not None:
                s_corr = "n/a" if r.sampled_correction_right_rate is None else f"{r.sampled_correction_right_rate:.2f}"
                lines.append(f"{r.model}: sampled (T=1): traces with hmm/wait {r.sampled_reflection_rate:.2f}; "
                             f"corrections right {s_corr} (of {r.sampled_corrections}); accuracy {r.sampled_accuracy:.2f}")
    return "\n".join(lines)


def _counts(r: Any) -> tuple[int, int, int]:
    """``(right, problems, right by the majority guess per step count)`` of one result, all step counts pooled."""
    steps = sorted(r.accuracy)
    golds, groups = [], []
    for s in steps:  # the held-out problems evaluate_zoo_model graded (the protocol's stream per step count)
        golds += [p.answer for p in problems_by_steps(r.n_per_steps, s, s, seed=r.seed)]
        groups += [s] * r.n_per_steps
    right = sum(round(r.accuracy[s] * r.n_per_steps) for s in steps)
    return right, r.n_per_steps * len(steps), sum(majority_correct(golds, groups))


def zoo_findings(results: list) -> list[dict[str, Any]]:
    """Per model, its pooled held-out accuracy against the majority guess per step count; every model after the
    first against the first (the same problems, but per-problem outcomes are not kept: an unpaired Wilson
    comparison, conservative).

    Example:
        >>> from thinklens.zoo.accuracy import ZooEvalResult
        >>> a = ZooEvalResult("a", "cot", 10_000, 20, {1: 1.0, 2: 0.95}, {})
        >>> b = ZooEvalResult("b", "cot", 10_000, 20, {1: 0.1, 2: 0.05}, {})
        >>> [(f["claim"], f["verdict"]) for f in zoo_findings([a, b])][1:]
        [('b beats a majority guess per step count on held-out problems (1-2 steps)', 'no effect'), ('b falls below a', 'effect')]
    """
    found, first = [], None
    for r in results:
        right, n, guess = _counts(r)
        span = f"{min(r.accuracy)}-{max(r.accuracy)}" if len(r.accuracy) > 1 else f"{min(r.accuracy)}"
        f = accuracy_finding(f"{r.model} beats a majority guess per step count on held-out problems ({span} steps)",
                             right, n, control=f"{MAJORITY} per step count", control_k=guess, control_n=n)
        f.extra.update(model=r.model, otherwise=f"{r.model} not shown to beat guessing each step count's most "
                       "frequent answer")
        found.append(f)
        if first is None:
            first = (r.model, right, n)
            continue
        higher = right / n >= first[1] / first[2]
        f = accuracy_finding(f"{r.model} {'beats' if higher else 'falls below'} {first[0]}", right, n,
                             control=f"{first[0]} (same problems, unpaired)", control_k=first[1], control_n=first[2],
                             higher_is_effect=higher)
        f.extra.update(model=r.model, otherwise=f"no difference between {r.model} and {first[0]} shown")
        found.append(f)
    return findings_doc(found)


def summary(results: list) -> dict[str, Any]:
    """Accuracy by step count with its Wilson interval (``accuracy_ci``), and the findings (:func:`zoo_findings`)."""
    return {"accuracy": {r.model: {str(k): v for k, v in r.accuracy.items()} for r in results},
            "accuracy_ci": {r.model: {str(k): list(wilson(round(v * r.n_per_steps), r.n_per_steps))
                                      for k, v in r.accuracy.items()} for r in results},
            "n_per_steps": {r.model: r.n_per_steps for r in results},
            "findings": zoo_findings(results)}


def headline(summary: dict, folder: Path) -> str:
    """The run in a line (Home, ``thinklens runs``): each model's mean held-out accuracy, best first."""
    acc = summary.get("accuracy") or {}
    means = {m: sum(v.values()) / len(v) for m, v in acc.items() if v}
    return ", ".join(f"{m} {pct(a)}" for m, a in sorted(means.items(), key=lambda kv: -kv[1])) + " (mean over step counts)"


DEMO = (DemoRun(("--models", "tiny-direct,tiny-cot,tiny-think", "--n-eval", "20", "--step-counts", "2,3,4,5,6"), print_summary=False),)


JOB = Job("zoo-eval", ZooEvalConfig, run, order=10, demo=DEMO, headline=headline,
          models=(), report=report, summary=summary,
          help="held-out accuracy of zoo models by number of steps",
          findings="thinklens.zoo.jobs.zoo_eval:zoo_findings", capability="The embedded zoo",
          smallest=("--model", "tiny-cot", "--n-eval", "2", "--step-counts", "2,3"))
