"""The Probes and LYNX page on run folders made by the real jobs; broken runs give error cards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from thinklens.runs.folders import RunFolder

PAGE = Path(__file__).resolve().parents[2] / "app" / "pages" / "3_Probes_and_LYNX.py"


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory):
    """A runs folder with one LYNX run (zoo model) and one probe run (tiny random model), made by the jobs."""
    from thinklens import HookedModel
    from thinklens.runs.jobs import run_job
    from thinklens.zoo.registry import zoo_path
    from thinklens.zoo.tokenizer import save_zoo_tokenizer, zoo_vocab
    from tools.testing import build_tiny_model

    root = tmp_path_factory.mktemp("runs")
    name = next((n for n in ("tiny-think", "tiny-pre") if zoo_path(n) is not None), None)
    if name is None:
        pytest.skip("the zoo is not trained (thinklens run zoo-train --model tiny-pre)")
    run_job("lynx", model=name, n_train=30, n_calibration=30, n_test=30, max_steps=2, hidden_layer_sizes=(16,),
            deltas=(0.1, 0.2, 0.3), skip_vacuous=True, runs=root, run_id="good", progress=False)
    path = build_tiny_model("llama", tmp_path_factory.mktemp("tiny"), vocab_size=len(zoo_vocab()) + 8, n_ctx=256)
    save_zoo_tokenizer(path)
    run_job("probe", model=HookedModel.load(str(path)), prompt_format="think", n_problems=12, max_steps=1, folds=2,
            runs=root, run_id="sweep", progress=False)
    return root


def _page(root: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("THINKLENS_RUNS", str(root))
    return AppTest.from_file(str(PAGE), default_timeout=90).run()


def test_page_renders_lynx_and_probe_runs(runs_root, monkeypatch):
    at = _page(runs_root, monkeypatch)
    assert not at.exception and not at.error
    assert at.selectbox(key="lynx-run").value == 0 and at.selectbox(key="probe-run").value == 0
    deltas = at.selectbox(key="lynx-delta").options
    assert deltas and len(at.get("plotly_chart")) == 6  # validity, pareto, exits, base rate, runs compared, layer sweep
    per_delta, rollouts, policies, compared, sweep = (d.value for d in at.dataframe)  # in page order
    assert set(compared["run"]) == {"good"} and len(compared) == len(deltas)
    assert per_delta.shape[0] == len(deltas) and "P(S={1}|y=0)" in per_delta.columns
    assert {"lynx", "full", "first_cue", "fraction", "threshold", "oracle"} <= set(policies["policy"])
    # the rollouts behind a δ row: each exit is the first event at or above LYNX's threshold's set {1}, and its link
    # opens that rollout in the trace viewer coloured by the probe score with the exit token opened

    from app.traces import trace_link
    from thinklens.probes.lynx_result import load_lynx_result

    delta = at.selectbox(key="lynx-rollouts-delta").value
    exit_event = load_lynx_result(RunFolder(runs_root / "lynx" / "good")).report.get("lynx", delta).exit_event
    assert len(rollouts) == int((exit_event >= 0).sum()) or not at.toggle(key="lynx-rollouts-exited").value
    for _, r in rollouts.iterrows():
        pos = None if r["exit position"] is None or r["exit position"] != r["exit position"] else int(r["exit position"])
        assert r["trace"] == trace_link("lynx/good", str(int(r["rollout"])), "probe", token=pos)
    # each δ row's exit counts and links are those of LYNX's exits at that δ (the viewer's filter: test_trace_evidence)
    from app.traces import traces_link
    from thinklens.probes.lynx_traces import exits_where

    report = load_lynx_result(RunFolder(runs_root / "lynx" / "good")).report
    for _, r in per_delta.iterrows():
        exits = report.get("lynx", r["δ"]).exit_event
        n = int((exits >= 0).sum())
        assert r["early exits"] == n
        link = {k: v if isinstance(v, str) else None for k, v in r.items()}  # a cell without a link: None or NaN
        assert link["exits taken"] == (traces_link("lynx/good", exits_where(r["δ"])) if n else None)  # 0: not linked
        wrong = traces_link("lynx/good", exits_where(r["δ"], correct=False))
        assert link["exits answering wrong"] == (wrong if r["wrong exits"] else None)
    assert sweep.shape[0] == 3 and sweep["site"].tolist() == ["embed", "resid_post.0", "resid_post.1"]
    at.selectbox(key="lynx-delta").set_value(at.selectbox(key="lynx-delta").options[0]).run()
    assert not at.exception
    assert any("not a per-trajectory bound" in m.value for m in at.markdown)
    assert len(at.get("download_button")) >= 4 * 3 + 3  # PNG/HTML/JSON per figure, CSV per table


def test_skipped_deltas_are_explained_below_the_results(runs_root, tmp_path, monkeypatch):
    """A sweep whose smallest deltas need more calibration events: no warning on top, words below the table."""
    from thinklens.runs.jobs import run_job
    from thinklens.zoo.registry import zoo_path

    if zoo_path("tiny-think") is None:
        pytest.skip("the zoo is not trained")
    root = tmp_path / "runs"
    run_job("lynx", model="tiny-think", n_train=30, n_calibration=30, n_test=30, max_steps=2, hidden_layer_sizes=(16,),
            deltas=(0.01, 0.2, 0.3), skip_vacuous=True, runs=root, run_id="few", progress=False)
    at = _page(root, monkeypatch)
    assert not at.exception and not at.error and not at.warning
    (words,) = [m.value for m in at.markdown if m.value.startswith("**Not evaluated")]
    assert "δ 0.01 needs at least 99 events of each class" in words and "--n-calibration" in words
    order = [m.value for m in at.markdown]
    assert order.index(words) > next(i for i, m in enumerate(order) if "not a per-trajectory bound" in m)


def test_broken_runs_show_error_cards(runs_root, tmp_path, monkeypatch):
    root = tmp_path / "runs"
    import shutil

    shutil.copytree(runs_root, root)
    bad = RunFolder.create("lynx", {"x": 1}, root=root, run_id="truncated")
    (bad.path / "results").mkdir()
    (bad.path / "results" / "lynx.json").write_text('{"summary": ')  # a half-written file
    (bad.path / "results" / "per_delta.json").write_text("[]")
    bad.finish()
    unreadable = root / "lynx" / "unreadable"
    unreadable.mkdir()
    (unreadable / "config.json").write_text("{oops")
    probe_bad = RunFolder.create("probe", {"y": 2}, root=root, run_id="empty")
    probe_bad.finish()
    at = _page(root, monkeypatch)
    assert not at.exception
    assert any("unreadable" in e.value for e in at.error)  # the picker's card for a bad config.json
    assert any("sweep" in e.value for e in at.error)  # the newest probe run has no results
    options = at.selectbox(key="lynx-run").options
    at.selectbox(key="lynx-run").set_value(next(i for i, o in enumerate(options) if o.startswith("truncated"))).run()
    assert not at.exception
    assert any("LYNX run truncated cannot be shown" in e.value for e in at.error)
    options = at.selectbox(key="lynx-run").options
    at.selectbox(key="lynx-run").set_value(next(i for i, o in enumerate(options) if o.startswith("good"))).run()
    assert not at.exception and len(at.get("plotly_chart")) == 5  # 4 of the run + the comparison of the readable runs
    json.loads((root / "lynx" / "good" / "results" / "lynx.json").read_text())  # the copy is intact


def test_a_closed_exit_gate_is_stated_instead_of_exits(runs_root, tmp_path, monkeypatch):
    """A LYNX run whose discrimination gate is closed (the probe's calibration-cue AUROC interval does not clear
    chance): the page states the gate's line (AUROC, interval, n) above the per-δ table, which links no exits."""
    import shutil

    root = tmp_path / "runs"
    shutil.copytree(runs_root, root)
    path = root / "lynx" / "good" / "results" / "lynx.json"
    doc = json.loads(path.read_text())
    from thinklens.probes.exit_gate import ExitGate

    gate = ExitGate(0.6, (0.4, 0.8), 3, 25, 19)  # a closed gate: its interval reaches below 0.5
    assert not gate.open
    doc["summary"]["exit_gate"] = gate.to_dict()
    path.write_text(json.dumps(doc))
    at = _page(root, monkeypatch)
    assert not at.exception and not at.error
    (line,) = [w.value for w in at.warning if w.value.startswith("**Exit gate**")]
    assert gate.statement() in line and "AUROC 0.6, 95% interval [0.4, 0.8], n=28 events" in line
    per_delta = at.dataframe[0].value
    assert not {"early exits", "exits taken", "wrong exits", "exits answering wrong"} & set(per_delta.columns)
    open_at = _page(runs_root, monkeypatch)  # an open (or absent) gate: a caption, never a warning
    assert not [w for w in open_at.warning if w.value.startswith("**Exit gate**")]
