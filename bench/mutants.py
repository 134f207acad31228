"""Named mutants of the methods' core computations, each run against the default-tier tests that must kill it:
``python -m bench.mutants`` (``--only "NAME[;NAME]"`` for some, ``--list`` to list them).

Each mutant is one exact source edit (the text it replaces must occur exactly once, so a refactor that moves it
is noticed). It is applied to a copy of the repository's tracked files (the shared checkout is never touched;
``data/`` is linked, not copied), and the mutant's test files are run there with ``pytest -x``: a failing test kills
it. The unmutated copy is run on the same tests first; a mutant whose tests do not pass unmutated is reported as
such and not counted. Writes ``results/mutants.json`` (the README's mutant table is rendered from it) and prints
``mutant.NAME=killed|survived`` lines, then ``mutants_killed=K/N`` last.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "mutants.json"
#: The README block's template, one row per mutant (written with the summary; ``python -m tools.readme_results
#: --write`` renders it into README.md).
TEMPLATE = ROOT / "results" / "readme" / "mutants.md"


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str
    """What the mutant does wrong, as a reviewer would name it."""
    method: str
    """The method whose core it breaks."""
    path: str
    """The file edited, relative to the repository root."""
    old: str
    """The exact text replaced (must occur once in ``path``)."""
    new: str
    """What replaces it."""
    tests: tuple[str, ...]
    """The pytest arguments (files, ``-k``) that must kill it: the relevant default-tier tests only."""


CODI_TESTS = ("tests/latent/test_codi.py", "tests/latent/test_codi_mutants.py")
CONFORMAL_TESTS = ("tests/probes/test_conformal.py", "tests/probes/test_conformal_mutants.py")
STATS_TESTS = ("tests/core/test_stats.py", "tests/core/test_stats_mutants.py")
MI_TESTS = ("tests/analyses/test_mi_estimator.py",)
#: The mi-peaks null settings alone (quick, default tier): a broken method must fail its null.
MI_NULL_TESTS = ("tests/analyses/test_mi_validation.py", "-k", "null")
#: The thinking-word findings' rules, without the CLI run.
MI_WORD_TESTS = ("tests/analyses/test_mi_peak_flag.py", "-k", "not cli")
LYNX_TESTS = ("tests/probes/test_lynx.py", "tests/probes/test_datasets.py")
SAE_STEER_TESTS = ("tests/steering/test_feature_steering.py",)
SEEK_TESTS = ("tests/latent/test_latentseek.py",)
#: The latent table's matched No-CoT rule.
MATCHED_TESTS = ("tests/latent/test_matched_baseline.py",)
ANSWER_TESTS = ("tests/test_answers.py",)
#: The faster LaTeX parse against latex2sympy's own verdicts and numbers.
GRADING_TESTS = ("tests/test_grading_latency.py",)
HYBRID_TESTS = ("tests/steering/test_hybrid.py",)
RV_TESTS = ("tests/steering/test_reasoning_vectors.py", "tests/steering/test_reasoning_vector_mutants.py")
#: The validation job's verdict rules: each method's planted/null judgement and the findings it gives.
CODI_VALIDATION_TESTS = ("tests/latent/test_codi_validation.py",)
#: The latent nulls' equivalence rule: CODI's, Coconut's and LatentSeek's nulls by TOST.
LATENT_NULL_TESTS = ("tests/latent/test_null_equivalence.py",)

MUTANTS: tuple[Mutant, ...] = (
    # ---- CODI: the distillation loss (latent/codi.py)
    Mutant("no teacher detach", "CODI", "latent/codi.py",
           "t_sel = ht[rows, kt].float().detach()", "t_sel = ht[rows, kt].float()", CODI_TESTS),
    Mutant("distillation on the last layer only", "CODI", "latent/codi.py",
           "for hs, ht in zip(out.hidden_states, teacher.hidden_states):",
           "for hs, ht in zip(out.hidden_states[-1:], teacher.hidden_states[-1:]):", CODI_TESTS),
    Mutant("no /std", "CODI", "latent/codi.py",
           '.mean(-1) / t_sel.std(-1).clamp_min(1e-6)', '.mean(-1)', CODI_TESTS),
    Mutant("student state one token early", "CODI", "latent/codi.py",
           "s_sel = hs[rows, ks].float()", "s_sel = hs[rows, (ks - 1).clamp_min(0)].float()", CODI_TESTS),
    Mutant("distillation at the answer number, not the token before it", "CODI", "latent/codi.py",
           "out.append(at + ex.marker_len - 1)", "out.append(at + ex.marker_len)", CODI_TESTS),
    Mutant("teacher sees the last step too", "CODI", "latent/codi.py",
           "(ex.steps if include_last_step else ex.steps[:-1])", "ex.steps", CODI_TESTS),
    # ---- LYNX: the conformal quantile (probes/conformal.py)
    Mutant("off-by-one quantile (the (k+1)-th smallest)", "LYNX conformal", "probes/conformal.py",
           "return float(scores[conformal_rank(scores.shape[0], delta) - 1])",
           "return float(scores[min(conformal_rank(scores.shape[0], delta), scores.shape[0] - 1)])", CONFORMAL_TESTS),
    Mutant("rank ceil(n(1-delta)) without the +1", "LYNX conformal", "probes/conformal.py",
           "k = max(1, math.ceil((n + 1) * (1 - d)))", "k = max(1, math.ceil(n * (1 - d)))", CONFORMAL_TESTS),
    Mutant("rank in floating point (ceil(150 * 0.82) = 124, not 123)", "LYNX conformal", "probes/conformal.py",
           "k = max(1, math.ceil((n + 1) * (1 - d)))", "k = max(1, math.ceil((n + 1) * (1 - float(d))))",
           CONFORMAL_TESTS),
    Mutant("classes swapped in the prediction set", "LYNX conformal", "probes/conformal.py",
           "return np.column_stack([p <= q_neg, 1.0 - p <= q_pos])",
           "return np.column_stack([p <= q_pos, 1.0 - p <= q_neg])", CONFORMAL_TESTS),
    Mutant("exit when 1 is in the set (not when the set is {1})", "LYNX conformal", "probes/conformal.py",
           "return sets[:, 1] & ~sets[:, 0]", "return sets[:, 1]", CONFORMAL_TESTS),
    Mutant("exit cost without the exit string", "LYNX", "probes/lynx.py",
           "return self.start_index + int(n_exit_tokens) + int(n_answer_tokens)",
           "return self.start_index + int(n_answer_tokens)", LYNX_TESTS),
    # ---- statistics (thinklens/calibration/stats.py)
    Mutant("wilson: the exact interval instead", "stats", "thinklens/calibration/stats.py",
           'proportion_ci(confidence_level=level, method="wilson")',
           'proportion_ci(confidence_level=level, method="exact")', STATS_TESTS),
    Mutant("wilson: level ignored (always 95%)", "stats", "thinklens/calibration/stats.py",
           'proportion_ci(confidence_level=level, method="wilson")',
           'proportion_ci(confidence_level=0.95, method="wilson")', STATS_TESTS),
    Mutant("mcnemar: concordant successes counted as discordant", "stats", "thinklens/calibration/stats.py",
           "only_a, only_b = int(np.sum(a_arr & ~b_arr)), int(np.sum(~a_arr & b_arr))",
           "only_a, only_b = int(np.sum(a_arr & ~b_arr)), int(np.sum(~a_arr & b_arr)) + int(np.sum(a_arr & b_arr))",
           STATS_TESTS),
    Mutant("mcnemar: one-sided", "stats", "thinklens/calibration/stats.py",
           "return float(binomtest(only_a, only_a + only_b, 0.5).pvalue)",
           'return float(binomtest(only_a, only_a + only_b, 0.5, alternative="greater").pvalue)', STATS_TESTS),
    Mutant("mcnemar: binomial over every pair", "stats", "thinklens/calibration/stats.py",
           "return float(binomtest(only_a, only_a + only_b, 0.5).pvalue)",
           "return float(binomtest(only_a, len(a_arr), 0.5).pvalue)", STATS_TESTS),
    # ---- MI peaks: the nHSIC estimator and its controls (analyses/mi/)
    Mutant("kernel width sigma instead of sqrt(2) sigma", "MI estimator", "analyses/mi/solvers.py",
           "a = v * (0.5**0.5 / sigma)[:, None]", "a = v * (1.0 / sigma)[:, None]", MI_TESTS),
    Mutant("median sigma counts the zero diagonal", "MI estimator", "analyses/mi/solvers.py",
           "med = torch.kthvalue(d, m + 2 * ((n + 1) // 2), dim=1).values",
           "med = torch.kthvalue(d, 2 * ((n + 1) // 2), dim=1).values", MI_TESTS),
    Mutant("kernel not centred", "MI estimator", "analyses/mi/solvers.py",
           "return e.sub_(row).sub_(row.mT).add_(row.mean(1, keepdim=True))", "return e", MI_TESTS),
    Mutant("shuffled control scores the true answer", "MI estimator", "analyses/mi/answer_controls.py",
           "curves = tuple(nhsic_trajectory(t, answers[j], config, **kwargs)  # type: ignore[arg-type]\n"
           "                   for t, j in zip(trajectories, perm))",
           "curves = tuple(nhsic_trajectory(t, answers[i], config, **kwargs)  # type: ignore[arg-type]\n"
           "                   for i, (t, j) in enumerate(zip(trajectories, perm)))", MI_TESTS),
    Mutant("permuted-coordinates control not permuted", "MI estimator", "analyses/mi/answer_controls.py",
           "return nhsic_trajectory(states, answer[perm], config, **kwargs)",
           "return nhsic_trajectory(states, answer, config, **kwargs)", MI_TESTS),
    # ---- reasoning vectors: the random-direction control (steering/reasoning_vectors.py)
    Mutant("control equal to v", "reasoning vectors", "steering/reasoning_vectors.py",
           "out[n] = x * (d.norm() / x.norm().clamp_min(1e-12))", "out[n] = d.clone()", RV_TESTS),
    Mutant("control not norm-matched", "reasoning vectors", "steering/reasoning_vectors.py",
           "out[n] = x * (d.norm() / x.norm().clamp_min(1e-12))", "out[n] = x", RV_TESTS),
    Mutant("control ignores its seed", "reasoning vectors", "steering/reasoning_vectors.py",
           "g = torch.Generator().manual_seed(seed)\n        out = {}",
           "g = torch.Generator().manual_seed(0)\n        out = {}", RV_TESTS),
    Mutant("v taken against the wrong model (b - a)", "reasoning vectors", "steering/reasoning_vectors.py",
           "return ReasoningVector.between(wa, wb, label=", "return ReasoningVector.between(wb, wa, label=", RV_TESTS),
    # ---- hybrid steering: the thinking state that picks a sentence's category (steering/hybrid_generate.py)
    Mutant("category from the wrong position (one token early)", "hybrid", "steering/hybrid_generate.py",
           "steps = [t] if st is None else list(range(st + 1, t + 1))",
           "steps = [t] if st is None else list(range(st, t))", HYBRID_TESTS),
    # ---- SAE feature steering (steering/feature_steering.py)
    Mutant("decoder column instead of row", "SAE steering", "steering/feature_steering.py",
           "v = sae.W_dec[f].detach().float().cpu().clone()", "v = sae.W_dec[:, f].detach().float().cpu().clone()",
           SAE_STEER_TESTS),
    Mutant("clamp without the error term", "SAE steering", "steering/feature_steering.py",
           "delta = sae.decode(z2) - sae.decode(z)  # the error term x - decode(z) is kept as is\n"
           "            return act + delta.to(act.device, act.dtype)",
           "delta = sae.decode(z2) - sae.decode(z)  # the error term x - decode(z) is kept as is\n"
           "            return sae.decode(z2).to(act.device, act.dtype)",
           SAE_STEER_TESTS),
    # ---- SAE and feature steering: broken SAEs that the SAE null must fail, and the vector null's vector
    Mutant("SAE saved with a random decoder", "SAE", "steering/sae.py",
           "        trained.save_inference_model(out)\n",
           "        trained.W_dec.data = torch.randn_like(trained.W_dec)\n        trained.save_inference_model(out)\n",
           ("tests/steering/test_validation.py::test_sae_null_quick",)),
    Mutant("SAE that learns nothing (learning rate 0)", "SAE", "steering/sae.py",
           "lr=cfg.lr, lr_end=cfg.lr,", "lr=0.0, lr_end=0.0,", ("tests/steering/test_validation.py::test_sae_null_quick",)),
    Mutant("SAE top-k keeping k-1", "SAE", "steering/sae.py",
           'extra = {k: getattr(cfg, k) for k in ("k", "l1_coefficient", "l0_coefficient") if k in names}',
           'extra = {k: getattr(cfg, k) - (k == "k") for k in ("k", "l1_coefficient", "l0_coefficient") if k in names}',
           ("tests/steering/test_sae.py",)),
    Mutant("vector null: v itself under test", "reasoning vectors", "steering/vector_validation.py",
           "null = v.random_like(ctx.seed + 101)", "null = v",
           ("tests/steering/test_reasoning_vector_validation.py",)),
    Mutant("SAE null: the fit to the rows not required", "SAE", "steering/validation.py",
           'verdict = "no-effect" if eq.equivalent and fit["fits"] else "failed"',
           'verdict = "no-effect" if eq.equivalent else "failed"', ("tests/steering/test_validation.py",)),
    Mutant("SAE: most features dead without a word", "SAE", "steering/sae_findings.py",
           "    if share <= MAX_DEAD_SHARE:", "    if True:", ("tests/steering/test_sae_findings.py",)),
    Mutant("steer: effect judged against the random feature alone", "SAE steering", "steering/steer_findings.py",
           'for arm, r in compared.items() if not r["beaten"]]', 'for arm, r in compared.items() if False]',
           ("tests/steering/test_steer_findings.py",)),
    Mutant("steer: harm bound not applied", "SAE steering", "steering/steer_findings.py",
           '        if not h["within"]:', "        if False:", ("tests/steering/test_steer_findings.py",)),
    Mutant("steer: diff of means from too few states", "SAE steering", "steering/jobs/steer.py",
           "    if sv.n_a < cfg.min_dom_states:", "    if False:", ("tests/steering/test_steer_findings.py",)),
    Mutant("steer null-word: a word never written is steered (the argmax of zero correlations)", "SAE steering",
           "steering/jobs/steer.py", "    if word is not None and cfg.feature is None:\n        check_word_seen(stats, word, cfg.word)\n",
           "",
           ("tests/steering/test_steer_findings.py",)),
    # ---- end SAE and feature steering
    # ---- LatentSeek: the policy-gradient step and the reward (latent/latentseek.py)
    Mutant("gradient sign flipped", "LatentSeek", "latent/latentseek.py",
           "loss = -r * logp.gather(1, x[:, None]).sum()", "loss = r * logp.gather(1, x[:, None]).sum()", SEEK_TESTS),
    Mutant("reward ignoring the answer", "LatentSeek", "latent/latentseek.py",
           "return 0.0 if is_correct(text, answer) else -1.0", "return 0.0 if text.strip() else -1.0", SEEK_TESTS),
    # ---- latent table: each latent method against the No-CoT trained like it (latent/latent_findings.py)
    Mutant("latent table: a No-CoT trained for fewer steps counted as matched", "latent table", "latent/latent_findings.py",
           'theirs["steps"] < mine["steps"]', 'theirs["steps"] < 0', MATCHED_TESTS),
    Mutant("latent table: a No-CoT from another parent counted as matched", "latent table", "latent/latent_findings.py",
           'if theirs.get("parent") != mine.get("parent"):', "if False:", MATCHED_TESTS),
    Mutant("latent table: the unmatched No-CoT comparisons headlined first", "latent table", "latent/latent_findings.py",
           "return findings_doc(found + unmatched)", "return findings_doc(unmatched + found)", MATCHED_TESTS),
    Mutant("latent table: an effect over an unmatched No-CoT shown green", "latent table", "app/dashboard.py",
           'if finding.get("verdict") != "effect" or extra.get("baseline") == "unmatched":',
           'if finding.get("verdict") != "effect":', ("tests/app/test_unmatched_tone.py",)),
    # ---- validation: the verdict rules of the planted and null settings (thinklens run validate)
    Mutant("LYNX planted: the validity bound not required", "validation", "probes/validation.py",
           "        if not r[\"not_rejected\"]:\n            misses.append(f\"{d}: the bound P(S={{1}}|y=0) <= "
           "{r['delta']:g} is rejected\")\n",
           "", ("tests/probes/test_lynx_validation.py",)),
    # ---- LYNX: a broken LYNX fails its null; the null and the validity check count harm and power
    Mutant("LYNX exits at a fixed low threshold (calibration ignored)", "LYNX", "probes/exits.py",
           "return first_exits(events, rollouts, calibrator.exit_mask(events.prob, delta))",
           "return first_exits(events, rollouts, events.prob > 0.05)", ("tests/probes/test_lynx_null_mutants.py",)),
    Mutant("LYNX probe scores ignore the states", "LYNX", "probes/mlp.py",
           "h = (X - self.mean_) / self.scale_  # [n, feature]",
           "h = np.random.default_rng(0).standard_normal(X.shape)  # [n, feature]",
           ("tests/probes/test_lynx_null_mutants.py",)),
    Mutant("LYNX null: accuracy harm not counted", "validation", "probes/validation.py",
           "if not (-m < clo and chi < m):", "if False:", ("tests/probes/test_lynx_validation.py",)),
    Mutant("LYNX null: no saving by non-significance (its interval includes 0)", "validation", "probes/validation.py",
           "if not hi < NULL_SAVING:", 'if not (lo <= 0.0 <= hi or r["saving"] < NULL_SAVING):',
           ("tests/probes/test_lynx_validation.py",)),
    Mutant("LYNX validity: not rejected counts as shown (power not required)", "validation", "probes/validation.py",
           'if not r["not_rejected"] or r["power"] >= MIN_POWER:', "if True:", ("tests/probes/test_lynx_validation.py",)),
    Mutant("LYNX validity: the bound tested two-sided at half the level (Clopper-Pearson lower end)", "LYNX conformal",
           "probes/conformal.py", "return ~(self.p_value < self.alpha)", "return self.lower <= self.deltas",
           ("tests/probes/test_conformal.py",)),
    Mutant("findings planted: power judged on its interval's midpoint", "validation", "thinklens/calibration/settings.py",
           'return "recovered" if ci[0] >= target else "failed"',
           'return "recovered" if (ci[0] + ci[1]) / 2 >= target else "failed"', ("tests/core/test_findings_settings.py",)),
    Mutant("findings null: passes when its interval reaches alpha", "validation", "thinklens/calibration/settings.py",
           'return "no-effect" if ci[1] < alpha + margin else "failed"',
           'return "no-effect" if ci[0] <= alpha else "failed"', ("tests/core/test_findings_settings.py",)),
    Mutant("MI planted: peaks not required to beat chance", "validation", "analyses/mi/validation.py",
           'verdict = "recovered" if effect and p_rise < ALPHA and peaks_found else "failed"',
           'verdict = "recovered" if effect and p_rise < ALPHA else "failed"', ("tests/analyses/test_mi_validation.py",)),
    # ---- MI peaks: broken peak rules that ignore the states: the null settings must fail them
    Mutant("MI peak rule ignores the states: the first k steps", "MI peaks", "analyses/mi/peaks.py",
           'order = np.argsort(-arr, kind="stable")[:k]', "order = np.arange(k)", MI_NULL_TESTS),
    Mutant("MI peak rule ignores the states: k random steps", "MI peaks", "analyses/mi/peaks.py",
           'order = np.argsort(-arr, kind="stable")[:k]', "order = np.random.default_rng(arr.size).permutation(arr.size)[:k]",
           MI_NULL_TESTS),
    Mutant("MI peak rule ignores the states: the last k steps", "MI peaks", "analyses/mi/peaks.py",
           'order = np.argsort(-arr, kind="stable")[:k]', "order = np.arange(arr.size - k, arr.size)", MI_NULL_TESTS),
    Mutant("MI null: no effect read from a non-significant test", "MI peaks", "analyses/mi/validation.py",
           'shown = len(scores) >= 10 and gap_eq["equivalent"] and prec_eq["equivalent"] and reads',
           "shown = len(scores) >= 10 and p_gap >= ALPHA and reads", ("tests/analyses/test_mi_validation.py", "-k", "null")),
    Mutant("thinking words: n is the job's problem count", "MI peaks", "analyses/mi/mi_findings.py",
           "f = ratio_finding(claim, float(ratio), (float(lo), float(hi)), n=units)",
           "f = ratio_finding(claim, float(ratio), (float(lo), float(hi)), n=max(units, 16))", MI_WORD_TESTS),
    Mutant("thinking words: a zero-width interval accepted", "MI peaks", "analyses/mi/mi_findings.py",
           'if verdict != "too few samples" and float(lo) == float(hi):', "if False:", MI_WORD_TESTS),
    Mutant("thinking words: declared when the MI fails its shuffled control", "MI peaks", "analyses/mi/mi_findings.py",
           "if mi_control is not None and not mi_control.is_effect:", "if False:", MI_WORD_TESTS),
    Mutant("thinking words: declared at peaks that are not sparse", "MI peaks", "analyses/mi/mi_findings.py",
           "    if flag:\n        held.append(NOT_SPARSE)\n", "", MI_WORD_TESTS),
    Mutant("MI job default: the fixed sigma = 50 again", "MI peaks", "analyses/mi/config.py",
           'estimators: tuple[str, ...] = (DEFAULT_ESTIMATOR, "reference", "l2")',
           'estimators: tuple[str, ...] = ("reference", "median_sigma", "l2")',
           ("tests/analyses/test_mi_estimator.py", "-k", "default")),
    Mutant("MI saturated fixed sigma not flagged", "MI peaks", "analyses/mi/mi_findings.py",
           "if flag:  # the MI of a saturated fixed-sigma kernel is flagged wherever it is read", "if False:",
           ("tests/analyses/test_mi_estimator.py", "-k", "saturated")),
    Mutant("MI chart: the shuffled curve drawn above the own one", "MI peaks", "analyses/mi/figures_runs.py",
           "zorder=1),", "zorder=3),", ("tests/analyses/test_mi_figures.py", "-k", "own_curve_above")),
    Mutant("SAE recovery: the share of features not required", "validation", "steering/validation.py",
           "met = mean >= RECOVERY_COSINE and share >= RECOVERY_SHARE", "met = mean >= RECOVERY_COSINE",
           ("tests/steering/test_validation.py",)),
    Mutant("reasoning vector planted: the random control not required", "validation", "steering/vector_validation.py",
           'return "recovered" if headroom >= MIN_HEADROOM and beats_zero and beats_random else "failed"',
           'return "recovered" if headroom >= MIN_HEADROOM and beats_zero else "failed"',
           ("tests/steering/test_reasoning_vector_validation.py",)),
    Mutant("LatentSeek planted: headroom not required", "validation", "latent/validation.py",
           'verdict = "recovered" if headroom >= MIN_HEADROOM and shown else "failed"',
           'verdict = "recovered" if shown else "failed"', ("tests/latent/test_seek_validation.py",)),
    Mutant("hybrid planted judged by direction alone", "validation", "steering/hybrid_validation.py",
           "    beat = beats.is_effect", '    beat = float(beats.extra["diff"]) > 0', ("tests/steering/test_hybrid_validation.py",)),
    Mutant("CODI planted: the 20-point bar dropped", "validation", "latent/codi_validation.py",
           'met = compression >= MIN_COMPRESSION and gain.extra["diff"] >= MIN_GAIN and gain.is_effect',
           "met = compression >= MIN_COMPRESSION and gain.is_effect", CODI_VALIDATION_TESTS),
    Mutant("CODI planted: the task's precondition ignored", "validation", "latent/codi_validation.py",
           '"recovered" if precondition and met else "failed"', '"recovered" if met else "failed"', CODI_VALIDATION_TESTS),
    Mutant("latent null: the trained latents kept", "validation", "latent/codi_validation.py",
           'got = _rows(ctx, ("nocot", key), noise=True, plan=NULL_PLAN)',
           'got = _rows(ctx, ("nocot", key), noise=False, plan=NULL_PLAN)', CODI_VALIDATION_TESTS),
    # ---- the latent nulls pass by an equivalence test, never on a difference that is not significant
    Mutant("latent null passed on no significant gain (the old rule)", "validation", "latent/null_equivalence.py",
           'return ("no-effect" if eq.equivalent else "failed"), tost', 'return ("no-effect" if eq.ci[0] <= 0 else "failed"), tost',
           LATENT_NULL_TESTS),
    Mutant("latent null: one-sided TOST (only a gain ruled out)", "validation", "latent/null_equivalence.py",
           'return ("no-effect" if eq.equivalent else "failed"), tost',
           'return ("no-effect" if eq.ci[1] < margin else "failed"), tost', LATENT_NULL_TESTS),
    Mutant("latent null: one-sided TOST (only a loss ruled out)", "validation", "latent/null_equivalence.py",
           'return ("no-effect" if eq.equivalent else "failed"), tost',
           'return ("no-effect" if -margin < eq.ci[0] else "failed"), tost', LATENT_NULL_TESTS),
    Mutant("latent null: margin ignored", "validation", "latent/null_equivalence.py",
           "eq = tost_mean(d, margin=margin, alpha=ALPHA,", "eq = tost_mean(d, margin=1.0, alpha=ALPHA,", LATENT_NULL_TESTS),
    Mutant("latent null: the exact bound dropped", "validation", "latent/null_equivalence.py",
           "bounds=(-1.0, 1.0))", "bounds=None)", LATENT_NULL_TESTS),
    Mutant("CODI null judged by non-significance (no equivalence test)", "validation", "latent/codi_validation.py",
           "    return _check(gain, verdict,\n", '    return _check(gain, "no-effect" if not gain.is_effect else "failed",\n',
           LATENT_NULL_TESTS),
    Mutant("LatentSeek null judged by non-significance (no equivalence test)", "validation", "latent/validation.py",
           '    verdict, tost = null_verdict(o["seek"], o["start"], margin=NULL_MARGIN)',
           '    tost = null_verdict(o["seek"], o["start"], margin=NULL_MARGIN)[1]\n'
           '    verdict = "no-effect" if not gain.is_effect else "failed"', LATENT_NULL_TESTS),
    Mutant("findings: a failed precondition read as a miss", "validation", "thinklens/calibration/validate.py",
           'unmet = r["verdict"] == "failed" and details.get("precondition_met") is False', "unmet = False",
           ("tests/core/test_validation_findings_words.py",)),
    # ---- answers: the stated answer (thinklens/data/answers.py)
    # ---- hybrid / stats / eval: nulls a broken method must fail, intervals and verdict words
    Mutant("inert vectors: the steering hook adds nothing", "hybrid", "steering/hybrid_generate.py",
           "        return act + m * add[:, None, :].to(act.device, act.dtype)", "        return act",
           ("tests/steering/test_hybrid_validation.py",)),
    Mutant("inert vectors: never trained (zero)", "hybrid", "steering/hybrid.py",
           "    return (unit * u).detach().cpu(), curve", "    return (0 * u).detach().cpu(), curve",
           ("tests/steering/test_hybrid_validation.py",)),
    Mutant("hybrid's random-vector control built from the trained vectors", "hybrid", "steering/hybrid_generate.py",
           "                vecs.append(self.rand_vecs[c])", "                vecs.append(hv.bias + hv.vectors[c])",
           HYBRID_TESTS),
    Mutant("hybrid null passed by non-significance (no equivalence test)", "validation", "steering/hybrid_validation.py",
           '"no-effect" if eq.equivalent and moves else "failed"', '"no-effect" if not gain.is_effect and moves else "failed"',
           ("tests/steering/test_hybrid_validation.py",)),
    Mutant("hybrid effect without beating its controls", "hybrid", "steering/hybrid_generate.py",
           '    lost = [c for c in controls if c.verdict != "effect"]', "    lost = []",
           ("tests/steering/test_hybrid_findings.py",)),
    Mutant("no_headroom tested one-sided", "stats", "thinklens/calibration/findings.py",
           "    return min(1.0, 2.0 * 0.5 ** room) >= alpha", "    return min(1.0, 0.5 ** room) >= alpha", STATS_TESTS),
    Mutant("bootstrap: a 90% interval labelled 95%", "stats", "thinklens/calibration/stats.py",
           "    a = (1.0 - level) / 2.0", "    a = 1.0 - level", STATS_TESTS),
    Mutant("paired 0/1 difference interval from the bootstrap, not McNemar's", "stats", "thinklens/calibration/findings.py",
           "        diff_ci = mcnemar_interval(a.astype(bool), b.astype(bool), level=1.0 - alpha)", "        diff_ci = pr.ci",
           STATS_TESTS),
    Mutant("'no headroom' called 'at ceiling'", "stats", "thinklens/calibration/findings.py",
           'alpha=alpha):\n        verdict = "no headroom"', 'alpha=alpha):\n        verdict = "at ceiling"', STATS_TESTS),
    Mutant("a winning control read as 'at ceiling'", "stats", "thinklens/calibration/findings.py",
           'if verdict in ("effect", "no effect") and at_bound and not control_wins:',
           'if verdict in ("effect", "no effect") and at_bound:', STATS_TESTS + ("tests/latent/test_trainer_findings.py",)),
    Mutant("reasoning-token finding without a thinking span", "eval", "analyses/eval_findings.py",
           "    if not thinking_span:  # no span", "    if False:  # no span", ("tests/analyses/test_eval_findings.py",)),
    # ---- end hybrid / stats / eval
    Mutant("last number instead of the last box", "answers", "thinklens/data/answers.py",
           "boxed = _box_answer(text, boxes)\n", "boxed = None\n", ANSWER_TESTS),
    # ---- grading latency: the faster parse must parse what latex2sympy parses
    Mutant("two-stage parse without its LL fallback", "answers", "thinklens/data/equivalence.py",
           "            self._thinklens_mode = PredictionMode.LL\n            return parse(self, latex_str)",
           "            raise", GRADING_TESTS),
    Mutant("plain integers built as floats", "answers", "thinklens/data/equivalence.py",
           "        return sympy.Integer(digits)", "        return sympy.Float(digits)", GRADING_TESTS),
    # ---- steer --word: a word the SAE run did not score is scored, not swapped for one it did
    Mutant("steer: an unscored word replaced by the saved statistics' first word", "SAE steering", "steering/jobs/steer.py",
           "    word = stats_word(saved, cfg) if saved is not None else None",
           "    word = (stats_word(saved, cfg) or next(iter(saved.corr_words))) if saved is not None else None",
           ("tests/steering/test_steer_word.py",)),
    # ---- interrupts and early refusals
    Mutant("an interrupted run left 'running'", "jobs", "thinklens/runs/runner.py",
           '                    run.write_meta(status="interrupted", interruptions=[*run.meta().get("interruptions", []), at])',
           "                    pass", ("tests/core/test_job_interrupts.py", "-k", "import-traces")),
    Mutant("LYNX rollouts never stopped by their labels", "LYNX", "probes/lynx_splits.py",
           "        left = len(prompts) - batches[k].stop", "        left = len(prompts)",
           ("tests/probes/test_lynx_label_stop.py",)),
    # ---- long traces: the pre-sized KV cache and continuous batching
    Mutant("pre-sized KV buffer grown without its contents", "decode loop", "thinklens/generation/presized_cache.py",
           "            if n:  # what was cached so far", "            if False:  # what was cached so far",
           ("tests/core/test_long_traces.py", "-k", "doubles")),
    Mutant("continuous batching refills slots only when the batch drains", "decode loop", "thinklens/generation/decode_loop.py",
           "if queue and (dec is None or free):", "if queue and (dec is None or len(free) == len(slot)):",
           ("tests/core/test_long_traces.py", "-k", "total_tokens")),
    Mutant("continuous batching admits prompts in prompt order", "decode loop", "thinklens/generation/decode_loop.py",
           "queue = sorted(range(len(inputs)), key=lambda p: (budgets[p], -p))", "queue = list(range(len(inputs)))[::-1]",
           ("tests/core/test_long_traces.py", "-k", "largest_budget")),
    Mutant("admitted prompt left-aligned in its slot", "decode loop", "thinklens/generation/kv_batch.py",
           "dst[idx] = torch.cat([src.new_zeros((len(rows), width - n)), src], 1)",
           "dst[idx] = torch.cat([src, src.new_zeros((len(rows), width - n))], 1)",
           ("tests/core/test_long_traces.py", "-k", "own_decode")),
    # ---- special tokens kept, a probe at chance flagged, rounding not flagged, the context kept
    Mutant("a trace's text_with_specials decoded without its special tokens", "traces", "thinklens/generation/trace.py",
           '"text_with_specials": tokenizer.decode(ids, skip_special_tokens=False)}',
           '"text_with_specials": tokenizer.decode(ids, skip_special_tokens=True)}', ("tests/core/test_trace_specials.py",)),
    Mutant("a probe sweep at chance reported as its best site", "probes", "probes/jobs/probe.py",
           "    if chance is None or score > chance:", "    if True:", ("tests/probes/test_probe_degenerate.py",)),
    Mutant("CE recovered flagged above 1 at float32 rounding", "SAE", "steering/sae_findings.py",
           "    if value > 1 + RANGE_TOLERANCE:", "    if value > 1:", ("tests/steering/test_sae_findings.py",)),
    Mutant("HookedModel.generate runs past the model's context", "decode loop", "thinklens/engine/model.py",
           "        fit = tuple(min(a, ctx - n) for a, n in zip(asked, lengths))", "        fit = tuple(asked)",
           ("tests/core/test_generate_context.py",)),
    Mutant("SAE fidelity spliced at the attention sink (each row's first position)", "SAE", "steering/sae_fidelity.py",
           "            splice[i, width - len(r)] = False", "            pass", ("tests/steering/test_sae_fidelity.py",)),
    Mutant("hybrid's vector loss on the logits one position late", "hybrid", "steering/hybrid.py",
           "    tgt = batch[\"input_ids\"].to(model.device)[:, 1:][at[:, :-1]]",
           "    tgt = batch[\"input_ids\"].to(model.device)[:, :-1][at[:, :-1]]", ("tests/core/test_logits_at.py",)),
)


def tracked_copy(dest: Path) -> None:
    """The tracked files of the checkout, as they are now, under ``dest``; ``data/`` as a link (read only)."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    for name in names.split("\0"):
        if not name or name.startswith("data/") or not (ROOT / name).is_file():
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    (dest / "data").symlink_to(ROOT / "data")


