"""``thinklens run hybrid``: a base model steered by a thinking model's behaviours (Venhoff et al.), with ablations.

The runner loads both models (``--model``, the base, steered; ``--thinking``) with ``--device`` and
``--dtype``. Each model is prompted in its own format: ``--prompt-format`` for the thinking model (e.g.
its chat template, whose generation prompt opens ``<think>``), ``--base-format`` for the base (plain text,
its own chat template, or ``same``: the thinking model's kind of format); both read the same generated
tokens, so their tokenizers must share one vocabulary (a clear error otherwise). Problems: ``--data``
is evaluated (paper: GSM8K, MATH-500), graded by :func:`thinklens.data.answers.is_correct`; the thinking
model's traces on ``--vector-data`` (paper: MMLU-Pro; default: the rest of ``--data``) build the
categories and vectors, only their reasoning (the format's thinking span) segmented into sentences.
Without ``--data``, the synthetic task's zoo stream (held-out seeds, ``--min-steps..--max-steps``).

Every (seed, mode) is a resumable stage: the same command with the same ``--run-id`` skips the stages in
``progress.jsonl``; the unsteered ``base`` and ``thinking`` modes do not depend on the seed and run
once. Results: ``results/hybrid.json`` (the first seed's table, what the app shows), ``hybrid_problems.json`` (the first
seed's texts, each mode's against the base model's on its problem: what each mode broke or fixed), ``hybrid_seeds.json``
(every seed's), ``hybrid_summary.json`` (mean and standard deviation over seeds per mode),
``hybrid_info.json`` (formats, data and who picks the token at a disagreement), ``categories.json``,
``hybrid_reach.json`` (per seed, how far the vectors move the base model:
:func:`thinklens.steering.hybrid_generate.steering_reach`) and the figure hybrid. The findings' "effect" for the
hybrid requires it to beat every control it ran, the ablations and the base in its own prompt format
(:func:`thinklens.steering.hybrid_generate.hybrid_findings`). A thinking model that is the base model (the same
weights: a null setting, or a mistake) is flagged in the log, the summary's ``warnings`` and the report.
Both fractions are reported: ``fired_fraction`` (tokens where the models disagree and
steering is tried) and ``changed_fraction`` (tokens actually changed); at a disagreement the thinking
model picks the token among the steered base model's candidates
(:data:`thinklens.steering.hybrid_generate.TOKEN_CHOICE`).

Example:
    >>> JOB.name, JOB.models, HybridJobConfig(n_seeds=3).seeds
    ('hybrid', ('model', 'thinking'), (0, 1, 2))
    >>> # thinklens run hybrid --seed 0 --n-seeds 3 --n-eval 200 --run-id seeds3
    >>> # thinklens run hybrid --model Qwen/Qwen2.5-Math-1.5B --base-format plain
    >>> #     --thinking deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B --prompt-format chat
    >>> #     --data HuggingFaceH4/MATH-500 --vector-data TIGER-Lab/MMLU-Pro --site resid_post.10
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thinklens.calibration.findings import findings_doc
from thinklens.calibration.findings import headline as finding_headline
from thinklens.data.formats import format_for
from thinklens.data.problemsets import ProblemSet, check_disjoint, load_problems
from thinklens.engine.tokenization import prompt_ids
from thinklens.errors import ThinklensError, opt, opt_name
from thinklens.generation.budgets import budgets_for, new_token_budget
from thinklens.runs.headlines import pct, result_json
from thinklens.runs.jobs import DemoRun, Job, JobContext
from thinklens.runs.run_views import paired_records
from thinklens.steering.configs import HybridJobConfig, base_format
from thinklens.steering.problems import data_format, draw, graded, max_steps_of
from thinklens.tasks.protocol import HELD_OUT

if TYPE_CHECKING:
    from thinklens.data.problemsets import RealProblem


def hybrid_problems(job: HybridJobConfig) -> tuple[list["RealProblem"], list["RealProblem"]]:
    """``(evaluated, vector)`` problems: from --data / --vector-data (seeded, disjoint), else the zoo stream."""
    steps = dict(min_steps=job.min_steps, max_steps=job.max_steps)
    if job.data and not job.vector_data:
        parts = draw(job.load(), {"eval": job.n_eval, "train": job.n_train}, seed=job.seed)
        if not parts["train"]:
            raise ThinklensError.of(opt_name("data"), f"{job.data}: no problems left for the vectors after {len(parts['eval'])} "
                                    "evaluated", f"more problems than {opt_name('n_eval')}, or {opt_name('vector_data')}",
                                    f"pass {opt('vector_data', '<other problems>')} or a smaller {opt_name('n_eval')}")
        return parts["eval"], parts["train"]
    evaluated = (draw(job.load(), {"eval": job.n_eval}, seed=job.seed)["eval"] if job.data
                 else list(ProblemSet.synthetic(job.n_eval, seed=HELD_OUT["steer_eval"], **steps)))
    vector = (draw(load_problems(job.vector_data), {"train": job.n_train}, seed=job.seed)["train"] if job.vector_data
              else list(ProblemSet.synthetic(job.n_train, seed=HELD_OUT["steer_train"], **steps)))
    if job.vector_data:
        check_disjoint({"--data (evaluated)": ProblemSet(job.data or "zoo", tuple(evaluated)),
                        "--vector-data": ProblemSet(job.vector_data, tuple(vector))})
    return evaluated, vector


def preflight(job: HybridJobConfig) -> None:
    """The problems (``--data``, ``--vector-data``) read, drawn and checked disjoint before either model loads: a
    missing, malformed or empty file, or two sets sharing a question, costs no load."""
    if job.data or job.vector_data:
        hybrid_problems(job)


def same_weights(a: Any, b: Any) -> bool:
    """Whether two HookedModels hold the same weights (one object, or equal tensors under the same names); stops at
    the first tensor that differs, so a base and its fine-tune cost one comparison."""
    import torch  # lazy: CLI start-up (torch)

    if a is b or a.hf is b.hf:
        return True
    pa, pb = dict(a.hf.named_parameters()), dict(b.hf.named_parameters())
    if pa.keys() != pb.keys() or any(x.is_meta for x in (*pa.values(), *pb.values())):
        return False  # other architectures, or weights not here (remote): nothing to compare
    return all(x.shape == pb[n].shape and torch.equal(x, pb[n].to(x.device, x.dtype)) for n, x in pa.items())


def same_model_flag(job: HybridJobConfig) -> str:
    """The flag of a run whose thinking model is its base (:func:`same_weights`)."""
    return (f"the thinking model is the base model ({job.thinking} and {job.model} hold the same weights): the two never "
            "disagree, so steering never fires and there is no gap to recover; a null setting on purpose, else pass "
            f"the base as {opt_name('model')} and its thinking fine-tune as {opt_name('thinking')}")


def run(config: HybridJobConfig, ctx: JobContext) -> dict[str, Any]:
    """Train and evaluate hybrid steering for each seed, every (seed, mode) a resumable stage.

    The vectors of a seed are retrained (seeded: the same vectors) only if one of its modes is still to run.
    """
    from thinklens.steering import figures  # lazy: CLI start-up (torch)
    from thinklens.steering.hybrid import check_pair, train_hybrid_vectors  # lazy: CLI start-up (torch)
    from thinklens.steering.hybrid_generate import (  # lazy: CLI start-up (torch)
        TOKEN_CHOICE,
        evaluate_hybrid,
        hybrid_findings,
        steering_reach,
    )

    job, run, log = config, ctx.run, ctx.progress.log
    base, thinking = ctx.models["model"], ctx.models["thinking"]
    check_pair(base, thinking)  # before any generation: a mismatch found after the traces wastes them
    flags = [same_model_flag(job)] if same_weights(base, thinking) else []  # a null on purpose, or a mistake: said
    for f in flags:
        log(f"warning: {f}")
    t_fmt = data_format(thinking, job.prompt_format)
    b_fmt = base_format(job, base, t_fmt)
    evaluated, vector = hybrid_problems(job)
    steps = max_steps_of(evaluated, job.max_steps) if job.data else job.max_steps
    ep, bp = t_fmt.render_problems(evaluated, thinking.tokenizer), b_fmt.render_problems(evaluated, base.tokenizer)
    ea = [p.answer for p in evaluated]
    wanted = new_token_budget(t_fmt, job.max_new_tokens, max_steps=steps)
    max_new = min(budgets_for(thinking, ep, wanted).shared, budgets_for(base, bp, wanted).shared)
    done = run.finished()
    traces: list = []
    trained: dict[int, Any] = {}

    def vectors_for(seed: int, scfg: HybridJobConfig):
        def train():
            if seed in trained:
                return trained[seed]
            tp = t_fmt.render_problems(vector, thinking.tokenizer)
            if not traces:
                traces.extend(thinking.generate(tp, max_new_tokens=max_new, batch_size=64))
            reasoning = None if t_fmt.is_zoo or t_fmt.span is None else [t_fmt.split_trace(t).reasoning for t in traces]
            base_ids = prompt_ids(base.tokenizer, b_fmt.render_problems(vector, base.tokenizer))  # as generate reads them
            log(f"seed {seed}: training the categories and vectors")
            hv = train_hybrid_vectors(base, thinking, traces, scfg, log=log, base_prompts=base_ids, reasoning=reasoning)
            if seed == job.seeds[0]:
                run.write_result("categories", {"counts": hv.counts, "examples": {str(k): v for k, v in hv.examples.items()},
                                                "losses": hv.losses, "bias_norm": float(hv.bias.norm()),
                                                "vector_norms": hv.vectors.norm(dim=-1).tolist()})
            trained[seed] = hv
            return hv
        return train

    per_seed: dict[str, dict[str, dict[str, Any]]] = {}
    steered = any(m not in ("base", "thinking") for m in job.modes)
    for seed in job.seeds:
        scfg = dataclasses.replace(job, seed=int(seed))
        prior = {m: done[f"mode:{m}"] for m in ("base", "thinking") if f"mode:{m}" in done}
        prior.update({m: row for item, row in done.items() if item.startswith(f"seed{seed}:")
                      for m in [item.split(":", 1)[1]]})

        def record(mode: str, row: dict[str, Any], seed: int = seed) -> None:
            item = f"mode:{mode}" if mode in ("base", "thinking") else f"seed{seed}:{mode}"
            run.mark_done(item, row)
            done[item] = row

        log(f"seed {seed}: {len(prior)} of {len(job.modes)} modes already done")
        per_seed[str(seed)] = evaluate_hybrid(base, thinking, vectors_for(seed, scfg), bp, ea, scfg, modes=job.modes,
                                              max_new_tokens=max_new, log=log, done=prior, on_mode=record,
                                              thinking_prompts=ep)
        if steered and f"seed{seed}:reach" not in done:  # a null's no-effect counts only from vectors that move the base
            reach = steering_reach(base, vectors_for(seed, scfg)(), bp, scfg)
            log(f"seed {seed}: steering reach: log-prob shift {reach['shift']:.4g} nats, top token changed "
                f"{reach['top_changed']:.3f}")
            run.mark_done(f"seed{seed}:reach", reach)
            done[f"seed{seed}:reach"] = reach
    reaches = {str(seed): done[f"seed{seed}:reach"] for seed in job.seeds if steered}
    res = dict(per_seed[str(job.seeds[0])])
    # context: the base model on its own prompt format for the same problems (not part of the gap)
    own = format_for(base, "auto")
    if "own_style" not in done:
        op = own.render_problems(evaluated, base.tokenizer)
        budget = budgets_for(base, op, new_token_budget(own, job.max_new_tokens, max_steps=steps)).shared
        texts = [t.text for t in base.generate(op, max_new_tokens=budget, batch_size=64)]
        correct = [bool(x) for x in graded(texts, ea)]  # per problem: a control the hybrid's findings pair with
        row = {"style": own.name, "accuracy": sum(correct) / max(1, len(correct)), "tokens": 0, "fired_fraction": 0.0,
               "changed_fraction": 0.0, "samples": texts[:3], "correct": correct, "texts": texts}
        run.mark_done("own_style", row)
        done["own_style"] = row
    res["base_own_style"] = done["own_style"]
    summary_rows: dict[str, dict[str, Any]] = {}
    for m in res:
        if m == "base_own_style":
            continue
        for k in ("accuracy", "fired_fraction", "changed_fraction", "gap_recovered"):
            vals = [t[m][k] for t in per_seed.values() if t.get(m, {}).get(k) is not None]
            if vals:
                summary_rows.setdefault(m, {"n_seeds": len(vals)})
                summary_rows[m][k] = statistics.fmean(vals)
                summary_rows[m][f"{k}_std"] = statistics.pstdev(vals)
    run.write_result(PROBLEMS, mode_problem_records(res, bp, ea))
    res = {m: without_texts(r) for m, r in res.items()}
    per_seed = {s: {m: without_texts(r) for m, r in modes.items()} for s, modes in per_seed.items()}
    run.write_result("hybrid", res)
    run.write_result("hybrid_seeds", per_seed)
    run.write_result("hybrid_summary", summary_rows)
    run.write_result("hybrid_reach", reaches)
    run.write_result("hybrid_info", {
        "token_choice": TOKEN_CHOICE, "chooser_at_disagreement": "thinking",
        "thinking_format": t_fmt.name, "base_format": b_fmt.name, "base_own_format": own.name,
        "thinking_span": t_fmt.span.family if t_fmt.span is not None else None,
        "data": job.data or "zoo stream", "vector_data": job.vector_data or (job.data and "rest of --data") or "zoo stream",
        "n_evaluated": len(evaluated), "n_vector_problems": len(vector), "max_new_tokens": max_new})
    run.write_figure("hybrid", figures.figure_hybrid(res))
    # findings on the first seed's problems (every mode graded on the same ones): paired tests and the gap's interval
    findings = findings_doc(hybrid_findings(per_seed[str(job.seeds[0])], seed=job.seeds[0], own_style=done["own_style"]))
    run.write_result("findings", {"seed": job.seeds[0], "n_evaluated": len(evaluated), "findings": findings})
    out: dict[str, Any] = {m: {k: r.get(k) for k in ("accuracy", "accuracy_std", "fired_fraction", "changed_fraction",
                                                     "gap_recovered", "gap_recovered_std")}
                           for m, r in summary_rows.items()}
    out["findings"] = findings
    out["warnings"] = flags
    return out


PROBLEMS = "hybrid_problems"
"""The result (``results/hybrid_problems.json``) holding every graded text of the first seed, one per (mode, problem)."""


def without_texts(row: dict[str, Any]) -> dict[str, Any]:
    """A mode's row without its texts (they are kept once, in ``hybrid_problems.json``)."""
    return {k: v for k, v in row.items() if k != "texts"}


