"""Planted and null settings of hybrid base/thinking steering (shared/specs/controls.md, issue 22 item 6), run by
``thinklens run validate --methods hybrid``.

- ``hybrid planted``: a pair whose gap comes from a known behaviour. The base is ``tiny-cot-short`` and the
  "thinking" model ``tiny-cot``: siblings of one recipe and format (cot chains of ``<< a op b = c >>`` steps),
  the base stopped at 300 training steps, so on long (6-8 step) chains it loses its place (copies a wrong
  operand or operation) where tiny-cot does not (the lineage of :mod:`steering.vector_validation`). The real
  ``hybrid`` job runs the two models alone, the hybrid and its random-vector control (random directions with
  the trained vectors' norms, everything else the same) on the same held-out problems. The gap is measured
  first (thinking minus base, Wilson intervals, McNemar). Statistic: the hybrid's accuracy minus the random
  control's, paired on problems (McNemar). Recovered when the gap is an effect, the hybrid beats its random
  control and the gap it recovers has a bootstrap interval above 0 (the quick version, too few problems for the
  paired test: the gap an effect and the hybrid above its control).
- ``hybrid null``: the same model as base and thinking (``tiny-cot-short`` twice): no gap, the two never
  disagree, so steering never fires: the hybrid must show no gain over the base.

Measured (full run, results/records/validate-latent-hybrid): the gap is real, 0.435 -> 0.82 (+0.385 [0.31, 0.46],
n=200); the hybrid reaches 0.475 (over the base, McNemar p=0.021; gap recovered 0.10 [0.03, 0.18]) but its random
control 0.445 is not beaten by the paired test (8 problems against 2, p=0.11): planted fails. Diagnostics: the
models disagree on 2.8% of tokens (1.4 a chain, the operand copies of later steps); there the thinking model's
token always passes the guardrail and is the base model's second choice at 77% of them, yet steering changes 15%
of them (random vectors 9%): the trained vectors lower the base model's NLL of the thinking model's sentences by
at most 0.008 nats a token and are about 7% of the residual norm at resid_post.2 (~270). With strengths up to 8
the hybrid and its control both gain (0.54 and 0.52, 22 problems against 18): what the hybrid recovers on this
pair comes from the thinking model choosing among perturbed candidates, not from the vectors' direction; a
category vector cannot carry which operand to copy.

Example:
    >>> [s.key for s in SETTINGS]
    ['hybrid/planted', 'hybrid/null']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from thinklens.controls import Check, Setting, SettingContext

PAIR: dict[str, str] = {"base": "tiny-cot-short", "thinking": "tiny-cot"}
"""The planted pair: a base weak on long chains and its better-trained sibling (same format and vocabulary)."""
MIN_STEPS, MAX_STEPS = 6, 8
MODES = ("base", "thinking", "hybrid", "random_vectors")


@dataclass(frozen=True)
class Plan:
    """How much a setting runs."""

    n_eval: int
    """Held-out problems evaluated per mode (the unit of the paired tests)."""
    n_train: int
    """Thinking-model traces that build the categories and vectors."""
    sae_steps: int
    vector_iters: int
    paired: bool = True
    """Judge "beats its random control" by the paired test (McNemar); False (the quick version: too few problems
    for the test in seconds): by its direction, the hybrid more accurate than the control."""


QUICK = Plan(n_eval=60, n_train=40, sae_steps=100, vector_iters=10, paired=False)
#: The quick null's vectors: the same model twice never disagrees, so steering never fires and the vectors'
#: training size cannot matter (the cost of the quick null is that training).
QUICK_NULL = Plan(n_eval=60, n_train=16, sae_steps=20, vector_iters=3, paired=False)
FULL = Plan(n_eval=200, n_train=150, sae_steps=600, vector_iters=50)


def _hybrid(ctx: SettingContext, plan: Plan, base: str, thinking: str, sub: str) -> dict[str, dict[str, Any]]:
    """Run the ``hybrid`` job into ``<workdir>/<sub>``; every mode's row (with its per-problem ``correct``)."""
    from thinklens.runs import RunFolder

    ctx.run_job("hybrid", sub, model=base, thinking=thinking, min_steps=MIN_STEPS, max_steps=MAX_STEPS,
                n_eval=plan.n_eval, n_train=plan.n_train, sae_steps=plan.sae_steps, vector_iters=plan.vector_iters,
                modes=MODES, seed=ctx.seed, n_seeds=1)
    assert ctx.workdir is not None
    return RunFolder.open(ctx.workdir / sub).read_result("hybrid_seeds")[str(ctx.seed)]


