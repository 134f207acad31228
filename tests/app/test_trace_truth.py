"""The reasoning organism's traces in the trace viewer (issue 55): an organism-eval run's thinking traces, found in
``results/organism_eval.json`` one level down, drawn in the model's own tokens with ``answer_known_at`` and each cue
marked, the forced exit's answer at each cue in a table and as a colour; a record whose tokens do not line up is
shown unmarked with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_view_runs import need_zoo, organism_eval_run

from app import trace_truth as tt
from app import traces as tr

PAGE = str(Path(__file__).resolve().parents[2] / "app" / "pages" / "5_Trace_viewer.py")


@pytest.fixture(scope="module")
def org(tmp_path_factory):
    need_zoo()
    root = tmp_path_factory.mktemp("org") / "runs"
    path = organism_eval_run(root)
    return root, json.loads((path / "results" / "organism_eval.json").read_text())


def test_every_thinking_trace_is_listed_with_its_model(org):
    root, doc = org
    listed = tr.list_traces(root, "organism-eval/org")
    want = [(m["model"], i) for m in doc["models"] for i in range(len(m.get("traces") or []))]
    assert [i for i, _ in listed] == [f"organism_eval.models.{m}.traces/{i}" for m, i in want]
    wrong = tr.list_traces(root, "organism-eval/org", "correct=false")  # a number's filter keeps its traces
    assert len(wrong) == sum(not t["correct"] for m in doc["models"] for t in m.get("traces") or [])


def test_answer_known_at_and_each_cue_are_marked_on_the_models_tokens(org):
    root, doc = org
    from thinklens.engine.model import HookedModel

    checked = 0
    for m in doc["models"]:
        tok = HookedModel.load(m["model"]).tokenizer
        for i, rec in enumerate(m.get("traces") or []):
            t = tr.load_trace(root, "organism-eval/org", f"organism_eval.models.{m['model']}.traces/{i}")
            assert t.model == m["model"] and "ground truth" not in t.facts
            assert "".join(t.tokens) == rec["text"]
            # oracle: the generation's own token at each cue is the cue word's first token
            for c in rec["cues"]:
                assert t.tokens[c["start_index"]].strip().lower()[:2] == c["word"][:2]
                assert t.quantities[tt.FORCED][c["start_index"]] == float(c["forced_correct"])
            assert t.marks.get("cue event", []) == sorted({c["start_index"] for c in rec["cues"]})
            if rec["answer_known_at"] is not None:
                assert t.marks[tt.KNOWN] == [rec["answer_known_at"]]
                # the forced exit at answer_known_at reads the tokens before it: they end with the sentence that writes
                # the answer
                assert str(rec["answer"]) in "".join(t.tokens[:rec["answer_known_at"]])[-40:]
            rows = t.tables.get(tt.CUES, [])
            assert [(r["position"], r["forced exit answers"], r["forced exit right"]) for r in rows] == \
                   [(c["start_index"], c["forced"], c["forced_correct"]) for c in rec["cues"]]
            assert tok.decode(tok(rec["text"], add_special_tokens=False)["input_ids"]) == rec["text"]
            checked += len(rec["cues"])
    assert checked > 0, "no cue in the run's traces: nothing was checked"


def test_misplaced_indices_are_refused_with_the_reason():
    rec = {"answer_known_at": 1, "cues": [{"word": "wait", "start_index": 2}]}
    assert tt.misplaced(["a", " b", " Wait"], "a b Wait", rec) == ""
    assert "does not give it back" in tt.misplaced(["a", "b"], "a b", rec)
    late = tt.misplaced(["a", " Wait", " b"], "a Wait b", {"cues": [{"word": "wait", "start_index": 2}]})
    assert "cue 0 ('wait') does not start at token 2 (' b')" in late
    assert "outside" in tt.misplaced(["a"], "a", {"answer_known_at": 5})


def test_a_record_whose_tokens_do_not_line_up_is_shown_unmarked(org, tmp_path):
    import shutil

    root, _ = org
    copy = tmp_path / "runs"
    shutil.copytree(root, copy)
    path = copy / "organism-eval" / "org" / "results" / "organism_eval.json"
    doc = json.loads(path.read_text())
    rec = next(t for m in doc["models"] for t in m.get("traces") or [] if t["cues"])
    rec["cues"][0]["start_index"] += 1  # one token late: no longer the cue word's
    path.write_text(json.dumps(doc))
    model = next(m["model"] for m in doc["models"] for t in m.get("traces") or [] if t is rec)
    i = next(i for m in doc["models"] for i, t in enumerate(m.get("traces") or []) if t is rec)
    t = tr.load_trace(copy, "organism-eval/org", f"organism_eval.models.{model}.traces/{i}")
    assert t.facts["ground truth"].startswith("not marked: cue 0") and not t.marks and t.tokens == rec["text"].split()


def test_the_trace_viewer_shows_the_marks_and_the_cue_table(org, monkeypatch):
    from streamlit.testing.v1 import AppTest

    root, doc = org
    m = next(m for m in doc["models"] if any(t["cues"] for t in m.get("traces") or []))
    i = next(i for i, t in enumerate(m["traces"]) if t["cues"])
    monkeypatch.setenv("THINKLENS_RUNS", str(root))
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.query_params["run"] = "organism-eval/org"
    at.query_params["trace"] = f"organism_eval.models.{m['model']}.traces/{i}"
    at.run()
    assert not at.exception and not at.error
    assert at.selectbox[2].value == tt.FORCED  # coloured by the forced exit's answer at each cue
    assert set(at.multiselect[0].value) == {tt.KNOWN, "cue event"} if m["traces"][i]["answer_known_at"] is not None else True
    strip = next(md.value for md in at.markdown if "tl-trace" in md.value)
    assert strip.count("box-shadow:inset 3px 0 0 #17becf") == (m["traces"][i]["answer_known_at"] is not None)
    assert strip.count("border-bottom:3px solid #9467bd") == len({c["start_index"] for c in m["traces"][i]["cues"]})
    cues = next(d.value for d in at.dataframe if "forced exit answers" in d.value.columns)
    assert cues["forced exit answers"].tolist() == [c["forced"] for c in m["traces"][i]["cues"]]
    assert any(f"{tt.KNOWN}: teal bar" in c.value for c in at.caption) or m["traces"][i]["answer_known_at"] is None
