"""Planted and null settings of hybrid base/thinking steering (shared/specs/controls.md),
run by ``thinklens run validate --methods hybrid``.

The hybrid's claim (Venhoff et al., "Base models know how to reason, thinking models learn when") is that the base
already has the reasoning mechanisms and the thinking model only decides when to use them. Three planted settings:
a gap that is a skill (``skill-gap``), a behaviour the base lacks (``absent-behaviour``) and a behaviour the base has
but rarely uses (``planted-latent``). Each is recovered only when the hybrid beats its random-vector control (random
directions with the trained vectors' norms) by the paired test. The first two were filed as planted effects, failed
as such, and were once relabelled "boundary" (expected ``no-effect``) so that they counted as passes; passing by
non-significance is not a pass, so they are planted again and count as ``failed`` where the hybrid does
not recover them, with the numbers and the reason in the check (``details["why"]``). Measured: both fail (below).
Quick (seed 0): skill-gap 0.50 against its control's 0.45, +0.05 [-0.049, 0.108], McNemar p=0.45: failed; null 0
[-0.045, 0.045] on 80 problems, reach 0.15 nats: no-effect; absent-behaviour 0/10 against 0/10: failed;
planted-latent 7/10 against 0/10, p=0.016: recovered (accuracy 1.0 -> 0.6, -0.4 [-0.4, 0.08]): validated=2/4.

One null, ``null``: it passes only by an equivalence test (TOST, :mod:`thinklens.calibration.tost`) within
:data:`NULL_MARGIN`, stated here before any run, and only when the vectors demonstrably move the base model
(:func:`thinklens.steering.hybrid_generate.steering_reach` at least its ``MIN_REACH``): an inert method (vectors
that change nothing) fails it.

- ``hybrid skill-gap`` (planted; failed when measured): base ``tiny-cot-short``, "thinking" model ``tiny-cot``:
  siblings of one recipe and format (cot chains of ``<< a op b = c >>`` steps), the base stopped at 300 training
  steps, so on long (6-8 step) chains it loses its place (copies a wrong operand or operation) where tiny-cot does
  not (the lineage of :mod:`thinklens.steering.vector_validation`). The real ``hybrid`` job runs the two models alone,
  the hybrid and its random-vector control (random directions with the trained vectors' norms, everything else the
  same) on the same held-out problems. Precondition: the gap is an effect (thinking minus base, McNemar).
  Statistic: the hybrid's accuracy minus the random control's, paired on problems, with McNemar's own
  exact interval (:func:`thinklens.calibration.stats.mcnemar_interval`). Recovered when the hybrid beats its control
  by McNemar, quick or full (the quick version once judged by direction alone and said "recovered" at +0.05
  [-0.049, 0.108]: a verdict its own interval refuted); otherwise failed.
- ``hybrid null``: the same model as base and thinking (``tiny-cot-short`` twice): no gap, the two never
  disagree, so steering never fires. Passes when the hybrid's accuracy minus the base's, paired over problems, is
  shown within +-:data:`NULL_MARGIN` (TOST at alpha 0.025 a side: its 95% interval inside the margin; where no
  problem changes, the exact bound of :func:`thinklens.calibration.tost.tost_mean`, so it needs at least 72 problems)
  and the trained vectors move the base model (reach).

Measured on the skill gap (full run, n=200; the record is in results/collect.py's ``VALIDATION_RECORDS``): the gap is
real, 0.435 -> 0.82 (+0.385 [0.31, 0.46]); the hybrid reaches 0.475 (over the base, McNemar p=0.021; gap recovered
0.10 [0.03, 0.18]) and its random control 0.445: 8 problems against 2, McNemar p=0.11: not recovered (failed). Its
difference interval is now McNemar's own, 0.03 [-0.006, 0.047] (exact, conditional on the 10 discordant problems);
the paired bootstrap's [0.005, 0.06], which excluded 0 beside p = 0.11, is no longer reported.
Diagnostics: the models disagree on 2.8% of tokens (1.4 a chain, the
operand copies of later steps); there the thinking model's token always passes the guardrail and is the base
model's second choice at 77% of them, yet steering changes 15% of them (random vectors 9%): the trained vectors
lower the base model's NLL of the thinking model's sentences by at most 0.008 nats a token and are about 7% of the
residual norm at resid_post.2 (~270). With strengths up to 8 the hybrid and its control both gain (0.54 and 0.52,
22 problems against 18): what the hybrid recovers on this pair comes from the thinking model choosing among
perturbed candidates, not from the vectors' direction; a category vector cannot carry which operand to copy.

- ``hybrid absent-behaviour`` (planted; failed when measured): a gap that is a behaviour the base lacks.
  Base ``tiny-r1``, thinking ``tiny-overthink`` (tiny-r1 fine-tuned to re-check an answer it already has: "Wait, let
  me double-check." / "Hmm, let me verify." rounds), 2-4 step problems. Statistic: the share of traces with at least
  one re-check round (:func:`~thinklens.steering.hybrid_behaviour.rechecks`, read by
  :func:`thinklens.zoo.overthink.ground_truth`) under the hybrid minus under its random-vector control, paired over
  problems (McNemar); the precondition is the gap, thinking's rate minus base's. Recovered when the hybrid beats its
  control by the paired test. Measured (full, n=100): base 0/100, thinking 100/100 (gap 1.0, p=1.6e-30), hybrid
  0/100, random 0/100: not recovered (failed). Why (``cue_diagnostics``, kept on every run of the setting): at the
  end of the hybrid's
  reasoning the thinking model's next token is " Wait" on 100/100 and the models disagree on 98; the unsteered
  base gives it median 2.7e-5 (11% pass the guardrail ``min_base_prob`` 1e-3), and a steered candidate is only
  ever the steered base's argmax: on seed 1 (n=8, vectors from 24 traces, 25 iterations), bias + category vector at
  strength up to 16 (the job's go to 1) raises p(" Wait") to at most 1.3e-3, random vectors of the same norm to
  1.8e-2, never to the top. The category SAE does isolate the round cue (one category is "let me" /
  "double-check" sentences), but a vector trained on those sentences' tokens does not move the decision to open
  one: the hybrid can only choose among tokens the steered base would itself emit. (Those probabilities were taken
  after the reasoning's last full stop; greedy decoding decides one token earlier, '.\n' against '.', where
  tiny-r1 gives '.' 5e-5 to 1e-4 on six problems of seed 0: below the guardrail too.)
- ``hybrid planted-latent``: the behaviour there but rare in the base. Base ``tiny-r1-sometimes`` (tiny-r1
  fine-tuned on tiny-overthink's texts of which 10% re-check; greedy, it never does, at 1.00 accuracy), thinking
  ``tiny-overthink``. Where the reasoning would end the base writes '.\n' (p about 0.91) or '.' (about 0.09, after
  which it opens a round with p 0.9997): the decision is at the full stop, one token before the round's first
  word (the category vectors train on the sentences' own tokens, not on it). With strengths up to 8
  (:data:`LATENT_OVERRIDES`), measured (full, n=100, results/records/validate-hybrid-latent, 2 threads): base
  0/100 re-check, thinking 100/100, hybrid 100/100, random-vector control 0/100 (McNemar p=1.6e-30): recovered.
  The base's own rounds miscopy (only 10% of its training texts had rounds), so the hybrid's accuracy falls
  from the base's 1.00 to 0.45: that cost is part of the check (``details["accuracy_cost"]``, the hybrid's
  accuracy minus the base's, McNemar, and its target line), reported, not bounded. At the job's strengths
  (at most 1) it fails, 0/100 against 0/100, with and without ``open_token`` (no steered argmax flips the full
  stop: changed_fraction 0; records validate-hybrid-latent-job-strengths, validate-hybrid-latent-open-token); with
  ``open_token`` at strengths up to 8 it is recovered the same way (100/100 against 0/100, accuracy 0.47; record
  validate-hybrid-latent-open-token-s8).

Example:
    >>> [s.key for s in SETTINGS]
    ['hybrid/skill-gap', 'hybrid/null', 'hybrid/absent-behaviour', 'hybrid/planted-latent']
"""

