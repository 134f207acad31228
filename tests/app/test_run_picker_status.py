"""A page's run picker over a runs folder where jobs failed or still run (issue 37 item 3, as `python -m
tools.real_jobs` leaves runs/real-jobs): the newest finished run is the default, failed and running runs are listed
after it with their status, and picking one says what it is (its one-line reason) instead of a raw file error."""

from __future__ import annotations

import pytest
from lab_runs import eval_run

from thinklens.runs.folders import RunFolder


def _picker_script() -> None:
    import streamlit as st

    from app.common import run_picker

    run = run_picker("eval")
    st.write(f"picked: {run.path.name if run is not None else None}")


@pytest.fixture
def runs(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    eval_run(root, "a-done", "tiny-think", [True, False, True])
    failed = RunFolder.create("eval", {"model": "smollm2-135m"}, root=root, run_id="b-failed")
    failed.write_meta(job="eval", status="failed", error="bad correctness labels: received '0 correct of 24 answers'")
    running = RunFolder.create("eval", {"model": "gemma-3-270m"}, root=root, run_id="c-running")
    running.write_meta(job="eval")
    monkeypatch.setenv("THINKLENS_RUNS", str(root))
    return root


def test_the_default_is_the_newest_finished_run_and_the_others_say_what_they_are(runs):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_picker_script, default_timeout=60).run()
    assert not at.exception
    assert [m.value for m in at.markdown if m.value.startswith("picked:")] == ["picked: a-done"]
    options = at.selectbox[0].options
    assert options[0].startswith("a-done (done)") and {o.split(" ")[0] for o in options[1:]} == {"b-failed", "c-running"}
    at.selectbox[0].select_index(options.index(next(o for o in options if o.startswith("b-failed")))).run()
    assert not at.exception
    assert any("failed" in e.value and "0 correct of 24 answers" in e.value for e in at.error), [e.value for e in at.error]
    assert [m.value for m in at.markdown if m.value.startswith("picked:")] == ["picked: None"]
    at.selectbox[0].select_index(options.index(next(o for o in options if o.startswith("c-running")))).run()
    assert any("has not finished yet" in i.value for i in at.info), [i.value for i in at.info]
