"""The MI peaks page (AppTest) on a synthetic run and on a run written by the real job; broken runs
and broken trajectory files give error cards, never exceptions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from thinklens.runs.folders import RunFolder

PAGE = str(Path(__file__).resolve().parents[2] / "app" / "pages" / "2_MI_peaks.py")
VIEWS = ("Trajectory", "Thinking tokens", "Models", "Controls", "Interventions", "Compare runs")


@pytest.fixture(scope="module")
def synthetic_root(tmp_path_factory):
    from thinklens.analyses.mi.synthetic import build_synthetic_run

    root = tmp_path_factory.mktemp("mi-app")
    build_synthetic_run(root, n=12, models=("tiny-think", "tiny-cot"), run_id="small")
    return root


def _page(root: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("THINKLENS_RUNS", str(root))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def _pick_run(at: AppTest, run_id: str) -> AppTest:
    options = at.selectbox(key="mi-run").options
    return at.selectbox(key="mi-run").set_value(next(i for i, o in enumerate(options) if o.startswith(run_id))).run()


def test_every_view_renders_with_its_widgets(synthetic_root, monkeypatch):
    at = _page(synthetic_root, monkeypatch)
    assert not at.error, [e.value for e in at.error]
    for key in ("mi-run", "mi-model", "mi-traj", "mi-site"):
        assert at.selectbox(key=key) is not None
    assert at.radio(key="mi-view").options == list(VIEWS)
    assert at.radio(key="mi-rule").options == ["top_k", "iqr"]
    assert at.selectbox(key="mi-traj").label == "Trajectory (12)" and len(at.selectbox(key="mi-traj").options) == 12
    charts = at.get("plotly_chart")
    assert len(charts) == 1  # one view at a time: only the MI curve
    # per-token hover, peak markers and the shuffled control are in the figure
    import json

    fig = json.loads(charts[0].proto.spec)
    names = [t.get("name") for t in fig["data"]]
    assert names[0] == "median_sigma @ resid_post.3" and "peaks (top_k)" in names and any("shuffled" in n for n in names)
    assert "token" in fig["data"][0]["hovertext"][0]

    at.selectbox(key="mi-traj").set_value(11).run()
    at.selectbox(key="mi-site").set_value("resid_post.1").run()
    at.radio(key="mi-rule").set_value("iqr").run()
    at.multiselect(key="mi-curves").set_value(["estimator variants", "shuffled-answer control"]).run()
    assert not at.exception and not at.error
    assert "#11" in json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"]
    at.selectbox(key="mi-model").set_value(1).run()
    assert not at.exception and not at.error

    at.radio(key="mi-view").set_value("Thinking tokens").run()
    assert not at.exception and not at.error
    assert at.radio(key="mi-enr-unit").options and len(at.dataframe) == 1
    at.radio(key="mi-enr-unit").set_value("all").run()
    assert {"<<", "</think>"} <= set(at.dataframe[0].value["token"])
    at.selectbox(key="mi-enr-model").set_value(1).run()  # tiny-cot: no word at its peaks
    assert not at.exception and not at.error

    at.radio(key="mi-view").set_value("Models").run()
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) == 2 and at.dataframe[0].value.shape[0] == 2  # overlay, sites + table
    at.radio(key="mi-overlay-x").set_value("step").run()
    assert not at.exception

    at.radio(key="mi-view").set_value("Controls").run()
    assert not at.exception and not at.error
    assert set(at.dataframe[0].value["estimator"]) == {"reference", "median_sigma", "l2"}

    at.radio(key="mi-view").set_value("Interventions").run()
    assert not at.exception and not at.error
    assert len(at.dataframe) == 3 and len(at.get("plotly_chart")) == 3  # suppression, RR sweep, TTTS
    assert "thinking" in set(at.dataframe[0].value["condition"])


def test_compare_runs_overlays_two_runs(synthetic_root, tmp_path, monkeypatch):
    """Two runs (here: two synthetic data sets) on one chart, one curve per model of each run."""
    from thinklens.analyses.mi.synthetic import build_synthetic_run

    root = tmp_path / "runs"
    shutil.copytree(synthetic_root, root)
    build_synthetic_run(root, n=6, models=("tiny-think",), run_id="other", seed=1)
    at = _page(root, monkeypatch)
    at.radio(key="mi-view").set_value("Compare runs").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert set(at.multiselect(key="mi-compare-runs").value) == {"small", "other"}
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    names = {t["name"] for t in fig["data"] if not t["name"].endswith(" band")}
    assert names == {"small: tiny-think (think) (n=12)", "small: tiny-cot (cot) (n=12)", "other: tiny-think (think) (n=6)"}
    assert set(at.dataframe[0].value["run"]) == {"small", "other"}
    at.multiselect(key="mi-compare-runs").set_value(["other"]).run()
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert not at.exception and {t["name"] for t in fig["data"] if not t["name"].endswith(" band")} == {
        "other: tiny-think (think) (n=6)"}


def test_page_reads_a_run_written_by_the_job(tmp_path, monkeypatch):
    from thinklens import HookedModel, run_job
    from thinklens.zoo.registry import zoo_path

    name = next((n for n in ("tiny-cot", "tiny-think", "tiny-pre") if zoo_path(n) is not None), None)
    if name is None:
        pytest.skip("the zoo is not trained")
    run_job("mi-peaks", model=HookedModel.load(name), n_problems=3, max_steps=2, max_new_tokens=24, k=2,
            estimators=("reference",), ci="wilson", runs=tmp_path, run_id="job", progress=False)
    at = _page(tmp_path, monkeypatch)
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="mi-traj").label == "Trajectory (3)"
    for view in VIEWS[1:]:
        at.radio(key="mi-view").set_value(view).run()
        assert not at.exception and not at.error, (view, [e.value for e in at.error])
        if view == "Interventions":
            assert any("Not run" in i.value for i in at.info)  # interventions were not asked for


def test_broken_runs_show_error_cards(synthetic_root, tmp_path, monkeypatch):
    root = tmp_path / "runs"
    shutil.copytree(synthetic_root, root)
    empty = RunFolder.create("mi-peaks", {"x": 1}, root=root, run_id="empty")  # no results at all
    empty.finish()
    unreadable = root / "mi-peaks" / "unreadable"
    unreadable.mkdir()
    (unreadable / "config.json").write_text("{oops")
    at = _page(root, monkeypatch)
    assert any("unreadable" in e.value for e in at.error)  # the picker's card
    at = _pick_run(at, "empty")
    assert not at.exception
    assert any("mi-peaks run empty cannot be shown" in e.value for e in at.error)

    # a half-written trajectory file: the card names it, the rest of the page still works
    small = root / "mi-peaks" / "small"
    (small / "trajectories" / "tiny-think" / "00003.json").write_text('{"index": 3, "tokens": ')
    at = _pick_run(at, "small")
    at.selectbox(key="mi-traj").set_value(3).run()
    assert not at.exception
    assert any("trajectory #3 of tiny-think cannot be shown" in e.value for e in at.error)
    at.selectbox(key="mi-traj").set_value(4).run()
    assert not at.exception and len(at.get("plotly_chart")) == 1
    assert [e.value for e in at.error if "unreadable" not in e.value] == []

    # a truncated index and a missing figure
    (small / "results" / "mi_models.json").write_text('{"schema": 1, "models": [')
    (small / "figures" / "suppression.json").unlink()
    at = _pick_run(_page(root, monkeypatch), "small")
    assert not at.exception
    assert any("cannot be shown" in e.value and "mi_models.json" in e.value for e in at.error)
