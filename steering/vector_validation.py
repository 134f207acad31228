"""Planted and null settings of reasoning vectors (shared/specs/controls.md, "Headroom lineage").

The lineage (every model committed under data/zoo/, its parent recorded in its zoo.json):

- base ``tiny-pre``; sibling SFT fine-tunes of it on the cot mix: A = ``tiny-cot`` (1500 steps, seed 0) and
  B = ``tiny-cot-short`` (300 steps, seed 1: weak on long chains);
- ``tiny-grpo``: GRPO from A on 6-8 step problems (``thinklens run grpo``), which lifted A on 8-step problems
  (results/reasoning_vectors.json: 0.63 -> 0.76 over 300 held-out problems) and not on 6-7.

The skill is answering 8-step problems in cot style: B lacks it. Every run measures the headroom (GRPO's
accuracy minus B's on the same problems; must be >= 20 points) and, as the positive control of the vector
itself, v's gain on its own parent A (A + v is the GRPO model).

- ``reasoning-vector planted``: ``v = theta_GRPO - theta_A`` (A checked to be GRPO's recorded parent) added to
  B at several alphas; the alpha is chosen on one split of the problems and the gain reported on the other
  (:func:`thinklens.steering.reasoning_vectors.sweep_findings`): recovered when v at its alpha beats alpha 0 by >= 5
  points (McNemar) and beats the norm-matched random direction (McNemar, the control's alpha chosen on the
  same split), with the headroom there.
- ``reasoning-vector null``: the vector under test is a random direction with v's per-tensor norms (a weight
  change of v's size that carries no skill), swept the same way. No effect is shown, not assumed: at every non-zero
  alpha swept, the per-problem accuracy difference against alpha 0 (all problems: nothing is selected) must lie within
  +-:data:`NULL_MARGIN` (the 90% interval of its mean, a TOST; exact when no problem changes), and the paired test at
  the alpha chosen on one split must not call it a gain. (Testing only the chosen alpha would test nothing whenever
  alpha 0 is chosen: alpha 0 against itself.)

Quick versions score few problems and alphas (the default test tier); the full ones enough problems for a
5-point gain to show.

Example:
    >>> [s.key for s in SETTINGS]
    ['reasoning-vector/planted', 'reasoning-vector/null']
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch
from transformers import AutoTokenizer

from thinklens.calibration import findings as calibration_findings
from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.calibration.findings import paired_finding
from thinklens.calibration.tost import tost_mean
from thinklens.errors import ThinklensError
from thinklens.steering.reasoning_vectors import alpha_sweep, apply_vector, load_causal_lm, reasoning_vector, sweep_findings, zoo_scorer
from thinklens.tasks.protocol import problems_by_steps, zoo_meta
from thinklens.zoo.registry import repo_root

#: The headroom lineage: role -> zoo model (data/zoo/<name>).
LINEAGE: dict[str, str] = {"base": "tiny-pre", "a": "tiny-cot", "grpo": "tiny-grpo", "b": "tiny-cot-short"}
#: The skill B lacks: problems of these step counts, prompted in this zoo style.
SKILL: dict[str, Any] = {"min_steps": 8, "max_steps": 8, "style": "cot"}
MIN_HEADROOM = 0.20
MIN_GAIN = 0.05
NULL_MARGIN = MIN_GAIN
"""The null's margin of no practical effect on accuracy, stated before any run: the smallest gain the planted setting
calls an effect."""
#: Held-out problems of the settings: far from the training streams (seeds 0..) and the other held-out seeds.
PROBLEM_SEED = 70_000


@dataclass(frozen=True)
class Plan:
    """How much a setting scores."""

    n_per_steps: int
    """Problems per step count of the skill (split in half: alpha chosen on one half, reported on the other)."""
    alphas: tuple[float, ...]
    """Scales of v swept (0 included: B itself)."""


QUICK = Plan(n_per_steps=120, alphas=(0.0, 1.0, 2.0))
FULL = Plan(n_per_steps=400, alphas=(-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0))


def zoo_folder(name: str) -> str:
    """The committed folder of zoo model ``name`` (a clear error when it is missing)."""
    path = repo_root() / "data" / "zoo" / name
    if not (path / "config.json").is_file():
        raise ThinklensError.of("zoo model", name, f"a committed model under {path.parent}",
                                "git pull the zoo (data/zoo/) or retrain it with the command in its zoo.json")
    return str(path)


def lineage_vector(lineage: dict[str, str] | None = None) -> Any:
    """``v = theta_GRPO - theta_A``, refusing an A that is not the GRPO model's recorded parent (zoo.json ``init``)."""
    lin = lineage or LINEAGE
    parent = zoo_meta(zoo_folder(lin["grpo"])).get("init")
    if parent is None or Path(str(parent)).name != lin["a"]:  # a zoo name or its folder (data/zoo/<name>)
        raise ThinklensError.of("reasoning vector parent", f"{lin['grpo']} - {lin['a']}",
                                f"{lin['grpo']} minus its recorded parent {parent!r}",
                                "subtract the checkpoint the GRPO run started from")
    v, report = reasoning_vector(zoo_folder(lin["grpo"]), zoo_folder(lin["a"]), base=zoo_folder(lin["base"]))
    if not report.related:
        raise ThinklensError.of("lineage", report, "fine-tunes of one init", "use checkpoints of one lineage")
    return v


