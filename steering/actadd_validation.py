"""Planted and null settings of contrastive activation addition on any model (``thinklens run validate --model``).

The effect is known from the literature (ActAdd, Turner et al. 2023; CAA, Rimsky et al. 2024): the residual
difference of `` Love`` and `` Hate`` (:func:`thinklens.steering.contrast.contrast_vector`, read after a neutral
context, never at position 0), added at an early-to-middle layer, shifts the sentiment of open-ended continuations.
Both settings steer the first prompts of data/real/neutral_prompts.json (the site and coefficient were chosen on its
separate ``held_out`` prompts) at :func:`~thinklens.steering.contrast.default_site` with ``c = +-COEFF`` and score the
continuations with VADER.

- ``actadd planted``: the contrast vector moves the sentiment with the sign of the coefficient both ways (paired 95%
  interval against the unsteered model excluding 0 at ``+c`` and at ``-c``), beyond the equal-norm random direction
  (paired interval of the difference excluding 0, same sign), with fluency within :data:`FLUENCY` (stated before the
  run): recovered; anything less is failed. Statistic: the weaker direction's signed shift.
- ``actadd null-random``: the equal-norm random direction at the same coefficients: its shift against the unsteered
  model must be shown equivalent to 0 within :data:`MARGIN` (TOST, :func:`thinklens.calibration.tost.tost_mean`)
  at each coefficient: no-effect; not shown equivalent (a shift, or too few prompts to tell) is failed.

Quick: 32 prompts, 4 sampled completions of 24 new tokens each; full: 64 prompts, 4 completions of 40 tokens.

How the numbers were fixed. :data:`FLUENCY` and :data:`MARGIN` were set before any real-weight run. The site and
:data:`COEFF` were chosen on SmolLM2 on the 24 ``held_out`` prompts (one completion each, 40 tokens, seed 0) by one
rule: over resid_post.{3, 6, 9, 12} and c in {0.2, 0.35}, the largest weaker-direction shift ``min(shift(+c),
-shift(-c))`` among the points whose perplexity ratio is at most 1.5 (headroom under the reported bound of 2, as 24
prompts are noisy) and degenerate share at most 0.2 at both signs: resid_post.9 at c = 0.2 (+0.29 / -0.31, ratios
1.40 / 1.22), hence ``AUTO_DEPTH = 0.3``. resid_post.12 at c = 0.35 moved more (+0.42 / -0.41) at ratios near 1.8.
One completion per prompt left the random direction's shift too noisy for any useful margin (a sampled
continuation's compound is mostly sampling noise); four per prompt were adopted after that first full run, before
the runs recorded in the results.

Example:
    >>> [s.key for s in SETTINGS], all(s.on_model for s in SETTINGS)
    (['actadd/planted', 'actadd/null-random'], True)
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.calibration.tost import tost_mean
from thinklens.steering.contrast import Fluency, contrast_vector, default_site, sweep, token_norm
from thinklens.zoo.registry import repo_root

if TYPE_CHECKING:
    from thinklens.steering.contrast import SweepResult


@dataclass(frozen=True)
class Plan:
    """How much a setting generates."""

    n_prompts: int
    """Neutral prompts steered and scored (the first ones of data/real/neutral_prompts.json)."""
    samples: int
    """Sampled completions per prompt (a prompt's score is their mean VADER compound)."""
    max_new_tokens: int
    """New tokens generated per completion."""


QUICK = Plan(n_prompts=32, samples=4, max_new_tokens=24)
FULL = Plan(n_prompts=64, samples=4, max_new_tokens=40)
#: The coefficient, in units of the typical token-state norm at the site (chosen on the held-out prompts).
COEFF = 0.2
PAIR = (" Love", " Hate")
#: The fluency bound of the planted setting, stated beforehand.
FLUENCY = Fluency(max_ppl_ratio=2.0, max_degenerate=0.2)
#: The null's margin of no practical effect on the mean VADER compound shift (compound is in [-1, 1]), stated beforehand.
MARGIN = 0.15
#: Sampling of every arm (the same seed for all: common random numbers).
DECODING = {"do_sample": True, "temperature": 0.7, "top_p": 0.9}

#: The sweeps run on each loaded model, shared by the two settings of one validate run (gone with the model).
_RUNS: "weakref.WeakKeyDictionary[Any, dict[tuple, SweepResult]]" = weakref.WeakKeyDictionary()


def neutral_prompts(n: int) -> list[str]:
    """The first ``n`` reported prompts of data/real/neutral_prompts.json."""
    return json.loads((repo_root() / "data" / "real" / "neutral_prompts.json").read_text(encoding="utf-8"))["prompts"][:n]


def measure(ctx: SettingContext, arms: tuple[str, ...]) -> "SweepResult":
    """The sweep at ``c = -COEFF, +COEFF`` on the context's model (a full sweep already run is reused)."""
    model, plan = ctx.hooked(), QUICK if ctx.quick else FULL
    done = _RUNS.setdefault(model, {})
    for have in (("contrast", "random"), arms):
        if (plan, ctx.seed, have) in done:
            return done[(plan, ctx.seed, have)]
    prompts = neutral_prompts(plan.n_prompts)
    site = default_site(model)
    unit = token_norm(model, prompts, site)
    sv = contrast_vector(model, site, PAIR[0], PAIR[1], typical_norm=unit)
    res = sweep(model, prompts, sv, (-COEFF, COEFF), unit_norm=unit, seed=ctx.seed, max_new_tokens=plan.max_new_tokens,
                decoding=DECODING, fluency=FLUENCY, samples=plan.samples, arms=arms, log=print if ctx.progress else None)
    done[(plan, ctx.seed, arms)] = res
    return res


def _row(res: "SweepResult", arm: str, c: float) -> dict[str, Any]:
    return next(r for r in res.rows if r.get("arm") == arm and r.get("coeff") == c)


def planted(ctx: SettingContext) -> Check:
    """The contrast vector moves sentiment both ways with the coefficient's sign, beyond random, fluently."""
    res = measure(ctx, ("contrast", "random"))
    by_c = {f.extra["coeff"]: f for f in res.findings}
    up, down = by_c[COEFF], by_c[-COEFF]
    # the weaker direction, signed so that a shift with the coefficient's sign is positive
    weak = min((up, 1.0), (down, -1.0), key=lambda fs: fs[0].value * fs[1])
    f, sign = weak
    lo, hi = sorted((f.ci[0] * sign, f.ci[1] * sign))
    ok = up.verdict == "effect" and down.verdict == "effect"
    details = {"site": res.site, "unit_norm": res.unit_norm, "vector_norm": res.vector_norm, "pair": list(PAIR),
               "fluency_bounds": {"max_ppl_ratio": FLUENCY.max_ppl_ratio, "max_degenerate": FLUENCY.max_degenerate},
               "findings": [x.to_dict() for x in res.findings],
               "rows": res.rows}
    for c, x in ((COEFF, up), (-COEFF, down)):
        details[f"c={c:+g}"] = {"shift": x.value, "ci": list(x.ci), "random_shift": x.control_value,
                               "vs_random": x.extra["vs_random"], "vs_random_ci": x.extra["vs_random_ci"],
                               "ppl_ratio": x.extra["ppl_ratio"], "degenerate": x.extra["degenerate"], "verdict": x.verdict}
    return Check("weaker_signed_shift", f.value * sign, (lo, hi), "recovered" if ok else "failed", n=f.n,
                 target=f"VADER shift with the sign of c at c=+-{COEFF:g}: paired 95% CI excludes 0 both ways and beyond the "
                        f"equal-norm random direction; perplexity ratio <= {FLUENCY.max_ppl_ratio:g}, degenerate share <= "
                        f"{FLUENCY.max_degenerate:g}", details=details)


def null_random(ctx: SettingContext) -> Check:
    """The equal-norm random direction's shift is equivalent to 0 within MARGIN at both coefficients."""
    res = measure(ctx, ("random",))
    base = res.scores[("unsteered", 0.0)].compound
    tests = {c: tost_mean(res.scores[("random", c)].compound - base, margin=MARGIN) for c in (-COEFF, COEFF)}
    worst_c = max(tests, key=lambda c: abs(tests[c].mean))
    worst = tests[worst_c]
    ok = all(t.equivalent for t in tests.values())
    details = {"site": res.site, "margin": MARGIN, "unit_norm": res.unit_norm, "vector_norm": res.vector_norm,
               "worst_coeff": worst_c}
    for c, t in tests.items():
        row = _row(res, "random", c)
        details[f"c={c:+g}"] = {"shift": t.mean, "ci90": list(t.ci), "tost_p": t.p, "equivalent": t.equivalent,
                               "ppl_ratio": row["ppl_ratio"], "degenerate": row["degenerate"], "examples": row["examples"]}
    return Check("random_shift", worst.mean, worst.ci, "no-effect" if ok else "failed", n=worst.n,
                 target=f"random direction's VADER shift at c=+-{COEFF:g}: 90% CI inside +-{MARGIN:g} (TOST) at both", details=details)


SETTINGS = [
    Setting("actadd", "planted", "recovered", planted, kind="benchmark", on_model=True,
            help=f"' Love' - ' Hate' at c=+-{COEFF:g} moves VADER sentiment both ways beyond an equal-norm random direction, fluently"),
    Setting("actadd", "null-random", "no-effect", null_random, on_model=True,
            help=f"an equal-norm random direction at c=+-{COEFF:g}: sentiment shift equivalent to 0 within +-{MARGIN:g} (TOST)"),
]
