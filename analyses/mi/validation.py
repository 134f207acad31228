"""Planted and null settings of mi-peaks (``thinklens run validate --methods mi-peaks``).

Both run the mi-peaks job itself (``ctx.run_job("mi-peaks", ...)``) on the same organism and the same
questions; they differ only in which solution text gives each trajectory its answer vector h_gt.

- ``mi-peaks planted``: each question with its own solution (``<<a+b=c>> ... #### N``). The answer is
  written at a known place in every trajectory: the first statement of the final value (tiny-r1: the last
  equation's result), located from the task's ground truth (:mod:`thinklens.analyses.mi.planted`). Recovered when the
  MI with the own answer at those steps beats the shuffled-answer control (another problem's h_gt, the
  same states), paired over trajectories (sign-flip, p < 0.01), and rises there above the trajectory's
  other steps (paired, p < 0.01). Statistic ``mi_gap``: the mean over trajectories of own - shuffled MI at
  the planted steps, with its bootstrap interval. Details: precision and recall of the job's peaks
  against every statement of the value (the first and, on tiny-overthink, its restatement in each re-check
  round), next to their chance levels (as many peaks placed at random).
- ``mi-peaks null``: each question paired with the solution of an independently drawn problem, so the
  "own" answer is as unrelated to the chain as the shuffled one. No effect is shown, never read from a test that
  did not fire: own - shuffled MI at the answer steps lies within +-:data:`GAP_MARGIN` and the peaks' precision
  against every statement of the value within +-:data:`PRECISION_MARGIN` of chance, each by an equivalence test
  (TOST, 90% interval) with the margin stated here, before the run.

Both kinds also ask that the peak rule reads the curve: its peaks stand at least :data:`MIN_PEAK_CONTRAST` SD
above the rest of their own curve (:func:`thinklens.analyses.mi.planted.peak_contrast`). A null that a broken method
passes shows nothing: a peak rule that ignores the states (peaks at the first, the last or random steps; the
mutants of ``bench/mutants.py``) scores no answer-specific peaks either, and would pass a null that only asked
for none; it fails here (contrast ~0, where top-3 scores ~4.4 on the organism and ~2.3 on constructed states).
Measured (seed 0, tiny-overthink): planted gap 0.053 [0.040, 0.065] quick, 0.042 [0.034, 0.049] at 64; null 0.006
[-0.008, 0.023] quick, 0.002 [-0.005, 0.009] at 64; null peak precision 0.083 against chance 0.060 at 64.

Estimator: the paper's fixed sigma = 50 (``reference``), at a site where it suits the organism's scale
(max|x - mean| / sigma ~ 0.05). The job's default, the median-sigma kernel scaled to the states
(:data:`thinklens.analyses.mi.config.DEFAULT_ESTIMATOR`), is not yet a setting of its own: measured on the same quick
settings it gives planted gap 0.136 [0.032, 0.242] with sign-flip p = 0.013 (above ALPHA, failed at this size) and null
gap 0.027, 90% [-0.019, 0.073] (wider than the margin; its MI runs ~0.6, ten times the reference's, so the margins
stated here do not carry over).

Organism: ``tiny-overthink`` once it is in the zoo (it writes "So Tom has X apples." and re-checks), else
``tiny-r1`` (chat format). Site: block 1 of tiny-r1's 4 (``resid_post.1``): the state at the token that
writes the value carries it there; at the last block (the paper's site) the state is dominated by the next
token's prediction and the answer-specific part is small (tiny-r1, 48 trajectories, at the planted steps:
own 0.058 vs shuffled 0.044, p = 0.035, where block 1 gives 0.221 vs 0.097, p = 1e-4; tiny-think, 60: last
block gap 0.009 [-0.020, 0.037], block 1 gap 0.050 [0.012, 0.090]).

- ``mi-peaks planted-synthetic`` / ``null-synthetic``: no model: constructed states with the answer's own
  part at known steps over a profile every state and answer share (:func:`synthetic_scores`), or without
  it. They calibrate the estimator, its shuffled control and the peak rule whatever the organism.

What only the paired gap shows: in the null the own-answer MI still rises at the answer steps (p = 1e-4 over
64 trajectories) and the peaks still land there above the uniform chance (precision 0.11 vs 0.02; planted
0.28), because at this scale nHSIC is close to the squared correlation of the two coordinate profiles
(:mod:`thinklens.analyses.mi.small_scale`) and a state at a number token resembles any answer vector (the last-token
state of ``... #### N``). So a rise or peak at the answer is no evidence by itself; only own against
shuffled, on the same states, is.

Example:
    >>> [s.key for s in SETTINGS if not s.on_model]
    ['mi-peaks/planted', 'mi-peaks/null', 'mi-peaks/planted-synthetic', 'mi-peaks/null-synthetic']
    >>> [s.key for s in SETTINGS if s.on_model]  # validate --model M (smol-r1)
    ['mi-peaks/planted-model', 'mi-peaks/null-model']
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from thinklens.analyses.mi.answer_controls import derangement
from thinklens.analyses.mi.estimator import nhsic_trajectory
from thinklens.analyses.mi.peaks import top_k_peaks
from thinklens.analyses.mi.planted import answer_steps, score_trajectory
from thinklens.analyses.mi.run_format import read_index, read_trajectory
from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.calibration.stats import bootstrap_ci, paired_bootstrap, sign_flip_test
from thinklens.calibration.tost import tost_mean, units_needed
from thinklens.errors import ThinklensError
from thinklens.tasks.protocol import HELD_OUT, problems_by_steps
from thinklens.zoo.reasons import reasoning_precondition
from thinklens.zoo.registry import zoo_path

ALPHA = 0.01
GAP_MARGIN = 0.03
"""The null's margin of no answer-specific MI on the organism: own - shuffled nHSIC at the answer steps within
+-0.03 (reference estimator at block 1; the planted gap is 0.05 [0.04, 0.07] at quick size). Stated before the run."""
SYNTHETIC_GAP_MARGIN = 0.08
"""The same margin on the constructed states, whose curves vary more between two answers (their planted gap is
0.21 [0.18, 0.24] at 64 trajectories)."""
PRECISION_MARGIN = 0.1
"""The null's margin on the peaks: their precision against every statement of the value within +-0.1 of what as
many peaks placed at random score (the planted setting's excess is 0.12; a rule fixed on the last 3 steps: 0.15)."""
MIN_PEAK_CONTRAST = 1.0
"""A peak rule reads the curve when its peaks stand at least this many SD of the curve above its other steps
(:func:`thinklens.analyses.mi.planted.peak_contrast`; top-3 on the organism: ~4.4; random or fixed positions: ~0)."""
ORGANISMS = ("tiny-overthink", "tiny-r1")
"""Preferred organism first; the first one in the zoo is used."""
SITE = "resid_post.1"
MODEL_PRODUCING = False
"""``validate --model M``'s planted steps are the value's own tokens (the paper's), and the gap must beat the same
estimator on the raw token embeddings (:func:`beats_raw_tokens`): a reader of the tokens alone scores there too, so the
planted gap counts only above it. The states that *produce* the value (the token before it, :func:`answer_steps`'s
``producing``) are scored beside it as a stricter reading. Measured at seed 0, quick size (16 trajectories;
:func:`measure` at each site): on smol-r1, block 7's gap at the value's tokens is 0.41 [0.33, 0.49] against the embed
site's 0.024 [0.015, 0.033], and at the producing steps both are 0 (block 7: -0.0002 [-0.041, 0.040]); on
tiny-overthink, block 1's 0.053 [0.040, 0.065] against the embed site's 0.047 [0.034, 0.058] (paired difference 0.006,
p = 0.26), and at the producing steps no block of the four shows a gap."""
STEPS = (2, 4)
"""Chain lengths of the problems (min, max)."""


def organism() -> str:
    """The first of :data:`ORGANISMS` that the zoo has."""
    for name in ORGANISMS:
        try:
            if zoo_path(name) is not None:
                return name
        except ThinklensError:  # a name the zoo does not know yet (its recipe has not landed)
            continue
    return ORGANISMS[-1]


def write_problems(path: Path, n: int, *, seed: int, independent: bool) -> list[str]:
    """A GSM8K-format file of ``n`` held-out problems; returns each chain's true answer.

    ``independent``: every question is paired with the solution (and answer) of a problem drawn from another
    seeded stream, so the answer the job scores against is independent of the chain the model writes."""
    per = -(-n // (STEPS[1] - STEPS[0] + 1))
    chains = problems_by_steps(per, *STEPS, seed=HELD_OUT["eval"] + seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(chains))[:n]  # mix the step counts
    chains = [chains[i] for i in order]
    sols = chains
    if independent:
        other = problems_by_steps(per, *STEPS, seed=HELD_OUT["eval"] + seed + 7919)
        sols = [other[i] for i in rng.permutation(len(other))[:n]]

    def solution(p: Any) -> str:
        steps = " ".join(f"<<{s.left}{s.op}{s.right}={s.result}>>" for s in p.steps)
        return f"{steps}\n#### {p.answer}"

    lines = [json.dumps({"question": c.question, "answer": solution(s)}) for c, s in zip(chains, sols)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return [str(c.answer) for c in chains]


def measure(ctx: SettingContext, *, independent: bool, sub: str, model: str | None = None,
            site: str = SITE, producing: bool = False, n: int | None = None) -> dict[str, Any]:
    """Run the mi-peaks job on the setting's problems and score every trajectory at its planted steps (``model``:
    default the zoo's :func:`organism`; ``site``: where the states are read; ``producing``: the planted steps are the
    states that produce the value, :func:`~thinklens.analyses.mi.planted.answer_steps`; ``n``: trajectories, default
    16 quick and 64 full)."""
    n = n or (16 if ctx.quick else 64)
    if ctx.workdir is None:
        ctx.workdir = Path(tempfile.mkdtemp(prefix="thinklens-validate-"))
    data = Path(ctx.workdir) / f"{sub}.jsonl"
    truth = write_problems(data, n, seed=ctx.seed, independent=independent)
    model = model or organism()
    ctx.run_job("mi-peaks", sub, model=model, data=str(data), prompt_format="chat", n_problems=n, sites=(site,),
                estimators=("reference",), k=3, max_new_tokens=160, batch_size=16, seed=ctx.seed)
    run = Path(ctx.workdir) / sub
    entry = read_index(run)["models"][0]
    scores, indices = [], []
    for row in entry["index"]:
        rec = read_trajectory(run, entry["key"], row["i"])
        own, shuffled = rec.variants[rec.estimator], rec.shuffled[rec.estimator]
        s = score_trajectory(own, shuffled, rec.tokens, truth[rec.index], peaks=rec.peaks["top_k"], producing=producing)
        if s is None:
            continue
        # peaks are scored against every statement of the value: the organism writes it again in each re-check
        # round, where it is as known as at its first statement (the gap and the rise stay at the first one)
        every = score_trajectory(own, shuffled, rec.tokens, truth[rec.index], peaks=rec.peaks["top_k"],
                                 steps=answer_steps(rec.tokens, truth[rec.index], every=True, producing=producing))
        scores.append(dataclasses.replace(s, precision=every.precision, recall=every.recall,
                                          chance_precision=every.chance_precision, chance_recall=every.chance_recall))
        indices.append(rec.index)
    return {"model": model, "n_problems": n, "scores": scores, "indices": indices, "run": str(run), "site": site,
            "producing": producing}


def beats_raw_tokens(check: Check, m: dict[str, Any], raw: dict[str, Any], *, seed: int) -> Check:
    """``check`` (a planted :func:`gap_check` of ``m``) recovered only if its answer-specific MI also beats the same
    estimator reading the raw token embeddings (``raw``: :func:`measure` at the ``embed`` site, on the same problems
    and traces): gap at the state minus gap at ``embed``, paired over the trajectories scored in both, > 0 by a
    one-sided sign-flip test at p < :data:`ALPHA`. A method that never reads the model's computation fails here."""
    raw_gap = {i: s.gap for i, s in zip(raw["indices"], raw["scores"])}
    pairs = [(s.gap, raw_gap[i]) for i, s in zip(m["indices"], m["scores"]) if i in raw_gap]
    diff = np.asarray([a - b for a, b in pairs])
    p = sign_flip_test(diff, seed=seed, alternative="greater") if diff.size >= 2 else 1.0
    beats = bool(diff.size >= 10 and p < ALPHA and diff.mean() > 0)
    raw_check = gap_check(raw, seed=seed, planted=True)
    details = {**check.details, "raw_tokens": {
        "site": raw["site"], "gap": raw_check.value, "gap_ci": list(raw_check.ci), "verdict_alone": raw_check.verdict,
        "p_gap": raw_check.details["p_gap"], "peak_precision": raw_check.details["peak_precision"], "run": raw["run"],
        "state_minus_raw": float(diff.mean()) if diff.size else None, "n_paired": int(diff.size), "p_state_beats_raw": p,
        "beaten": beats}}
    verdict = check.verdict if beats else "failed"
    return Check(check.statistic, check.value, check.ci, verdict, n=check.n, details=details,
                 target=f"{check.target}; and the gap beats the same estimator on the raw token embeddings (embed site, "
                        f"paired over trajectories, sign-flip p < {ALPHA})")


def reads_the_curve(scores: list[Any], *, seed: int) -> tuple[bool, float, float]:
    """Whether the peak rule reads the MI curve (a rule that ignores the states, at random or fixed positions, does
    not): the mean :attr:`~thinklens.analyses.mi.planted.PlantedScore.peak_contrast` over trajectories is at least
    :data:`MIN_PEAK_CONTRAST` and above 0 (one-sided sign-flip, p < :data:`ALPHA`). Returns (reads, mean, p)."""
    c = np.asarray([s.peak_contrast for s in scores if np.isfinite(s.peak_contrast)])
    if c.size < 2:
        return False, float("nan"), 1.0
    p = sign_flip_test(c, seed=seed, alternative="greater")
    return bool(c.mean() >= MIN_PEAK_CONTRAST and p < ALPHA), float(c.mean()), float(p)


def _equivalence(diffs: np.ndarray, margin: float, bounds: tuple[float, float] | None = None) -> dict[str, Any]:
    if len(diffs) < 2:
        return {"equivalent": False, "margin": margin, "n": int(len(diffs)), "mean": None, "ci90": None, "p": None}
    eq = tost_mean(diffs, margin=margin, bounds=bounds)
    return {"equivalent": eq.equivalent, "margin": margin, "n": eq.n, "mean": eq.mean, "ci90": list(eq.ci), "p": eq.p}


def gap_check(m: dict[str, Any], *, seed: int, planted: bool, margin: float | None = None) -> Check:
    """The ``mi_gap`` check of one measured setting (module docstring). ``margin``: the null's equivalence margin
    of the gap (default :data:`GAP_MARGIN`)."""
    scores = m["scores"]
    own = np.asarray([s.own for s in scores])
    shuf = np.asarray([s.shuffled for s in scores])
    rest = np.asarray([s.own_elsewhere for s in scores])
    gap = paired_bootstrap(own, shuf, seed=seed)
    p_gap = sign_flip_test(own - shuf, seed=seed, alternative="greater") if scores else 1.0
    p_rise = sign_flip_test(own - rest, seed=seed, alternative="greater") if scores else 1.0
    with_peaks = [s for s in scores if not np.isnan(s.precision)]
    prec = np.asarray([s.precision for s in with_peaks])
    rec = np.asarray([s.recall for s in scores])
    reads, contrast, p_contrast = reads_the_curve(scores, seed=seed)
    details = {
        "model": m["model"], "site": m.get("site", SITE), "n_problems": m["n_problems"], "n_with_answer": len(scores), "run": m["run"],
        "p_gap": p_gap, "p_rise": p_rise, "mi_own": float(own.mean()) if scores else None,
        "mi_shuffled": float(shuf.mean()) if scores else None, "mi_elsewhere": float(rest.mean()) if scores else None,
        "peak_precision": float(prec.mean()) if prec.size else None,
        "peak_precision_ci": list(bootstrap_ci(prec, seed=seed)) if prec.size else None,
        "peak_precision_chance": float(np.mean([s.chance_precision for s in with_peaks])) if with_peaks else None,
        "peak_recall": float(rec.mean()) if rec.size else None,
        "peak_recall_ci": list(bootstrap_ci(rec, seed=seed)) if rec.size else None,
        "peak_recall_chance": float(np.mean([s.chance_recall for s in scores])) if scores else None,
        "peak_contrast": contrast, "p_peak_contrast": p_contrast, "peak_contrast_min": MIN_PEAK_CONTRAST,
        "peaks_read_the_curve": reads,
    }
    effect = len(scores) >= 10 and p_gap < ALPHA and gap.diff > 0
    reading = (f"the peaks stand at least {MIN_PEAK_CONTRAST:g} SD above the rest of their curve (mean over trajectories; "
               f"> 0 by sign-flip p < {ALPHA}: a rule that ignores the states fails it)")
    if planted:
        peaks_found = (prec.size > 0 and details["peak_precision_ci"][0] > details["peak_precision_chance"]
                       and details["peak_recall_ci"][0] > details["peak_recall_chance"] and reads)
        verdict = "recovered" if effect and p_rise < ALPHA and peaks_found else "failed"
        target = (f"own > shuffled MI at the planted steps (paired sign-flip p < {ALPHA}), own MI higher there than "
                  f"elsewhere (p < {ALPHA}), peak precision and recall against every statement of the value above chance "
                  f"(interval above it), {reading}")
    else:
        # "no effect" is shown, never read from a non-significant test: the gap and the peaks' excess over chance
        # each lie within a margin stated beforehand (TOST, 90% interval), and the peak rule is seen to work
        margin = GAP_MARGIN if margin is None else margin
        gap_eq = _equivalence(own - shuf, margin)
        prec_diffs = prec - np.asarray([s.chance_precision for s in with_peaks])
        prec_eq = _equivalence(prec_diffs, PRECISION_MARGIN, bounds=(-1.0, 1.0))  # a share minus a share
        if not gap_eq["equivalent"] and len(scores) >= 2:  # what size would show it, if the spread is the one seen
            gap_eq["units_needed"] = units_needed(own - shuf, margin=margin)
        if not prec_eq["equivalent"] and prec_diffs.size >= 2:
            prec_eq["units_needed"] = units_needed(prec_diffs, margin=PRECISION_MARGIN)
        details |= {"tost_gap": gap_eq, "tost_precision": prec_eq}
        shown = len(scores) >= 10 and gap_eq["equivalent"] and prec_eq["equivalent"] and reads
        verdict = "no-effect" if shown else "failed"
        target = (f"own - shuffled MI at the answer steps within +-{margin:g} (TOST, 90% interval), peak precision "
                  f"against every statement of the value within +-{PRECISION_MARGIN:g} of chance (TOST), {reading}")
    return Check("mi_gap", gap.diff, gap.ci, verdict, n=len(scores), target=target, details=details)


def synthetic_scores(n: int, *, strength: float, seed: int, n_steps: int = 60, d_model: int = 128,
                     n_planted: int = 3) -> list[Any]:
    """Trajectories of constructed states scored by the real estimator, its shuffled control and top-k peaks.

    Every state and every answer vector share one large profile ``mu`` (what makes another problem's answer
    score almost like the own one in a model); answer i is ``mu + z_i``. Each trajectory's states are ``mu`` plus
    noise, and at ``n_planted`` random steps also ``strength * z_i``: the answer information, at known steps.
    ``strength`` 0: the information removed (a null). Scales as a small model's last block (|x - mean| ~ 10 at
    sigma 50)."""
    g = torch.Generator().manual_seed(seed)
    mu = torch.randn(d_model, generator=g) * 3.0  # [d_model] the shared profile
    z = torch.randn(n, d_model, generator=g) * 3.0  # [problem, d_model] what is specific to each answer
    answers = mu + z
    perm = derangement(n, seed)
    scores = []
    for i in range(n):
        states = mu + torch.randn(n_steps, d_model, generator=g) * 1.5  # [step, d_model]
        steps = sorted((torch.randperm(n_steps - 1, generator=g)[:n_planted] + 1).tolist())
        states[steps] += strength * z[i]
        own = nhsic_trajectory(states, answers[i]).mi
        shuffled = nhsic_trajectory(states, answers[perm[i]]).mi
        scores.append(score_trajectory(own, shuffled, ["x"] * n_steps, "", peaks=top_k_peaks(own, k=n_planted).indices,
                                       steps=steps))
    return scores


SYNTHETIC_STRENGTH = 0.15
"""Answer-specific part planted at the known steps, relative to the answer's own (the shared profile is 1)."""


def _synthetic(ctx: SettingContext, strength: float) -> Check:
    n = 32 if ctx.quick else 64  # 16 would leave the null's 90% interval (+-0.09) wider than its margin
    m = {"model": "synthetic states", "n_problems": n, "run": "", "scores": synthetic_scores(n, strength=strength, seed=ctx.seed)}
    check = gap_check(m, seed=ctx.seed, planted=strength > 0, margin=SYNTHETIC_GAP_MARGIN)
    return Check(check.statistic, check.value, check.ci, check.verdict, n=check.n, target=check.target,
                 details={**check.details, "site": None, "strength": strength})


def _planted(ctx: SettingContext) -> Check:
    return gap_check(measure(ctx, independent=False, sub="planted"), seed=ctx.seed, planted=True)


def _null(ctx: SettingContext) -> Check:
    return gap_check(measure(ctx, independent=True, sub="null"), seed=ctx.seed, planted=False)


def model_site(ctx: SettingContext) -> str:
    """The site of ``validate --model M``: a quarter of the way up M's blocks (the zoo's block 1 of tiny-r1's 4)."""
    return f"resid_post.{max(1, ctx.hooked().n_layers // 4)}"


def _planted_model(ctx: SettingContext) -> Check:
    m = measure(ctx, independent=False, sub="planted-model", model=ctx.model, site=model_site(ctx), producing=MODEL_PRODUCING)
    raw = measure(ctx, independent=False, sub="planted-model-embed", model=ctx.model, site="embed", producing=MODEL_PRODUCING)
    check = beats_raw_tokens(gap_check(m, seed=ctx.seed, planted=True), m, raw, seed=ctx.seed)
    # the stricter reading, from the same run: the states that produce the value (reported, not judged)
    strict = gap_check(measure(ctx, independent=False, sub="planted-model", model=ctx.model, site=model_site(ctx),
                               producing=not MODEL_PRODUCING), seed=ctx.seed, planted=True)
    check.details["other_steps"] = {"producing": not MODEL_PRODUCING, "gap": strict.value, "gap_ci": list(strict.ci),
                                    "p_gap": strict.details["p_gap"], "n": strict.n, "verdict_alone": strict.verdict}
    return check


MODEL_GAP_MARGIN = 0.1
"""``validate --model M``'s null margin on the gap: a quarter of the planted gap that smol-r1-base showed at the same
site (0.40 [0.33, 0.47], 64 trajectories, seed 0: record validate-smol-r1-mi-full as made at 074abc3), as the zoo's :data:`GAP_MARGIN` is
0.6 of tiny-overthink's 0.05. Stated before the run on today's smol-r1. The zoo's 0.03 was not shown there at 64
trajectories (90% interval [-0.059, 0.035]: the own - shuffled gap at a real model's answer steps has SD ~0.22, four
times the zoo's), and would need several hundred (``units_needed`` in the row's details says how many)."""


def _null_model(ctx: SettingContext) -> Check:
    m = measure(ctx, independent=True, sub="null-model", model=ctx.model, site=model_site(ctx), producing=MODEL_PRODUCING)
    check = gap_check(m, seed=ctx.seed, planted=False, margin=MODEL_GAP_MARGIN)
    zoo_margin = _equivalence(np.asarray([s.own - s.shuffled for s in m["scores"]]), GAP_MARGIN)
    if len(m["scores"]) >= 2:
        zoo_margin["units_needed"] = units_needed([s.own - s.shuffled for s in m["scores"]], margin=GAP_MARGIN)
    check.details["tost_gap_zoo_margin"] = zoo_margin  # the zoo's margin, reported beside (not judged)
    return check


SETTINGS = [
    Setting("mi-peaks", "planted", "recovered", _planted,
            help="the answer first written at a known step: own-answer MI beats the shuffled answer there (paired)"),
    Setting("mi-peaks", "null", "no-effect", _null,
            help="answers independent of the chain: own and shuffled answers score alike"),
    Setting("mi-peaks", "planted-synthetic", "recovered", lambda ctx: _synthetic(ctx, SYNTHETIC_STRENGTH),
            help="constructed states: the answer's own part added at 3 known steps over a shared profile"),
    Setting("mi-peaks", "null-synthetic", "no-effect", lambda ctx: _synthetic(ctx, 0.0),
            help="constructed states with the answer information removed"),
    Setting("mi-peaks", "planted-model", "recovered", _planted_model, on_model=True,
            precondition=reasoning_precondition("mi-peaks"),
            help="--model M that reasons in the R1 format (smol-r1): the planted setting on M's own chains"),
    Setting("mi-peaks", "null-model", "no-effect", _null_model, on_model=True,
            precondition=reasoning_precondition("mi-peaks"),
            help="--model M: answers independent of M's chains score alike (gap within +-0.1, a quarter of smol-r1-base's "
                 "planted gap)"),
]
