"""Planted, null and benchmark settings of the tuned lens (``thinklens run validate``; shared/specs/anchors.md, "Lenses").

- ``tuned-lens planted`` (tiny-r1): an invertible random linear map ``M`` (a random rotation times random scales in
  ``[1/2, 2]``) is applied to block :data:`PLANT_LAYER`'s output and undone at the next block's input, so the model
  computes exactly what it did (the output change is recorded) while the state read at that block is ``M h``. The logit
  lens's KL there must blow up (by at least :data:`MIN_BLOWUP` nats, interval above 0), the tuned lens trained on the
  planted model must work on the clean one (its KL at that block below the logit lens's, interval above 0), and it must
  recover: the share of the blow-up it removes, ``(LP - TP) / (LP - TC)`` (logit lens planted, tuned planted, tuned
  clean, per held-out text; a ratio of means, bootstrap over texts), with its interval's lower end at least
  :data:`RECOVERED`. A lens that ignores the block (one translator for all) or learns nothing (shuffled targets) fails.
- ``tuned-lens null`` (tiny-r1): translators trained on shuffled targets (each token fit to another token's final
  distribution) must not beat the logit lens at every block: the worst block's KL reduction is shown below 0, or
  within +-:data:`NULL_MARGIN` nats (TOST).
- ``tuned-lens benchmark`` (any ``validate --model``): Belrose et al.'s claim, the tuned lens's held-out KL to the final
  output below the logit lens's at every block (the job's first finding, ``effect``).

The targets were fixed before the first run: :data:`MIN_BLOWUP` one nat (a lens made useless by a change of basis
loses far more), :data:`RECOVERED` nine tenths, :data:`NULL_MARGIN` a tenth of a nat.

Example:
    >>> [s.key for s in SETTINGS]
    ['tuned-lens/planted', 'tuned-lens/null', 'tuned-lens/benchmark']
    >>> m, inv = invertible_map(8, seed=0)
    >>> bool(torch.allclose(m @ inv, torch.eye(8), atol=1e-5))
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from thinklens.analyses.lens import lens_training
from thinklens.analyses.lens.lens_findings import every_block_finding
from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.calibration.stats import bootstrap_ci, bootstrap_units
from thinklens.calibration.tost import tost_mean
from thinklens.data.formats import format_for
from thinklens.data.problemsets import ProblemSet
from thinklens.engine.interventions import HookFn, Intervention
from thinklens.engine.sites import Site

MODEL = "tiny-r1"
"""The zoo model of the planted and null settings."""
PLANT_LAYER = 1
"""The block whose output the planted map changes (tiny-r1 has blocks 0-3; the last has no translator)."""
MIN_BLOWUP = 1.0
"""Nats the logit lens's KL must rise at the planted block."""
RECOVERED = 0.9
"""The share of the blow-up the tuned lens must be shown to remove (the lower end of its interval)."""
NULL_MARGIN = 0.1
"""Nats of no practical reduction: the null's equivalence margin."""


@dataclass(frozen=True)
class Plan:
    """How much a setting measures."""

    n_train: int
    """Completions the translators train on."""
    n_eval: int
    """Held-out completions (the units of the intervals)."""
    max_new_tokens: int
    """New tokens per completion."""
    epochs: int
    """Passes over the training tokens."""


QUICK = Plan(n_train=32, n_eval=16, max_new_tokens=64, epochs=3)
FULL = Plan(n_train=96, n_eval=48, max_new_tokens=96, epochs=4)
REAL_QUICK = Plan(n_train=8, n_eval=10, max_new_tokens=32, epochs=1)
REAL_FULL = Plan(n_train=32, n_eval=16, max_new_tokens=64, epochs=2)


def invertible_map(d: int, *, seed: int) -> tuple[Tensor, Tensor]:
    """A random invertible ``[d, d]`` map (a rotation times scales in ``[1/2, 2]``) and its inverse."""
    g = torch.Generator().manual_seed(seed)
    q, r = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r))  # a uniformly random rotation (Mezzadri's sign fix)
    s = torch.exp((torch.rand(d, generator=g, dtype=torch.float64) * 2 - 1) * np.log(2.0))  # [d] in [1/2, 2]
    return (q * s).float(), (q.T / s[:, None]).float()  # M = Q diag(s); M^-1 = diag(1/s) Q^T


