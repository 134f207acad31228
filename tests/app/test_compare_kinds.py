"""Runs of one kind side by side (app/compare.py) for latent-eval, hybrid, reasoning-vector, SAE and steer (the
comparisons their jobs declare) and for any other job (its findings and summary numbers): rows carry what each run
wrote, grouped by model and data set; every comparison chart has axis titles;
the Steering page's comparison tab shows one table per kind and group; a half-written run (results
removed, meta says done) shows "results missing" with its finishing command and stays out of comparisons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.common import missing_results
from app.compare import COMPARED, comparison_rows, figure_comparison, groups
from thinklens.errors import ThinklensError
from thinklens.runs.folders import RunFolder, discover_runs

APP = Path(__file__).resolve().parents[2] / "app"

STEERING = str(APP / "pages" / "4_Steering.py")


def _sae(root, run_id, model, data, ev, l0):
    run = RunFolder.create("sae", {"model": model, "data": data, "site": "resid_post.1", "architecture": "topk",
                                   "d_sae": 32, "k": 4}, root=root, run_id=run_id)
    run.write_result("metrics", {"d_sae": 32, "explained_variance": ev, "l0": l0, "dead_features": 3})
    run.finish({"explained_variance": ev, "l0": l0, "dead_features": 3, "ce_loss_recovered": 0.9})


def _steer(root, run_id, model, feature, unsteered, steered, random):
    run = RunFolder.create("steer", {"model": model, "sae": "data/saes/x", "word": "wait", "prompts": "zoo:think"},
                           root=root, run_id=run_id)
    run.write_result("steer", {"rows": [], "chosen": {"feature": feature}})
    run.finish({"feature": feature, "corr": 0.4, "site": "resid_post.2",
                "rates": {"feature": {"-1": [0, 30], "0": [unsteered, 30], "1": [steered, 30]},
                          "random_feature": {"-1": [1, 30], "0": [unsteered, 30], "1": [random, 30]}}})


def _vector(root, run_id, model, alpha0, best):
    run = RunFolder.create("reasoning-vector", {"model": model, "a": "tiny-grpo", "b": "tiny-cot", "steps": [1, 8]},
                           root=root, run_id=run_id)
    run.write_result("alpha_sweep", [{"group": "all", "alpha": 0.0, "accuracy": alpha0}])
    run.finish({"alpha0_accuracy": alpha0, "norm": 1.25, "related": True,
                "best": {"group": "mlp", "alpha": 1.0, "accuracy": best, "n_report": 40}})


def _hybrid(root, run_id, model, accs):
    run = RunFolder.create("hybrid", {"model": model, "thinking": "tiny-think", "n_eval": 100, "min_steps": 2,
                                      "max_steps": 5}, root=root, run_id=run_id)
    summary = {m: {"accuracy": a, "fired_fraction": 0.1 if m != "base" else 0.0, "changed_fraction": 0.02,
                   "gap_recovered": 0.25} for m, a in accs.items()}
    run.write_result("hybrid", summary)
    run.finish(summary)


def _latent(root, run_id, rows):
    run = RunFolder.create("latent-eval", {"models": [r["model"] for r in rows], "min_steps": 3, "max_steps": 4},
                           root=root, run_id=run_id)
    run.write_result("table", rows)
    run.finish({"rows": rows})


@pytest.fixture
def runs(tmp_path):
    root = tmp_path / "runs"
    _sae(root, "a", "tiny-think", "zoo:think", 0.99, 32.0)
    _sae(root, "b", "tiny-think", "zoo:think", 0.95, 8.0)
    _sae(root, "c", "tiny-cot", "gsm8k", 0.90, 16.0)
    _steer(root, "s1", "tiny-think", 633, 17, 30, 17)
    _steer(root, "s2", "tiny-r1", 12, 3, 9, 4)
    _vector(root, "v1", "tiny-think", 0.9, 0.95)
    _vector(root, "v2", "tiny-r1", 0.5, 0.55)
    _hybrid(root, "h1", "tiny-cot", {"base": 0.69, "thinking": 0.97, "hybrid": 0.76, "bias_only": 0.69,
                                     "random_vectors": 0.77})
    _hybrid(root, "h2", "tiny-cot", {"base": 0.6, "thinking": 0.9, "hybrid": 0.7, "bias_only": 0.62})
    _latent(root, "l1", [{"model": "tiny-cot", "label": "CoT-SFT", "problems": "3-4 steps", "accuracy": 0.9375,
                          "ci": [0.86, 0.97], "n": 80},
                         {"model": "tiny-codi", "label": "CODI", "problems": "3-4 steps", "accuracy": 0.975,
                          "ci": [0.91, 0.99], "n": 80}])
    _latent(root, "l2", [{"model": "tiny-cot", "label": "CoT-SFT", "problems": "6-8 steps", "accuracy": 0.875,
                          "ci": [0.69, 0.96], "n": 24}])
    return root


def _rows(root, kind):
    return comparison_rows(kind, [e for e in discover_runs(root, kind) if e.error is None])


def test_rows_carry_what_each_run_wrote(runs):
    sae = {r["run"]: r for r in _rows(runs, "sae")}
    assert (sae["a"]["explained variance"], sae["a"]["L0"], sae["b"]["L0"], sae["c"]["data"]) == (0.99, 32.0, 8.0, "gsm8k")
    steer = {r["run"]: r for r in _rows(runs, "steer")}
    assert (steer["s1"]["feature"], steer["s1"]["feature at largest c"], steer["s1"]["random feature at largest c"],
            steer["s1"]["unsteered: traces with the word"]) == (633, "30/30", "17/30", "17/30")
    vec = {r["run"]: r for r in _rows(runs, "reasoning-vector")}
    assert (vec["v1"]["accuracy at alpha 0"], vec["v1"]["accuracy there (reporting split)"], vec["v2"]["model"]) == (
        0.9, 0.95, "tiny-r1")
    hy = {r["run"]: r for r in _rows(runs, "hybrid")}
    assert (hy["h1"]["hybrid accuracy"], hy["h1"]["best ablation"], hy["h2"]["best ablation"]) == (
        0.76, "random_vectors (0.77)", "bias_only (0.62)")
    latent = _rows(runs, "latent-eval")
    assert sorted((r["run"], r["model"], r["data"], r["accuracy"]) for r in latent) == [
        ("l1", "tiny-codi", "3-4 steps", 0.975), ("l1", "tiny-cot", "3-4 steps", round(0.9375, 3)), ("l2", "tiny-cot", "6-8 steps", 0.875)]
    assert {r["95% interval"] for r in latent} >= {"0.860-0.970"}
    with pytest.raises(ThinklensError, match="run kind to compare"):
        comparison_rows("no-such-job", [])  # every registered job's runs compare; a kind no job writes does not


def test_rows_are_grouped_by_model_and_data(runs):
    for kind, want in (("sae", {("tiny-cot", "gsm8k"): ["c"], ("tiny-think", "zoo:think"): ["a", "b"]}),
                       ("latent-eval", {("tiny-codi", "3-4 steps"): ["l1"], ("tiny-cot", "3-4 steps"): ["l1"],
                                        ("tiny-cot", "6-8 steps"): ["l2"]})):
        rows = _rows(runs, kind)
        got = {k: sorted(r["run"] for r in v) for k, v in groups(rows).items()}
        assert got == want, kind
        keys = [(r["model"], r["data"]) for r in rows]
        assert keys == sorted(keys)  # each group's rows sit together


@pytest.mark.parametrize("kind", COMPARED)
def test_every_comparison_chart_has_axis_titles(runs, kind):
    fig = figure_comparison(kind, _rows(runs, kind))
    assert fig.layout.title.text and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    assert fig.data and all(len(t.x) for t in fig.data)


def test_a_job_that_declares_no_comparison_is_compared_by_its_findings_and_numbers(runs):
    """A job whose module declares no ``compare`` (here eval) still has rows and a chart: each finding's estimate,
    interval and verdict, and the numbers at the top of its summary."""
    found = [{"claim": "accuracy beats the majority guess", "value": 0.8, "ci": [0.7, 0.9], "verdict": "effect"}]
    for run_id, acc in (("e1", 0.8), ("e2", 0.6)):
        run = RunFolder.create("eval", {"model": "tiny-cot", "data": "synthetic:2-3:4"}, root=runs, run_id=run_id)
        run.write_result("eval", {"accuracy": acc})
        run.finish({"accuracy": acc, "n": 8, "findings": [{**found[0], "value": acc}]})
    assert "eval" not in COMPARED
    rows = {r["run"]: r for r in _rows(runs, "eval")}
    assert rows["e1"]["accuracy"] == 0.8 and rows["e2"]["n"] == 8
    assert rows["e2"]["accuracy beats the majority guess"] == "0.6 [0.7, 0.9] effect"
    entries = [e for e in discover_runs(runs, "eval") if e.error is None]
    fig = figure_comparison("eval", list(rows.values()), {e.run_id: e.summary["findings"] for e in entries})
    assert {t.name: list(t.y) for t in fig.data} == {"e1": [0.8], "e2": [0.6]}
    assert fig.layout.title.text and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_missing_results(runs):
    _hybrid(runs, "half", "tiny-cot", {"base": 0.5})
    run = RunFolder(runs / "hybrid" / "half")
    assert missing_results(run.path) == []
    (run.path / "results" / "hybrid.json").unlink()
    assert missing_results(run.path) == ["results/"]
    assert missing_results(run.path, ("hybrid", "categories")) == ["results/hybrid.json", "results/categories.json"]
    run.write_meta(status="running")
    assert missing_results(run.path) == []  # a running run is not half-written


def test_steering_page_compares_every_kind_and_flags_half_written_runs(runs, monkeypatch):
    from streamlit.testing.v1 import AppTest

    half = RunFolder.create("hybrid", {"model": "tiny-cot", "thinking": "tiny-think"}, root=runs, run_id="zz-half")
    half.finish({"hybrid": {"accuracy": 0.99}})  # meta says done and keeps a headline; results/ never written
    monkeypatch.setenv("THINKLENS_RUNS", str(runs))
    at = AppTest.from_file(STEERING, default_timeout=120)
    at.run()
    assert not at.exception and not at.get("json")
    options = at.selectbox(key="hybrid-run").options
    at.selectbox(key="hybrid-run").set_value(next(i for i, o in enumerate(options) if o.startswith("zz-half"))).run()
    assert not at.exception  # the only card: these made-up sae runs hold no SAE weights
    assert [e.value.split("\n")[0] for e in at.error] == ["**the SAE of sae/c**"], [e.value for e in at.error]
    card = next(w.value for w in at.warning if w.value.startswith("**results missing**"))
    assert "hybrid/zz-half" in card and "`results/`" in card
    assert any(f"--config {runs / 'hybrid' / 'zz-half' / 'config.json'}" in c.value for c in at.code)
    tables = [df.value for df in at.dataframe if "run" in df.value.columns]
    runs_shown = sorted(r for t in tables for r in t["run"].tolist())
    assert runs_shown == ["a", "b", "c", "h1", "h2", "s1", "s2", "v1", "v2"]  # every finished run, the half one left out
    # one table per kind and (model, data) group: sae 2, steer 2, reasoning-vector 2, hybrid 1
    assert len(tables) == 7
    assert any(s.value == "`hybrid` runs side by side" for s in at.subheader)


def test_latent_eval_comparison_section(runs, monkeypatch):
    from streamlit.testing.v1 import AppTest

    script = "from app.compare import show_comparison\nshow_comparison('latent-eval')\n"
    monkeypatch.setenv("THINKLENS_RUNS", str(runs))
    at = AppTest.from_string(script, default_timeout=60).run()
    assert not at.exception, at.exception
    assert [df.value["run"].tolist() for df in at.dataframe] == [["l1"], ["l1"], ["l2"]]  # codi 3-4, cot 3-4, cot 6-8
    assert [m.value for m in at.markdown if m.value.startswith("**")] == [
        "**tiny-codi** · 3-4 steps", "**tiny-cot** · 3-4 steps", "**tiny-cot** · 6-8 steps"]
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["layout"]["xaxis"]["title"]["text"] and spec["layout"]["yaxis"]["title"]["text"]