def mode_problem_records(rows: dict[str, dict[str, Any]], prompts: list[str], golds: list[Any]) -> list[dict[str, Any]]:
    """Every graded text of the first seed's modes, each against the base model alone on its problem
    (:func:`thinklens.runs.run_views.paired_records`): the problems each mode broke or fixed; [] when the base's texts
    are not there (a mode resumed from a run before per-problem traces)."""
    have = [(m, r["texts"], r["correct"]) for m, r in rows.items() if isinstance(r.get("texts"), list) and r.get("correct")]
    if "base" not in {m for m, _, _ in have}:
        return []
    return paired_records(have, "base", prompts, golds)


def report(summary: dict[str, Any]) -> str:
    """Each mode's line, then the headline: the gap recovered, or what was not shown (the CLI prints every finding after it)."""
    def num(v: Any) -> str:
        return "-" if v is None else f"{v:.3f}"

    modes = {m: r for m, r in summary.items() if m not in ("findings", "warnings")}
    lines = [f"{m}: accuracy {num(r['accuracy'])} +- {num(r['accuracy_std'])}, models disagree (fired) "
             f"{num(r['fired_fraction'])}, tokens changed {num(r.get('changed_fraction'))}, gap recovered "
             f"{num(r['gap_recovered'])}" for m, r in modes.items()]
    lines.append("at a disagreement the thinking model picks the token among the steered base model's candidates "
                 "(results/hybrid_info.json)")
    findings = summary.get("findings") or []
    gap = next((f for f in findings if f.get("statistic") == "gap recovered"), None)
    if gap is not None:
        beaten = [f for f in findings if f.get("claim", "").startswith("the hybrid beats")]
        lines.append(finding_headline(gap, effect=f"the hybrid recovers {num(gap['value'])} [{num(gap['ci'][0])}, {num(gap['ci'][1])}] "
                              f"of the gap on {gap['n']} problems",
                              otherwise=(gap.get("extra") or {}).get("otherwise") or "the hybrid recovers no gap shown"))
        if beaten and not all(f["verdict"] == "effect" for f in beaten):
            lines.append("not every ablation is beaten: " + ", ".join(f["control"] for f in beaten if f["verdict"] != "effect"))
    lines += [f"warning: {w}" for w in summary.get("warnings") or []]
    return "\n".join(lines)