from __future__ import annotations

from typing import Any

import numpy as np

from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.calibration.findings import MIN_N, _fmt, findings_doc, paired_finding
from thinklens.calibration.stats import wilson
from thinklens.calibration.tost import tost_mean
from thinklens.runs.folders import RunFolder
from thinklens.steering.configs import HybridConfig
from thinklens.steering.hybrid_behaviour import BEHAVIOUR_OVERRIDES, BEHAVIOUR_PAIR, BEHAVIOUR_STEPS, Plan, behaviour_rows, cue_diagnostics
from thinklens.steering.hybrid_generate import hybrid_findings

PAIR: dict[str, str] = {"base": "tiny-cot-short", "thinking": "tiny-cot"}
"""The planted pair: a base weak on long chains and its better-trained sibling (same format and vocabulary)."""
MIN_STEPS, MAX_STEPS = 6, 8
MODES = ("base", "thinking", "hybrid", "random_vectors")


QUICK = Plan(n_eval=60, n_train=40, sae_steps=100, vector_iters=10)
#: The quick null's vectors: the same model twice never disagrees, so steering never fires and the vectors' training
#: size matters only for their reach (3 iterations: a log-prob shift of about 0.15 nats, above ``MIN_REACH``). Its
#: problems: the equivalence test must be able to pass; where no problem changes, the exact bound on the share that
#: could change unseen is ``1 - NULL_ALPHA ** (1 / n)`` (0.060 at 60 problems, 0.045 at 80), inside the 0.05 margin
#: only from 72 problems.
QUICK_NULL = Plan(n_eval=80, n_train=16, sae_steps=20, vector_iters=3)
FULL = Plan(n_eval=200, n_train=150, sae_steps=600, vector_iters=50)


