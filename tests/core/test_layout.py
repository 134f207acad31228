"""The module layout a newcomer reads: one installed package, thinklens, its core grouped by layer, the
capability folders installed as its subpackages, repository tools outside it, and no two modules of one
name beyond the per-package conventions."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
CAPABILITIES = ("probes", "steering", "latent", "analyses")
LAYERS = {"engine", "generation", "data", "tasks", "runs", "calibration", "zoo"}
GENERIC = {*CAPABILITIES, "zoo"}
CONVENTIONS = {"__init__", "config", "validation", "figures"}
"""Module names every capability package may hold once: its job configs, its planted/null settings, its figures."""


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _source_dir(package: str) -> Path:
    """The folder of an installed package name, through pyproject's package-dir."""
    mapping = _setuptools()["package-dir"]
    for prefix in sorted(mapping, key=len, reverse=True):
        if package == prefix or package.startswith(prefix + "."):
            return ROOT / mapping[prefix] / package[len(prefix) + 1:].replace(".", "/")
    return ROOT / package.replace(".", "/")


def _installed_modules() -> dict[str, Path]:
    """Dotted name -> file of every module the wheel installs."""
    out = {}
    for package in _setuptools()["packages"]:
        for f in sorted(_source_dir(package).glob("*.py")):
            out[package if f.stem == "__init__" else f"{package}.{f.stem}"] = f
    return out


def test_one_installed_top_level_package_and_its_package_list_matches_the_folders():
    packages = _setuptools()["packages"]
    assert {p.split(".")[0] for p in packages} == {"thinklens"}
    found = {"thinklens." + ".".join(d.relative_to(ROOT / "thinklens").parts) if d != ROOT / "thinklens" else "thinklens"
             for d in (p.parent for p in (ROOT / "thinklens").rglob("__init__.py")) if "__pycache__" not in d.parts}
    for cap in CAPABILITIES:
        found |= {".".join(("thinklens", cap, *d.relative_to(ROOT / cap).parts))
                  for d in (p.parent for p in (ROOT / cap).rglob("__init__.py")) if "__pycache__" not in d.parts}
    assert sorted(packages) == sorted(found), "pyproject's [tool.setuptools] packages must list every package folder"
    assert _setuptools()["package-dir"] == {f"thinklens.{c}": c for c in CAPABILITIES}


def test_the_core_is_grouped_by_layer():
    flat = sorted(f.stem for f in (ROOT / "thinklens").glob("*.py"))
    assert flat == ["__init__", "__main__", "cli", "errors", "lazy"], flat
    subpackages = {d.name for d in (ROOT / "thinklens").iterdir() if (d / "__init__.py").is_file() and not d.is_symlink()}
    assert subpackages == LAYERS
    # the capabilities appear inside thinklens/ as links to their folders only, for editors (tests/core/test_checkout.py)
    links = {d.name: os.readlink(d) for d in (ROOT / "thinklens").iterdir() if d.is_symlink()}
    assert links == {c: f"../{c}" for c in CAPABILITIES}
    for layer in LAYERS:  # each layer says what it holds
        assert ast.get_docstring(ast.parse((ROOT / "thinklens" / layer / "__init__.py").read_text())), layer
    assert not (ROOT / "zoo").exists(), "the zoo is one package, thinklens/zoo"
    assert not any((ROOT / "thinklens" / name).exists() for name in ("demo.py", "readme_results.py", "testing.py"))
    assert {f.stem for f in (ROOT / "tools").glob("*.py")} >= {"demo", "readme_results", "testing"}


def test_no_two_installed_modules_share_a_name_beyond_the_conventions():
    by_name: dict[str, list[str]] = defaultdict(list)
    for dotted in _installed_modules():
        parts = dotted.split(".")
        if dotted in _setuptools()["packages"]:
            continue
        by_name[parts[-1]].append(dotted)
    clashes = {}
    for name, mods in by_name.items():
        if len(mods) < 2 or name in CONVENTIONS:
            continue
        # a job module beside the module it runs (probes/lynx.py and probes/jobs/lynx.py) is one name by design
        rest = [m for m in mods if not (m.split(".")[-2] == "jobs" and ".".join(m.split(".")[:-2] + [name]) in mods)]
        if len(rest) > 1:
            clashes[name] = mods
    assert not clashes, clashes


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_nothing_imports_the_capabilities_by_their_generic_names():
    """One name per module: thinklens.probes, never probes (a second name would load a second copy of it)."""
    files = [p for d in (*CAPABILITIES, "thinklens", "tools", "tests", "app", "bench", "results")
             for p in sorted((ROOT / d).rglob("*.py")) if "__pycache__" not in p.parts]
    bad = sorted(f"{p.relative_to(ROOT)}: {name}" for p in files for name in _imports(p) if name.split(".")[0] in GENERIC)
    assert not bad, bad
    for entry_group in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"].values():
        assert all(v.startswith("thinklens.") for v in entry_group.values()), entry_group


def test_a_source_checkout_maps_the_capabilities_without_an_install(tmp_path):
    """PYTHONPATH=<checkout>, as the GPU machine runs it: thinklens.probes is the checkout's probes/ folder."""
    code = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in getattr(f, '__module__', '')];"
            "import thinklens.probes.conformal as c, thinklens.analyses.mi as mi; print(c.__file__); print(mi.__file__)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    conformal, mi = out.stdout.split("\n")[:2]
    assert Path(conformal) == ROOT / "probes" / "conformal.py" and Path(mi) == ROOT / "analyses" / "mi" / "__init__.py"


def test_the_install_puts_no_generic_top_level_name_on_the_path(tmp_path):
    """Installed (editable here), outside the repository: thinklens.probes imports, probes does not exist."""
    code = ("import importlib.util, thinklens.probes as p; print(p.__file__); "
            "print([n for n in ('probes', 'steering', 'latent', 'analyses', 'zoo', 'tools') if importlib.util.find_spec(n)])")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    if "No module named 'thinklens'" in out.stderr:
        pytest.skip("thinklens is not installed (a checkout's tests run too: tests/core/test_checkout.py)")
    assert out.returncode == 0, out.stderr
    path, generic = out.stdout.split("\n")[:2]
    assert Path(path) == ROOT / "probes" / "__init__.py" and generic == "[]", out.stdout
