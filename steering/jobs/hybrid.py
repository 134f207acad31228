"""``thinklens run hybrid``: a base model steered by a thinking model's behaviours (Venhoff et al.), with ablations.

The runner loads both models (``--model``, the base, steered; ``--thinking``) with ``--device`` and
``--dtype``. Every (seed, mode) is a resumable stage: the same command with the same ``--run-id``
skips the stages in ``progress.jsonl``; the unsteered ``base`` and ``thinking`` modes do not depend on
the seed and run once. Results: ``results/hybrid.json`` (the first seed's table, what the app shows),
``hybrid_seeds.json`` (every seed's), ``hybrid_summary.json`` (mean and standard deviation over seeds
per mode), ``categories.json`` and the figure hybrid.

Example:
    >>> JOB.name, JOB.models, HybridJobConfig(n_seeds=3).seeds
    ('hybrid', ('model', 'thinking'), (0, 1, 2))
    >>> # thinklens run hybrid --seed 0 --n-seeds 3 --n-eval 200 --run-id seeds3
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from steering.configs import HybridConfig
from thinklens.errors import ThinklensError
from thinklens.jobs import Job, JobContext
from thinklens.tasks.protocol import HELD_OUT


@dataclass(frozen=True)
class HybridJobConfig(HybridConfig):
    """``thinklens run hybrid``: the hybrid-steering settings, plus the two models, the problems and the seeds."""

    seed: int = 0
    """First seed of the clustering SAE, the vector training and the ablations' random choices (one full
    train + evaluation per seed: seed, seed+1, ...; mean and standard deviation reported)."""
    model: str = "tiny-cot"
    """The base model (steered)."""
    thinking: str = "tiny-think"
    """The thinking model (decides when and which behaviour)."""
    n_train: int = 150
    """Thinking-model traces whose sentences train the categories and vectors."""
    n_eval: int = 60
    """Held-out problems evaluated per mode."""
    min_steps: int = 2
    """Fewest steps of the problems."""
    max_steps: int = 5
    """Most steps of the problems."""
    modes: tuple[str, ...] = ("base", "thinking", "hybrid", "bias_only", "random_category", "random_firing", "random_vectors")
    """Modes evaluated (base and thinking alone, the hybrid, and the ablations)."""
    n_seeds: int = 1
    """Seeds run (seed, seed+1, ...)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_seeds < 1:
            raise ThinklensError.of("--n-seeds", self.n_seeds, "an integer >= 1", "pass --n-seeds 3")
        if not 1 <= self.min_steps <= self.max_steps:
            raise ThinklensError.of("steps", (self.min_steps, self.max_steps), "1 <= min_steps <= max_steps",
                                    "pass --min-steps 2 --max-steps 5")

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.seed, self.seed + self.n_seeds))


