"""The code version in every run's meta.json, and resume refused after a code change unless --allow-stale."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

import thinklens.runs.job_registry as job_registry
import thinklens.runs.jobs as jobs
from thinklens.cli import main
from thinklens.errors import ThinklensError
from thinklens.runs import provenance
from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import Job, run_job


@dataclass(frozen=True)
class CountConfig:
    """A job for these tests: records n items, one per line of progress."""

    model: str = ""
    """Unused."""
    seed: int = 7
    """Seed."""
    n: int = 3
    """How many items."""


CALLS: list[str] = []


def count_run(config: CountConfig, ctx):
    for item in ctx.run.pending([f"i{k}" for k in range(config.n)]):
        CALLS.append(item)
        ctx.run.mark_done(item)
    return {"done": len(ctx.run.finished())}


COUNT = Job("count", CountConfig, count_run, help="count items", models=())


@pytest.fixture
def registered(monkeypatch):
    """``thinklens run count`` on the CLI, without an entry point."""
    monkeypatch.setattr(job_registry, "_ENTRY", {**job_registry._entry_points(), "count": None})
    monkeypatch.setattr(job_registry, "_JOBS", {**(job_registry._JOBS or {}), "count": COUNT})
    CALLS.clear()


def edit_code(monkeypatch, package="thinklens.probes"):
    """Simulate an edit of one package's source: its hash (and so the source hash) changes."""
    real = provenance.package_hashes
    monkeypatch.setattr(provenance, "package_hashes", lambda packages=provenance.PACKAGES: {**real(packages), package: "edited"})


def test_meta_records_the_code_version_device_dtype_and_seed(tmp_path):
    run_job(COUNT, n=2, seed=11, runs=tmp_path, run_id="r", progress=False)
    meta = RunFolder.open(tmp_path / "count" / "r").meta()
    code = meta["code"]
    assert code["source_hash"] == provenance.source_hash() and len(code["source_hash"]) == 64
    assert set(code["package_hashes"]) == set(provenance.PACKAGES)
    assert code["source_files"] > 100  # every .py file of the six packages
    assert len(code["git_commit"]) == 40 or code["git_commit"] == "unknown"
    assert code["git_dirty"] in (True, False, "unknown")
    assert set(code["versions"]) == {"torch", "transformers", "sae-lens", "nnsight", "thinklens"}
    import torch

    assert code["versions"]["torch"] == torch.__version__
    assert (meta["device"], meta["dtype"], meta["seed"]) == ("cpu", "float32", 11)


def test_source_hash_tells_apart_any_edit_of_a_py_file(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "notes.txt").write_text("not code")
    h0, n0 = provenance._hash_tree(tmp_path / "pkg")
    (tmp_path / "pkg" / "notes.txt").write_text("changed, still not code")
    assert provenance._hash_tree(tmp_path / "pkg") == (h0, n0) == (h0, 1)
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")  # a dirty tree on the same commit
    assert provenance._hash_tree(tmp_path / "pkg")[0] != h0
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "b.py").write_text("")  # a new empty file counts too
    assert provenance._hash_tree(tmp_path / "pkg") != (h0, n0)


def test_outside_a_checkout_the_git_state_is_unknown_and_nothing_fails(tmp_path, monkeypatch):
    (tmp_path / "thinklens").mkdir()
    monkeypatch.setattr(provenance, "package_dir", lambda name: tmp_path / name if name == "thinklens" else None)
    assert provenance.git_state.__wrapped__() == {"git_commit": "unknown", "git_dirty": "unknown"}
    hashes = provenance._trees.__wrapped__(("thinklens", "nowhere"))
    assert hashes["nowhere"] == ("not installed", 0) and hashes["thinklens"][1] == 0


def test_resume_with_unchanged_code_skips_the_finished_items(tmp_path, registered, capsys):
    argv = ["run", "count", "--n", "3", "--runs", str(tmp_path), "--run-id", "r", "--no-progress"]
    assert main(argv) == 0 and CALLS == ["i0", "i1", "i2"]
    assert main([*argv[:2], "--n", "3", *argv[4:]]) == 0 and CALLS == ["i0", "i1", "i2"]  # nothing redone
    assert "stale_resumes" not in RunFolder.open(tmp_path / "count" / "r").meta()


def test_resume_after_a_code_change_exits_2_without_traceback_and_allow_stale_resumes(tmp_path, registered, monkeypatch, capsys):
    argv = ["run", "count", "--n", "3", "--runs", str(tmp_path), "--run-id", "r", "--no-progress"]
    assert main(argv) == 0
    run = RunFolder.open(tmp_path / "count" / "r")
    started_with = run.meta()["code"]["source_hash"]
    run.write_meta(status="running")  # as a killed run leaves it
    capsys.readouterr()
    edit_code(monkeypatch, "thinklens.probes")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "packages changed: thinklens.probes" in err and "--allow-stale" in err and "--run-id" in err
    assert run.meta()["status"] == "running" and CALLS == ["i0", "i1", "i2"]
    # --allow-stale resumes (the cached items are reused) and the run records that it did
    assert main([*argv, "--allow-stale"]) == 0 and CALLS == ["i0", "i1", "i2"]
    meta = run.meta()
    assert meta["status"] == "done" and meta["options"]["allow_stale"] is True
    assert meta["code"]["source_hash"] == started_with  # the code the cached work came from
    (stale,) = meta["stale_resumes"]
    assert stale["changed"] == ["thinklens.probes"] and stale["from_source_hash"] == started_with
    assert stale["to_source_hash"] == provenance.source_hash() != started_with


def test_python_api_refuses_a_stale_resume_and_takes_allow_stale(tmp_path, monkeypatch):
    run_job(COUNT, n=2, runs=tmp_path, run_id="r", progress=False)
    edit_code(monkeypatch, "thinklens.latent")
    with pytest.raises(ThinklensError, match="packages changed: thinklens.latent"):
        run_job(COUNT, n=2, runs=tmp_path, run_id="r", progress=False)
    assert run_job(COUNT, n=2, runs=tmp_path, run_id="r", progress=False, allow_stale=True) == {"done": 2}
    # a new run id starts over with the code running now
    run_job(COUNT, n=2, runs=tmp_path, run_id="r2", progress=False)
    assert RunFolder.open(tmp_path / "count" / "r2").meta()["code"]["source_hash"] == provenance.source_hash()


def test_a_run_from_before_code_records_still_resumes(tmp_path):
    run = RunFolder.create("job", {"n": 1}, root=tmp_path, run_id="r")
    meta = json.loads((run.path / "meta.json").read_text())
    del meta["code"]
    (run.path / "meta.json").write_text(json.dumps(meta))
    assert RunFolder.create("job", {"n": 1}, root=tmp_path, run_id="r").meta().get("stale_resumes") is None


def test_every_job_takes_allow_stale():
    from thinklens.cli import build_parser

    parser_jobs = build_parser()._subparsers._group_actions[0].choices["run"]._subparsers._group_actions[0].choices
    missing = [name for name in jobs.job_names() if "--allow-stale" not in parser_jobs[name].format_help()]
    assert not missing