def _hybrid(ctx: SettingContext, plan: Plan, base: str, thinking: str, sub: str) -> dict[str, dict[str, Any]]:
    """Run the ``hybrid`` job into ``<workdir>/<sub>``; every mode's row (with its per-problem ``correct``)."""
    ctx.run_job("hybrid", sub, model=base, thinking=thinking, min_steps=MIN_STEPS, max_steps=MAX_STEPS,
                n_eval=plan.n_eval, n_train=plan.n_train, sae_steps=plan.sae_steps, vector_iters=plan.vector_iters,
                modes=MODES, seed=ctx.seed, n_seeds=1)
    assert ctx.workdir is not None
    return RunFolder.open(ctx.workdir / sub).read_result("hybrid_seeds")[str(ctx.seed)]


def vector_diagnostics(ctx: SettingContext, sub: str) -> dict[str, Any]:
    """What the trained vectors do for the base (the run's categories.json): each vector's training loss (the base
    model's mean NLL per token of its category's sentences) before and after, and the vectors' norms. A vector
    that barely lowers the NLL carries little of the thinking model's behaviour beyond a random direction."""
    assert ctx.workdir is not None
    cats = RunFolder.open(ctx.workdir / sub).read_result("categories")
    return {"nll_before_after": {k: [round(float(x), 4) for x in (v[0], v[-1])] for k, v in cats["losses"].items()},
            "bias_norm": cats["bias_norm"], "vector_norms": cats["vector_norms"], "sentences": cats["counts"]}


def _acc(rows: dict[str, dict[str, Any]], mode: str) -> dict[str, Any]:
    c = rows[mode]["correct"]
    return {"accuracy": sum(c) / len(c), "ci": list(wilson(sum(c), len(c))), "n": len(c),
            "fired_fraction": rows[mode].get("fired_fraction"), "changed_fraction": rows[mode].get("changed_fraction")}


def _check(f: Any, verdict: str, target: str, details: dict[str, Any]) -> Check:
    lo, hi = f.extra["diff_ci"]
    return Check(f"{f.statistic.replace(' ', '_')}", float(f.extra["diff"]), (float(lo), float(hi)), verdict, n=f.n,
                 target=target, details=details)


def _recovered(gap: Any, beats: Any, what: str) -> tuple[str, str]:
    """A planted setting's rule, the same for the three, quick or full: recovered when the gap is there (McNemar) and
    the hybrid beats its random-vector control (McNemar, whose exact interval is the check's). The verdict, and why
    in words with the numbers when it is not recovered."""
    if gap.verdict == "too few samples" or beats.verdict == "too few samples":
        return "failed", f"too few problems to test: {gap.n} (at least {MIN_N})"
    has_gap = gap.is_effect
    if not has_gap:
        return "failed", (f"no gap to recover: the thinking model's {what} {_fmt(gap.value)} against the base's "
                          f"{_fmt(gap.control_value)} (McNemar p={_fmt(gap.p)})")
    beat = beats.is_effect
    if not beat:
        lo, hi = beats.extra["diff_ci"]
        return "failed", (f"the hybrid does not beat its random-vector control: {what} {_fmt(beats.value)} against "
                          f"{_fmt(beats.control_value)}, difference {_fmt(beats.extra['diff'])} [{_fmt(lo)}, {_fmt(hi)}] "
                          f"(McNemar p={_fmt(beats.p)})")
    return "recovered", ""


