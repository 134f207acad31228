"""LYNX's planted and null settings (probes/validation.py): the quick versions in the default tier, the full ones
``slow``; each asserts the verdict a working LYNX gives."""

from __future__ import annotations

import time

import pytest

from thinklens.calibration.controls import SettingContext, select_settings
from thinklens.errors import ThinklensError
from thinklens.probes.validation import (
    FULL_NULL,
    FULL_PLANTED,
    PLANTED_MODEL,
    QUICK_NULL,
    SETTINGS,
    judge_null,
    judge_planted,
    row,
)
from thinklens.zoo.registry import zoo_dir, zoo_path

BY_NAME = {s.name: s for s in SETTINGS}


def _needs(model: str) -> None:
    try:
        trained = zoo_path(model) is not None
    except ThinklensError:  # not a zoo name yet: published as a folder, or not at all
        trained = (zoo_dir() / model / "config.json").is_file()
    if not trained:
        pytest.skip(f"the zoo has no {model} yet (thinklens run zoo-train --model {model})")


def _run(name: str, quick: bool, tmp_path):
    setting = BY_NAME[name]
    t0 = time.perf_counter()
    check = setting.run(SettingContext(quick=quick, seed=0, workdir=tmp_path, threads=1))
    return setting, check, time.perf_counter() - t0


def test_settings_are_registered_under_lynx():
    assert [s.key for s in select_settings(("lynx",))] == ["lynx/planted", "lynx/null", "lynx/planted-model",
                                                           "lynx/null-model"]
    assert [s.expected for s in SETTINGS] == ["recovered", "no-effect", "recovered", "no-effect"]
    assert [s.on_model for s in SETTINGS] == [False, False, True, True]  # the -model ones run on a --model organism


def test_judges_apply_every_target_at_every_delta():
    good = [row(0.05, 0.35, 1.0, 1.0, True), row(0.1, 0.4, 0.995, 1.0, True)]
    assert judge_planted(good) == (True, [])
    assert judge_planted([]) == (False, [])  # nothing evaluated is not a recovery
    assert not judge_planted(good[:1] + [row(0.1, 0.4, 1.0, 1.0, False)])[0]  # a rejected bound at one delta
    assert not judge_planted([row(0.05, 0.29, 1.0, 1.0, True)])[0]
    assert not judge_planted([row(0.05, 0.5, 0.98, 1.0, True)])[0]  # 2 points lost
    assert judge_null([row(0.05, 0.0, 1.0, 1.0, True)]) == (True, [])
    assert judge_null([row(0.05, 0.03, 1.0, 1.0, True, ci=(0.02, 0.04))])[0]  # excludes 0, shown below 5%
    assert not judge_null([row(0.05, 0.04, 1.0, 1.0, True, ci=(0.02, 0.06))])[0]  # below 5%, but not shown to be
    assert not judge_null([row(0.05, 0.06, 1.0, 1.0, True, ci=(0.02, 0.1))])[0]
    assert not judge_null([row(0.05, 0.0, 1.0, 1.0, False)])[0]


def test_validity_needs_power_not_just_no_rejection():
    """19/379 = 0.0501 at delta 0.05 once passed the validity check; a one-sided exact binomial test does not
    reject it, but its power against 0.07 is 0.49: the bound is not shown, in the planted and the null setting."""
    from thinklens.probes.conformal import binomial_power, violation_p_value

    assert violation_p_value(19, 379, 0.05) > 0.5
    power = binomial_power(379, 0.05, 0.02)
    assert 0.45 < power < 0.5
    weak = row(0.05, 0.4, 1.0, 1.0, True, power=power)
    assert not weak["validity_shown"]
    ok, misses = judge_planted([weak])
    assert not ok and misses == ["delta 0.05: the bound P(S={1}|y=0) <= 0.05 is not shown: the test has power 0.49 "
                                 "< 0.8 against a violation"]
    assert not judge_null([row(0.05, 0.0, 1.0, 1.0, True, power=power)])[0]
    # the full sizes hold the negatives a violation of 0.02 needs (1,510 at delta 0.1; 0.95 and 0.87 per rollout)
    assert binomial_power(int(0.95 * FULL_PLANTED.n_test), 0.1, FULL_PLANTED.violation) >= 0.8
    assert binomial_power(int(0.87 * FULL_NULL.n_test), 0.1, FULL_NULL.violation) >= 0.8
    assert FULL_PLANTED.violation == FULL_NULL.violation == 0.02


def test_null_counts_accuracy_harm_by_equivalence():
    """The null once passed at -2.25 points (9 of 400 rollouts lost, none gained; McNemar p = 0.004): its paired
    change's TOST interval must lie inside the harm margin stated beforehand (2 points)."""
    import numpy as np

    from thinklens.probes.lynx_findings import ACCURACY_MARGIN, accuracy_equivalence

    full = np.r_[np.ones(399), 0.0]
    lynx = full.copy()
    lynx[:9] = 0  # 0.975 vs 0.9975
    eq = accuracy_equivalence(lynx, full)
    assert eq.mean == -0.0225 and not eq.equivalent and eq.ci[1] < 0 and ACCURACY_MARGIN == 0.02
    r = row(0.05, 0.008, 0.975, 0.9975, True, ci=(0.003, 0.015), change_ci=eq.ci)
    ok, misses = judge_null([r])
    assert not ok and misses[0].startswith("delta 0.05: accuracy change -0.0225 [") and "(harm)" in misses[0]
    same = accuracy_equivalence(full, full)  # nothing changed on 400 rollouts: shown within 2 points
    assert same.equivalent and judge_null([row(0.05, 0.0, 0.9975, 0.9975, True, change_ci=same.ci)])[0]
    # no discordant pair among 60 is not equivalence at 2 points (its exact bound is 0.049): the quick margin is 5
    short = accuracy_equivalence(np.ones(60), np.ones(60))
    assert not short.equivalent and 0.04 < short.ci[1] < QUICK_NULL.harm_margin


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
def test_null_quick_on_tiny_r1(tmp_path):
    _needs("tiny-r1")
    setting, check, seconds = _run("null", True, tmp_path)
    assert check.verdict == setting.expected, check.details.get("misses") or check.details.get("error")
    assert check.statistic == "saving" and check.ci[0] <= check.value <= check.ci[1] and check.n == QUICK_NULL.n_test
    per_delta = check.details["per_delta"]
    assert [r["delta"] for r in per_delta] == [0.05, 0.1] and all(r["not_rejected"] for r in per_delta)
    assert {f["statistic"] for f in check.details["findings"]} == {"saving", "accuracy", "P(S={1}|y=0)"}
    assert seconds < 120


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
def test_planted_quick_on_tiny_overthink(tmp_path):
    _needs(PLANTED_MODEL)
    setting, check, seconds = _run("planted", True, tmp_path)
    assert check.verdict == setting.expected, check.details.get("misses") or check.details.get("error")
    assert check.value >= 0.30 and check.details["oracle_saving"] >= check.value - 1e-9
    assert seconds < 120


@pytest.mark.slow
def test_null_full_on_tiny_r1(tmp_path):
    _needs("tiny-r1")
    setting, check, _ = _run("null", False, tmp_path)
    assert check.verdict == setting.expected, check.details.get("misses") or check.details.get("error")


@pytest.mark.slow
def test_planted_full_on_tiny_overthink(tmp_path):
    _needs(PLANTED_MODEL)
    setting, check, _ = _run("planted", False, tmp_path)
    assert check.verdict == setting.expected, check.details.get("misses") or check.details.get("error")