def planted_map(layer: int, m: Tensor, inv: Tensor) -> list[Intervention]:
    """``M`` on block ``layer``'s output and ``M^-1`` on block ``layer + 1``'s input: the model is unchanged, the state
    read at ``resid_post.layer`` is ``M h``."""
    return [HookFn(Site("resid_post", layer), lambda act, ctx: act @ m.to(act.dtype).to(act.device).T),
            HookFn(Site("resid_pre", layer + 1), lambda act, ctx: act @ inv.to(act.dtype).to(act.device).T)]


def own_split(model: Any, plan: Plan, seed: int) -> tuple[list[list[int]], list[int]]:
    """The model's sampled completions of ``n_train + n_eval`` synthetic problems in its own format."""

    problems = ProblemSet.synthetic(plan.n_train + plan.n_eval, seed=10_000 + seed, min_steps=1, max_steps=4)
    prompts = format_for(model, "auto").render_problems(problems, model.tokenizer)
    return lens_training.own_texts(model, prompts, max_new_tokens=plan.max_new_tokens, seed=seed)


@dataclass(frozen=True)
class Measured:
    """Held-out KL to the final output per text (nats)."""

    logit: np.ndarray
    """``[text, layer]`` the logit lens's."""
    tuned: np.ndarray
    """``[text, layer]`` the tuned lens's."""
    marginal: np.ndarray
    """``[text]`` the best lens that ignores the state (the training tokens' mean final distribution)."""


def measure(model: Any, plan: Plan, seed: int, *, shuffle_targets: bool = False,
            interventions: list[Intervention] | None = None) -> Measured:
    """Train a tuned lens on the model's own text and measure both lenses and the state-blind control on held-out text."""
    rows, starts = own_split(model, plan, seed)
    k = plan.n_train
    train = lens_training.collect_states(model, rows[:k], starts[:k], interventions=interventions or [])
    held = lens_training.collect_states(model, rows[k:], starts[k:], interventions=interventions or [])
    lens, _ = lens_training.train_translators(model, train, epochs=plan.epochs, seed=seed, shuffle_targets=shuffle_targets)
    kl = lens_training.kl_by_layer(model, held, {"logit": None, "tuned": lens})
    blind = lens_training.marginal_kl(model, train, held)[:, None]  # [tok, 1]
    logit, tuned, marginal = (lens_training.per_text(v, held.text, held.n_texts).numpy() for v in (kl["logit"], kl["tuned"], blind))
    return Measured(logit, tuned, marginal[:, 0])


def _zoo_model(ctx: SettingContext) -> Any:
    from thinklens.engine.model import HookedModel  # lazy: import cost (transformers, nnsight)

    return HookedModel.load(MODEL, device=ctx.device, dtype=getattr(torch, ctx.dtype))


@torch.no_grad()
def _output_change(model: Any, rows: list[list[int]], plant: list[Intervention]) -> float:
    """Largest change of the model's logits the planted map causes (it must leave the model's function alone)."""
    ids = rows[:4]
    clean = model.forward_with(ids)
    planted = model.forward_with(ids, plant)
    return float((clean - planted).abs().max())