def _skill_gap(ctx: SettingContext) -> Check:
    plan = QUICK if ctx.quick else FULL
    rows = _hybrid(ctx, plan, PAIR["base"], PAIR["thinking"], "pair")
    findings = hybrid_findings(rows, seed=ctx.seed)
    gap, over_base, recovered = findings[0], findings[1], findings[2]
    beats = paired_finding("the hybrid beats its random-vector control", rows["hybrid"]["correct"],
                           rows["random_vectors"]["correct"], control="random_vectors", statistic="accuracy_vs_random",
                           binary=True, seed=ctx.seed)
    verdict, why = _recovered(gap, beats, "accuracy")
    details = {"pair": PAIR, "steps": [MIN_STEPS, MAX_STEPS], "accuracy": {m: _acc(rows, m) for m in MODES},
               "gap": gap.extra["diff"], "gap_ci": gap.extra["diff_ci"], "gap_p": gap.p,
               "precondition_met": gap.is_effect,
               "precondition": "a gap: the thinking model beats the base (McNemar)",
               "over_base": over_base.extra["diff"], "over_base_p": over_base.p,
               "gap_recovered": recovered.value, "gap_recovered_ci": list(recovered.ci),
               "beats_random_p": beats.p, "vectors": vector_diagnostics(ctx, "pair"),
               "findings": findings_doc([*findings, beats])}
    if why:
        details["why"] = why
    return _check(beats, verdict,
                  "a gap (thinking beats base, McNemar); the hybrid beats its random-vector control (McNemar, exact "
                  "interval of the difference)", details)


#: The null's margin of no practical effect, stated before any run: the hybrid's accuracy minus the base's, paired
#: over problems, must be shown inside +-0.05 (five points of accuracy) by an equivalence test.
NULL_MARGIN = 0.05
#: Each side of the null's TOST: at 0.025 its interval is the 95% one a check reports.
NULL_ALPHA = 0.025


def _reach(ctx: SettingContext, sub: str) -> dict[str, Any]:
    """The sub-run's :func:`thinklens.steering.hybrid_generate.steering_reach` of this seed (its hybrid_reach.json)."""
    assert ctx.workdir is not None
    return RunFolder.open(ctx.workdir / sub).read_result("hybrid_reach")[str(ctx.seed)]


def _null(ctx: SettingContext) -> Check:
    """No effect shown, not assumed: the hybrid's accuracy minus the base's within +-:data:`NULL_MARGIN` by TOST
    (at :data:`NULL_ALPHA` a side), and vectors that move the base model (an inert method fails here)."""
    plan = QUICK_NULL if ctx.quick else FULL
    rows = _hybrid(ctx, plan, PAIR["base"], PAIR["base"], "same-model")
    reach = _reach(ctx, "same-model")
    hybrid, base = (np.asarray(rows[m]["correct"], dtype=float) for m in ("hybrid", "base"))
    eq = tost_mean(hybrid - base, margin=NULL_MARGIN, alpha=NULL_ALPHA, bounds=(-1.0, 1.0))  # a 0/1 outcome's change
    gain = paired_finding("the hybrid raises accuracy over the base model", hybrid, base, control="base model",
                          statistic="accuracy_vs_base", binary=True, seed=ctx.seed)
    moves = float(reach["shift"]) >= float(reach["min_reach"])
    why = []
    if not eq.equivalent:
        why.append(f"not shown within +-{NULL_MARGIN}: hybrid minus base {_fmt(eq.mean)} [{_fmt(eq.ci[0])}, "
                   f"{_fmt(eq.ci[1])}] (TOST p={_fmt(eq.p)}, n={eq.n})")
    if not moves:
        why.append(f"the vectors do not move the base model (reach: log-prob shift {_fmt(reach['shift'])} < "
                   f"{_fmt(reach['min_reach'])} nats): an inert method passes a null only vacuously")
    details = {"pair": {"base": PAIR["base"], "thinking": PAIR["base"]}, "accuracy": {m: _acc(rows, m) for m in MODES},
               "margin": NULL_MARGIN,
               "equivalence": {"test": f"TOST (paired t, alpha {NULL_ALPHA} a side)", "diff": eq.mean,
                               "ci": list(eq.ci), "p": eq.p, "n": eq.n, "margin": NULL_MARGIN,
                               "equivalent": eq.equivalent},
               "reach": reach, "findings": findings_doc([gain])}
    if why:
        details["why"] = "; ".join(why)
    return Check("accuracy_vs_base", float(eq.mean), (float(eq.ci[0]), float(eq.ci[1])),
                 "no-effect" if eq.equivalent and moves else "failed", n=eq.n,
                 target=f"the same model as base and thinking (no gap): hybrid minus base accuracy within +-{NULL_MARGIN} "
                 f"(TOST, its {1 - 2 * NULL_ALPHA:.0%} interval inside the margin), and vectors that move the base "
                 f"(log-prob shift >= {reach['min_reach']} nats)", details=details)