def run(config: HybridJobConfig, ctx: JobContext) -> dict[str, Any]:
    """Train and evaluate hybrid steering for each seed, every (seed, mode) a resumable stage.

    The vectors of a seed are retrained (seeded: the same vectors) only if one of its modes is still to run.
    """
    import dataclasses
    import statistics

    from steering import figures
    from steering.data import zoo_prompts
    from steering.hybrid import train_hybrid_vectors
    from steering.hybrid_generate import evaluate_hybrid
    from thinklens.answers import parse_answer
    from thinklens.tasks.protocol import model_style, token_budget

    job, run, log = config, ctx.run, ctx.progress.log
    base, thinking = ctx.models["model"], ctx.models["thinking"]
    max_new = token_budget("think", job.max_steps)
    ep, ea = zoo_prompts(job.n_eval, seed=HELD_OUT["steer_eval"], style="think", min_steps=job.min_steps,
                         max_steps=job.max_steps)
    done = run.finished()
    traces: list = []

    def vectors_for(seed: int, scfg: HybridJobConfig):
        def train():
            if not traces:
                tp, _ = zoo_prompts(job.n_train, seed=HELD_OUT["steer_train"], style="think", min_steps=job.min_steps,
                                    max_steps=job.max_steps)
                traces.extend(thinking.generate(tp, max_new_tokens=max_new, batch_size=64))
            log(f"seed {seed}: training the categories and vectors")
            hv = train_hybrid_vectors(base, thinking, traces, scfg, log=log)
            if seed == job.seeds[0]:
                run.write_result("categories", {"counts": hv.counts, "examples": {str(k): v for k, v in hv.examples.items()},
                                                "losses": hv.losses, "bias_norm": float(hv.bias.norm()),
                                                "vector_norms": hv.vectors.norm(dim=-1).tolist()})
            return hv
        return train

    per_seed: dict[str, dict[str, dict[str, Any]]] = {}
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
        per_seed[str(seed)] = evaluate_hybrid(base, thinking, vectors_for(seed, scfg), ep, ea, scfg, modes=job.modes,
                                              max_new_tokens=max_new, log=log, done=prior, on_mode=record)
    res = dict(per_seed[str(job.seeds[0])])
    # context: the base model on its own prompt style for the same problems (not part of the gap)
    own = model_style(job.model)
    if "own_style" not in done:
        op, _ = zoo_prompts(job.n_eval, seed=HELD_OUT["steer_eval"], style=own, min_steps=job.min_steps,
                            max_steps=job.max_steps)
        texts = [t.text for t in base.generate(op, max_new_tokens=token_budget(own, job.max_steps), batch_size=64)]
        row = {"style": own, "accuracy": sum(parse_answer(t) == a for t, a in zip(texts, ea)) / len(ea),
               "tokens": 0, "fired_fraction": 0.0, "changed_fraction": 0.0, "samples": texts[:3]}
        run.mark_done("own_style", row)
        done["own_style"] = row
    res["base_own_style"] = done["own_style"]
    summary_rows: dict[str, dict[str, Any]] = {}
    for m in res:
        if m == "base_own_style":
            continue
        for k in ("accuracy", "fired_fraction", "gap_recovered"):
            vals = [t[m][k] for t in per_seed.values() if t.get(m, {}).get(k) is not None]
            if vals:
                summary_rows.setdefault(m, {"n_seeds": len(vals)})
                summary_rows[m][k] = statistics.fmean(vals)
                summary_rows[m][f"{k}_std"] = statistics.pstdev(vals)
    run.write_result("hybrid", res)
    run.write_result("hybrid_seeds", per_seed)
    run.write_result("hybrid_summary", summary_rows)
    run.write_figure("hybrid", figures.figure_hybrid(res))
    return {m: {k: r.get(k) for k in ("accuracy", "accuracy_std", "fired_fraction", "gap_recovered", "gap_recovered_std")}
            for m, r in summary_rows.items()}


def report(summary: dict[str, Any]) -> str:
    def num(v: Any) -> str:
        return "-" if v is None else f"{v:.3f}"

    return "\n".join(f"{m}: accuracy {num(r['accuracy'])} +- {num(r['accuracy_std'])}, fired {num(r['fired_fraction'])}, "
                     f"gap recovered {num(r['gap_recovered'])}" for m, r in summary.items())


JOB = Job(
    "hybrid", HybridJobConfig, run, models=("model", "thinking"), report=report,
    help="hybrid base/thinking steering (Venhoff et al.) with ablations",
    description="Sentences of the thinking model's traces are clustered into behaviours by a top-k SAE; one steering "
    "vector per behaviour (plus a bias vector) is trained to raise the base model's likelihood of those sentences. "
    "Generation: where the two models disagree, the thinking model picks the behaviour and the base model is "
    "steered. Evaluated against the base and thinking models alone and the ablations (bias only, random category, "
    "random firing, random vectors), for seeds seed..seed+n_seeds-1; every (seed, mode) resumes after a kill.",
)
