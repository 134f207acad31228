"""``thinklens run reasoning-vector``: ``v = theta_a - theta_b`` added to a sibling model, with an alpha sweep.

Zbeeb et al. (arXiv 2509.01363): the vector between two fine-tunes of one init on one dataset (GRPO
minus SFT), added to ``--model`` (the target) in tensor groups (all, attention, mlp, no_embeddings)
at several scales and scored, greedily, on ``--data`` (any problem set, prompted in the target's
``--prompt-format``, graded by :func:`thinklens.data.answers.is_correct`) or, without it, on held-out zoo
problems by the zoo's evaluator. Any three Hugging Face checkpoints of one architecture work: the
config shapes of a, b, the target and the base must match (a clear error otherwise), the weights must
look like one lineage (a warning otherwise), and zoo models' recorded inits must share a root. Results:
``results/vector.json`` (norms per group, cosines, lineage checks), ``results/alpha_problems.json`` (every graded text,
each against α 0 on its problem: what each α broke or fixed), ``results/alpha_sweep.json`` (every
problem's outcome per group and alpha) and the figure alpha_sweep; the target plus ``save_alpha * v`` in HF
format under ``merged/``.

Findings (``results/findings.json`` and the summary's ``findings``): the problems are split in two
(:func:`thinklens.calibration.stats.split_indices`, ``--select-fraction``); each group's alpha (and the group itself) is
chosen on the first part, and on the second v at that alpha is paired (McNemar) against alpha 0, against the
norm-matched random direction at its own chosen alpha ("random vectors do as well" when it is not beaten) and,
with ``--null-a/--null-b``, against a structured null (e.g. a continued-SFT delta rescaled to |v|).

Example:
    >>> JOB.name, ReasoningVectorJobConfig().model, ReasoningVectorJobConfig().seed
    ('reasoning-vector', 'tiny-think', 10000)
    >>> # thinklens run reasoning-vector --alphas=-1,0,1 --n-per-steps 10
    >>> # thinklens run reasoning-vector --model Qwen/Qwen2.5-1.5B-Instruct --a my/grpo --b my/sft --base none
    >>> #     --data openai/gsm8k:main@test --prompt-format chat --n-problems 500
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from thinklens.calibration.findings import findings_doc
from thinklens.calibration.findings import headline as finding_headline
from thinklens.data.problemsets import DataOptions
from thinklens.errors import ThinklensError, opt, opt_name
from thinklens.runs.headlines import num, pct
from thinklens.runs.jobs import DemoRun, Job, JobContext
from thinklens.runs.run_views import paired_records
from thinklens.steering.configs import check_finite
from thinklens.steering.problems import data_format, graded, max_steps_of, prompt_set
from thinklens.tasks import STYLES
from thinklens.tasks.generator import generate_problems
from thinklens.tasks.protocol import HELD_OUT, model_style


@dataclass(frozen=True)
class ReasoningVectorJobConfig(DataOptions):
    """``thinklens run reasoning-vector``: v = a - b added to a target model with an alpha sweep."""

    model: str = "tiny-think"
    """The target: the sibling that receives alpha * v (zoo name, local model folder or hub id)."""
    a: str = "data/zoo/tiny-grpo"
    """The checkpoint whose behaviour is wanted (paper: the GRPO model)."""
    b: str = "tiny-cot"
    """The checkpoint subtracted (paper: the SFT model of the same init and data)."""
    base: str | None = "tiny-pre"
    """The shared init (lineage check and cosines; none to skip)."""
    alphas: tuple[float, ...] = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0)
    """Scales of v (negative alphas subtract it; write --alphas=-1,0,1)."""
    groups: tuple[str, ...] = ("all", "attention", "mlp", "no_embeddings")
    """Tensor groups v is applied to (all, attention, mlp, no_embeddings)."""
    data: str = ""
    """Problems the sweep is scored on (a .jsonl/.json/.parquet/.csv file, a saved HF datasets folder, a cached hub
    id or synthetic:MIN-MAX[:N]), prompted in --prompt-format; empty: held-out zoo problems (--n-eval, --step-counts;
    --prompt-format auto or a zoo style)."""
    n_problems: int = 0
    """With --data: score its first n problems (0: all)."""
    max_new_tokens: int | None = None
    """With --data: new tokens per answer; None: the task protocol's budget for a zoo style, 1024 for a real model's
    format (capped by its context)."""
    n_eval: int = 25
    """Held-out zoo problems evaluated per step count without --data (0, with or without --data: norms and cosines only)."""
    step_counts: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)
    """Step counts of the zoo evaluation."""
    seed: int = HELD_OUT["eval"]
    """Seed of the held-out problems (the zoo evaluator's)."""
    random_control: bool = True
    """Also sweep every group with a random direction of v's per-tensor norms (seeded by --seed): what any weight
    change of that size does (the control every finding is compared with)."""
    null_a: str | None = None
    """A structured null, swept like v: the delta null_a - null_b (e.g. b trained further by SFT on its own data,
    minus b), rescaled to |v|; none: no structured null."""
    null_b: str | None = None
    """The checkpoint subtracted from null_a."""
    select_fraction: float = 0.5
    """Share of the problems on which each group's alpha is chosen; the findings are reported on the rest."""
    save_alpha: float | None = 1.0
    """Save target + save_alpha * v (group all) in HF format under merged/ (none: do not save)."""

    renamed: ClassVar[dict[str, str]] = {"n_per_steps": "n_eval", "steps": "step_counts", "style": "prompt_format"}

    def check(self) -> None:
        from thinklens.steering.reasoning_vectors import check_group  # lazy: CLI start-up (torch)

        if not self.data and self.prompt_format not in ("auto", *STYLES):
            raise ThinklensError.of("prompt_format", self.prompt_format, f"auto or a zoo style ({', '.join(STYLES)}) for "
                                    f"the held-out zoo problems (no {opt_name('data')})",
                                    f"pass {opt_name('data')} too, or {opt('prompt_format', 'auto')}")

        if self.n_problems < 0 or (self.max_new_tokens is not None and self.max_new_tokens < 1):
            raise ThinklensError.of(f"{opt_name('n_problems')} / {opt_name('max_new_tokens')}", (self.n_problems, self.max_new_tokens),
                                    "n_problems >= 0 and max_new_tokens >= 1", f"pass {opt('n_problems', 500)}")
        check_finite("alpha", [*self.alphas, *([self.save_alpha] if self.save_alpha is not None else [])],
                     "--alphas=-1,0,0.5,1")
        for g in self.groups:
            check_group(g)
        if self.a == self.b:  # v = a - a = 0: every alpha scores the target itself
            raise ThinklensError.of(f"{opt_name('a')} / {opt_name('b')}", (self.a, self.b),
                                    "two different checkpoints (v = a - b is zero when they are one)",
                                    f"pass the fine-tune whose behaviour is wanted as {opt_name('a')} and its sibling as "
                                    f"{opt_name('b')}, e.g. {opt('a', 'my/grpo')} {opt('b', 'my/sft')}")
        if (self.null_a is None) != (self.null_b is None):
            raise ThinklensError.of(f"{opt_name('null_a')} / {opt_name('null_b')}", (self.null_a, self.null_b), "both or neither",
                                    f"pass {opt('null_a', '<continued-SFT model>')} {opt('null_b', '<its parent>')}")
        if not 0.0 < self.select_fraction < 1.0:
            raise ThinklensError.of(opt_name("select_fraction"), self.select_fraction, "a number in (0, 1)", "pass 0.5")


def run(config: ReasoningVectorJobConfig, ctx: JobContext) -> dict[str, Any]:
    """Vector and lineage checks, the alpha sweep over groups, the merged model; returns the summary."""
    import torch  # lazy: CLI start-up (torch)

    from thinklens.steering import figures  # lazy: CLI start-up (torch)
    from thinklens.steering.reasoning_vectors import (  # lazy: CLI start-up (torch)
        alpha_sweep,
        apply_vector,
        check_lineage_shapes,
        lineage_report,
        load_weights,
        reasoning_vector,
        save_merged,
        sweep_findings,
        vector_stats,
        zoo_lineage,
    )

    cfg, run, log = config, ctx.run, ctx.progress.log
    v, lineage = reasoning_vector(cfg.a, cfg.b, base=cfg.base)
    if v.norm() == 0:  # two names of one checkpoint: nothing to add
        raise ThinklensError.of(f"{opt_name('a')} / {opt_name('b')}", f"{cfg.a} and {cfg.b}: |v| = 0",
                                "two checkpoints whose weights differ (v = a - b is zero: they hold the same weights)",
                                f"pass the fine-tune whose behaviour is wanted as {opt_name('a')} and its sibling as "
                                f"{opt_name('b')}")
    target, tok = ctx.model.hf, ctx.model.tokenizer
    tw, tcfg = load_weights(target)
    wa, ca = load_weights(cfg.a)
    check_lineage_shapes(tw, wa, tcfg, ca, what="target")
    bw = load_weights(cfg.base)[0] if cfg.base else None
    stats = vector_stats(v, tw, bw)
    stats["lineage"] = asdict(lineage)
    stats["zoo_lineage"] = zoo_lineage({"a": cfg.a, "b": cfg.b, "target": cfg.model, **({"base": cfg.base} if cfg.base else {})})
    if bw is not None:  # the target must be a fine-tune of the same init as b, as a and b are
        stats["target_lineage"] = asdict(lineage_report(tw, load_weights(cfg.b)[0], bw))
        wb = load_weights(cfg.b)[0]
        stats["norm_delta_a"] = float(torch.cat([(wa[n] - bw[n]).flatten() for n in wa]).norm())
        stats["norm_delta_b"] = float(torch.cat([(wb[n] - bw[n]).flatten() for n in wb]).norm())
    run.write_result("vector", stats)
    log(f"|v|={stats['norms']['all']:.3f} ({stats['relative_norm']:.3%} of |target|); lineage {asdict(lineage)}")
    rows: list[dict[str, Any]] = []
    findings_by_group: dict[str, tuple[list[Any], dict[str, Any]]] = {}
    if cfg.n_eval > 0:
        evaluate = data_evaluator(cfg, ctx.model) if cfg.data else zoo_evaluator(cfg, tok)
        rows = alpha_sweep(target, v, cfg.alphas, evaluate, groups=cfg.groups, progress=log)
        controls: dict[str, tuple[str, Any]] = {}  # the findings' name -> (the rows' group suffix, the vector)
        if cfg.random_control:
            controls["norm-matched random direction"] = ("random direction", v.random_like(cfg.seed))
        if cfg.null_a is not None:
            controls["structured null"] = ("structured null", structured_null(cfg, v))
        for suffix, cv in controls.values():
            sweep = alpha_sweep(target, cv, cfg.alphas, evaluate, groups=cfg.groups,
                                progress=lambda m, s=suffix: log(f"[{s}] {m}"))
            rows += [{**r, "group": f"{r['group']} ({suffix})"} for r in sweep]

        def sweep_of(group: str) -> dict[float, list[bool]]:
            return {r["alpha"]: r["correct"] for r in rows if r["group"] == group}

        for g in cfg.groups:
            ctrl = {name: sweep_of(f"{g} ({suffix})") for name, (suffix, _) in controls.items()}
            findings_by_group[g] = sweep_findings(sweep_of(g), ctrl, label=f"v ({g})", seed=cfg.seed,
                                                  fraction=cfg.select_fraction)
        run.write_result(PROBLEMS, alpha_problem_records(rows))
        rows = [{k: v for k, v in r.items() if k not in TEXT_FIELDS} for r in rows]
        run.write_result("alpha_sweep", rows)
        run.write_figure("alpha_sweep", figures.figure_alpha_sweep(rows))
    if cfg.save_alpha is not None:
        merged = apply_vector(target, v, cfg.save_alpha, "all")
        save_merged(merged, tok, run.path / "merged", meta={"a": cfg.a, "b": cfg.b, "target": cfg.model,
                                                              "alpha": cfg.save_alpha, "group": "all"})
    # the group is chosen like the alpha: on the selection split; its findings lead, the other groups' gains follow
    best_group = max(findings_by_group, key=lambda g: (findings_by_group[g][1]["select_accuracy"], g == "all"), default=None)
    findings: list[Any] = []
    best = None
    if best_group is not None:
        fs, choice = findings_by_group[best_group]
        findings = list(fs) + [findings_by_group[g][0][0] for g in cfg.groups if g != best_group]
        best = {"group": best_group, "alpha": choice["alpha"], "accuracy": fs[0].value,
                "select_accuracy": choice["select_accuracy"], "n_select": len(choice["select"]), "n_report": len(choice["report"]),
                "chosen_on": "selection split; accuracy on the reporting split"}
        run.write_result("findings", {"findings": findings_doc(findings), "best_group": best_group,
                                      "choices": {g: c for g, (_, c) in findings_by_group.items()},
                                      "by_group": {g: findings_doc(f) for g, (f, _) in findings_by_group.items()}})
    return {"norm": stats["norms"]["all"], "related": lineage.related,
            "target_related": stats["target_lineage"]["related"] if "target_lineage" in stats else None,
            "alpha0_accuracy": next((r["accuracy"] for r in rows if r["alpha"] == 0 and r["group"] == "all"), None),
            "best": best, "findings": findings_doc(findings)}


PROBLEMS = "alpha_problems"
"""The result (``results/alpha_problems.json``) holding every graded text of the sweep, one per (group, α, problem)."""
TEXT_FIELDS = ("texts", "prompts", "golds")
"""An evaluation's per-problem fields, kept in ``alpha_problems.json`` rather than in each row of the sweep."""


def alpha_problem_records(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every graded text of the sweep, each against α 0 (the target itself) on its problem
    (:func:`thinklens.runs.run_views.paired_records`): the problems each (group, α) broke or fixed."""
    from thinklens.steering.reasoning_vectors import alpha_point  # lazy: CLI start-up (torch)

    base = next((r for r in rows if float(r["alpha"]) == 0.0 and "texts" in r), None)
    if base is None:  # no α 0 in the sweep: nothing to pair against
        return []
    points = [(alpha_point(r["group"], r["alpha"]), r["texts"], r["correct"]) for r in rows
              if "texts" in r and float(r["alpha"]) != 0.0]
    return paired_records([("α 0 (target)", base["texts"], base["correct"])] + points, "α 0 (target)",
                          base["prompts"], base["golds"])


def structured_null(cfg: ReasoningVectorJobConfig, v: Any) -> Any:
    """The delta null_a - null_b rescaled to |v| (a weight change of v's size that should carry no skill)."""
    from thinklens.steering.reasoning_vectors import ReasoningVector, check_lineage_shapes, load_weights  # lazy: CLI start-up (torch)

    (wa, ca), (wb, cb) = load_weights(cfg.null_a), load_weights(cfg.null_b)
    check_lineage_shapes(wa, wb, ca, cb, what="structured null")
    null = ReasoningVector.between(wa, wb, label=f"{cfg.null_a} - {cfg.null_b}", model_type=getattr(ca, "model_type", None))
    scale = v.norm() / max(null.norm(), 1e-12)
    return ReasoningVector({n: d * scale for n, d in null.delta.items()}, f"({null.label}) x {scale:.3g}", null.model_type)


def zoo_evaluator(cfg: ReasoningVectorJobConfig, tok: Any) -> Callable[[Any], dict[str, Any]]:
    """Accuracy of a merged model on held-out zoo problems (the zoo's evaluator, its style)."""
    from thinklens.steering.reasoning_vectors import zoo_scorer  # lazy: CLI start-up (torch)

    style = cfg.prompt_format if cfg.prompt_format != "auto" else model_style(cfg.model)
    # the zoo evaluator's problems: one stream per step count (seed * 1000 + steps)
    problems = [p for s in cfg.step_counts for p in generate_problems(cfg.n_eval, seed=cfg.seed * 1000 + s, n_steps=s)]
    return zoo_scorer(tok, problems, style)


def data_evaluator(cfg: ReasoningVectorJobConfig, target: Any) -> Callable[[Any], dict[str, Any]]:
    """Greedy accuracy of a merged model on --data in the target's --prompt-format (is_correct against the gold
    answers), by step count when the problems are synthetic."""
    from thinklens.engine.model import HookedModel  # lazy: CLI start-up (torch)

    problems = list(cfg.load(limit=cfg.n_problems or None))
    ps = prompt_set(target, data_format(target, cfg.prompt_format), problems, max_new_tokens=cfg.max_new_tokens,
                    max_steps=max_steps_of(problems, max(cfg.step_counts)))
    steps = [p.ground_truth.n_steps if p.ground_truth is not None else None for p in problems]

    def evaluate(model) -> dict[str, Any]:
        traces = HookedModel(model, target.tokenizer).generate(ps.prompts, max_new_tokens=ps.max_new_tokens, batch_size=64)
        right = graded([t.text for t in traces], ps.golds)
        by_steps: dict[str, list[bool]] = {}
        for s, ok in zip(steps, right):
            if s is not None:
                by_steps.setdefault(str(s), []).append(ok)
        return {"accuracy": sum(right) / len(right), "by_steps": {k: sum(v) / len(v) for k, v in sorted(by_steps.items())},
                "n": len(right), "correct": [bool(x) for x in right], "texts": [t.text for t in traces],
                "prompts": list(ps.prompts), "golds": [str(g) for g in ps.golds]}

    return evaluate


def report(summary: dict[str, Any]) -> str:
    """The lineage line and the headlines (the CLI prints every finding in words after it)."""
    line = f"|v| = {summary['norm']:.4g}; lineage {'ok' if summary['related'] else 'SUSPICIOUS (see results/vector.json)'}"
    lines = [line]
    b, fs = summary.get("best"), summary.get("findings") or []
    if b and fs:
        lines.append(finding_headline(fs[0], effect=f"v raises accuracy: {b['group']} at alpha {b['alpha']:+g}, {b['accuracy']:.3f} on "
                              f"{b['n_report']} held-out problems against {fs[0]['control_value']:.3f} at alpha 0",
                              otherwise=f"v does not raise accuracy on held-out problems ({b['group']} at alpha "
                              f"{b['alpha']:+g} chosen on {b['n_select']} others)"))
        if len(fs) > 1 and fs[1].get("control", "").startswith("norm-matched random"):
            lines.append(finding_headline(fs[1], effect="v beats the norm-matched random direction", otherwise="random vectors do as well"))
    return "\n".join(lines)


def headline(summary: dict, folder: Path) -> str:
    """The run in a line (Home, ``thinklens runs``): the vector's norm, accuracy at α 0 and the best (group, α)."""
    best = summary.get("best") or {}
    return (f"|v| {num(summary.get('norm'), 1)}, accuracy {pct(summary.get('alpha0_accuracy'))} at α 0, best "
            f"{best.get('group', '?')} at α {best.get('alpha', '?')} ({pct(best.get('accuracy'))})")


DEMO = (DemoRun(("--alphas=-1,0,1", "--n-eval", "10"), progress=True),)


JOB = Job(
    "reasoning-vector", ReasoningVectorJobConfig, run, order=80, page="pages/4_Steering.py", demo=DEMO, headline=headline,
    report=report,
    help="weight-space reasoning vector a - b added to a target model; alpha sweep",
    description="Computes v = theta_a - theta_b between two checkpoints of one lineage (lineage checks against "
    "--base), adds alpha * v to --model in each tensor group (all, attention, mlp, no_embeddings; from the model "
    "family's adapter) and scores every (group, alpha) greedily on --data in --prompt-format (or on held-out zoo "
    "problems); saves --model + save_alpha * v.",
    findings="thinklens.steering.reasoning_vectors:sweep_findings", capability="Steering",
    validations={"vectors": "thinklens.steering.vector_validation:SETTINGS"},
    compare="thinklens.steering.steering_comparisons:REASONING_VECTOR",
    smallest=("--model", "tiny-pre", "--a", "data/zoo/tiny-grpo", "--b", "tiny-cot", "--base", "tiny-pre", "--alphas", "0,1", "--groups",
              "all", "--n-eval", "2", "--step-counts", "2", "--no-random-control"),
)
