"""Run folders: atomic writes, config guard, and a killed job resumed to the same results."""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

from thinklens.errors import ThinklensError
from thinklens.runs.folders import RunFolder, atomic_write_json, list_runs, validate_id
from thinklens.runs.jobs import Job, run_job

JOB = """
import sys, time, json
from thinklens.runs.folders import RunFolder
run = RunFolder.create("job", {"n": 12}, root=sys.argv[1], run_id="r")
for item in run.pending([f"item{i}" for i in range(12)]):
    time.sleep(float(sys.argv[2]))
    run.mark_done(item, {"square": int(item[4:]) ** 2})
    print(item, flush=True)
done = run.finished()
run.write_result("squares", {k: v["square"] for k, v in sorted(done.items())})
run.finish({"items": len(done)})
"""


def test_resume_after_kill_matches_uninterrupted(tmp_path):
    ref_root, root = tmp_path / "ref", tmp_path / "killed"
    subprocess.run([sys.executable, "-c", JOB, str(ref_root), "0"], check=True, capture_output=True)
    proc = subprocess.Popen([sys.executable, "-c", JOB, str(root), "0.15"], stdout=subprocess.PIPE, text=True)
    seen = [proc.stdout.readline() for _ in range(4)]  # let it finish a few items
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert all(seen)
    run = RunFolder.open(root / "job" / "r")
    n_done = len(run.finished())
    assert 4 <= n_done < 12 and run.meta()["status"] == "running"
    out = subprocess.run([sys.executable, "-c", JOB, str(root), "0"], check=True, capture_output=True, text=True)
    assert len(out.stdout.split()) == 12 - n_done  # only the missing items ran
    assert run.read_result("squares") == RunFolder.open(ref_root / "job" / "r").read_result("squares")
    assert run.meta()["status"] == "done"


def test_torn_progress_line_ignored(tmp_path):
    run = RunFolder.create("job", {}, root=tmp_path, run_id="r")
    run.mark_done("a", 1)
    with open(run.path / "progress.jsonl", "a") as f:
        f.write('{"item": "b", "pay')  # a kill mid-append
    assert run.finished() == {"a": 1}


def test_config_mismatch_refused(tmp_path):
    RunFolder.create("job", {"n": 1}, root=tmp_path, run_id="r")
    assert RunFolder.create("job", {"n": 1}, root=tmp_path, run_id="r").config() == {"n": 1}
    with pytest.raises(ThinklensError, match="run id"):
        RunFolder.create("job", {"n": 2}, root=tmp_path, run_id="r")


def test_atomic_write_leaves_old_file_on_failure(tmp_path):
    p = tmp_path / "x.json"
    atomic_write_json(p, {"a": 1})
    with pytest.raises(TypeError):
        atomic_write_json(p, {"a": object()})  # not JSON-able: refused, old file intact
    assert json.loads(p.read_text()) == {"a": 1}
    assert [q.name for q in tmp_path.iterdir()] == ["x.json"]


def test_nan_and_infinities_are_written_as_null(tmp_path):
    import numpy as np
    import torch

    p = tmp_path / "x.json"
    atomic_write_json(p, {"a": float("nan"), "b": [1.0, float("-inf")], "c": np.float32("nan"), "d": torch.tensor([float("inf"), 2.0])})
    assert json.loads(p.read_text()) == {"a": None, "b": [1.0, None], "c": None, "d": [None, 2.0]}


def test_ids_validated_and_listing(tmp_path):
    for bad in ["../x", "a/b", "", ".hidden", "x" * 200]:
        with pytest.raises(ThinklensError):
            validate_id(bad)
    RunFolder.create("k", {}, root=tmp_path, run_id="one")
    time.sleep(0.01)
    RunFolder.create("k", {}, root=tmp_path, run_id="two")
    assert [p.name for p in list_runs(tmp_path)][0] == "two"


def test_default_ids_of_runs_started_in_the_same_second_differ(tmp_path, monkeypatch):
    import datetime as dt

    from thinklens.runs import folders as runs

    class Frozen(dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return dt.datetime(2026, 11, 30, 15, 28, 49)

    monkeypatch.setattr(runs._dt, "datetime", Frozen)
    a = runs.RunFolder.create("latent-train", {"method": "coconut"}, root=tmp_path)
    b = runs.RunFolder.create("latent-train", {"method": "latent-sft"}, root=tmp_path)
    c = runs.RunFolder.create("latent-train", {"method": "latent-sft"}, root=tmp_path)  # a default id never resumes
    assert [r.run_id for r in (a, b, c)] == ["20261130-152849", "20261130-152849-2", "20261130-152849-3"]
    assert b.config() == {"method": "latent-sft"} and a.config() == {"method": "coconut"}


# ---------------------------------------------------------------- a refused run, rerun with the fix under its id


@dataclass(frozen=True)
class _PickyConfig:
    model: str = ""
    seed: int = 0
    n: int = 1
    """Refused inside the job when above 3, after ``done`` items were recorded."""
    done: int = 0


def _picky(config, ctx):
    for k in range(config.done):
        ctx.run.mark_done(f"item.{k}")
    if config.n > 3:
        raise ThinklensError.of("n", config.n, "at most 3", "pass --n 3")
    return {"n": config.n}


PICKY = Job("picky", _PickyConfig, _picky, help="refuses n > 3", models=())


def test_a_refused_run_is_marked_failed_and_its_id_takes_the_fix(tmp_path):
    with pytest.raises(ThinklensError, match="at most 3"):
        run_job(PICKY, n=5, runs=tmp_path, run_id="r", progress=False)
    meta = json.loads((tmp_path / "picky" / "r" / "meta.json").read_text())
    assert meta["status"] == "failed" and "at most 3" in meta["error"]
    assert run_job(PICKY, n=2, runs=tmp_path, run_id="r", progress=False) == {"n": 2}  # the suggested fix, same id
    meta = json.loads((tmp_path / "picky" / "r" / "meta.json").read_text())
    assert meta["status"] == "done" and meta["restarted_from"]["n"] == 5
    assert json.loads((tmp_path / "picky" / "r" / "config.json").read_text())["n"] == 2
    # a run that recorded work before it was refused keeps its config: a changed one would mix with that work
    with pytest.raises(ThinklensError):
        run_job(PICKY, n=5, done=1, runs=tmp_path, run_id="s", progress=False)
    with pytest.raises(ThinklensError, match=r"differs in n \(5 -> 2\)"):
        run_job(PICKY, n=2, done=1, runs=tmp_path, run_id="s", progress=False)
