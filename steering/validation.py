"""Planted and null settings of the SAE and of feature steering (shared/specs/controls.md), run by
``thinklens run validate --methods sae,steer``.

- ``sae planted``: activation rows built from a known dictionary (unit directions, more features than
  dimensions, each firing independently with a known probability and a magnitude drawn from a known range),
  saved as a safetensors file and trained on by the real ``sae`` job (``--activations``). Statistic: for each
  true feature the best cosine among the SAE's decoder rows (:func:`best_cosines`), averaged, with a bootstrap
  interval over features. Recovered iff the mean is >= 0.9 and >= 80% of the features reach 0.9.
- ``sae null``: dictionary-free Gaussian rows, same job and settings. Two things must hold, both stated before any
  run: the SAE learned the rows (its held-out explained variance lies above that of the rank-k PCA code, the best
  linear code with as many coefficients per row as the SAE's L0: bootstrap interval over held-out rows above 0), and
  its decoder matches a random reference dictionary no better than chance (per reference feature, its best cosine
  minus the mean best cosine of :data:`CHANCE_DRAWS` random decoders of its shape: the 90% interval of the mean
  inside +-:data:`NULL_MARGIN`, a TOST). A non-significant difference is not enough, and an SAE that learned nothing
  (a random decoder, an untrained SAE) scores chance on the second test too, so the first one is what it fails.
- ``steer null-word``: ``steer --word <w>`` for a word the model never writes must refuse (a ThinklensError
  naming the word), never steer "the best" of features that all correlate 0. A run that steers instead passes only
  when no finding is an effect and, at every coefficient, the word rate's difference from the equal-norm random
  feature is shown within +-:data:`NULL_WORD_MARGIN` (Newcombe's 95% interval inside the margin: stricter than the
  90% interval of a TOST), not merely not significant.
- ``steer planted``: on the overthinking organism (``tiny-overthink``: "Wait, let me double-check." rounds),
  the feature the steer job picks for "wait" at resid_post.1 is steered in units of its own activation (the job's
  ``scale`` mode, :data:`STEER_GRID`: c times the feature's activation added where it fires, c = -1 ablating it), and
  every other arm (the random feature, the top-activating feature, a random direction, the difference of means of
  the states before "wait") adds that same norm at the same tokens along its own direction. The feature must move the
  share of traces that say wait monotonically with the coefficient, in excess of the random feature at each
  coefficient, and rise over the sweep (statistic: the rate at the largest coefficient minus the rate at the
  smallest, with Newcombe's interval, above 0), and at one end of the sweep the job's own finding must say
  ``effect``: beyond every arm it ran, the difference of means included, and the unsteered run, within its harm bound
  on accuracy and degenerate text. A run whose difference-of-means arm was not built fails, saying so.

  Measured at seed 0 with this setting's SAE and sizes (200 sampled prompts per point, 256 new tokens;
  counts of traces saying wait / correct, unsteered 189 / 145): the old grid, c times the mean residual norm (10.6,
  six times the feature's largest activation, 1.75), broke every arm from |c| = 0.5 (accuracy <= 91/200, the
  random direction included); at |c| <= 0.3 no arm moved the wait rate (174-191 / 200) while at c = -0.2 every arm
  cost 16-48 correct traces. Clamping the feature to c times its max activation at every token broke the same way
  (c = -2: 187 / 72; c = -4: 57 / 0, the random feature 151 / 6). Scaling its own activation where it fires keeps the
  model (c = -9, 1, 7: 134-145 correct) but moves the wait rate no more than the random feature scaled alike
  (184-189 against 188-189); ablating it (c = -1) changes nothing (189 / 144). At resid_post.3 the wait feature
  removes the word (c = -8: 3 / 200 against the random feature's 107) but not the round: the organism re-checks
  anyway, writing garbage where "Wait" was, and accuracy falls to 17 / 200; the difference of means at the same
  norms does the same (21 / 200, 32 correct). On
  tiny-r1-sometimes (wait in 133 / 200 sampled traces, 178 correct), the last block's feature raises the rate at
  c = 4 (151, 169 correct; the random feature 131) but the difference of means at the same norms raises it more
  (167). So on the zoo the wait feature chosen by correlation is a detector, not a lever, at strengths the model
  survives: the setting fails, and says which condition it misses.

Example:
    >>> [s.key for s in SETTINGS]
    ['sae/planted', 'sae/null', 'steer/null-word', 'steer/planted']
    >>> import torch
    >>> best_cosines(torch.eye(3), torch.eye(3)[[0, 0, 1]]).tolist()
    [1.0, 1.0, 0.0]
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file
from torch import Tensor

from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.calibration.stats import bootstrap_ci, bootstrap_units, rate_difference, wilson
from thinklens.calibration.tost import tost_mean
from thinklens.data.problemsets import ProblemSet
from thinklens.engine.model import HookedModel
from thinklens.errors import ThinklensError
from thinklens.steering.corpora import read_texts
from thinklens.steering.effects import traces_with
from thinklens.steering.problems import data_format, prompt_set
from thinklens.steering.sae import load_sae, sae_folder
from thinklens.zoo.registry import zoo_dir

RECOVERY_COSINE = 0.9
"""A true feature counts as recovered when some decoder row reaches this cosine with it."""
RECOVERY_SHARE = 0.8
"""Share of true features that must be recovered (besides a mean best cosine >= RECOVERY_COSINE)."""
NULL_MARGIN = 0.05
"""``sae null``: the margin of no practical effect on the best cosine above chance (cosine units), stated before any
run: a tenth of the gap between a recovered dictionary (the planted setting's ~0.97) and chance (~0.44 quick)."""
CHANCE_DRAWS = 8
"""Random decoders of the SAE's shape whose best cosines, averaged per reference feature, are the chance level."""
FIT_ROWS = 2000
"""Fresh rows of the null's distribution on which the SAE's fit is scored against the rank-k PCA code."""
STEER_ORGANISM = "tiny-overthink"
"""The organism of ``steer planted`` (zoo recipe of the overthinking organism)."""


# ---------------------------------------------------------------- SAE: a planted dictionary


@dataclass(frozen=True)
class PlantedDictionary:
    """Sizes of a synthetic sparse-dictionary data set (the ``sae planted`` setting)."""

    d: int = 32
    """Width of the activation rows."""
    n_features: int = 64
    """True features (unit directions); more than ``d``."""
    p_fire: float = 0.05
    """Probability that a feature is active in a row (independent across features)."""
    magnitude: tuple[float, float] = (1.0, 2.0)
    """An active feature's coefficient is uniform in this range."""
    n_rows: int = 20_000
    """Rows generated."""


def planted_rows(spec: PlantedDictionary, seed: int) -> tuple[Tensor, Tensor]:
    """``(dictionary [n_features, d] of unit rows, rows [n_rows, d])``: each row is sum_f a_f * dictionary[f]
    over its active features (a local generator: a function of ``seed``)."""
    g = torch.Generator().manual_seed(seed)
    dictionary = torch.randn(spec.n_features, spec.d, generator=g)
    dictionary = dictionary / dictionary.norm(dim=1, keepdim=True)  # [feature, d]
    fire = torch.rand(spec.n_rows, spec.n_features, generator=g) < spec.p_fire  # [rows, feature]
    lo, hi = spec.magnitude
    mags = lo + (hi - lo) * torch.rand(spec.n_rows, spec.n_features, generator=g)  # [rows, feature]
    return dictionary, (fire * mags) @ dictionary  # [rows, d]


def gaussian_rows(spec: PlantedDictionary, seed: int) -> Tensor:
    """Dictionary-free rows ``[n_rows, d]``: isotropic Gaussian with the planted rows' mean squared norm."""
    g = torch.Generator().manual_seed(seed)
    lo, hi = spec.magnitude
    mean_sq = spec.n_features * spec.p_fire * (lo * lo + lo * hi + hi * hi) / 3.0  # E|x|^2 of the planted rows
    return torch.randn(spec.n_rows, spec.d, generator=g) * (mean_sq / spec.d) ** 0.5


def best_cosines(dictionary: Tensor, decoder: Tensor) -> Tensor:
    """For each true feature (row of ``dictionary [n_true, d]``), the best cosine among the decoder rows
    ``[d_sae, d]``: ``[n_true]``. (Per true feature: one SAE feature matching many true ones does not count
    for all of them.)"""
    t = dictionary.float() / dictionary.float().norm(dim=1, keepdim=True).clamp_min(1e-12)  # [n_true, d]
    w = decoder.float() / decoder.float().norm(dim=1, keepdim=True).clamp_min(1e-12)  # [d_sae, d]
    return (t @ w.T).max(dim=1).values  # [n_true]


def recovery_check(best: Tensor, *, seed: int, details: dict[str, Any]) -> Check:
    """The planted check of a recovery statistic: mean best cosine with its bootstrap interval over features."""
    values = best.double().numpy()
    mean, share = float(values.mean()), float((values >= RECOVERY_COSINE).mean())
    met = mean >= RECOVERY_COSINE and share >= RECOVERY_SHARE
    target = (f"mean best cosine >= {RECOVERY_COSINE} and >= {RECOVERY_SHARE:.0%} of true features at cosine >= "
              f"{RECOVERY_COSINE}")
    return Check("mean_best_cosine", mean, bootstrap_ci(values, seed=seed), "recovered" if met else "failed",
                 n=int(values.size), target=target, details={"share_recovered": share, **details})


def chance_cosines(reference: Tensor, shape: tuple[int, int], *, seed: int, draws: int = CHANCE_DRAWS) -> Tensor:
    """Chance level of :func:`best_cosines` per reference feature: the mean over ``draws`` isotropic random decoders
    of ``shape`` ``[d_sae, d]`` (a local generator: a function of ``seed``): ``[n_ref]``."""
    g = torch.Generator().manual_seed(seed)
    return torch.stack([best_cosines(reference, torch.randn(shape, generator=g)) for _ in range(draws)]).mean(0)


@torch.no_grad()
def fit_over_pca(sae: Any, train_rows: Tensor, held: Tensor, *, k: int, seed: int) -> dict[str, Any]:
    """Whether ``sae`` learned its rows: held-out explained variance of the SAE minus that of the rank-``k`` PCA code
    (fit on ``train_rows``, the best linear code with ``k`` coefficients per row), with a bootstrap interval over the
    held-out rows; ``fits`` when the interval lies above 0.

    An SAE with a random decoder reconstructs worse than the mean (explained variance far below 0); one that learned
    nothing (left at its initialisation) explains ~0.02 of isotropic rows, where rank-k PCA explains ~k/d."""
    mu = train_rows.double().mean(0)  # [d]
    basis = torch.linalg.svd(train_rows.double() - mu, full_matrices=False).Vh[:k]  # [k, d]
    x = held.double()  # [rows, d]
    centred = x - mu
    pca_res = (centred - centred @ basis.T @ basis).pow(2).sum(-1).numpy()  # [rows]
    dev = next(sae.parameters()).device
    xhat = sae(held.to(dev, torch.float32)).double().cpu()  # [rows, d]
    sae_res = (x - xhat).pow(2).sum(-1).numpy()  # [rows]
    tot = (x - x.mean(0)).pow(2).sum(-1).numpy()  # [rows]

    def gain(idx: np.ndarray) -> np.ndarray:  # [n_boot, rows] -> [n_boot]
        return (pca_res[idx].sum(1) - sae_res[idx].sum(1)) / tot[idx].sum(1)

    ev_sae, ev_pca = 1 - sae_res.sum() / tot.sum(), 1 - pca_res.sum() / tot.sum()
    lo, hi = bootstrap_units(len(tot), gain, seed=seed)
    return {"explained_variance": float(ev_sae), "pca_explained_variance": float(ev_pca), "pca_rank": k,
            "gain_over_pca": float(ev_sae - ev_pca), "gain_ci": [float(lo), float(hi)], "rows": len(tot),
            "fits": bool(lo > 0)}


def null_check(decoder: Tensor, reference: Tensor, fit: dict[str, Any], *, seed: int, details: dict[str, Any]) -> Check:
    """The ``sae null`` check: the SAE fits its rows (``fit``, :func:`fit_over_pca`) and its decoder ``[d_sae, d]``
    matches the random ``reference`` dictionary ``[n_ref, d]`` no better than chance, shown by a TOST within
    +-:data:`NULL_MARGIN` on the per-feature best cosine above chance (:func:`chance_cosines`)."""
    best = best_cosines(reference, decoder)  # [n_ref]
    chance = chance_cosines(reference, tuple(decoder.shape), seed=seed)  # [n_ref]
    eq = tost_mean((best - chance).double().numpy(), margin=NULL_MARGIN)
    verdict = "no-effect" if eq.equivalent and fit["fits"] else "failed"
    why = [] if fit["fits"] else [f"the SAE did not learn the rows: explained variance {fit['explained_variance']:.3f} vs "
                                  f"rank-{fit['pca_rank']} PCA's {fit['pca_explained_variance']:.3f}"]
    if not eq.equivalent:
        why.append(f"best cosine above chance {eq.mean:+.3f}, 90% interval [{eq.ci[0]:.3f}, {eq.ci[1]:.3f}] not inside "
                   f"+-{NULL_MARGIN}")
    target = (f"the SAE learns the rows (held-out explained variance above rank-k PCA's, bootstrap interval above 0) and "
              f"its best cosines with a random reference dictionary equal chance: 90% interval of the mean excess inside "
              f"+-{NULL_MARGIN} (TOST)")
    return Check("best_cosine_above_chance", eq.mean, eq.ci, verdict, n=eq.n, target=target,
                 details={"mean_best_cosine": float(best.mean()), "chance_best_cosine": float(chance.mean()),
                          "margin": NULL_MARGIN, "tost_p": eq.p, "equivalent": eq.equivalent, "fit": fit,
                          "why_failed": why, **details})


def _sae_sizes(ctx: SettingContext) -> tuple[PlantedDictionary, dict[str, Any]]:
    if ctx.quick:
        spec = PlantedDictionary(d=32, n_features=64, p_fire=0.05, n_rows=20_000)
        train = dict(d_sae=128, k=4, training_tokens=200_000)
    else:
        spec = PlantedDictionary(d=64, n_features=256, p_fire=0.016, n_rows=200_000)
        train = dict(d_sae=512, k=6, training_tokens=3_000_000)
    return spec, dict(train, train_batch_size_tokens=1024, lr=3e-3, lr_warm_up_steps=20, architecture="topk",
                      eval_texts=2000, stats_traces=0, site="resid_post.0", seed=ctx.seed)


def _train_on_rows(ctx: SettingContext, rows: Tensor, name: str, train: dict[str, Any]):
    """Save ``rows`` as a safetensors file and train the ``sae`` job on it (``--activations``); the SAE."""
    path = _workdir(ctx) / f"{name}.safetensors"
    save_file({"activations": rows.contiguous()}, str(path))
    summary = ctx.run_job("sae", name, model="", activations=str(path), **train)
    return load_sae(sae_folder(summary["sae"])[0]), summary


def _sae_planted(ctx: SettingContext) -> Check:
    spec, train = _sae_sizes(ctx)
    dictionary, rows = planted_rows(spec, ctx.seed)
    sae, summary = _train_on_rows(ctx, rows, "planted", train)
    best = best_cosines(dictionary, sae.W_dec.detach())
    return recovery_check(best, seed=ctx.seed, details={"spec": spec.__dict__, "sae_metrics": summary, "d_sae": train["d_sae"]})


def _sae_null(ctx: SettingContext) -> Check:
    spec, train = _sae_sizes(ctx)
    rows = gaussian_rows(spec, ctx.seed + 1)
    reference, _ = planted_rows(spec, ctx.seed + 2)  # a random dictionary of the planted shape, never in the data
    sae, summary = _train_on_rows(ctx, rows, "null", train)
    held = gaussian_rows(dataclasses.replace(spec, n_rows=FIT_ROWS), ctx.seed + 3)  # fresh rows of the same law
    fit = fit_over_pca(sae, rows, held, k=train["k"], seed=ctx.seed)
    return null_check(sae.W_dec.detach(), reference, fit, seed=ctx.seed + 4,
                      details={"spec": spec.__dict__, "sae_metrics": summary})


# ---------------------------------------------------------------- feature steering


def _workdir(ctx: SettingContext) -> Path:
    if ctx.workdir is None:
        ctx.workdir = Path(tempfile.mkdtemp(prefix="thinklens-validate-"))
    ctx.workdir.mkdir(parents=True, exist_ok=True)
    return ctx.workdir


def organism(name: str):
    """The zoo organism ``name`` loaded (float32, CPU), or a clear error while it is not trained yet."""
    if not (zoo_dir() / name / "zoo.json").is_file():
        raise ThinklensError.of("steering organism", f"{name} (no {zoo_dir() / name / 'zoo.json'})",
                                f"the trained zoo model {name}", f"train it: `thinklens run zoo-train --model {name}`")
    return HookedModel.load(str(zoo_dir() / name))  # by folder: an organism not yet in the registry loads too


def model_texts(model, n: int, path: Path, *, seed: int, min_steps: int = 2, max_steps: int = 5) -> Path:
    """Write ``n`` of the model's own sampled traces (prompt and completion) to ``path``, a .jsonl file of ``text``
    rows (newlines kept): the SAE of a steering setting is trained on the text the model writes, re-check rounds
    included."""
    problems = ProblemSet.synthetic(n, seed=seed, min_steps=min_steps, max_steps=max_steps)
    ps = prompt_set(model, data_format(model, "auto", "zoo:think"), problems,
                    max_new_tokens=None, max_steps=max_steps)
    trs = model.generate(ps.prompts, max_new_tokens=ps.max_new_tokens, batch_size=64, do_sample=True, seed=seed,
                         temperature=1.0)
    path.write_text("".join(json.dumps({"text": t.prompt + t.text}) + "\n" for t in trs), encoding="utf-8")
    return path


STEER_MODE = "scale"
"""How ``steer planted`` steers: the steer job's default, c times the feature's own activation where it fires, every arm
adding that norm token by token (the residual-norm grid broke every arm before the feature moved the word)."""
STEER_GRID = (-4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0)
"""The full setting's coefficients: the steer job's default ``scale`` grid (:data:`thinklens.steering.jobs.steer.GRIDS`)."""
STEER_GRID_QUICK = (-4.0, -1.0, 0.0, 4.0)
"""The quick setting's: both ends of the full grid and the feature's ablation (c = -1)."""


def _steer_sizes(ctx: SettingContext) -> dict[str, Any]:
    if ctx.quick:
        return dict(n_texts=96, d_sae=256, k=8, training_tokens=120_000, n_prompts=40, stats_traces=48,
                    coeffs=STEER_GRID_QUICK, max_steps=3, max_new_tokens=128)
    return dict(n_texts=600, d_sae=512, k=16, training_tokens=1_500_000, n_prompts=200, stats_traces=200,
                coeffs=STEER_GRID, max_steps=5, max_new_tokens=256)


def _steer_sae(ctx: SettingContext, model, sizes: dict[str, Any], site: str) -> dict[str, Any]:
    """Train the setting's SAE with the ``sae`` job on the model's own traces; its summary."""
    texts = model_texts(model, sizes["n_texts"], _workdir(ctx) / "traces.jsonl", seed=ctx.seed + 7, max_steps=sizes["max_steps"])
    return ctx.run_job("sae", "sae", model=model, data=str(texts), n_texts=sizes["n_texts"], eval_texts=32, site=site,
                       d_sae=sizes["d_sae"], k=sizes["k"], training_tokens=sizes["training_tokens"],
                       train_batch_size_tokens=1024, lr=1e-3, stats_traces=0, seed=ctx.seed)


def monotone(rates: list[tuple[float, int, int]], control: list[tuple[float, int, int]] | None = None) -> bool:
    """Whether the word rate never falls as the coefficient grows: no step down whose intervals lie apart.

    ``rates``: ``(coeff, k, n)`` in any order. With ``control`` (the equal-norm random feature's ``(coeff, k, n)``
    at the same coefficients), the sequence is the excess over the control (Newcombe intervals): any added norm
    disrupts the model, so the unsteered run (c=0, nothing added) is compared with steered ones only through
    the control, which pays the same disruption.

    Example:
        >>> monotone([(-1, 2, 50), (0, 10, 50), (1, 30, 50)]), monotone([(-1, 40, 50), (0, 10, 50), (1, 30, 50)])
        (True, False)
        >>> monotone([(-1, 5, 50), (0, 48, 50), (1, 49, 50), (0.5, 30, 50)],
        ...          [(-1, 45, 50), (0, 48, 50), (1, 0, 50), (0.5, 30, 50)])
        True
    """
    if control is None:
        steps = [(k / n, wilson(k, n)) for _, k, n in sorted(rates)]
    else:
        ctrl = {c: (k, n) for c, k, n in control}
        steps = [rate_difference(k, n, *ctrl[c]) for c, k, n in sorted(rates)]
    return all(hi1 >= lo0 for (_, (lo0, _)), (_, (_, hi1)) in zip(steps, steps[1:]))


def steer_planted_on(ctx: SettingContext, model_name: str, *, site: str = "resid_post.1", word: str = "wait") -> Check:
    """The ``steer planted`` check on ``model_name`` (the organism; other models for development).

    The steer job runs every arm, the difference of means included (the competing method the feature must beat): a
    run whose difference-of-means arm was not built (too few states before the word) fails, saying so, rather than
    passing on the controls that remain."""
    model = organism(model_name)
    sizes = _steer_sizes(ctx)
    sae = _steer_sae(ctx, model, sizes, site)
    summary = ctx.run_job("steer", "steer", model=model, sae=str(Path(sae["sae"]).parent), word=word, coeffs=sizes["coeffs"],
                          mode=STEER_MODE, n_prompts=sizes["n_prompts"], stats_traces=sizes["stats_traces"],
                          diff_of_means=True, sample=True, seed=ctx.seed, min_steps=2, max_steps=sizes["max_steps"],
                          max_new_tokens=sizes["max_new_tokens"])
    return planted_check(summary, model_name, word)


def planted_check(summary: dict[str, Any], model_name: str, word: str = "wait") -> Check:
    """The ``steer planted`` verdict from a steer run's summary: the excess over the random feature never falls as the
    coefficient grows, the rate rises over the sweep (Newcombe interval above 0), the job's finding at one end is an
    effect (beyond every arm it ran, within its harm bound), and the difference-of-means arm was among the arms."""
    steered, random = summary["rates"]["feature"], summary["rates"]["random_feature"]
    rates = [(float(c), int(k), int(n)) for c, (k, n) in steered.items()]
    control = [(float(c), int(k), int(n)) for c, (k, n) in random.items()]
    (c_lo, k_lo, n_lo), (c_hi, k_hi, n_hi) = min(rates), max(rates)
    swing, ci = rate_difference(k_hi, n_hi, k_lo, n_lo)
    ends = [f for f in summary["findings"] if f["extra"]["coeff"] in (c_lo, c_hi)]
    beyond = [f"c={f['extra']['coeff']:g}" for f in ends if f["verdict"] == "effect"]
    dom_ran = "diff_of_means" in summary["rates"]
    mono = monotone(rates, control)
    why = [text for bad, text in (
        (not dom_ran, "the difference-of-means arm was not run: " + "; ".join(summary.get("warnings") or ["no reason given"])),
        (not mono, f"the {word!r} rate's excess over the random feature falls as the coefficient grows"),
        (not ci[0] > 0, f"the {word!r} rate does not rise from c={c_lo:g} to c={c_hi:g} (Newcombe interval "
                        f"[{ci[0]:.3f}, {ci[1]:.3f}])"),
        (not beyond, "no end of the sweep is an effect: " + "; ".join(
            f"c={f['extra']['coeff']:g}: {f['extra'].get('not_shown', f['verdict'])}" for f in ends))) if bad]
    harm = summary["harm_bound"]
    return Check(f"{word}_rate_swing", swing, ci, "failed" if why else "recovered", n=n_lo + n_hi,
                 target=f"the {word!r}-feature's trace rate, in excess of the equal-norm random feature's, never falls as the "
                        f"coefficient grows; its rate rises from c={c_lo:g} to "
                        f"c={c_hi:g} (Newcombe interval of the difference above 0), and at c={c_lo:g} or c={c_hi:g} its Wilson "
                        "interval lies beyond the equal-norm random feature's in the coefficient's direction, the "
                        "job's finding there is an effect (beyond every arm it ran, the difference of means included, and "
                        f"the unsteered run, within its harm bound: accuracy drop <= {harm['max_accuracy_drop']:g}, "
                        f"degenerate share rise <= {harm['max_degenerate_rise']:g})",
                 details={"model": model_name, "feature": summary["feature"], "corr": summary["corr"],
                          "mode": summary.get("mode"), "coeffs": summary.get("coeffs"), "rates": summary["rates"],
                          "monotone": mono, "monotone_alone": monotone(rates), "beyond_random_at": beyond,
                          "diff_of_means_run": dom_ran, "why_failed": why,
                          "harm_at_ends": {f"c={f['extra']['coeff']:g}": f["extra"].get("harm") for f in ends},
                          "findings": summary["findings"], "warnings": summary.get("warnings", []),
                          "headlines": summary["headlines"]})


def _steer_planted(ctx: SettingContext) -> Check:
    return steer_planted_on(ctx, STEER_ORGANISM)


NULL_WORD = "actually"
"""A thinking word tiny-r1 never writes (its reasoning words are wait, hmm and therefore; tiny-overthink adds
alternatively, so the null word is not that one)."""
NULL_WORD_MARGIN = 0.10
"""``steer null-word``: margin of no practical effect on a word rate (share of traces), stated before any run."""
NULL_WORD_MODEL = "tiny-r1"
"""The model of ``steer null-word`` (any model works: the word must be one it never writes)."""


def steer_null_word_on(ctx: SettingContext, model_name: str, *, word: str = NULL_WORD, site: str = "resid_post.1") -> Check:
    """The ``steer null-word`` check: the word's rate in the model's own traces (0 by choice of the word) and
    whether the steer job refused (or found no effect) instead of steering a feature chosen among zeros."""
    model = organism(model_name)
    sizes = {**_steer_sizes(ctx), "training_tokens": 30_000, "n_texts": 32} if ctx.quick else _steer_sizes(ctx)
    sae = _steer_sae(ctx, model, sizes, site)
    texts = read_texts(_workdir(ctx) / "traces.jsonl")
    k, n = traces_with(texts, word), len(texts)
    details: dict[str, Any] = {"model": model_name, "word": word, "traces_with_word": k}
    try:
        summary = ctx.run_job("steer", "steer", model=model, sae=str(Path(sae["sae"]).parent), word=word, coeffs=(0.0, 1.0),
                              mode=STEER_MODE, n_prompts=16, stats_traces=sizes["stats_traces"], diff_of_means=False,
                              seed=ctx.seed, max_steps=sizes["max_steps"])
    except ThinklensError as e:
        refused = word in str(e)
        details["refusal"] = str(e)
        verdict = "no-effect" if refused else "failed"
    else:
        verdicts = [f["verdict"] for f in summary["findings"]]
        within = null_word_within(summary["rates"])
        details.update(findings=summary["findings"], feature=summary["feature"], corr=summary["corr"], within_margin=within,
                       margin=NULL_WORD_MARGIN)
        verdict = "no-effect" if verdicts and "effect" not in verdicts and within and all(within.values()) else "failed"
    return Check(f"{word}_rate", k / n, wilson(k, n), verdict, n=n,
                 target=f"steer --word {word} refuses (the model never writes it) or reports no effect; it must not steer "
                        "a feature picked among zero correlations", details=details)


def null_word_within(rates: dict[str, dict[str, list[float]]]) -> dict[str, bool]:
    """Per non-zero coefficient: whether the steered feature's word rate minus the equal-norm random feature's has its
    Newcombe interval inside +-:data:`NULL_WORD_MARGIN` (``rates``: the steer summary's ``{arm: {coeff: [k, n]}}``).

    Example:
        >>> null_word_within({"feature": {"1": [0, 200]}, "random_feature": {"1": [0, 200]}})
        {'1': True}
        >>> null_word_within({"feature": {"1": [0, 16]}, "random_feature": {"1": [0, 16]}})  # too few traces to show it
        {'1': False}
    """
    steered, control = rates.get("feature", {}), rates.get("random_feature", {})
    out = {}
    for c in sorted((c for c in steered if float(c) != 0 and c in control), key=float):
        _, (lo, hi) = rate_difference(int(steered[c][0]), int(steered[c][1]), int(control[c][0]), int(control[c][1]))
        out[c] = bool(-NULL_WORD_MARGIN < lo and hi < NULL_WORD_MARGIN)
    return out


def _steer_null_word(ctx: SettingContext) -> Check:
    return steer_null_word_on(ctx, NULL_WORD_MODEL)


SETTINGS = [
    Setting("sae", "planted", "recovered", _sae_planted,
            help="rows from a known sparse dictionary (2-4x more unit features than dimensions): the sae job recovers it"),
    Setting("sae", "null", "no-effect", _sae_null,
            help="dictionary-free Gaussian rows: the SAE fits them (beats rank-k PCA) and matches a random reference "
                 f"dictionary at chance (TOST within +-{NULL_MARGIN})"),
    Setting("steer", "null-word", "no-effect", _steer_null_word,
            help=f"steer --word {NULL_WORD} on {NULL_WORD_MODEL}, which never writes it: refused, not steered"),
    Setting("steer", "planted", "recovered", _steer_planted, kind="benchmark",
            help=f"{STEER_ORGANISM}'s 'wait' feature moves the wait rate monotonically, beyond an equal-norm random feature"),
]