SETTINGS = [
    Setting("hybrid", "skill-gap", "recovered", _skill_gap,
            help="base tiny-cot-short, thinking tiny-cot (a skill gap on 6-8 step chains: which operand to copy): the "
            "hybrid beats its random-vector control (McNemar); measured: failed (8 problems against 2, p=0.11)"),
    Setting("hybrid", "null", "no-effect", _null,
            help=f"tiny-cot-short as both base and thinking model (no gap): hybrid minus base accuracy within "
            f"+-{NULL_MARGIN} (TOST), with vectors that move the base"),
]


# ---------------------------------------------------------------- absent-behaviour: a gap that is a behaviour the base lacks

#: The quick behaviour plans evaluate 10 problems: the paired tests' fewest units (thinklens.calibration.findings.MIN_N;
#: at 8 every finding is "too few samples" and nothing can be recovered).
QUICK_BEHAVIOUR = Plan(n_eval=10, n_train=6, sae_steps=20, vector_iters=2)
FULL_BEHAVIOUR = Plan(n_eval=100, n_train=100, sae_steps=600, vector_iters=50)
#: planted-latent's quick version: vectors trained enough to move the full stop (at QUICK_BEHAVIOUR's 2 iterations
#: on 6 traces the hybrid re-checks 0/8, like its control; at this plan 6/8 against 0/8, 129 s at 2 threads; at 10
#: problems 7/10 against 0/10, +0.7 [0.13, 0.7], McNemar p=0.016: recovered, accuracy 1.0 -> 0.6, 395 s at 1 thread).
QUICK_LATENT = Plan(n_eval=10, n_train=24, sae_steps=100, vector_iters=25)


def _absent_behaviour(ctx: SettingContext) -> Check:
    return _behaviour_check(ctx, BEHAVIOUR_PAIR, "behaviour", BEHAVIOUR_OVERRIDES)


def _planted_latent(ctx: SettingContext) -> Check:
    return _behaviour_check(ctx, LATENT_PAIR, "latent-behaviour", LATENT_OVERRIDES, quick=QUICK_LATENT)


