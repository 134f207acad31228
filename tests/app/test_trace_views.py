"""The trace viewer's thought-anchors and tuned-lens views (app/anchor_views.py, app/lens_views.py), the same trace
found in other runs (app/trace_match.py) and the page that draws them.

Oracles: the committed records' own numbers (each sentence's score, interval and sample sizes; each lens's first
top-1 step) against what the view colours, hovers and marks; the samples a sentence opens against the job's own counts
(its ``n_with`` and ``n_without``, the accuracies it stored); a tuned-lens run's stored grids against the colour and the
rows of a clicked step; an mi-peaks trajectory's own MI against the curve drawn under the same trace.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from trace_view_runs import COPIES, RECORDS, lens_run, mi_run, organism_run, record_runs

from app import anchor_views as av
from app import lens_views as lv
from app import traces as tr
from app.trace_match import aligned, same_trace_curves
from app.trace_views import rows_where

PAGE = str(Path(__file__).resolve().parents[2] / "app" / "pages" / "5_Trace_viewer.py")
ANCHORS = "thought-anchors/tiny-overthink"
LENS = "tuned-lens/tiny-r1"


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return record_runs(tmp_path_factory.mktemp("records") / "runs")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A tuned-lens run with its grids and an mi-peaks run holding the same traces (tiny-r1), and an organism record
    of one of them."""
    from thinklens.zoo.registry import zoo_path

    if zoo_path("tiny-r1") is None:
        pytest.skip("the zoo is not trained (tiny-r1)")
    root = tmp_path_factory.mktemp("live") / "runs"
    lens_run(root)
    mi_run(root)
    return root


def _rows(run: str) -> list[dict]:
    name = "anchors.json" if run.startswith("thought-anchors") else "answer_lens.json"
    return json.loads((RECORDS / COPIES[run] / "results" / name).read_text())


