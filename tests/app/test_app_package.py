"""The app is a package: its modules import each other as ``app.<module>``, none edits ``sys.path`` or silences E402,
their import graph has no circle, and ``thinklens app`` starts Streamlit where ``app`` imports from any directory.

Streamlit puts the folder of the script it runs (``app/``) on ``sys.path`` too, so a bare ``import traces`` would still
work there and load a second copy of ``app.traces``: the test refuses it. The graph is the layer test's
(tests/core/test_layers.py: every import counts, function-local and ``TYPE_CHECKING`` ones too).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from tests.core.test_layers import Edge, circles, imports
from thinklens.cli import app_process

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
SYS_PATH_EDITS = {"app/validation_table.py": "it reads results/collect.py, a script whose sibling imports need results/ "
                                             "on the path, until that code moves into the jobs' views"}
"""Files of the app that still edit ``sys.path``, with the reason; the test fails when one no longer does."""


def app_files() -> list[Path]:
    return sorted(p for p in APP.rglob("*.py") if "__pycache__" not in p.parts)


def app_modules() -> dict[str, Path]:
    """``app.<stem>`` -> file of every importable module (the page scripts are not modules: no one imports them)."""
    return {("app" if p.stem == "__init__" else f"app.{p.stem}"): p for p in sorted(APP.glob("*.py"))}


def app_graph() -> tuple[dict[str, Path], list[Edge]]:
    """The app's modules and page scripts (by path) and the import edges among the modules."""
    mods = app_modules()
    nodes = {**mods, **{p.relative_to(ROOT).as_posix(): p for p in sorted((APP / "pages").glob("*.py"))}}
    edges = set()
    for name, path in nodes.items():
        for target, line in imports(name if name in mods else "app.pages._page", path, mods):
            if target in mods and target != name and target != "app":
                edges.add(Edge(name, target, line))
    return nodes, sorted(edges, key=lambda e: (e.source, e.line, e.target))


def test_the_app_modules_import_each_other_as_app_modules():
    siblings = {p.stem for p in APP.glob("*.py")} - {"__init__", "Home"}
    bare = []
    for path in app_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            bare += [f"{path.relative_to(ROOT)}:{node.lineno} imports {n}" for n in names if n.split(".")[0] in siblings]
    assert not bare, "import app modules as app.<module> (a bare name loads a second copy):\n" + "\n".join(bare)
    assert len(app_graph()[1]) > 20  # the pages and modules do import each other, and the graph sees it


def test_no_sys_path_edit_and_no_e402_in_the_app():
    edits = {p.relative_to(ROOT).as_posix() for p in app_files() if "sys.path" in p.read_text(encoding="utf-8")}
    assert edits == set(SYS_PATH_EDITS), f"sys.path edited in {sorted(edits - set(SYS_PATH_EDITS))}; the list names " \
                                         f"files that no longer do: {sorted(set(SYS_PATH_EDITS) - edits)}"
    noqa = [f"{p.relative_to(ROOT)}:{i}" for p in app_files()
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if "noqa: E402" in line]
    assert not noqa, noqa


def test_the_app_import_graph_has_no_circle():
    nodes, edges = app_graph()
    found = circles(list(nodes), edges)
    detail = [[f"{nodes[e.source].relative_to(ROOT)}:{e.line} imports {e.target}" for e in edges
               if e.source in c and e.target in c] for c in found]
    assert not found, "\n\n".join(f"circle of {len(c)} modules:\n  " + "\n  ".join(d) for c, d in zip(found, detail))


def test_the_cycle_finder_sees_a_circle_through_a_function_local_import(tmp_path):
    """A circle closed only by an import inside a function (the trace viewer's was) is still found."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from app.b import g\n")
    b.write_text("def g():\n    from app.a import f\n")
    mods = {"app.a": a, "app.b": b}
    edges = [Edge(n, t, line) for n, p in mods.items() for t, line in imports(n, p, mods) if t in mods]
    assert circles(list(mods), edges) == [["app.a", "app.b"]]


def test_the_launcher_puts_the_checkout_first_on_the_path(tmp_path):
    """``thinklens app``'s command and environment: Streamlit on app/Home.py, where ``app.*`` imports from any
    working directory (the runs folder made absolute)."""
    cmd, env = app_process("127.0.0.1", 8765, "runs")
    assert cmd[:4] == [sys.executable, "-m", "streamlit", "run"] and Path(cmd[4]) == APP / "Home.py"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)
    assert env["THINKLENS_RUNS"] == str(Path("runs").resolve())
    code = "import app, app.run_refs; print(app.__file__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == APP / "__init__.py"