def vector_diagnostics(ctx: SettingContext, sub: str) -> dict[str, Any]:
    """What the trained vectors do for the base (the run's categories.json): each vector's training loss (the base
    model's mean NLL per token of its category's sentences) before and after, and the vectors' norms. A vector
    that barely lowers the NLL carries little of the thinking model's behaviour beyond a random direction."""
    from thinklens.runs import RunFolder

    assert ctx.workdir is not None
    cats = RunFolder.open(ctx.workdir / sub).read_result("categories")
    return {"nll_before_after": {k: [round(float(x), 4) for x in (v[0], v[-1])] for k, v in cats["losses"].items()},
            "bias_norm": cats["bias_norm"], "vector_norms": cats["vector_norms"], "sentences": cats["counts"]}


def _acc(rows: dict[str, dict[str, Any]], mode: str) -> dict[str, Any]:
    from thinklens.stats import wilson

    c = rows[mode]["correct"]
    return {"accuracy": sum(c) / len(c), "ci": list(wilson(sum(c), len(c))), "n": len(c),
            "fired_fraction": rows[mode].get("fired_fraction"), "changed_fraction": rows[mode].get("changed_fraction")}


def _check(f: Any, verdict: str, target: str, details: dict[str, Any]) -> Check:
    lo, hi = f.extra["diff_ci"]
    return Check(f"{f.statistic.replace(' ', '_')}", float(f.extra["diff"]), (float(lo), float(hi)), verdict, n=f.n,
                 target=target, details=details)


def _planted(ctx: SettingContext) -> Check:
    from steering.hybrid_generate import hybrid_findings
    from thinklens.stats import findings_doc, paired_finding

    plan = QUICK if ctx.quick else FULL
    rows = _hybrid(ctx, plan, PAIR["base"], PAIR["thinking"], "pair")
    findings = hybrid_findings(rows, seed=ctx.seed)
    gap, recovered = findings[0], findings[2]
    beats = paired_finding("the hybrid beats its random-vector control", rows["hybrid"]["correct"],
                           rows["random_vectors"]["correct"], control="random_vectors", statistic="accuracy_vs_random",
                           binary=True, seed=ctx.seed)
    diff = float(beats.extra["diff"])
    ok = gap.is_effect and (beats.is_effect and recovered.is_effect if plan.paired else diff > 0)
    details = {"pair": PAIR, "steps": [MIN_STEPS, MAX_STEPS], "accuracy": {m: _acc(rows, m) for m in MODES},
               "gap": gap.extra["diff"], "gap_ci": gap.extra["diff_ci"], "gap_p": gap.p,
               "gap_recovered": recovered.value, "gap_recovered_ci": list(recovered.ci),
               "beats_random_p": beats.p, "paired_test": plan.paired, "vectors": vector_diagnostics(ctx, "pair"),
               "findings": findings_doc([*findings, beats])}
    return _check(beats, "recovered" if ok else "failed",
                  "a gap (thinking beats base, McNemar); the hybrid beats its random-vector control (McNemar) and "
                  "recovers part of the gap (bootstrap interval above 0)", details)


def _null(ctx: SettingContext) -> Check:
    from thinklens.stats import findings_doc, paired_finding

    plan = QUICK_NULL if ctx.quick else FULL
    rows = _hybrid(ctx, plan, PAIR["base"], PAIR["base"], "same-model")
    gain = paired_finding("the hybrid raises accuracy over the base model", rows["hybrid"]["correct"],
                          rows["base"]["correct"], control="base model", statistic="accuracy_vs_base", binary=True,
                          seed=ctx.seed)
    details = {"pair": {"base": PAIR["base"], "thinking": PAIR["base"]}, "accuracy": {m: _acc(rows, m) for m in MODES},
               "paired_test": plan.paired, "findings": findings_doc([gain])}
    shown = gain.is_effect if plan.paired else float(gain.extra["diff"]) > 0
    return _check(gain, "no-effect" if not shown else "failed",
                  "the same model as base and thinking (no gap): no gain over the base (McNemar)", details)


SETTINGS = [
    Setting("hybrid", "planted", "recovered", _planted,
            help="base tiny-cot-short, thinking tiny-cot (gap on 6-8 step chains): the hybrid beats its random-vector "
            "control and recovers part of the gap"),
    Setting("hybrid", "null", "no-effect", _null,
            help="tiny-cot-short as both base and thinking model (no gap): no gain over the base"),
]
