"""A checkout that imports: the repository works from a clone the way the README says, installed
or not. Plain ``pytest`` imports ``tools/`` (pyproject's pytest ``pythonpath``); ``python -m thinklens`` runs the CLI
and lists the jobs without the installed metadata (thinklens.runs.entry_points reads the checkout's pyproject.toml);
a capability folder imported by its folder's name is refused instead of loading a second copy of
``thinklens.probes.*`` (thinklens.lazy.refuse_generic_name). Done by hand as well, in a clone beside a virtual
environment without thinklens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from thinklens.runs import entry_points as ep_module

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# A fresh interpreter at the root as an uninstalled checkout sees it: the editable finder gone and thinklens's own
# metadata hidden (every other distribution's stays), then the given code.
UNINSTALLED = """
import importlib.metadata as m, sys
sys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in getattr(f, '__module__', '')]
_real = m.entry_points
m.entry_points = lambda **kw: [e for e in _real(**kw) if not (e.dist is not None and e.dist.name == 'thinklens')]
"""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _python(code: str, *, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300)


def test_plain_pytest_imports_tools():
    """The console script, not ``python -m pytest`` (which puts the working directory on sys.path by itself)."""
    assert "." in PYPROJECT["tool"]["pytest"]["ini_options"]["pythonpath"]
    pytest_script = Path(sys.executable).parent / "pytest"
    if not pytest_script.is_file():
        pytest.skip(f"no pytest console script beside {sys.executable}")
    out = subprocess.run([str(pytest_script), "--collect-only", "-q", "tests/core/test_bos_paths.py"], cwd=ROOT, env=_env(),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "No module named 'tools'" not in out.stdout + out.stderr, out.stdout[-2000:]


def test_the_jobs_come_from_the_checkouts_pyproject():
    own = PYPROJECT["project"]["entry-points"]["thinklens.jobs"]
    got = {ep.name: ep.value for ep in ep_module.entry_points("thinklens.jobs")}
    assert {k: got[k] for k in own} == own
    settings = PYPROJECT["project"]["entry-points"]["thinklens.validations"]
    assert {ep.name: ep.value for ep in ep_module.entry_points("thinklens.validations")} == settings


def test_without_the_installed_metadata_the_checkout_still_lists_every_job(monkeypatch):
    from importlib import metadata

    monkeypatch.setattr(metadata, "entry_points", lambda **kw: [])  # nothing installed
    names = {ep.name for ep in ep_module.entry_points("thinklens.jobs")}
    assert names == set(PYPROJECT["project"]["entry-points"]["thinklens.jobs"])
    monkeypatch.setattr(ep_module, "checkout_pyproject", lambda: None)  # an installed package: the metadata alone
    assert ep_module.entry_points("thinklens.jobs") == []


def test_python_m_thinklens_lists_the_jobs_uninstalled():
    code = UNINSTALLED + "import runpy; sys.argv = ['thinklens', 'run', 'lnyx']; runpy.run_module('thinklens', run_name='__main__')"
    out = _python(code)
    assert out.returncode == 2 and "choose from 'capture'" in out.stderr and "'lynx'" in out.stderr, out.stderr
    assert "'codi'" in out.stderr and "'validate'" in out.stderr  # a list entry point (latent-trainers) and the last


def test_python_m_thinklens_runs_the_cli():
    out = subprocess.run([sys.executable, "-m", "thinklens", "--help"], cwd=ROOT, env=_env(), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and "usage: thinklens" in out.stdout


@pytest.mark.parametrize("name", ["probes", "steering", "latent", "analyses"])
def test_a_capability_folder_by_its_own_name_is_refused_not_loaded_twice(name):
    """From the root, where the folder is on sys.path: ``import probes.conformal`` would have been a second module
    object beside thinklens.probes.conformal (its own classes: isinstance across the two fails)."""
    code = (f"import sys, thinklens.{name} as pkg\n"
            f"try:\n    import {name}\nexcept ImportError as e:\n    print(e)\n"
            f"print(sorted(k for k in sys.modules if k == {name!r} or k.startswith({name!r} + '.')))")
    out = _python(code)
    assert out.returncode == 0, out.stderr
    message, loaded = out.stdout.strip().split("\n")
    assert message == f"{name!r} is thinklens's folder of thinklens.{name}, not a package: import thinklens.{name}"
    assert loaded == "[]"


def test_import_probes_conformal_from_the_root_leaves_one_module_object():
    out = _python("import sys, thinklens.probes.conformal as c\n"
                  "try:\n    import probes.conformal\nexcept ImportError:\n    pass\n"
                  "import json; print(json.dumps([k for k, v in sys.modules.items() if getattr(v, '__file__', None) == c.__file__]))")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["thinklens.probes.conformal"]


def test_an_editor_resolves_thinklens_probes():
    """jedi (the completion engine of most Python editors) reads the file tree, not the import hooks: thinklens/probes
    etc. are links to the capability folders, so completion and go-to-definition reach them."""
    jedi = pytest.importorskip("jedi")
    for name in ("probes", "steering", "latent", "analyses"):
        link = ROOT / "thinklens" / name
        assert link.is_symlink() and link.resolve() == ROOT / name
    project = jedi.Project(str(ROOT))
    source = "from thinklens.probes.conformal import MondrianCalibrator\nMondrianCalibrator\n"
    found = jedi.Script(source, path=str(ROOT / "scratch.py"), project=project).goto(2, 3, follow_imports=True)
    assert [Path(d.module_path).resolve() for d in found] == [ROOT / "probes" / "conformal.py"]
    completions = jedi.Script("import thinklens.steering.fea", path=str(ROOT / "scratch.py"), project=project).complete()
    assert "features" in {c.name for c in completions}


def test_the_links_leave_one_module_per_file():
    """Imported through thinklens, a capability module comes from its own folder (not through the link), once."""
    out = _python("import thinklens.probes.conformal as c, thinklens.analyses.mi as mi; print(c.__file__); print(mi.__file__)")
    conformal, mi = out.stdout.split("\n")[:2]
    assert Path(conformal) == ROOT / "probes" / "conformal.py" and Path(mi) == ROOT / "analyses" / "mi" / "__init__.py"
