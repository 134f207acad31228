"""The Steering page (AppTest): feature browser, live steering (steered vs unsteered), sweeps, hybrid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PAGE = str(Path(__file__).resolve().parents[2] / "app" / "pages" / "4_Steering.py")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A real `sae` run on a tiny model (text-file data) plus small reasoning-vector and hybrid runs."""
    import random

    from thinklens.runs.folders import RunFolder
    from thinklens.runs.jobs import run_job
    from thinklens.steering import figures
    from tools.testing import build_tiny_model

    root = tmp_path_factory.mktemp("app-steer")
    model_dir = build_tiny_model("llama", root / "model", d_model=32, n_layers=2)
    rng = random.Random(0)
    data = root / "texts.txt"
    data.write_text("\n".join(" ".join(f"w{rng.randrange(40)}" for _ in range(rng.randrange(4, 12))) for _ in range(120)))
    run_job("sae", model=str(model_dir), data=str(data), n_texts=120, eval_texts=32, stats_traces=8, site="resid_post.0",
            d_sae=32, k=4, training_tokens=6000, train_batch_size_tokens=256, store_batch_size_prompts=8,
            n_batches_in_buffer=4, n_eval_batches=1, runs=root / "runs", run_id="tiny", progress=False)
    rv = RunFolder.create("reasoning-vector", {"a": "x"}, root=root / "runs", run_id="rv")
    rows = [{"group": g, "alpha": a, "accuracy": 0.5 + 0.1 * a} for g in ("all", "mlp") for a in (-1.0, 0.0, 1.0)]
    rv.write_result("alpha_sweep", rows)
    rv.write_figure("alpha_sweep", figures.figure_alpha_sweep(rows))
    rv.write_result("vector", {"norms": {"all": 1.0}})
    rv.finish({})
    hy = RunFolder.create("hybrid", {"b": "x"}, root=root / "runs", run_id="hy")
    res = {m: {"accuracy": a, "fired_fraction": f, "changed_fraction": f / 2, "gap_recovered": None}
           for m, a, f in (("base", 0.3, 0.0), ("thinking", 0.8, 0.0), ("hybrid", 0.6, 0.12))}
    hy.write_result("hybrid", res)
    hy.write_figure("hybrid", figures.figure_hybrid(res))
    hy.finish({})
    return root / "runs"


def _until(at, done, timeout: float = 120.0):
    """Rerun the page until ``done(at)``: generation runs on a worker thread, the page polls for it."""
    import time

    t0 = time.perf_counter()
    while not done(at) and time.perf_counter() - t0 < timeout:
        time.sleep(0.1)
        at.run()
    return at


def _app(runs, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("THINKLENS_RUNS", str(runs))
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


FEATURE = "feature::sae/tiny"  # the feature input's key carries its SAE


def test_feature_browser(runs, monkeypatch):
    at = _app(runs, monkeypatch)
    assert any("explained variance" == m.label for m in at.metric)
    assert at.number_input(key=FEATURE).value >= 0
    assert at.number_input(key=FEATURE).max == 31  # the SAE's d_sae = 32
    at.number_input(key=FEATURE).set_value(3)
    at.text_input(key="trace-prompt").set_value("w1 w2 w3")
    at.button(key="trace-btn").click()
    at.run()
    n = len(at.get("plotly_chart"))
    _until(at, lambda a: len(a.get("plotly_chart")) > n or a.error)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == n + 1  # the trace's chart came
    assert not at.code and not at.get("json")  # text as wrapped text, not a code block


def test_live_steering_side_by_side(runs, monkeypatch):
    at = _app(runs, monkeypatch)
    at.text_input(key="live-prompt").set_value("w5 w6 w7")
    at.number_input(key=FEATURE).set_value(2)
    at.slider(key="live-coeff").set_value(2.0)
    at.button(key="steer-btn").click()
    at.run()
    _until(at, lambda a: any(md.value.startswith("**steered vs unsteered**") for md in a.markdown) or a.error)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(md.value.startswith("**steered vs unsteered** (feature 2, add, c=+2.00)") for md in at.markdown)
    assert any(md.value.startswith("**steered** (feature 2") for md in at.markdown)  # both texts in full
    sweep = next(df.value for df in at.dataframe if "coefficient" in df.value.columns)
    assert sweep["coefficient"].tolist() == [-1.0, 0.0, 1.0, 2.0]  # the sweep and the chosen coefficient
    assert not at.code  # a diff, not code blocks


def test_sweep_and_hybrid_tabs(runs, monkeypatch):
    at = _app(runs, monkeypatch)
    assert not at.error
    frames = at.dataframe
    assert len(frames) >= 3  # features, alpha sweep, hybrid modes
    assert not at.get("json")  # no raw JSON: the vector and the hybrid's categories are tables
    vector = next(df.value for df in frames if list(df.value.columns) == ["what", "group", "value"])
    assert vector.values.tolist()[1] == ["norm of the vector", "all", "1.0"]
    modes = next(df.value for df in frames if "mode" in df.value.columns)
    assert modes["mode"].tolist() == ["base", "thinking", "hybrid"]
    from test_features_page import untitled_axes

    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(specs) >= 4 and not [a for s in specs for a in untitled_axes(s)]  # every chart names its axes