def run_tests(copy: Path, tests: tuple[str, ...], timeout: int) -> tuple[str, str]:
    """(outcome, detail): outcome ``pass``, ``fail`` (a test failed: detail names it), ``error`` or ``timeout``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        p = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", *tests], cwd=copy,
                           env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", f"over {timeout} s"
    if p.returncode == 0:
        return "pass", ""
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", p.stdout, flags=re.M)
    if p.returncode == 1 and failed:
        return "fail", failed[0]
    return "error", (p.stdout + p.stderr).strip().splitlines()[-1][:200] if (p.stdout + p.stderr).strip() else f"rc {p.returncode}"


def check_imports_from(copy: Path) -> None:
    """The copy's packages are the ones imported there (not the checkout's, through the editable install)."""
    out = subprocess.run([sys.executable, "-c", "import thinklens, thinklens.latent as latent; print(thinklens.__file__, latent.__file__)"],
                         cwd=copy, capture_output=True, text=True, check=True).stdout.split()
    if not all(Path(f).resolve().is_relative_to(copy.resolve()) for f in out):
        raise SystemExit(f"the copy imports {out}, not its own packages: mutants would not be tested")


def template(n: int) -> str:
    """The README block: one row per mutant of the summary, and the headline."""
    rows = "".join(f"| {{{{values.mutants[{i}].method}}}} | {{{{values.mutants[{i}].name}}}} | "
                   f"{{{{values.mutants[{i}].result}}}} | `{{{{values.mutants[{i}].killed_by}}}}` |\n" for i in range(n))
    return ("Named mutants of the methods' cores (`python -m bench.mutants`): each is one source edit, applied to a copy "
            "of the\ntracked files, whose default-tier tests (`pytest -x`) must then fail; the first failing test is "
            "named.\n\n| method | mutant | result | first failing test |\n|---|---|---|---|\n" + rows
            + "\n`mutants_killed={{values.killed}}/{{values.total}}`\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="mutant names separated by ';' (the rest keep their recorded outcome)")
    ap.add_argument("--list", action="store_true", help="list the mutants and their tests")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per test run")
    args = ap.parse_args(argv)
    if args.list:
        for m in MUTANTS:
            print(f"{m.method}: {m.name} ({m.path}; {' '.join(m.tests)})")
        return 0
    only = {s.strip() for s in args.only.split(";") if s.strip()}
    unknown = only - {m.name for m in MUTANTS}
    if unknown:
        raise SystemExit(f"unknown mutant {', '.join(sorted(unknown))}: see --list")
    chosen = [m for m in MUTANTS if not only or m.name in only]
    previous = {r["name"]: r for r in json.loads(OUT.read_text())["values"]["mutants"]} if OUT.is_file() and only else {}
    for m in chosen:
        if (ROOT / m.path).read_text().count(m.old) != 1:
            raise SystemExit(f"mutant {m.name!r}: its text occurs {(ROOT / m.path).read_text().count(m.old)} times in "
                             f"{m.path}, expected once (update the mutant to the code)")
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="thinklens-mutants-") as tmp:
        copy = Path(tmp)
        tracked_copy(copy)
        check_imports_from(copy)
        baseline: dict[tuple[str, ...], tuple[str, str]] = {}
        for m in chosen:
            if m.tests not in baseline:
                baseline[m.tests] = run_tests(copy, m.tests, args.timeout)
                print(f"# unmutated {' '.join(m.tests)}: {baseline[m.tests][0]} {baseline[m.tests][1]}", flush=True)
            target = copy / m.path
            original = target.read_text()
            t0 = time.time()
            if baseline[m.tests][0] != "pass":
                outcome, detail = "not run", f"the unmutated tests do not pass ({baseline[m.tests][1]})"
            else:
                target.write_text(original.replace(m.old, m.new))
                try:
                    outcome, detail = run_tests(copy, m.tests, args.timeout)
                finally:
                    target.write_text(original)
            killed = outcome in ("fail", "error", "timeout")
            rows[m.name] = {"name": m.name, "method": m.method, "file": m.path, "tests": list(m.tests),
                            "killed": killed, "outcome": outcome, "killed_by": detail if killed else "none",
                            "result": "killed" if killed else "survived" if outcome == "pass" else outcome,
                            "seconds": round(time.time() - t0, 1)}
            print(f"mutant.{re.sub(r'[^a-z0-9]+', '_', m.name.lower()).strip('_')}="
                  f"{'killed' if killed else 'survived' if outcome == 'pass' else outcome}", flush=True)
    table = [rows.get(m.name) or previous.get(m.name) for m in MUTANTS]
    table = [r for r in table if r is not None]
    for r in table:  # rows recorded before these fields existed
        r.setdefault("result", "killed" if r["killed"] else "survived" if r["outcome"] == "pass" else r["outcome"])
        r["killed_by"] = r["killed_by"] or "none"
    counted = [r for r in table if r["outcome"] != "not run"]
    killed = sum(r["killed"] for r in counted)
    by_method: dict[str, dict[str, int]] = {}
    for r in counted:
        b = by_method.setdefault(r["method"], {"killed": 0, "total": 0})
        b["killed"] += r["killed"]
        b["total"] += 1
    summary = {"command": "python -m bench.mutants", "date": datetime.date.today().isoformat(),
               "source": "bench/mutants.py (each mutant applied to a copy of the tracked files, its tests run there)",
               "config": {"pytest": "-x -q, default tier", "n_defined": len(MUTANTS)},
               "values": {"mutants": table, "killed": killed, "total": len(counted), "by_method": by_method,
                          "survivors": [r["name"] for r in counted if not r["killed"]],
                          "not_run": [r["name"] for r in table if r["outcome"] == "not run"]}}
    OUT.write_text(json.dumps(summary, indent=1) + "\n")
    TEMPLATE.write_text(template(len(table)))
    for name, b in by_method.items():
        print(f"mutants_killed.{re.sub(r'[^a-z0-9]+', '_', name.lower()).strip('_')}={b['killed']}/{b['total']}")
    print(f"mutants_killed={killed}/{len(counted)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
