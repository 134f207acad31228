"""The latent nulls' equivalence rule: CODI's and Coconut's null-latents and LatentSeek's null say
``no-effect`` only when the paired accuracy difference is shown inside the margin stated beforehand (TOST, 90%
interval), never on a difference that is merely not a significant gain.

The oracle is built by hand: per-problem 0/1 grades of the two arms on the same problems, the paired difference's
mean and its 90% Student t interval computed from the formula, and the verdict read from the interval against the
margin. No trained model is run: the settings are run with their scoring replaced by the constructed grades.

Mutants killed (``bench/mutants.py``):

- "latent null passed on no significant gain (the old rule)": the verdict read from the interval's lower end at or
  below 0 (no gain shown): a -0.27 loss and a small sample both pass it;
- "latent null: one-sided TOST (only a gain ruled out)": a -0.27 loss passes it;
- "latent null: one-sided TOST (only a loss ruled out)": a +0.27 gain passes it;
- "latent null: margin ignored": the TOST run against a margin of 1 instead of the stated one: a -0.27 loss passes;
- "latent null: the exact bound dropped": 300 problems all graded alike show nothing without it (a zero-width t
  interval), so equal accuracy fails;
- "CODI null judged by non-significance (no equivalence test)" and "LatentSeek null judged by non-significance (no
  equivalence test)": the settings' verdicts taken from the paired test's finding again: their -0.27 and -0.16 losses
  pass it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from thinklens.calibration.controls import SettingContext
from thinklens.calibration.validate import validation_findings
from thinklens.errors import ThinklensError
from thinklens.latent import codi_validation as cv
from thinklens.latent import validation as lv
from thinklens.latent.null_equivalence import null_verdict

MARGIN = 0.10


def _pair(n: int, *, control: int, fixed: int, broken: int) -> tuple[list[bool], list[bool]]:
    """Grades of n problems: the control right on the first ``control``; the method breaks ``broken`` of those and
    fixes ``fixed`` of the rest, and agrees with the control elsewhere."""
    ctrl = [i < control for i in range(n)]
    method = list(ctrl)
    for i in range(broken):
        method[i] = False
    for i in range(control, control + fixed):
        method[i] = True
    return method, ctrl


def _oracle(method: list[bool], control: list[bool], margin: float) -> tuple[float, float, float, bool]:
    """The paired difference's mean, its 90% t interval by the formula, and whether that interval lies inside the
    margin (for samples with some spread)."""
    d = [float(m) - float(c) for m, c in zip(method, control)]
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    half = stats.t.ppf(0.95, n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half, bool(-margin < mean - half and mean + half < margin)


@pytest.mark.parametrize("n, control, fixed, broken, verdict", [
    (300, 90, 30, 30, "no-effect"),   # equal accuracy (0.30 each), 60 problems changed: [-0.043, +0.043]
    (300, 99, 0, 81, "failed"),       # 0.33 -> 0.06: the -0.27 loss the old rule passed
    (300, 99, 81, 0, "failed"),       # a +0.27 gain: a two-sided test
    (30, 9, 4, 3, "failed"),          # +0.033, inside the margin, but 30 problems cannot show it: [-0.12, +0.19]
    (300, 90, 40, 30, "no-effect"),   # the same +0.033 on 300 problems: shown
])
def test_verdict_is_the_90_percent_interval_inside_the_margin(n, control, fixed, broken, verdict):
    method, ctrl = _pair(n, control=control, fixed=fixed, broken=broken)
    mean, lo, hi, inside = _oracle(method, ctrl, MARGIN)
    got, tost = null_verdict(method, ctrl, margin=MARGIN)
    assert inside is (verdict == "no-effect") and got == verdict
    assert tost["mean"] == pytest.approx(mean) and tost["ci90"] == pytest.approx([lo, hi])
    assert tost["margin"] == MARGIN and tost["n"] == n and tost["equivalent"] is (verdict == "no-effect")
    # TOST's p is the larger one-sided p, below 0.05 exactly when the interval is inside the margin
    assert (tost["p"] < 0.05) is (verdict == "no-effect")


def test_equal_accuracy_on_every_problem_is_shown_by_the_exact_bound_when_there_are_enough_problems():
    # no problem changed: the t interval has no width, so only the exact bound of a 0/1 change shows equivalence
    # (1 - 0.05 ** (1 / n) either side: 0.0099 at 300, 0.117 at 24, which the 0.10 margin does not hold)
    many, few = ([True] * 100 + [False] * 200, [True] * 8 + [False] * 16)
    verdict, tost = null_verdict(many, many, margin=MARGIN)
    assert verdict == "no-effect" and tost["ci90"] == pytest.approx([-(1 - 0.05 ** (1 / 300)), 1 - 0.05 ** (1 / 300)])
    verdict, tost = null_verdict(few, few, margin=MARGIN)
    assert verdict == "failed" and tost["ci90"][1] == pytest.approx(1 - 0.05 ** (1 / 24))


def test_too_few_problems_fail_and_unpaired_grades_are_refused():
    verdict, tost = null_verdict([True], [True], margin=MARGIN)
    assert verdict == "failed" and tost["ci90"] == [-1.0, 1.0] and tost["n"] == 1
    with pytest.raises(ThinklensError, match="same problems"):
        null_verdict([True, False], [True], margin=MARGIN)


def _rows_of(method: list[bool], control: list[bool], key: str, seen: dict):
    def rows(ctx, keys, noise=False, plan=None):
        seen.update(keys=keys, noise=noise, plan=plan)
        return {"nocot": ({}, control), key: ({"latent_hits": 0.0}, method)}
    return rows


def _row(setting, check) -> dict:
    return {"method": setting.method, "setting": setting.name, "expected": setting.expected, "statistic": check.statistic,
            "value": check.value, "ci": list(check.ci), "n": check.n, "verdict": check.verdict, "target": check.target,
            "details": check.details}


@pytest.mark.parametrize("method, key", [("codi", "codi"), ("codi", "codi_full"), ("coconut", "coconut")])
@pytest.mark.parametrize("n, control, fixed, broken, verdict, finding", [
    (300, 99, 0, 81, "failed", "effect"),              # the measured -0.27: an effect found on the null
    (300, 90, 30, 30, "no-effect", "no effect"),
    (30, 9, 4, 3, "failed", "too few samples"),        # inside the margin, not shown: neither claim holds
])
def test_null_latents_settings_pass_only_on_equivalence_and_carry_the_tost(tmp_path, monkeypatch, method, key, n, control,
                                                                          fixed, broken, verdict, finding):
    latent, nocot = _pair(n, control=control, fixed=fixed, broken=broken)
    seen: dict = {}
    monkeypatch.setattr(cv, "_rows", _rows_of(latent, nocot, key, seen))
    monkeypatch.setattr(cv, "_steps", lambda ctx, plan=None: [6] * n)
    setting = next(s for s in cv.SETTINGS if s.method == method and s.run.keywords["key"] == key and s.expected == "no-effect")
    check = setting.run(SettingContext(quick=True, seed=0, workdir=tmp_path, threads=1))
    mean, lo, hi, _ = _oracle(latent, nocot, cv.NULL_MARGIN)
    tost = check.details["tost_accuracy"]
    assert check.verdict == verdict and tost["equivalent"] is (verdict == "no-effect")
    assert tost["margin"] == cv.NULL_MARGIN == 0.1 and tost["n"] == n and tost["ci90"] == pytest.approx([lo, hi])
    assert tost["mean"] == pytest.approx(mean) and 0.0 <= tost["p"] <= 1.0
    assert check.value == pytest.approx(mean, abs=1e-6)  # the paired difference, as the finding rounds it
    assert seen == {"keys": ("nocot", key), "noise": True, "plan": cv.NULL_PLAN}  # quick or full: the null's 300 problems
    assert f"+-{cv.NULL_MARGIN:g}" in check.target and "TOST" in check.target and "90% interval" in check.target
    assert validation_findings([_row(setting, check)])[0]["verdict"] == finding


def _problem(start: bool, final: bool) -> dict:
    return {"answer": 5, "original_text": "#### 5" if start else "#### 4", "final_text": "#### 5" if final else "#### 4",
            "iterations": [{}], "baseline": {repr(lv.TEMPERATURE): [False]}, "n_optimised": 2}


@pytest.mark.parametrize("quick", [True, False])
@pytest.mark.parametrize("n, start, fixed, broken, verdict", [
    (150, 69, 0, 24, "failed"),      # the measured coin reward: 0.46 -> 0.30, 24 right chains broken, none fixed
    (150, 69, 0, 0, "no-effect"),    # nothing changed on 150 problems: the exact bound 0.02 inside 0.05
    (150, 69, 3, 3, "no-effect"),
    (16, 7, 1, 1, "failed"),         # no net change, 16 problems: not shown
])
def test_latent_seek_null_passes_only_on_equivalence(tmp_path, monkeypatch, quick, n, start, fixed, broken, verdict):
    seek, greedy = _pair(n, control=start, fixed=fixed, broken=broken)
    plans = []
    monkeypatch.setattr(lv, "_seek", lambda ctx, plan, reward, sub: plans.append(plan) or {
        "problems": [_problem(g, s) for s, g in zip(seek, greedy)], "summary": {"mean_checked_chains": 2.0}})
    setting = next(s for s in lv.SETTINGS if s.name == "null")
    check = setting.run(SettingContext(quick=quick, seed=0, workdir=tmp_path, threads=1))
    mean, lo, hi, _ = _oracle(seek, greedy, lv.NULL_MARGIN)
    tost = check.details["tost_accuracy"]
    assert check.verdict == verdict and tost["margin"] == lv.NULL_MARGIN == 0.05 and tost["n"] == n
    assert tost["mean"] == pytest.approx(mean) and check.details["broken"] == broken and check.details["fixed"] == fixed
    if fixed or broken:
        assert tost["ci90"] == pytest.approx([lo, hi])
    assert plans == [lv.QUICK_NULL if quick else lv.FULL] and f"+-{lv.NULL_MARGIN:g}" in check.target
    assert validation_findings([_row(setting, check)])[0]["verdict"] == {"no-effect": "no effect"}.get(
        verdict, "effect" if hi < 0 else "too few samples")


def test_the_quick_nulls_can_show_equivalence_at_their_margins():
    """A null whose size cannot show its margin even with no problem changed could never pass: the exact bound of
    n problems all alike, ``1 - 0.05 ** (1 / n)``, lies inside each margin at the null's quick size."""
    n_codi = 3 * cv.NULL_PLAN.n_per_steps
    n_seek = (lv.QUICK_NULL.steps[1] - lv.QUICK_NULL.steps[0] + 1) * lv.QUICK_NULL.n_per_steps
    assert 1 - 0.05 ** (1 / n_codi) < cv.NULL_MARGIN and 1 - 0.05 ** (1 / n_seek) < lv.NULL_MARGIN
    same = np.ones(n_seek, dtype=bool)
    assert null_verdict(same, same, margin=lv.NULL_MARGIN)[0] == "no-effect"


@pytest.mark.parametrize("name", ["thinklens.latent.null_equivalence", "thinklens.latent.codi_validation",
                                  "thinklens.latent.validation"])
def test_doctests(name):
    import doctest
    import importlib

    assert doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS).failed == 0
