"""The positive controls of ``validate --model`` as pictures on the Validation page (issue 55): the sentiment readout's
accuracy by layer against its shuffled-label control with intervals and the chosen layer; induction's layer x head map
(recomputed with the model on the setting's own sequences, its top heads checked against the record's) and the
ablation's loss rise against random heads. On a quick validate run of tiny-think and on the committed real-weight
record."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from real_view_runs import need_zoo, validate_controls_run

from app import control_views as cv
from thinklens.calibration.stats import wilson

PAGE = str(Path(__file__).resolve().parents[2] / "app" / "pages" / "8_Validation.py")
RECORD = Path(__file__).resolve().parents[2] / "results" / "records" / "validate-real-smollm2" / "results" / "validate.json"


@pytest.fixture(scope="module")
def val(tmp_path_factory):
    need_zoo()
    root = tmp_path_factory.mktemp("val") / "runs"
    path = validate_controls_run(root)
    return root, json.loads((path / "results" / "validate.json").read_text())


def test_the_readout_by_layer_with_its_control_and_intervals(val):
    _, doc = val
    planted = cv.settings_of(doc, "readout")["planted"]
    null = cv.settings_of(doc, "readout")["null"]
    rows = cv.readout_rows(doc)
    sites = planted["details"]["selection_accuracy"]
    assert [r["site"] for r in rows] == list(sites) and [r["layer"] for r in rows] == list(range(len(sites)))
    for r in rows:
        a, b = sites[r["site"]], null["details"]["selection_accuracy"][r["site"]]
        assert r["probe accuracy"] == a and r["shuffled-label accuracy"] == b
        lo, hi = wilson(round(a * planted["n"]), planted["n"])
        assert r["probe 95% (Wilson)"] == f"[{lo:.3f}, {hi:.3f}]"
    assert [r["site"] for r in rows if r["chosen"]] == [planted["details"]["best_site"]]
    fig = cv.figure_readout(doc)
    probe, shuffled, report, control = fig.data
    assert list(probe.y) == list(sites.values()) and len(shuffled.y) == len(sites)
    x = cv.layer_of(planted["details"]["best_site"])
    assert list(report.x) == [x] and report.y[0] + report.error_y.array[0] == pytest.approx(planted["ci"][1])
    assert control.y[0] == planted["details"]["shuffled_accuracy"]
    assert control.y[0] - control.error_y.arrayminus[0] == pytest.approx(planted["details"]["shuffled_ci"][0])
    assert f"chosen: {planted['details']['best_site']}" in [a.text for a in fig.layout.annotations]


def test_the_ablation_against_random_heads(val):
    _, doc = val
    heads = cv.settings_of(doc, "induction")["planted-heads"]
    null = cv.settings_of(doc, "induction")["null-random-heads"]
    bars = cv.figure_ablation(doc).data[0]
    assert list(bars.y) == [heads["details"]["random_heads_rise"], heads["details"]["top_heads_rise"], heads["value"]]
    assert bars.y[0] - bars.error_y.arrayminus[0] == pytest.approx(null["ci"][0])  # the null setting's interval
    assert bars.y[2] + bars.error_y.array[2] == pytest.approx(heads["ci"][1])
    assert bars.error_y.array[1] == 0  # no interval stored for the top heads' rise alone, and none drawn
    rows = cv.ablation_rows(doc)
    assert rows[1]["interval"] == "–" and "not stored" in rows[1]["interval is"]


def test_the_head_map_recomputed_has_the_records_top_heads(val):
    _, doc = val
    got = cv.prefix_matching_map(doc["model"], seed=doc["seed"], quick=doc["quick"])
    top = cv.induction_numbers(doc)["top_heads"]
    assert [tuple(p) for p in got["top"]] == top
    assert [round(got["scores"][a][b], 4) for a, b in top] == cv.induction_numbers(doc)["top_scores"]
    fig = cv.figure_head_map(got["scores"], got["top"])
    heat, ring = fig.data
    assert len(heat.z) == 4 and list(zip(ring.y, ring.x)) == top


def test_the_committed_real_record_draws():
    doc = json.loads(RECORD.read_text())
    assert cv.has_controls(doc) == ["readout", "induction"]
    assert "chosen layer resid_post.14" in cv.readout_line(doc)
    assert cv.induction_numbers(doc)["top_heads"][0] == (18, 6)
    cv.figure_readout(doc), cv.figure_ablation(doc), cv.figure_top_heads(doc)


def test_the_validation_page_draws_the_controls_and_maps_every_head(val, monkeypatch):
    from streamlit.testing.v1 import AppTest

    root, doc = val
    monkeypatch.setenv("THINKLENS_RUNS", str(root))
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    assert not at.exception
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert sum("Sentiment readout by layer (tiny-think)" in s for s in specs) == 1
    assert sum("Loss rise on the repeated half" in s for s in specs) >= 1
    button = next(b for b in at.button if b.key == "btn-head-map-run-controls")
    button.click().run()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 120 and not any("Recomputed top" in c.value for c in at.caption):
        time.sleep(0.2)
        at.run()
    assert not at.exception
    assert any(c.value.startswith("Recomputed top 5 heads match the record's") for c in at.caption)
    assert any("Prefix-matching score of every head of tiny-think" in c.proto.spec for c in at.get("plotly_chart"))