def headline(summary: dict, folder: Path) -> str:
    """The run in a line (Home, ``thinklens runs``): hybrid, base and thinking accuracy, and how often steering fired."""
    res = summary if isinstance(summary.get("hybrid"), Mapping) else (result_json(folder, "hybrid") or {})
    acc = {m: r.get("accuracy") for m, r in res.items() if isinstance(r, Mapping)}
    parts = [f"{m} {pct(acc[m])}" for m in ("hybrid", "base", "thinking") if m in acc]
    fired = (res.get("hybrid") or {}).get("fired_fraction") if isinstance(res.get("hybrid"), Mapping) else None
    return ", ".join(parts) + (f"; steering fired on {pct(fired)} of tokens" if fired is not None else "")


DEMO = (DemoRun(("--n-train", "60", "--n-eval", "100", "--sae-steps", "150", "--vector-iters", "20")),)


JOB = Job(
    "hybrid", HybridJobConfig, run, preflight=preflight, order=90, page="pages/4_Steering.py", demo=DEMO, headline=headline,
    models=("model", "thinking"), report=report,
    help="hybrid base/thinking steering (Venhoff et al.) with ablations",
    description="Sentences of the thinking model's traces are clustered into behaviours by a top-k SAE; one steering "
    "vector per behaviour (plus a bias vector) is trained to raise the base model's likelihood of those sentences. "
    "Generation: where the two models disagree, the thinking model picks the behaviour, the base model is steered, "
    "and the thinking model picks the token among the steered base model's candidates. Each model is prompted in "
    "its own format (--prompt-format, --base-format) on --data; the vectors come from --vector-data. Evaluated "
    "against the base and thinking models alone and the ablations (bias only, random category, random firing, "
    "random vectors), for seeds seed..seed+n_seeds-1; both the fraction of tokens where steering fired and the "
    "fraction changed are reported; every (seed, mode) resumes after a kill.",
    findings="thinklens.steering.hybrid_generate:hybrid_findings", capability="Steering",
    validations={"hybrid": "thinklens.steering.hybrid_validation:SETTINGS"}, compare="thinklens.steering.steering_comparisons:HYBRID",
    smallest=("--model", "tiny-cot", "--thinking", "tiny-think", "--n-categories", "3", "--k", "1", "--sae-steps", "20", "--vector-iters",
              "3", "--vector-batch", "8", "--strengths", "0.5,1.0", "--windows", "1", "--n-train", "12", "--n-eval", "6", "--max-steps",
              "3", "--modes", "base,thinking,hybrid"),
)