@lru_cache(maxsize=4)
def _problems(n_per_steps: int, seed: int) -> tuple:
    return tuple(problems_by_steps(n_per_steps, SKILL["min_steps"], SKILL["max_steps"], seed=PROBLEM_SEED + seed))


def _scorer(plan: Plan, seed: int):
    tok = AutoTokenizer.from_pretrained(zoo_folder(LINEAGE["b"]))
    target = load_causal_lm(zoo_folder(LINEAGE["b"]))
    return target, zoo_scorer(tok, list(_problems(plan.n_per_steps, seed)), SKILL["style"])


@lru_cache(maxsize=4)
def _alpha0(n_per_steps: int, seed: int) -> dict[str, Any]:
    """B's own outcomes on the setting's problems (shared by the planted and the null run of one process)."""
    target, score = _scorer(Plan(n_per_steps, (0.0,)), seed)
    return score(target)


def sweep(v: Any, controls: dict[str, Any], plan: Plan, seed: int) -> tuple[list[Any], dict[str, Any], dict[str, Any],
                                                                       dict[float, list[bool]]]:
    """``v`` and each control added to B over ``plan.alphas``; returns ``(findings, choice, accuracies, outcomes)``
    (``outcomes``: alpha -> v's per-problem correctness)."""
    target, score = _scorer(plan, seed)
    at_zero = _alpha0(plan.n_per_steps, seed)

    def evaluate(model: Any) -> dict[str, Any]:
        return at_zero if model_equals(model, target) else score(model)

    sweeps = {name: {r["alpha"]: r["correct"] for r in alpha_sweep(target, vec, plan.alphas, evaluate)}
              for name, vec in {"v": v, **controls}.items()}
    method = sweeps.pop("v")
    findings, choice = sweep_findings(method, sweeps, label="v", seed=seed, min_gain=MIN_GAIN)
    acc = {name: {str(a): sum(c) / len(c) for a, c in s.items()} for name, s in {"v": method, **sweeps}.items()}
    return findings, choice, acc, method


def model_equals(model: Any, target: Any) -> bool:
    """Whether ``model`` has exactly ``target``'s weights (alpha 0: the scored target is reused, not re-scored)."""
    return all(torch.equal(p, q) for p, q in zip(model.parameters(), target.parameters()))


def _check(findings: list[Any], choice: dict[str, Any], details: dict[str, Any], verdict: str, target: str,
           value: float | None = None, ci: tuple[float, float] | None = None, n: int | None = None) -> Check:
    gain = findings[0]
    lo, hi = gain.extra["diff_ci"] if ci is None else ci
    value = float(gain.extra["diff"]) if value is None else value
    return Check("gain_over_alpha0", value, (float(lo), float(hi)), verdict, n=gain.n if n is None else n, target=target,
                 details={**details, "alpha": choice["alpha"], "control_alphas": choice["control_alphas"],
                          "n_select": len(choice["select"]), "findings": calibration_findings.findings_doc(findings)})


def planted_verdict(headroom: float, over_zero: Any, over_random: Any) -> str:
    """The planted setting's verdict: the lineage has its headroom (the GRPO model's accuracy over B's at alpha 0),
    and v beats both alpha 0 (by at least :data:`MIN_GAIN`, which :func:`sweep` asks of that finding) and the
    norm-matched random direction (the two findings' paired tests).

    Example:
        >>> from types import SimpleNamespace as F
        >>> planted_verdict(0.3, F(is_effect=True), F(is_effect=True)), planted_verdict(0.1, F(is_effect=True), F(is_effect=True))
        ('recovered', 'failed')
    """
    beats_zero, beats_random = over_zero.is_effect, over_random.is_effect
    return "recovered" if headroom >= MIN_HEADROOM and beats_zero and beats_random else "failed"