def _num(v):
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def _viewer(root: Path, monkeypatch, **params) -> AppTest:
    monkeypatch.setenv("THINKLENS_RUNS", str(root))
    at = AppTest.from_file(PAGE, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = str(v)
    return at.run()


def _axis_titles(fig) -> list[str]:
    lay = fig.to_plotly_json()["layout"]
    return [((lay.get(a) or {}).get("title") or {}).get("text", "") for a in lay if re.fullmatch(r"[xy]axis\d*", a)]


# ---------------------------------------------------------------------------------------------- thought anchors

def test_each_sentence_is_coloured_by_the_score_the_run_stored_and_hovers_its_interval(records):
    rows = _rows(ANCHORS)
    assert [i for i, _ in tr.list_traces(records, ANCHORS)] == [str(i) for i in range(len(rows))]
    for i, r in enumerate(rows):
        t = tr.load_trace(records, ANCHORS, str(i))
        n = len(r["sentences"])
        assert t.tokens[:n] == r["sentences"] and len(t.tokens) <= n + 1
        for q, m in (("forced-answer importance", "forced"), ("resampling importance", "resampling"),
                     ("attention suppression", "suppression"), ("receiver-head score", "receivers")):
            assert t.quantities[q][:n] == [_num(v) for v in r["scores"][m]], (i, q)
            best = max((v, -k) for k, v in enumerate(t.quantities[q][:n]) if v is not None)
            assert t.marks[f"anchor by {q}"] == [-best[1]]
        for m, q in (("forced", "forced-answer importance"), ("resampling", "resampling importance")):
            hover = av.hover(records / ANCHORS, str(i), q)
            for k, sc in enumerate(r[m]["scores"]):
                if _num(sc["accuracy_diff"]) is None:
                    assert "undefined" in hover[k]
                    continue
                lo, hi = sc["accuracy_ci"]
                assert f"[{lo:.3g}, {hi:.3g}]" in hover[k] and f"{sc['n_with']} samples with" in hover[k]
                assert f"{sc['n_without']} without" in hover[k]
        assert all("no interval" in h for h in av.hover(records / ANCHORS, str(i), "attention suppression")[:n])


def test_a_sentence_opens_the_samples_its_numbers_count(records):
    from thinklens.data.answers import answers_equal

    checked = 0
    for i, r in enumerate(_rows(ANCHORS)):
        gold, sim = r["gold"], r["resampling"]["details"]["similarity"]
        for k in range(len(r["sentences"])):
            got = {s.title: s for s in av.position(records / ANCHORS, ANCHORS, str(i), k)}
            forced = got["Forced answers"].rows
            assert [x["with it"] for x in forced] == r["forced"]["answers"][k + 1]
            assert [x["without it"] for x in forced] == r["forced"]["answers"][k]
            # oracle: the accuracy the job stored after each prefix
            assert sum(x["right with"] for x in forced) == round(r["forced"]["accuracy"][k + 1] * len(forced))
            replaced = [x for x in got["Rollouts that replaced it"].rows if x["replaced it"]]
            kept = got["Rollouts that kept it"].rows
            sc = r["resampling"]["scores"][k]
            assert (len(replaced), len(kept)) == (sc["n_without"], sc["n_with"])
            assert all(x["overlap with the original"] < sim for x in replaced)
            assert all(x["right"] == answers_equal(x["answer"], gold) for x in kept)
            later = got["Its effect on later sentences (attention suppression)"].rows if k < len(r["sentences"]) - 1 else []
            assert [x["KL when attention to it is masked (nats)"] for x in later] == \
                   [v for v in r["suppression"]["matrix"][k][k + 1:] if v is not None]
            checked += 1
    assert checked >= 12


def test_every_anchor_trace_draws_its_importance_and_sentence_matrix_with_titled_axes(records):
    for run in ("thought-anchors/tiny-overthink", "thought-anchors/smollm2-135m"):
        for i, r in enumerate(_rows(run)):
            got = av.sections(records / run, run, str(i))
            figs = {s.title: s.figure for s in got if s.figure is not None}
            assert set(figs) == {"Importance of each sentence", "Sentence to sentence (attention suppression)"}
            assert all(t for f in figs.values() for t in _axis_titles(f))
            z = figs["Sentence to sentence (attention suppression)"].data[0].z
            assert [list(row) for row in z] == r["suppression"]["matrix"]
            heads = next(s.rows for s in got if s.title == "Receiver heads")
            assert [[h["layer"], h["head"]] for h in heads] == r["receivers"]["heads"]
            table = tr.load_trace(records, run, str(i)).tables["importance of each sentence (95% intervals)"]
            assert [row["samples behind these numbers"] for row in table] == \
                   [tr.trace_link(run, str(i), "resampling importance", token=k) for k in range(len(r["sentences"]))]


def test_a_links_filter_keeps_the_traces_of_its_field():
    rows = [{"problem": "a", "gold": "4"}, {"problem": "b", "gold": 4}]
    assert rows_where(rows, "gold=4") == [0, 1] and rows_where(rows, "problem=B;gold=4") == [1]


def test_anchor_traces_of_a_problem_are_listed_by_a_filter(records):
    assert [i for i, _ in tr.list_traces(records, ANCHORS, "problem=synthetic-0-1")] == ["1"]


# ---------------------------------------------------------------------------------------------- the answer's lens

def test_a_lens_record_marks_where_each_lens_first_reads_the_answer_and_says_the_map_is_not_stored(records):
    for i, r in enumerate(_rows(LENS)):
        t = tr.load_trace(records, LENS, str(i))
        assert "".join(t.tokens) == r["text"] and "steps" not in t.facts
        assert t.tokens[r["answer_step"]] == r["target"]  # the step the job wrote the answer token at
        assert t.marks["answer token written"] == [r["answer_step"]]
        for lens in ("logit", "tuned"):
            assert t.marks[f"{lens} lens: answer top-1 first"] == [r["first"][lens][0]]
        assert list(t.quantities) == [lv.NO_VALUES] and "not stored" in t.facts["lens heat map"]
        (sec,) = lv.sections(records / LENS, LENS, str(i))
        assert lv.GRIDS in sec.note and all(_axis_titles(sec.figure))
        firsts = {d.name: (d.x[0], d.y[0]) for d in sec.figure.data if "top-1 first" in (d.name or "")}
        assert firsts == {f"{k} lens: top-1 first": tuple(v) for k, v in r["first"].items()}
        assert "not stored" in lv.position(records / LENS, LENS, str(i), 0)[0].note


def test_a_lens_trace_with_no_final_answer_says_so(records):
    run = "tuned-lens/smollm2-135m"
    for i, r in enumerate(_rows(run)):
        t = tr.load_trace(records, run, str(i))
        secs = lv.sections(records / run, run, str(i))
        if r["answer_step"] is None:
            assert not t.marks and "no final answer" in secs[0].note
        else:
            assert secs[0].figure is not None


def test_the_heat_map_is_the_stored_grid_beside_the_same_traces_mi(live):
    run = "tuned-lens/grids"
    grids = json.loads((live / run / lv.GRIDS).read_text())
    rows = json.loads((live / run / "results" / "answer_lens.json").read_text())
    drawn = 0
    for i, (r, g) in enumerate(zip(rows, grids)):
        if r["answer_step"] is None:
            continue
        t = tr.load_trace(live, run, str(i))
        for lens, read in g["reads"].items():
            n = len(read["prob"])
            assert t.quantities[lv.p_quantity(lens)][:n] == [max(row) for row in read["prob"]]
            assert t.tokens[:n] == read["tokens"]
        (sec,) = lv.sections(live / run, run, str(i), tr_curves := same_trace_curves(live, t.model, "".join(t.tokens), t.tokens))
        maps = [d for d in sec.figure.data if d.type == "heatmap"]
        assert [[list(c) for c in zip(*m.z)] for m in maps] == [g["reads"][k]["prob"] for k in g["reads"]]
        assert all(_axis_titles(sec.figure))
        step = r["answer_step"] // 2
        rows_ = lv.position(live / run, run, str(i), step)[0].rows
        assert [x["tuned p(answer)"] for x in rows_] == g["reads"]["tuned"]["prob"][step]
        assert [x["logit rank (0: top)"] for x in rows_] == g["reads"]["logit"]["rank"][step]
        # oracle: the mi-peaks trajectory of the same text, its own MI per token
        for c in tr_curves:
            other = tr.load_trace(live, c.run, c.trace_id)
            assert c.kind == "mi-peaks" and c.values == other.quantities["mi"][:len(t.tokens)]
            assert [d for d in sec.figure.data if d.name == f"mi ({c.run})"]
        drawn += bool(tr_curves)
    assert drawn, "no lens trace was found among the mi-peaks run's trajectories"


def test_a_curve_lands_where_the_other_runs_token_starts():
    assert aligned(["a", "bc", "d"], "", ["ab", "c", "d"], "", [1.0, 2.0, 3.0]) == [1.0, None, 3.0]
    assert aligned(["x y", " z"], "", ["x", "y", "z"], " ", [1.0, 2.0, 3.0]) == [1.0, 3.0]
    assert aligned(["a", "\n", "b"], "", ["a", "b"], "\n", [1.0, 2.0]) == [1.0, None, 2.0]
    assert aligned([" so", " 4"], "", ["so", "4"], " ", [5.0, 6.0]) == [5.0, 6.0]  # leading space ignored


def test_only_a_trace_of_the_same_model_and_text_is_found(live):
    mi = tr.load_trace(live, "mi-peaks/match", "tiny-r1/0")
    text = "".join(mi.tokens)
    found = same_trace_curves(live, "tiny-r1", text, mi.tokens)
    assert [(c.run, c.trace_id) for c in found] == [("mi-peaks/match", "tiny-r1/0")]
    assert found[0].values == mi.quantities["mi"]
    assert same_trace_curves(live, "tiny-think", text, mi.tokens) == []
    assert same_trace_curves(live, "tiny-r1", text, mi.tokens, skip="mi-peaks/match") == []
    assert same_trace_curves(live, "tiny-r1", text[:10], mi.tokens) == []  # too short to be one trace


# ---------------------------------------------------------------------------------------------- the page

def test_the_viewer_colours_sentences_and_opens_one_with_its_samples(records, monkeypatch):
    at = _viewer(records, monkeypatch, run=ANCHORS, trace="1", quantity="resampling importance", token="1")
    assert not at.exception and not at.error, [e.value for e in at.error]
    strip = next(m.value for m in at.markdown if "tl-trace" in m.value)
    titles = re.findall(r'title="([^"]*)"', strip)
    r = _rows(ANCHORS)[1]
    assert len(titles) == len(tr.load_trace(records, ANCHORS, "1").tokens)
    assert sum("95% CI" in t for t in titles) == sum(_num(s["accuracy_diff"]) is not None for s in r["resampling"]["scores"])
    assert "rgba(31,119,180,0.85)" in strip  # the top sentence in full colour
    assert at.subheader[0].value.startswith("Sentence 1:")
    shown = {tuple(d.value.columns)[:2] for d in at.dataframe}
    assert ("rollout", "its sentence") in shown and ("sample", "without it") in shown
    assert len(at.get("plotly_chart")) == 3  # per sentence, importance with intervals, the sentence matrix


def test_homes_link_opens_a_lens_record_which_says_what_it_does_not_store(records, monkeypatch):
    at = _viewer(records, monkeypatch, run="tiny-r1", kind="tuned-lens")  # as Home's card links it
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.query_params["run"] == LENS
    assert any(lv.GRIDS in i.value for i in at.info)
    assert any("logit lens: answer top-1 first" in c.value for c in at.caption)


def test_an_organism_trace_shows_the_mi_of_the_same_trace_under_it(live, monkeypatch):
    mi = tr.load_trace(live, "mi-peaks/match", "tiny-r1/1")
    organism_run(live, "".join(mi.tokens), answer_known_at=len(mi.tokens) // 2)
    (tid, _), = tr.list_traces(live, "organism-eval/hand")
    at = _viewer(live, monkeypatch, run="organism-eval/hand", trace=tid)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(m.value == "**MI, probe and LYNX curves of this trace**" for m in at.markdown)
    assert any("mi of mi-peaks/match, trace tiny-r1/1" in c.value for c in at.caption)
    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)
    assert [d["name"] for d in spec["data"]] == ["mi (mi-peaks/match)"]
