"""Run discovery: every run folder with its status, summary and config; broken folders flagged, never raised."""

import os
import time

from thinklens.runs.folders import RunFolder, discover_runs


def test_runs_by_kind_newest_first_with_meta_and_config(tmp_path):
    old = RunFolder.create("lynx", {"n": 1}, root=tmp_path, run_id="old")
    old.finish({"score": 0.5})
    time.sleep(0.01)
    new = RunFolder.create("lynx", {"n": 2}, root=tmp_path, run_id="new")
    os.utime(old.path, (time.time() - 60, time.time() - 60))
    RunFolder.create("probe", {"m": 3}, root=tmp_path, run_id="p")
    entries = discover_runs(tmp_path)
    assert [(e.kind, e.run_id) for e in entries] == [("lynx", "new"), ("lynx", "old"), ("probe", "p")]
    by_id = {e.run_id: e for e in entries}
    assert by_id["old"].status == "done" and by_id["old"].summary == {"score": 0.5} and by_id["old"].config == {"n": 1}
    assert by_id["new"].status == "running" and by_id["new"].path == new.path and by_id["new"].created
    assert all(e.error is None for e in entries)
    assert [e.run_id for e in discover_runs(tmp_path, kind="probe")] == ["p"]
    assert discover_runs(tmp_path, kind="steer") == [] and discover_runs(tmp_path / "none") == []


def test_broken_folders_come_back_with_an_error(tmp_path):
    RunFolder.create("lynx", {"n": 1}, root=tmp_path, run_id="good").finish()
    (tmp_path / "lynx" / "no-config").mkdir()
    (tmp_path / "lynx" / "bad-json").mkdir()
    (tmp_path / "lynx" / "bad-json" / "config.json").write_text("{oops")
    (tmp_path / "lynx" / "bad name").mkdir()
    (tmp_path / "lynx" / ".hidden").mkdir()  # temporary folders are skipped
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    RunFolder.create("x", {}, root=outside, run_id="r")
    os.symlink(outside / "x" / "r", tmp_path / "lynx" / "link")
    errors = {e.run_id: e.error for e in discover_runs(tmp_path)}
    assert errors["good"] is None
    assert "FileNotFoundError" in errors["no-config"] and "JSONDecodeError" in errors["bad-json"]
    assert "run id" in errors["bad name"] and "inside" in errors["link"] and ".hidden" not in errors


def test_a_runs_folder_inside_the_root_is_not_a_broken_run(tmp_path):
    """runs/real-jobs/<job>/<model> (tools/real_jobs.py) is a runs folder of its own: skipped from the outer root,
    read with its own; an empty folder without a config stays a broken run."""
    RunFolder.create("eval", {"n": 1}, root=tmp_path / "real-jobs", run_id="smollm2-135m").finish()
    (tmp_path / "eval" / "half").mkdir(parents=True)
    outer = {(e.kind, e.run_id): e.error for e in discover_runs(tmp_path)}
    assert ("real-jobs", "eval") not in outer and "FileNotFoundError" in outer[("eval", "half")]
    inner = discover_runs(tmp_path / "real-jobs")
    assert [(e.kind, e.run_id, e.status, e.error) for e in inner] == [("eval", "smollm2-135m", "done", None)]
