"""``thinklens run organism-eval``: a real organism (smol-r1) against its untuned base and the zoo's R1 models.

Held-out accuracy on the synthetic task by step count, with and without thinking
(:func:`thinklens.zoo.smol_r1_eval.evaluate_model`), for ``--model`` and every model of ``--models``; for models whose
prompt opens ``<think>``, the ground truth of every thinking trace (``answer_known_at``, each cue, the forced exit
there) and its pooled summary. GSM8K is not read: thinklens has no local copy (``gsm8k`` in the result says so).

Example:
    >>> JOB.name, OrganismEvalConfig().models
    ('organism-eval', ('smollm2-135m', 'smol-r1-once', 'tiny-r1', 'tiny-overthink'))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from thinklens.calibration.findings import accuracy_finding, findings_doc, paired_finding
from thinklens.errors import ThinklensError, opt
from thinklens.runs.configcli import ConfigGroup
from thinklens.runs.jobs import Job, JobContext
from thinklens.tasks.protocol import HELD_OUT


@dataclass(frozen=True)
class OrganismEvalConfig(ConfigGroup):
    """What ``organism-eval`` evaluates."""

    model: str = "smol-r1"
    """The organism evaluated first (its traces carry the ground truth)."""
    models: tuple[str, ...] = ("smollm2-135m", "smol-r1-once", "tiny-r1", "tiny-overthink")
    """The models it is compared with, comma-separated (its base, its sibling that concludes once, the zoo's R1 models)."""
    n_eval: int = 25
    """Held-out problems evaluated per step count."""
    step_counts: tuple[int, ...] = (1, 2, 3, 4)
    """Step counts of the held-out problems, comma-separated (smol-r1 trains on 1-4)."""
    seed: int = HELD_OUT["eval"]
    """Seed of the held-out problems."""
    batch_size: int = 40
    """Prompts generated together."""

    def check(self) -> None:
        if self.n_eval < 1:
            raise ThinklensError.of("n_eval", self.n_eval, "an integer >= 1", f"pass {opt('n_eval', 10)}")
        if not self.step_counts or min(self.step_counts) < 1:
            raise ThinklensError.of("step_counts", self.step_counts, "step counts >= 1, e.g. 1,2,3",
                                    f"pass {opt('step_counts', (1, 2, 3, 4))}")


def run(config: OrganismEvalConfig, ctx: JobContext) -> dict[str, Any]:
    """Evaluate each model in turn (loaded one at a time) and write ``organism_eval.json``."""
    # the model and the organism's evaluation: imported when the job runs, not when `thinklens run --help` lists it
    from thinklens.engine.model import HookedModel  # lazy: CLI start-up (torch)
    from thinklens.zoo.smol_r1 import REAL_RECIPES, SMOL_R1  # lazy: CLI start-up (torch, peft)
    from thinklens.zoo.smol_r1_eval import evaluate_model, truth_summary  # lazy: CLI start-up (torch)

    recipe = REAL_RECIPES.get(config.model, SMOL_R1)
    rows = []
    for name in (config.model, *config.models):
        model = HookedModel.load(name, device=ctx.options.device)
        ev = evaluate_model(model, n_per_steps=config.n_eval, steps=config.step_counts, seed=config.seed,
                            task=recipe.task, mix=recipe.mix, batch_size=config.batch_size)
        ev["source"] = model.source
        if ev.get("opens_think"):
            ev["truth"] = truth_summary(ev["traces"])
        rows.append(ev)
        ctx.progress.log(f"{name}: think {ev['think']['all']['rate']:.2f}, no_think {ev['no_think']['all']['rate']:.2f}")
    result = {"models": rows, "task": {"step_counts": list(config.step_counts), "n_eval": config.n_eval, "seed": config.seed},
              "gsm8k": "not measured: no local copy of GSM8K in this checkout (data/) and no network"}
    ctx.run.write_result("organism_eval", result)
    return result


def report(result: dict[str, Any]) -> str:
    lines = []
    for ev in result["models"]:
        by = " ".join(f"{k}:{v['rate']:.2f}" for k, v in ev["think"].items() if k != "all")
        lines.append(f"{ev['model']}: think {ev['think']['all']['k']}/{ev['think']['all']['n']} ({by}); "
                     f"no_think {ev['no_think']['all']['k']}/{ev['no_think']['all']['n']}")
        if "truth" in ev:
            t = ev["truth"]
            lines.append(f"  ground truth: closed {t['closed']['k']}/{t['n']}, boxed {t['boxed']['k']}/{t['n']}, "
                         f"answer written {t['answer_known']['k']}/{t['n']}, rounds {t['with_rounds']['k']}/{t['n']}, "
                         f"forced exit at answer_known_at right {t['forced_at_known']['k']}/{t['forced_at_known']['n']}, "
                         f"cues {t['cues']} (forced = construction's value {t['forced_matches_construction']['k']}/"
                         f"{t['forced_matches_construction']['n']})")
    lines.append(f"gsm8k: {result['gsm8k']}")
    return "\n".join(lines)


def findings(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The organism (the first model) with thinking against each other model with thinking, on the same held-out
    problems (Wilson intervals, unpaired: :func:`~thinklens.calibration.findings.accuracy_finding`)."""
    org, *others = result["models"]
    t = org["think"]["all"]
    out = [accuracy_finding(
        f"{org['model']} with thinking beats {o['model']} with thinking on the same held-out problems", t["k"], t["n"],
        control=f"{o['model']} with thinking", control_k=o["think"]["all"]["k"], control_n=o["think"]["all"]["n"])
        for o in others]
    paired = [tr for tr in org["traces"] if "no_think_correct" in tr]
    if paired:  # each problem graded both ways (records written before they were paired have no such field)
        out.insert(0, paired_finding(f"{org['model']} answers more problems with thinking than with the answer forced at once",
                                     [float(tr["correct"]) for tr in paired], [float(tr["no_think_correct"]) for tr in paired],
                                     control=f"{org['model']} without thinking", statistic="accuracy", binary=True))
    return findings_doc(out)


def summary(result: dict[str, Any]) -> dict[str, Any]:
    return {"models": [{k: ev.get(k) for k in ("model", "think", "no_think", "truth", "wall_s")} for ev in result["models"]],
            "gsm8k": result["gsm8k"], "findings": findings(result)}


JOB = Job("organism-eval", OrganismEvalConfig, run, models=(), report=report, summary=summary,
          help="a real organism (smol-r1) against its base and the zoo's R1 models: accuracy with/without thinking, ground truth per trace",
          findings="thinklens.zoo.jobs.organism_eval:findings", capability="Real weights")
