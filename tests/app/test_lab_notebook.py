"""The app as the lab notebook (issue 40), in AppTest and against oracles: the Validation page and Home's K/N, trace
links from headline numbers (generic records found by shape, filtered to the ones that count), colours from the
verdict alone, "incomplete" for a truncated result file, "older version", a bad link that says it found nothing, and
a comparison of two eval runs with its config diff and McNemar's paired interval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lab_runs import eval_run, truncated_run, validate_run

from thinklens.runs.folders import discover_runs

APP = Path(__file__).resolve().parents[2] / "app"

A = [True, True, False, True, False, True, True, True, False, True, True, True]
B = [False, True, False, False, False, True, False, True, False, False, True, False]


@pytest.fixture
def runs(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("THINKLENS_RUNS", str(root))
    return root


def _entry(root: Path, kind: str, run_id: str):
    return next(e for e in discover_runs(root, kind) if e.run_id == run_id)


# ------------------------------------------------------------------------------------------------ colours and states

def test_a_validate_run_is_its_k_of_n_and_red_when_a_setting_failed(runs):
    from app.dashboard import run_state, status_badge

    validate_run(runs)
    status, line = run_state(_entry(runs, "validate", "quick"))
    assert (status, status_badge(status)) == ("validated 1/2", ":red-badge[validated 1/2]")
    assert "failed: sae/null" in line
    assert status_badge("validated 2/2") == ":green-badge[validated 2/2]"
    assert status_badge("done") == ":green-badge[done]" and status_badge("incomplete") == ":red-badge[incomplete]"


def test_a_finding_is_green_only_for_an_effect_as_a_working_method_gives_it(runs):
    from app.dashboard import finding_tone

    run = validate_run(runs)
    planted, null = run.meta()["summary"]["findings"]
    assert (planted["verdict"], finding_tone(planted)) == ("effect", "success")
    assert (null["verdict"], finding_tone(null)) == ("effect", "error")  # an effect found on the null is a failure
    assert finding_tone({"verdict": "effect", "extra": {"harm": True}}) == "error"  # a rejected bound: never green
    assert finding_tone({"verdict": "no effect"}) == "warning"


def test_a_truncated_result_file_is_incomplete_not_done(runs):
    from app.common import missing_results
    from app.dashboard import run_state

    run = truncated_run(runs)
    lacking = missing_results(run.path)
    assert lacking == ["results/eval.json (truncated)"]
    status, line = run_state(_entry(runs, "eval", "cut"), lacking)
    assert status == "incomplete" and "results/eval.json cannot be read" in line


def test_a_run_from_an_older_version_says_so_instead_of_numbers(runs):
    from app.dashboard import older_version, run_state

    run = eval_run(runs, "old", "tiny-think", [True, False])
    meta = run.meta()
    meta["code"]["package_hashes"]["thinklens.analyses"] = "0" * 64  # written by other code of the eval job's package
    meta["summary"] = {"overall": {}}  # a summary this version's headline cannot read
    (run.path / "meta.json").write_text(json.dumps(meta))
    entry = _entry(runs, "eval", "old")
    assert older_version(entry).startswith("written by an older version (thinklens.analyses changed since commit")
    status, line = run_state(entry)
    assert status == "older version" and "cannot read its summary" in line and "0%" not in line
    fresh = eval_run(runs, "new", "tiny-think", [True, False])
    assert older_version(_entry(runs, "eval", fresh.run_id)) is None


# ------------------------------------------------------------------------------------------------ traces behind numbers

def test_generic_traces_of_a_job_the_viewer_has_no_reader_for(runs):
    from app import traces as tr
    from app.evidence import links

    eval_run(runs, "a", "tiny-think", A)
    assert "eval" in tr.trace_kinds(runs) and "eval" not in tr.KINDS  # from the registry and the run's shape
    listed = tr.list_traces(runs, "eval/a")
    assert len(listed) == len(A) and listed[2][0] == "completions/2" and "wrong" in listed[2][1]
    wrong = tr.list_traces(runs, "eval/a", "correct=false")
    assert [i for i, _ in wrong] == [f"completions/{i}" for i, c in enumerate(A) if not c]  # what accuracy counts wrong
    t = tr.load_trace(runs, "eval/a", "completions/2")
    assert t.tokens == "step one so 3 answer 3".split() and t.facts["correct"] is False and t.model == "tiny-think"
    got = dict(links(runs, "eval/a"))
    assert got == {"all 12 traces": "/Trace_viewer?run=eval/a", "correct: 9 true": "/Trace_viewer?run=eval/a&where=correct%3Dtrue",
                   "correct: 3 false": "/Trace_viewer?run=eval/a&where=correct%3Dfalse"}


def test_a_validate_run_links_each_setting_to_its_own_runs_traces(runs):
    from app import traces as tr
    from app.validation_table import setting_trace_links

    validate_run(runs)
    got = setting_trace_links(runs, "validate/quick")
    assert got == {"sae-planted": "/Trace_viewer?run=validate/quick/settings/sae-planted/sub"}
    assert tr.run_kind("validate/quick/settings/sae-planted/sub", runs) == "eval"
    assert len(tr.list_traces(runs, "validate/quick/settings/sae-planted/sub")) == 3
    with pytest.raises(Exception, match="bad run"):
        tr.run_kind("validate/../../etc", runs)


# ------------------------------------------------------------------------------------------------ comparisons

def test_paired_difference_of_two_eval_runs_is_mcnemars(runs):
    from app.run_diff import config_diff, dataset, paired_difference
    from thinklens.calibration.stats import clopper_pearson, mcnemar

    a, b = eval_run(runs, "a", "tiny-think", A), eval_run(runs, "b", "tiny-cot", B, max_new_tokens=32)
    assert config_diff(a.config(), b.config()) == [{"key": "model", "run A": "tiny-think", "run B": "tiny-cot"},
                                                   {"key": "max_new_tokens", "run A": "64", "run B": "32"}]
    p = paired_difference(a.path, b.path)
    only_a = sum(x and not y for x, y in zip(A, B))
    only_b = sum(y and not x for x, y in zip(A, B))
    m, n = only_a + only_b, len(A)
    lo, hi = clopper_pearson(only_a, m)  # the exact interval of the discordant share, mapped to the difference
    assert p["paired"] and p["n"] == n and (p["only A right"], p["only B right"]) == (only_a, only_b)
    assert p["difference"] == pytest.approx((sum(A) - sum(B)) / n)
    assert p["ci"] == pytest.approx(((2 * lo - 1) * m / n, (2 * hi - 1) * m / n))
    assert p["p"] == pytest.approx(mcnemar(A, B))
    assert dataset(a.path, a.config())["hash"] == dataset(b.path, b.config())["hash"] != "–"
    other = eval_run(runs, "c", "tiny-cot", B, problems=[f"other-{i}" for i in range(12)])
    q = paired_difference(a.path, other.path)
    assert not q["paired"] and "different problems" in q["why"]


def test_reasoning_vector_chart_draws_one_split(tmp_path):
    from app.compare import figure_comparison

    rows = [{"run": "r", "model": "m", "accuracy at alpha 0": 0.5, "accuracy there (reporting split)": 0.9,
             "accuracy there (all problems)": 0.6}]
    fig = figure_comparison("reasoning-vector", rows)
    assert [list(t.y) for t in fig.data] == [[0.5], [0.6]]  # never the reporting split beside all problems
    assert "all problems" in fig.layout.yaxis.title.text


# ------------------------------------------------------------------------------------------------ pages (AppTest)

def _page(name: str, **params):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP / name), default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def test_validation_page_shows_the_record_and_the_runs_k_of_n(runs):
    validate_run(runs)
    at = _page("pages/8_Validation.py")
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("validate/quick: validated 1/2" in e and "sae/null" in e for e in errors), errors
    assert any("(committed record): validated" in t.value for t in [*at.error, *at.success])
    frames = [d.value for d in at.dataframe]
    run_table = next(f for f in frames if "source" in f.columns and f["source"].str.startswith("run ").all())
    assert list(run_table["as expected"]) == ["yes", "NO"] and list(run_table["kind"]) == ["planted", "null"]
    assert list(run_table["interval"]) == ["[0.9, 0.96]", "[0.35, 0.47]"]
    assert run_table["traces"][0].endswith("validate/quick/settings/sae-planted/sub")
    settings = [f for f in frames if f is not run_table and "source" in f.columns]  # not the controls' pictures' tables
    assert settings and all(f["source"].str.startswith("committed record").all() for f in settings)


def test_home_says_incomplete_and_links_traces(runs):
    truncated_run(runs)
    eval_run(runs, "a", "tiny-think", A)
    validate_run(runs)
    at = _page("Home.py")
    assert not at.exception
    text = [m.value for m in at.markdown]
    assert any("`cut` :red-badge[incomplete]" in t for t in text), text
    assert any("`quick` :red-badge[validated 1/2]" in t for t in text)
    assert any("Validation" in t and "committed record" in t for t in text)
    assert any('href="/Trace_viewer?run=eval/a&amp;where=correct%3Dfalse"' in t for t in text)


def test_a_bad_link_says_it_found_nothing(runs):
    eval_run(runs, "a", "tiny-think", A)
    at = _page("pages/5_Trace_viewer.py", run="eval/nope")
    assert not at.exception
    assert any("found nothing" in e.value and "eval/nope" in e.value for e in at.error)
    assert not any("step one" in m.value for m in at.markdown)  # no other run's trace in its place
    at = _page("pages/5_Trace_viewer.py", run="eval/a", where="correct=false")
    assert not at.exception and not at.error
    assert any("correct=false" in c.value and "(3)" in c.value for c in at.caption)
    eval_run(runs, "b", "tiny-cot", B)
    at = _page("pages/10_Compare.py", kind="eval", a="a", b="gone")
    assert any("found nothing" in e.value and "gone" in e.value for e in at.error)


def test_compare_page_two_eval_runs(runs):
    eval_run(runs, "a", "tiny-think", A)
    eval_run(runs, "b", "tiny-cot", B, max_new_tokens=32)
    at = _page("pages/10_Compare.py", kind="eval", a="a", b="b")
    assert not at.exception and not at.error
    frames = [d.value for d in at.dataframe]
    diff = frames[0]
    assert list(diff["key"]) == ["model", "max_new_tokens"]
    prov = frames[1]
    assert {"git commit", "source hash", "data", "hash"} <= set(prov.columns) and prov["hash"].nunique() == 1
    assert any("95% paired interval" in m.value and "same 12 problems" in m.value for m in at.markdown)