def _planted(ctx: SettingContext) -> Check:
    model = _zoo_model(ctx)
    plan = QUICK if ctx.quick else FULL
    k = PLANT_LAYER
    m, inv = invertible_map(model.d_model, seed=ctx.seed)
    plant = planted_map(k, m, inv)
    clean = measure(model, plan, ctx.seed)
    planted = measure(model, plan, ctx.seed, interventions=plant)
    lc, tc, lp, tp = clean.logit[:, k], clean.tuned[:, k], planted.logit[:, k], planted.tuned[:, k]  # [text] each
    blowup = lp - lc
    share_ci = bootstrap_units(len(lp), lambda idx: (lp[idx] - tp[idx]).mean(1) / (lp[idx] - tc[idx]).mean(1), seed=ctx.seed)
    share = float((lp - tp).mean() / (lp - tc).mean())
    blow_ci = bootstrap_ci(blowup, seed=ctx.seed)
    works_ci = bootstrap_units(len(tc), lambda idx: np.minimum(lc[idx].mean(1), clean.marginal[idx].mean(1)) - tc[idx].mean(1),
                               seed=ctx.seed)  # the tuned lens below the better of the two controls (means over texts)
    ok = float(blowup.mean()) >= MIN_BLOWUP and blow_ci[0] > 0 and works_ci[0] > 0 and share_ci[0] >= RECOVERED
    rows, _ = own_split(model, Plan(4, 0, 8, 1), ctx.seed)
    details = {"model": MODEL, "layer": k, "logit_kl_clean": float(lc.mean()), "tuned_kl_clean": float(tc.mean()),
               "logit_kl_planted": float(lp.mean()), "tuned_kl_planted": float(tp.mean()), "blowup": float(blowup.mean()),
               "blowup_ci": list(blow_ci), "marginal_kl": float(clean.marginal.mean()),
               "tuned_below_controls": float(min(lc.mean(), clean.marginal.mean()) - tc.mean()),
               "tuned_below_controls_ci": list(works_ci),
               "output_change": _output_change(model, rows, plant), "plan": vars(plan)}
    return Check("recovered_share", share, share_ci, "recovered" if ok else "failed", n=len(lp),
                 target=f"logit lens KL at block {k} up >= {MIN_BLOWUP} nats under the map; the tuned lens removes >= "
                        f"{RECOVERED} of it (interval's lower end), and on the clean model it beats both the logit lens and the "
                        "state-blind control (the mean final distribution)", details=details)


def _null(ctx: SettingContext) -> Check:
    model = _zoo_model(ctx)
    plan = QUICK if ctx.quick else FULL
    got = measure(model, plan, ctx.seed, shuffle_targets=True)
    logit, tuned = got.logit, got.tuned
    f = every_block_finding(logit, tuned, model=MODEL, seed=ctx.seed, lens="shuffled-target lens")
    diff = (logit - tuned)[:, :-1]
    worst = diff[:, f.extra["worst_block"]]  # [text]
    eq = tost_mean(worst, margin=NULL_MARGIN)
    worse = f.ci[1] < 0
    verdict = "no-effect" if worse or eq.equivalent else "failed"
    return Check("worst_block_reduction", f.value, f.ci, verdict, n=f.n,
                 target=f"shuffled-target translators do not beat the logit lens at every block: the worst block's KL "
                        f"reduction shown below 0, or within +-{NULL_MARGIN} nats (TOST)",
                 details={"model": MODEL, "shown_worse": worse, "tost_p": eq.p, "tost_ci90": list(eq.ci), "margin": NULL_MARGIN,
                          "worst_block": f.extra["worst_block"], "logit_kl": logit[:, :-1].mean(0).tolist(),
                          "shuffled_kl": tuned[:, :-1].mean(0).tolist(), "finding": f.to_dict(), "plan": vars(plan)})


def _benchmark(ctx: SettingContext) -> Check:
    model = ctx.hooked()
    plan = REAL_QUICK if ctx.quick else REAL_FULL
    got = measure(model, plan, ctx.seed)
    logit, tuned = got.logit, got.tuned
    f = every_block_finding(logit, tuned, model=str(ctx.model), seed=ctx.seed)
    return Check("worst_block_reduction", f.value, f.ci, "recovered" if f.verdict == "effect" else "failed", n=f.n,
                 target="the tuned lens's held-out KL to the final output below the logit lens's at every block (the worst "
                        "block's reduction, interval above 0)",
                 details={"model": ctx.model, "logit_kl": logit[:, :-1].mean(0).tolist(), "tuned_kl": tuned[:, :-1].mean(0).tolist(),
                          "finding": f.to_dict(), "plan": vars(plan)})


SETTINGS = [
    Setting("tuned-lens", "planted", "recovered", _planted,
            help=f"an invertible random map at tiny-r1's block {PLANT_LAYER}: the logit lens breaks there, the tuned lens recovers "
                 f">= {RECOVERED} of it"),
    Setting("tuned-lens", "null", "no-effect", _null,
            help=f"translators trained on shuffled targets: not below the logit lens at every block (shown worse, or within "
                 f"+-{NULL_MARGIN} nats by TOST)"),
    Setting("tuned-lens", "benchmark", "recovered", _benchmark, kind="benchmark", on_model=True,
            help="Belrose et al.: the tuned lens's held-out KL below the logit lens's at every block"),
]