def _planted(ctx: SettingContext) -> Check:
    plan = QUICK if ctx.quick else FULL
    v = lineage_vector()
    _, score = _scorer(plan, ctx.seed)
    a_model = load_causal_lm(zoo_folder(LINEAGE["a"]))
    on_a, on_grpo = score(a_model), score(apply_vector(a_model, v, 1.0))  # A + v is the GRPO model, exactly
    b0 = _alpha0(plan.n_per_steps, ctx.seed)["accuracy"]
    # the positive control of the vector itself: does v carry the skill on the model it was taken from?
    parent = paired_finding("v lifts its own parent A (A + v = the GRPO model)", on_grpo["correct"], on_a["correct"],
                            control="A", statistic="accuracy", binary=True, seed=ctx.seed)
    findings, choice, acc, _ = sweep(v, {"norm-matched random direction": v.random_like(ctx.seed)}, plan, ctx.seed)
    headroom = on_grpo["accuracy"] - b0
    verdict = planted_verdict(headroom, findings[0], findings[1])
    return _check(findings, choice, {"headroom": headroom, "grpo_accuracy": on_grpo["accuracy"], "a_accuracy": on_a["accuracy"],
                                     "b_accuracy": b0, "gain_on_parent": calibration_findings.findings_doc([parent])[0], "accuracy": acc,
                                     "lineage": LINEAGE, "skill": SKILL, "norm_v": v.norm()}, verdict,
                  f"headroom >= {MIN_HEADROOM}; v beats alpha 0 by >= {MIN_GAIN} (McNemar, alpha chosen on the other "
                  "split) and beats the norm-matched random direction")


def null_equivalence(outcomes: dict[float, Any]) -> dict[float, Any]:
    """Per non-zero alpha: TOST of the per-problem accuracy difference against alpha 0 within +-:data:`NULL_MARGIN`
    (:func:`thinklens.calibration.tost.tost_mean`, differences bounded by -1 and 1).

    Example:
        >>> same = {0.0: [True, False] * 60, 1.0: [True, False] * 60}
        >>> {a: e.equivalent for a, e in null_equivalence(same).items()}
        {1.0: True}
        >>> gain = {0.0: [True, False] * 60, 1.0: [True] * 120, 2.0: [True, False] * 60}
        >>> {a: e.equivalent for a, e in null_equivalence(gain).items()}
        {1.0: False, 2.0: True}
    """
    base = [float(x) for x in outcomes[0.0]]
    return {a: tost_mean([float(x) - b for x, b in zip(c, base)], margin=NULL_MARGIN, bounds=(-1.0, 1.0))
            for a, c in sorted(outcomes.items()) if a != 0.0}


def _null(ctx: SettingContext) -> Check:
    plan = QUICK if ctx.quick else FULL
    v = lineage_vector()
    null = v.random_like(ctx.seed + 101)  # the vector under test: v's per-tensor norms, no skill
    findings, choice, acc, outcomes = sweep(null, {"norm-matched random direction": v.random_like(ctx.seed + 202)}, plan,
                                            ctx.seed)
    tests = null_equivalence(outcomes)
    worst = max(tests, key=lambda a: (not tests[a].equivalent, max(abs(tests[a].ci[0]), abs(tests[a].ci[1]))))
    eq = tests[worst]
    shown = all(t.equivalent for t in tests.values())
    verdict = "no-effect" if shown and not findings[0].is_effect else "failed"
    return _check(findings, choice, {"accuracy": acc, "norm_v": v.norm(), "norm_tested": null.norm(), "margin": NULL_MARGIN,
                                     "worst_alpha": worst, "equivalent": shown,
                                     "tost": {str(a): {"mean": t.mean, "ci90": list(t.ci), "p": t.p, "n": t.n,
                                                       "equivalent": t.equivalent} for a, t in tests.items()}}, verdict,
                  f"a random delta of v's per-tensor norms: at every non-zero alpha, accuracy minus alpha 0's on held-out "
                  f"problems has its 90% interval inside +-{NULL_MARGIN} (TOST), and no gain by the paired test",
                  value=eq.mean, ci=eq.ci, n=eq.n)


SETTINGS = [
    Setting("reasoning-vector", "planted", "recovered", _planted, kind="benchmark",
            help="v = tiny-grpo - tiny-cot on the sibling tiny-cot-short (lacks 8-step chains): >= 5 points over alpha 0 "
            "and beats the norm-matched random direction"),
    Setting("reasoning-vector", "null", "no-effect", _null,
            help="a random delta of v's per-tensor norms added to tiny-cot-short: no effect"),
]
