"""is_correct against math-verify's own test expectations (tests/fixtures/math_verify_cases.json)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from thinklens.data.grading import Agreement, GradingCase, agreement, load_cases
from thinklens.errors import ThinklensError

FIXTURE = Path(__file__).parent / "fixtures" / "math_verify_cases.json"


@pytest.fixture(scope="module")
def cases() -> list[GradingCase]:
    return load_cases(FIXTURE)


def test_agreement_with_math_verify_where_the_prediction_states_an_answer(cases):
    result = agreement(cases, timeout=10.0)
    assert result.n >= 100, f"only {result.n} of {len(cases)} predictions have a box or an answer marker"
    assert not result.false_positives, "wrong answers graded correct:\n" + result.disagreements()
    assert result.rate >= 0.97, f"agreement {result.n_agree}/{result.n}:\n" + result.disagreements()


def test_the_old_last_box_policy_misses_the_target(cases):
    # The test above has power: the old policy (only the last box) fails it.
    result = agreement(cases, boxes="last", timeout=10.0)
    assert result.rate < 0.97 and len(result.false_negatives) >= 10


def test_fixture_says_where_each_case_comes_from_and_math_verify_agrees_with_it():
    doc = json.loads(FIXTURE.read_text(encoding="utf-8"))
    source = doc["source"]
    assert source["repo"] == "https://github.com/huggingface/Math-Verify" and len(source["commit"]) == 40
    assert doc["n"] == len(doc["cases"]) == 268
    for case in doc["cases"]:
        assert case["source"].split("::")[0] in source["files"], case["source"]
        # the labels are math-verify's own verdicts under each test's options (recorded from the installed 0.9.0)
        assert case["math_verify"]["own_options"] == case["expected"], case["source"]


def test_recorded_math_verify_verdicts_are_reproduced_by_the_installed_math_verify():
    math_verify = pytest.importorskip("math_verify")
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    doc = json.loads(FIXTURE.read_text(encoding="utf-8"))
    boxed = [c for c in doc["cases"] if "test_open_thoughts" in c["source"]][-4:]  # the several-box cases
    for case in boxed:
        gold, pred = math_verify.parse(case["gold"]), math_verify.parse(case["pred"])
        assert bool(math_verify.verify(gold, pred)) == case["math_verify"]["defaults"], case["source"]


def test_agreement_counts_false_positives_and_lists_disagreements():
    cases = [
        GradingCase(gold="1", pred=r"\boxed{1}", expected=True, source="a"),
        GradingCase(gold="1", pred=r"\boxed{1}", expected=False, source="labelled wrong"),
        GradingCase(gold="2", pred=r"\boxed{3}", expected=True, source="labelled right"),
        GradingCase(gold="4", pred="4", expected=True, source="bare"),
    ]
    result = agreement(cases)
    assert (result.n, result.n_agree) == (3, 1) and result.rate == pytest.approx(1 / 3)
    assert [c.source for c in result.false_positives] == ["labelled wrong"]
    assert [c.source for c in result.false_negatives] == ["labelled right"]
    lines = result.disagreements().splitlines()
    assert lines[0].startswith("false positive [labelled wrong]") and lines[1].startswith("false negative [labelled right]")
    assert agreement(cases, unstated="wrong").n_agree == 1  # "4" states no answer: graded wrong
    assert agreement(cases, unstated="bare").n_agree == 2  # "4" read as the bare answer
    assert Agreement(n=0, n_agree=0, false_positives=(), false_negatives=()).rate == 0.0


def test_bad_inputs_say_what_was_expected(tmp_path):
    bad = tmp_path / "cases.json"
    bad.write_text('{"cases": [{"gold": "1"}]}')
    with pytest.raises(ThinklensError, match="cases.json"):
        load_cases(bad)
    with pytest.raises((ThinklensError, TypeError), match="unstated"):  # under pytest the runtime type checker answers first
        agreement([], unstated="maybe")
