"""A job in one file, shown with the contrast-pair steering job, ``steer-vector``.

Every place that reads job kinds reads the job registry (:data:`PLACES`): the CLI, the demo plan, the README's
capability table, the findings test, the interrupt test, validate's settings, and the app's trace viewer, Compare page,
Steering comparison tab and Validation page. Registering the job is its module alone (``steering/jobs/steer_vector.py``,
found by the registry's listing of the jobs folders, with no entry point and no reinstall): taken out of that listing,
the job is in none of those places; put back, it is in all of them; and no other code file names it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from thinklens.runs import job_registry

ROOT = Path(__file__).resolve().parents[2]
JOB, MODULE = "steer-vector", "steering/jobs/steer_vector.py"
#: Code files that may name the job: its module, its own test, and this test.
OWN = {MODULE, "tests/steering/test_contrast.py", "tests/core/test_job_in_one_file.py"}
#: Code that still names jobs by hand, with the reason (none may be added: the test below lists every mention).
NOT_YET = {"tools/real_jobs.py": "the real-weights plan of issue 37 (per-job options for SmolLM2 and Gemma), kept by its "
                                 "own tool; a job does not declare its real-model options yet",
           "tools/demo_real.py": "the real-weight demo's plan (`make demo-real`), like tools/real_jobs.py's: a job does "
                                 "not declare its real-model demo run yet",
           "tests/core/test_preflight.py": "the table of input files each job reads (issue 41), kept by the preflight "
                                           "test; a job does not declare its bad-input cases yet",
           # the app's contrast-vector views and their tests name the job: they move into the job's view module when a
           # job is its compute plus its view
           "app/contrast_section.py": "view", "app/contrast_views.py": "view", "app/pages/4_Steering.py": "view",
           "tests/app/real_view_runs.py": "view test", "tests/app/test_browser_real_views.py": "view test",
           "tests/app/test_contrast_views.py": "view test"}


def _cli(root: Path) -> bool:
    from thinklens.cli import build_parser

    run = build_parser(jobs=[])._subparsers._group_actions[0].choices["run"]
    return JOB in run._subparsers._group_actions[0].choices  # `thinklens run <job>`'s choices


def _demo(root: Path) -> bool:
    from thinklens.runs.demo_plan import demo_steps

    return any(step.argv[1] == JOB for step in demo_steps())


def _readme(root: Path) -> bool:
    from tools.job_table import README, jobs_by_capability, render

    row = next(line for line in render(README.read_text(encoding="utf-8")).splitlines() if line.startswith("| Steering |"))
    return f"`{JOB}`" in row.split(" | ")[1] and JOB in jobs_by_capability()["Steering"]


def _findings(root: Path) -> bool:
    from thinklens.runs.jobs import all_jobs

    return any(job.name == JOB and job.declared("findings") is not None for job in all_jobs())


def _interrupts(root: Path) -> bool:
    from thinklens.runs.jobs import all_jobs

    return any(job.name == JOB and job.smallest for job in all_jobs())


def _validate(root: Path) -> bool:
    from thinklens.calibration.controls import all_settings

    return "actadd" in {s.method for s in all_settings()}


def _traces(root: Path) -> bool:
    from app import traces

    return JOB in traces.reader_kinds() and JOB in traces.trace_kinds(root)


def _compare(root: Path) -> bool:
    from app.compare import compared_kinds, comparison_of
    from thinklens.errors import ThinklensError

    try:
        comparison_of(JOB)
    except ThinklensError:
        return False
    return JOB in compared_kinds("Steering", root)


def _compare_page(root: Path) -> bool:
    from app.dashboard import jobs_of_kinds

    return JOB in jobs_of_kinds()


def _validation_page(root: Path) -> bool:
    from app.validation_table import display_rows

    rows = [{"method": "actadd", "setting": "planted", "kind": "planted", "ok": True}]
    return display_rows(rows, "record")[0]["job"] == JOB


PLACES = {"CLI (thinklens run)": _cli, "demo plan": _demo, "README capability table": _readme,
          "findings test": _findings, "interrupt test": _interrupts, "validate's settings": _validate,
          "app: trace viewer": _traces, "app: comparisons (Compare, Steering tab)": _compare,
          "app: Compare page's jobs": _compare_page, "app: Validation page's job column": _validation_page}


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """A finished steer-vector run whose results hold sample continuations (what the app's pages read)."""
    from thinklens.runs.folders import RunFolder

    run = RunFolder.create(JOB, {"model": "tiny-think", "prompts": ""}, root=tmp_path, run_id="a")
    row = {"arm": "contrast", "coeff": 1.0, "examples": ["so the answer is 4"], "compound": 0.1, "shift": 0.1}
    run.write_result("steer_vector", {"site": "resid_post.1", "vector": {"source": "' yes' - ' no'"}, "rows": [row]})
    run.finish({"vector_norm": 2.0, "n_prompts": 4, "findings": []})
    return tmp_path


def _registry_without(monkeypatch, module: str | None) -> None:
    """The registry as it is once ``module`` (a jobs folder's file) is gone: its listing skips the file."""
    listed = job_registry.job_modules
    if module is not None:
        monkeypatch.setattr(job_registry, "job_modules",
                            lambda: [ep for ep in listed() if ep.value.split(":")[0] != module])
    monkeypatch.setattr(job_registry, "_ENTRY", None)
    monkeypatch.setattr(job_registry, "_JOBS", {})


def test_the_job_is_in_every_place_that_reads_job_kinds(runs, monkeypatch):
    _registry_without(monkeypatch, None)
    assert {name: place(runs) for name, place in PLACES.items()} == dict.fromkeys(PLACES, True)
    from tools.job_table import README, render

    assert render(README.read_text(encoding="utf-8")) == README.read_text(encoding="utf-8")


def test_without_its_file_the_job_is_in_none_of_them(runs, monkeypatch):
    _registry_without(monkeypatch, "thinklens.steering.jobs.steer_vector")
    assert {name: place(runs) for name, place in PLACES.items()} == dict.fromkeys(PLACES, False)
    from tools.job_table import README, render

    text = README.read_text(encoding="utf-8")
    assert render(text) != text and f"`{JOB}`" not in render(text)  # the writer would drop it from the table
    monkeypatch.undo()  # the file back: everything back, with no other edit
    _registry_without(monkeypatch, None)
    assert all(place(runs) for place in PLACES.values())


def test_no_other_code_names_the_job():
    """Every code file (Python, TOML, notebooks, Makefile) but the job's own and its test reads the job from the
    registry: none names it (the README's table cell is written by tools/job_table.py; docs prose and committed
    records may name it)."""
    files = subprocess.run(["git", "ls-files", "*.py", "*.toml", "*.ipynb", "*.cfg", "Makefile"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    named = sorted(f for f in files if f not in OWN and (ROOT / f).is_file()
                   and any(n in (ROOT / f).read_text(encoding="utf-8", errors="replace") for n in (JOB, "steer_vector")))
    assert named == sorted(NOT_YET), f"files naming {JOB} by hand (read the job registry instead): {named}"


def test_listing_the_jobs_imports_no_job_module():
    """``thinklens --help`` stays fast: the registry lists the folders; no job module (nor torch) is imported."""
    code = ("import sys; from thinklens.runs.jobs import job_names; names = job_names(); "
            "bad = [m for m in sys.modules if '.jobs.' in m and not m.endswith('trainers') or m == 'torch']; "
            "print(len(names), bad)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split(" ", 1)[1].strip() == "[]", out.stdout + out.stderr
