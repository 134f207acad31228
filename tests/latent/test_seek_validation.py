"""The LatentSeek settings of ``thinklens run validate`` (quick versions: the default tier) and the mutants their
verdict logic kills; the full versions are `slow`."""

from __future__ import annotations

import pytest

from thinklens.calibration.controls import SettingContext, validate_line
from thinklens.latent import validation as lv
from thinklens.zoo.registry import zoo_path

SETTINGS = {s.name: s for s in lv.SETTINGS}
needs_zoo = pytest.mark.skipif(zoo_path(lv.ORGANISM) is None, reason="needs the committed zoo (data/zoo/)")


def _ctx(tmp_path, quick: bool = True) -> SettingContext:
    return SettingContext(quick=quick, seed=0, workdir=tmp_path, threads=1)


def _problem(start: bool, final: bool, samples: list[bool], iters: int) -> dict:
    return {"answer": 5, "original_text": "#### 5" if start else "#### 4", "final_text": "#### 5" if final else "#### 4",
            "iterations": [{}] * iters, "baseline": {repr(lv.TEMPERATURE): samples}, "n_optimised": 2}


def _doc(problems: list[dict]) -> dict:
    return {"problems": problems, "summary": {"mean_checked_chains": 1.0, "mean_tokens": 10.0, "mean_optimised": 2.0}}


def test_outcomes_counts_equal_chains_per_problem():
    # oracle: best-of-N at equal compute sees the greedy chain and one sample per LatentSeek iteration, no more
    doc = _doc([_problem(False, False, [False, False, True], 2), _problem(False, True, [True, False, False], 1),
                _problem(True, True, [False, False, False], 0)])
    o = lv.outcomes(doc)
    assert o["start"] == [False, False, True] and o["seek"] == [False, True, True]
    assert o["matched"] == [False, True, True] and o["full"] == [True, True, True] and o["sample"] == [True, True, False]


def test_coin_reward_ignores_the_answer_and_is_fair():
    texts = [f"<< {i} + 1 = {i + 1} >> #### {i + 1}" for i in range(400)]
    assert all(lv.coin_reward(t, 1) == lv.coin_reward(t, 999) for t in texts)
    share = sum(lv.coin_reward(t, 0) == 0.0 for t in texts) / len(texts)
    assert 0.4 < share < 0.6


@pytest.mark.parametrize("quick", [True, False])
@pytest.mark.parametrize("fixed, verdict", [(12, "recovered"), (0, "failed")])
def test_planted_verdict_needs_a_paired_gain(tmp_path, monkeypatch, fixed, verdict, quick):
    # mutant: a LatentSeek that changes nothing (fixed=0) has headroom but no gain, so the planted setting fails
    probs = ([_problem(False, True, [True] * 11, 3)] * fixed + [_problem(False, False, [True] * 11, 10)] * (30 - fixed)
             + [_problem(True, True, [True] * 11, 0)] * 30)
    monkeypatch.setattr(lv, "_seek", lambda ctx, plan, reward, sub: _doc(probs))
    monkeypatch.setattr(lv, "error_places", lambda doc, plan, seed: {})
    check = SETTINGS["planted"].run(_ctx(tmp_path, quick=quick))
    assert check.verdict == verdict and check.details["headroom"] == 0.5 and check.details["paired_test"] is not quick
    assert check.value == pytest.approx(fixed / 60) and check.details["broken"] == 0
    # equal chains: the problems LatentSeek fixed in 3 iterations had a right sample among their first 3
    assert check.details["best_of_n_equal_chains"] == 1.0
    assert [f["control"] for f in check.details["findings"]] == ["greedy chain", "oracle best-of-N, equal chains",
                                                                 "oracle best-of-11"] and "more" not in check.details


@pytest.mark.parametrize("quick", [True, False])
def test_planted_verdict_needs_headroom(tmp_path, monkeypatch, quick):
    # mutant killed: headroom not required. LatentSeek fixes 12 problems, but no sampled chain of any problem is right
    # where the greedy one is wrong: the setting has no headroom, so it cannot show the method, whatever the gain
    probs = [_problem(False, True, [False] * 11, 3)] * 12 + [_problem(False, False, [False] * 11, 10)] * 18
    monkeypatch.setattr(lv, "_seek", lambda ctx, plan, reward, sub: _doc(probs + [_problem(True, True, [True] * 11, 0)] * 30))
    monkeypatch.setattr(lv, "error_places", lambda doc, plan, seed: {})
    check = SETTINGS["planted"].run(_ctx(tmp_path, quick=quick))
    assert check.details["headroom"] == 0.0 and check.value == pytest.approx(12 / 60)
    assert check.details["findings"][0]["verdict"] == "effect" and check.verdict == "failed"


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
@needs_zoo
def test_planted_quick_is_recovered(tmp_path):
    s = SETTINGS["planted"]
    check = s.run(_ctx(tmp_path))
    assert check.verdict == s.expected, (validate_line(s, check), check.details)
    assert check.details["headroom"] >= lv.MIN_HEADROOM and check.details["broken"] == 0  # PSRM stops on a right chain
    assert check.details["fixed"] == round(check.value * check.n)


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
@needs_zoo
def test_null_quick_verdict_is_what_its_equivalence_test_says(tmp_path):
    s = SETTINGS["null"]
    check = s.run(_ctx(tmp_path))
    tost = check.details["tost_accuracy"]
    assert check.n == 60 and tost["margin"] == lv.NULL_MARGIN, (validate_line(s, check), check.details)
    assert (check.verdict == "no-effect") is tost["equivalent"], (validate_line(s, check), check.details)


@pytest.mark.slow
@needs_zoo
def test_full_planted(tmp_path):
    s = SETTINGS["planted"]
    check = s.run(_ctx(tmp_path, quick=False))
    assert check.verdict == s.expected, (validate_line(s, check), check.details)


@pytest.mark.slow
@needs_zoo
def test_full_null_fails_as_measured(tmp_path):
    # measured (results/records/validate-latent-hybrid, 150 problems): the coin reward breaks 24 right chains and
    # fixes none, 0.46 -> 0.30, -0.16 [-0.21, -0.11] (90%): far outside +-0.05, so the equivalence test fails it
    s = SETTINGS["null"]
    check = s.run(_ctx(tmp_path, quick=False))
    assert check.verdict == "failed" and check.details["tost_accuracy"]["ci90"][1] < -lv.NULL_MARGIN, validate_line(s, check)
