"""LYNX's planted and null settings (probes/validation.py): the quick versions in the default tier, the full ones
``slow``; each asserts the verdict a working LYNX gives."""

from __future__ import annotations

import time

import pytest

from thinklens.calibration.controls import SettingContext, select_settings
from thinklens.errors import ThinklensError
from thinklens.probes.validation import PLANTED_MODEL, QUICK_NULL, SETTINGS, judge_null, judge_planted, row
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
    assert [s.key for s in select_settings(("lynx",))] == ["lynx/planted", "lynx/null"]
    assert [s.expected for s in SETTINGS] == ["recovered", "no-effect"]


def test_judges_apply_every_target_at_every_delta():
    good = [row(0.05, 0.35, 1.0, 1.0, True), row(0.1, 0.4, 0.995, 1.0, True)]
    assert judge_planted(good) == (True, [])
    assert judge_planted([]) == (False, [])  # nothing evaluated is not a recovery
    assert not judge_planted(good[:1] + [row(0.1, 0.4, 1.0, 1.0, False)])[0]  # a rejected bound at one delta
    assert not judge_planted([row(0.05, 0.29, 1.0, 1.0, True)])[0]
    assert not judge_planted([row(0.05, 0.5, 0.98, 1.0, True)])[0]  # 2 points lost
    assert judge_null([row(0.05, 0.0, 1.0, 1.0, True)]) == (True, [])
    assert judge_null([row(0.05, 0.04, 1.0, 1.0, True, ci=(0.02, 0.06))])[0]  # excludes 0 but below 5%
    assert not judge_null([row(0.05, 0.06, 1.0, 1.0, True, ci=(0.02, 0.1))])[0]
    assert not judge_null([row(0.05, 0.0, 1.0, 1.0, False)])[0]


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
