"""A steer-vector run on the Steering page: the dose-response of the vector and its random control with intervals, a
row per arm with its verdict and traces, one prompt's continuations side by side with words coloured by VADER valence
(issue 55); pure views checked against the run's own numbers, the page in AppTest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_view_runs import need_zoo, steer_vector_run

from app import contrast_views as cv

PAGE = str(Path(__file__).resolve().parents[2] / "app" / "pages" / "4_Steering.py")


@pytest.fixture(scope="module")
def sv(tmp_path_factory):
    need_zoo()
    root = tmp_path_factory.mktemp("sv") / "runs"
    path = steer_vector_run(root)
    return root, path, json.loads((path / "results" / "steer_vector.json").read_text())


def test_the_dose_response_draws_every_arm_with_its_intervals(sv):
    _, _, doc = sv
    fig = cv.figure_dose_response(doc)
    rows = {(r["arm"], r["coeff"]): r for r in doc["rows"]}
    base = rows[("unsteered", 0.0)]
    by_name = {}
    for tr in fig.data:
        by_name.setdefault(tr.legendgroup, []).append(tr)
    assert set(by_name) == {"contrast vector", "random direction (equal norm)"}
    for arm, name in (("contrast", "contrast vector"), ("random", "random direction (equal norm)")):
        sentiment, ppl, degenerate = by_name[name]
        assert list(sentiment.x) == [-0.2, 0.0, 0.2]  # every arm through the unsteered point
        want = [rows[(arm, -0.2)], base, rows[(arm, 0.2)]]
        assert list(sentiment.y) == [r["compound"] for r in want]
        assert [y + e for y, e in zip(sentiment.y, sentiment.error_y.array)] == pytest.approx([r["compound_ci"][1] for r in want])
        assert [y - e for y, e in zip(sentiment.y, sentiment.error_y.arrayminus)] == pytest.approx([r["compound_ci"][0] for r in want])
        assert list(ppl.y) == [r["ppl_ratio"] for r in want]
        assert [y + e for y, e in zip(degenerate.y, degenerate.error_y.array)] == pytest.approx([r["degenerate_ci"][1] for r in want])
    assert "n=4 prompts" in fig.layout.annotations[0].text


def test_each_row_has_its_intervals_verdict_and_traces(sv):
    _, path, doc = sv
    rows = cv.arm_rows(doc, lambda arm, c: f"/Trace_viewer?run=steer-vector/sv&trace={arm}/{c:g}/0")
    assert [(r["arm"], r["c"]) for r in rows] == [(r["arm"], r["coeff"]) for r in doc["rows"]]
    found = {f["extra"]["coeff"]: f for f in doc["findings"]}
    for r, raw in zip(rows, doc["rows"]):
        assert r["compound 95%"] == f"[{raw['compound_ci'][0]:+.3f}, {raw['compound_ci'][1]:+.3f}]"
        if raw["arm"] == "contrast":  # the finding's verdict and the contrast-minus-random interval
            f = found[raw["coeff"]]
            assert r["verdict"] == f["verdict"] and r["beyond random"] == f["extra"]["vs_random"]
            assert r["beyond random 95%"] == f"[{f['extra']['vs_random_ci'][0]:+.3f}, {f['extra']['vs_random_ci'][1]:+.3f}]"
        else:
            assert r["verdict"] == "control" and r["beyond random 95%"] == "–"
    from app.traces import list_traces

    ids = {i for i, _ in list_traces(path.parents[1], "steer-vector/sv")}
    assert {r["continuations"].split("trace=")[1] for r in rows} <= ids  # every link names a trace the run holds


def test_one_prompt_side_by_side_and_vader_colours(sv):
    _, _, doc = sv
    panels = cv.example_panels(doc, 1)
    assert [(a, c) for a, c, _ in panels] == [("unsteered", 0.0), ("contrast", -0.2), ("random", -0.2),
                                              ("contrast", 0.2), ("random", 0.2)]
    assert all(text == next(r for r in doc["rows"] if r["arm"] == a and r["coeff"] == c)["examples"][1]
               for a, c, text in panels)
    words = dict(cv.word_valences("I love it, but I hate waiting."))  # VADER's own lexicon
    assert words["love"] > 2 and words["hate"] < -2 and words["I"] is None
    page = cv.valence_html("I love it, but I hate waiting.")
    assert 'data-valence="3.2"' in page and 'data-valence="-2.7"' in page and "rgba(214,39,40" in page
    assert cv.compound("I love it") == pytest.approx(0.6369, abs=1e-4)  # the job's scorer


def test_the_steering_page_opens_on_the_run(sv, monkeypatch):
    from streamlit.testing.v1 import AppTest

    root, _, doc = sv
    monkeypatch.setenv("THINKLENS_RUNS", str(root))
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.query_params["kind"] = "steer-vector"
    at.query_params["run"] = "sv"
    at.run()
    assert not at.exception and not at.error
    assert at.selectbox(key="steer-vector-run").value == 0
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("Dose-response of" in t for t in titles)
    arms = next(d.value for d in at.dataframe if "beyond random 95%" in d.value.columns)
    assert len(arms) == len(doc["rows"]) and arms["continuations"].str.startswith("/Trace_viewer?run=steer-vector/sv").all()
    texts = [m.value for m in at.markdown]
    assert sum(t.startswith("<div") and "white-space:pre-wrap" in t for t in texts) == 5  # five arms side by side
    assert any(t.startswith("**Prompt:**") and "(not found" not in t for t in texts)
    assert any("VADER compound" in c.value for c in at.caption)
    at.selectbox(key="steer-vector-prompt").set_value(2).run()
    assert not at.exception and not at.error