def _behaviour_check(ctx: SettingContext, pair: dict[str, str], sub: str, overrides: dict[str, Any],
                     quick: Plan = QUICK_BEHAVIOUR) -> Check:
    """A behaviour pair's planted setting: recovered when the gap is an effect and the hybrid re-checks more often
    than its random-vector control (McNemar, :func:`_recovered`); otherwise failed, with why
    and the cue diagnostics. The accuracy cost (the hybrid's accuracy minus the base's, McNemar with its own exact
    interval) is part of every check: in ``details["accuracy_cost"]`` and in the target line."""
    plan = quick if ctx.quick else FULL_BEHAVIOUR
    rows = behaviour_rows(ctx, plan, sub, pair, overrides)
    gap = paired_finding("the thinking model re-checks more often than the base", rows["thinking"]["recheck"],
                         rows["base"]["recheck"], control="base model", statistic="recheck_rate_gap", binary=True,
                         seed=ctx.seed)
    beats = paired_finding("the hybrid re-checks more often than its random-vector control", rows["hybrid"]["recheck"],
                           rows["random_vectors"]["recheck"], control="random_vectors", statistic="recheck_vs_random",
                           binary=True, seed=ctx.seed)
    cost = paired_finding("the hybrid's accuracy against the base model's", rows["hybrid"]["correct"],
                          rows["base"]["correct"], control="base model", statistic="accuracy_vs_base", binary=True,
                          seed=ctx.seed)
    verdict, why = _recovered(gap, beats, "re-check rate")
    rates = {m: {"recheck_rate": sum(r["recheck"]) / len(r["recheck"]),
                 "ci": list(wilson(sum(r["recheck"]), len(r["recheck"]))), "n": len(r["recheck"]),
                 "accuracy": sum(r["correct"]) / len(r["correct"]), "fired_fraction": r["fired_fraction"],
                 "changed_fraction": r["changed_fraction"]} for m, r in rows.items()}
    lo, hi = cost.extra["diff_ci"]
    accuracy_cost = {"diff": cost.extra["diff"], "ci": [lo, hi], "p": cost.p, "test": cost.extra["test"],
                     "hybrid": cost.value, "base": cost.control_value, "n": cost.n, "bound": None,
                     "why_unbounded": "the behaviour recovered is the base model's own, accuracy included (its rounds "
                                      "miscopy where its training texts rarely had them): reported, not bounded"}
    details: dict[str, Any] = {"pair": pair, "steps": list(BEHAVIOUR_STEPS), "rates": rates,
                               "gap": float(gap.extra["diff"]), "gap_ci": gap.extra["diff_ci"], "gap_p": gap.p,
                               "precondition_met": gap.is_effect,
                               "precondition": "a behaviour gap: the thinking model re-checks more often than the base "
                                               "(McNemar)",
                               "beats_random_p": beats.p, "overrides": overrides,
                               "accuracy_cost": accuracy_cost,
                               "samples": {m: r["texts"][:2] for m, r in rows.items()},
                               "findings": findings_doc([gap, beats, cost])}
    if why:
        details["why"] = why
    if verdict != "recovered":  # why not: where the thinking model would open a round, can the guardrail let it through?
        min_p = overrides.get("min_base_prob", HybridConfig.min_base_prob)
        try:
            details["cue_diagnostics"] = cue_diagnostics(ctx, rows, min_p, pair)
        except Exception as e:  # diagnostics never change the verdict
            details["cue_diagnostics"] = {"error": f"{type(e).__name__}: {e}"}
    target = ("a behaviour gap (thinking re-checks more often than base, McNemar); the hybrid re-checks more often "
              "than its random-vector control (McNemar, paired over problems); accuracy cost, hybrid minus base: "
              f"{_fmt(cost.extra['diff'])} [{_fmt(lo)}, {_fmt(hi)}] (McNemar p={_fmt(cost.p)}), reported, not bounded")
    return _check(beats, verdict, target, details)


SETTINGS.append(Setting(
    "hybrid", "absent-behaviour", "recovered", _absent_behaviour,
    help="base tiny-r1, which never re-checks, thinking tiny-overthink (gap: re-check rounds after the answer): the "
    "hybrid's traces re-check more often than its random-vector control's; measured: failed (0/100 against 0/100: "
    "the base gives the round's cue below the guardrail)"))


# ---------------------------------------------------------------- planted-latent: the behaviour there but rare in the base

LATENT_PAIR: dict[str, str] = {"base": "tiny-r1-sometimes", "thinking": "tiny-overthink"}
"""A base that knows the behaviour but rarely uses it: tiny-r1 fine-tuned on tiny-overthink's texts of which 10%
re-check (so greedy it concludes once, while a round cue keeps a probability the guardrail lets through), and the
thinking model that always re-checks. The hybrid's thesis in one pair: the base has the mechanism, the thinking
model decides when to use it."""
LATENT_OVERRIDES: dict[str, Any] = {"strengths": (1.0, 2.0, 4.0, 8.0)}
"""Where the reasoning would end, the base's re-check ('.' before a round, against '.\n' closing the reasoning) is
its argmax only after a logit shift of about 2.3 nats (p 0.09 against 0.91), beyond the job's strengths of at most
1, so strengths go to 8 (the same for the random control). Training the vectors on that token too
(``open_token``) gives the same result (100/100 against 0/100), so the setting leaves it off."""

SETTINGS.append(Setting(
    "hybrid", "planted-latent", "recovered", _planted_latent,
    help="base tiny-r1-sometimes (re-checks in 10% of its training texts), thinking tiny-overthink: the hybrid's "
    "traces re-check more often than its random-vector control's. Needs strengths up to 8, 8x the job's default "
    "(<= 1): the base's re-check token is its argmax only after a ~2.3-nat logit shift (at the job's strengths: "
    "0/100 against 0/100, failed). Its accuracy cost is reported with the verdict (measured 1.00 -> 0.45)"))
