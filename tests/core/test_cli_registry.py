"""The registry behind `thinklens run`: a job module registers by its file alone (named after its job), an entry point
or a job module may hold a list of jobs (the latent trainers, one per row of the method table), and `thinklens runs`
lists every trainer's runs, in their own kinds and in the former shared one."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from thinklens.cli import main
from thinklens.runs import job_registry, jobs
from thinklens.runs.folders import RunFolder


@dataclass(frozen=True)
class _Config:
    model: str = ""
    """Unused."""
    seed: int = 0
    """Unused."""


def _job(name: str) -> jobs.Job:
    return jobs.Job(name, _Config, lambda config, ctx: {"job": name}, help=name, models=())


def test_an_entry_point_named_JOBS_registers_each_job_of_its_list(monkeypatch):
    listed = [_job("alpha-method"), _job("beta-method")]
    eps = [SimpleNamespace(name="one", attr="JOB", value="pkg.one:JOB", load=lambda: _job("one")),
           SimpleNamespace(name="methods", attr="JOBS", value="pkg.methods:JOBS", load=lambda: listed)]
    # the registry's one source of entry points (installed distributions', or a checkout's pyproject.toml)
    monkeypatch.setattr("thinklens.runs.entry_points.entry_points", lambda group: eps if group == jobs.ENTRY_POINT_GROUP else [])
    monkeypatch.setattr(job_registry, "job_modules", lambda: [])  # the entry points alone
    monkeypatch.setattr(job_registry, "_ENTRY", None)
    monkeypatch.setattr(job_registry, "_JOBS", {})
    assert jobs.job_names() == ["alpha-method", "beta-method", "one"]  # the list's jobs by name, not the entry point's
    assert jobs.get_job("beta-method") is listed[1] and jobs.get_job("one").name == "one"
    bad = SimpleNamespace(name="broken", attr="JOBS", value="pkg.broken:JOBS", load=lambda: ["not a job"])
    monkeypatch.setattr("thinklens.runs.entry_points.entry_points", lambda group: [bad])
    monkeypatch.setattr(job_registry, "_ENTRY", None)
    with pytest.raises(TypeError, match="pkg.broken:JOBS is not a list of Jobs"):
        jobs.job_names()


def test_a_job_module_registers_by_its_file_alone(tmp_path, monkeypatch):
    """A file in a jobs package is a job, named after the file, with no entry point and nothing reinstalled: the
    registry lists the folders (here a capability whose folder is a temporary one) without importing any module."""
    import importlib.util

    from thinklens import lazy

    cap = tmp_path / "toycap"
    (cap / "jobs").mkdir(parents=True)
    (cap / "__init__.py").write_text("")
    (cap / "jobs" / "__init__.py").write_text("")
    (cap / "jobs" / "count_up.py").write_text("raise SystemExit('listing a job must not import it')\nJOB = None\n")
    (cap / "jobs" / "methods.py").write_text("JOBS: list = []\n")
    (cap / "jobs" / "_helpers.py").write_text("")
    real = importlib.util.find_spec

    def find_spec(name, *args):
        if name == "thinklens.toycap":
            return importlib.util.spec_from_file_location(name, cap / "__init__.py", submodule_search_locations=[str(cap)])
        return real(name, *args)

    monkeypatch.setattr(lazy, "CAPABILITIES", (*lazy.CAPABILITIES, "toycap"))
    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    found = {ep.name: ep.value for ep in job_registry.job_modules()}
    assert found["count-up"] == "thinklens.toycap.jobs.count_up:JOB" and found["methods"] == "thinklens.toycap.jobs.methods:JOBS"
    assert "-helpers" not in found and "helpers" not in found
    assert found["sae-eval"] == "thinklens.steering.jobs.sae_eval:JOB"  # the package's own, found the same way


def test_a_job_module_holding_another_name_is_refused(monkeypatch):
    monkeypatch.setitem(job_registry._entry_points(), "wrong-name", SimpleNamespace(value="pkg.wrong_name:JOB",
                                                                                load=lambda: _job("right-name")))
    monkeypatch.setattr(job_registry, "_JOBS", {})
    with pytest.raises(TypeError, match=r"wrong_name.py holds Job\('wrong-name'"):
        jobs.get_job("wrong-name")


def test_the_latent_trainers_come_from_one_list_with_their_own_kinds():
    from thinklens.latent.methods import METHODS

    trainers = [jobs.get_job(name) for name in METHODS]
    assert [j.run_kind for j in trainers] == list(METHODS)  # runs/<job>/<id>, as every job
    assert all(j.former_kinds == ("latent-train",) and j.page == "pages/6_Latent_reasoning.py" for j in trainers)
    kinds = jobs.jobs_by_kind()
    assert kinds["latent-train"].name in METHODS and all(kinds[m].name == m for m in METHODS)


def test_runs_lists_every_latent_trainer_old_and_new(tmp_path, capsys):
    metrics = {"method": "codi", "steps": 10, "train_wall_s": 3.0, "eval": {"accuracy": 0.5}}
    new = RunFolder.create("codi", {"method": "codi"}, root=tmp_path, run_id="codi-new")
    new.write_result("metrics", metrics)
    new.finish(metrics)
    old = RunFolder.create("latent-train", {"method": "sft"}, root=tmp_path, run_id="sft-old")  # before runs/<job>/<id>
    old.write_result("metrics", {**metrics, "method": "sft", "steps": 20})
    old.finish({})
    assert main(["runs", "--runs", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {tuple(line.split()[:3]): line for line in lines[1:]}
    assert rows[("codi", "codi-new", "done")].endswith("codi: 10 steps in 3 s, held-out accuracy 50%")
    assert rows[("latent-train", "sft-old", "done")].endswith("sft: 20 steps in 3 s, held-out accuracy 50%")
    assert main(["runs", "show", "latent-train/sft-old", "--runs", str(tmp_path)]) == 0
    assert "headline: sft: 20 steps in 3 s" in capsys.readouterr().out
