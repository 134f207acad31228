"""docs/architecture.md's worked examples run: every ``python`` block of the page is marked, and runs.

A block after ``<!-- example: NAME -->`` is executed, in a temporary folder (the working directory); one after
``<!-- example-file: PATH -->`` is saved there at PATH first. A PATH under ``thinklens/`` (the toy job and its
validation settings) is saved in a scratch ``thinklens`` folder that is added to the package's path for the test, so
the job registry lists the toy job's ``jobs`` folder as it lists every other one; the registry's cache, that path,
the imported toy modules and the adapter table are put back afterwards. Tracebacks name the page's own lines.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
_MARKED = re.compile(r"^<!-- (example|example-file): (\S+) -->\n```python\n(.*?)^```", re.M | re.S)


def examples(text: str) -> list[tuple[str, str, str, int]]:
    """(kind, name or path, code, line of the code's first line) of every marked block, in page order.

    Example:
        >>> examples("x\\n<!-- example: a -->\\n```python\\nprint(1)\\n```\\n")
        [('example', 'a', 'print(1)\\n', 4)]
    """
    return [(m.group(1), m.group(2), m.group(3), text.count("\n", 0, m.start(3)) + 1) for m in _MARKED.finditer(text)]


TEXT = PAGE.read_text(encoding="utf-8")
RUN = [(name, code, line) for kind, name, code, line in examples(TEXT) if kind == "example"]
FILES = [(path, code) for kind, path, code, _ in examples(TEXT) if kind == "example-file"]


def test_every_python_block_of_the_page_is_a_marked_example():
    """No unmarked (so unrun) ``python`` block; the four sections each have theirs."""
    assert len(_BLOCK.findall(TEXT)) == len(RUN) + len(FILES)
    assert [name for name, _, _ in RUN] == ["traced-generation", "run-the-job", "validate-the-method",
                                            "architecture-adapter"]
    assert sorted(path for path, _ in FILES) == ["thinklens/toy/jobs/initial_rate.py", "thinklens/toy/validation.py"]


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """The page's files saved under ``tmp_path`` (the working directory), its ``thinklens/`` folder on thinklens's
    package path; everything the examples register is undone afterwards."""
    import thinklens
    from thinklens.engine import adapters
    from thinklens.runs import job_registry

    for path, code in FILES:
        dest = tmp_path / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(code, encoding="utf-8")
        for folder in dest.relative_to(tmp_path).parents:  # thinklens/toy, thinklens/toy/jobs are packages
            if len(folder.parts) > 1:
                (tmp_path / folder / "__init__.py").touch()
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))  # `tools` from the repository, whatever the working directory
    extra = str(tmp_path / "thinklens")
    thinklens.__path__.append(extra)  # in place: the registry reads this list through the package's spec
    importlib.invalidate_caches()
    monkeypatch.setattr(job_registry, "_ENTRY", None)
    monkeypatch.setattr(job_registry, "_JOBS", {})
    tables = {name: dict(table) for name, table in (("ADAPTERS", adapters.ADAPTERS), ("MODEL_TYPES", adapters.MODEL_TYPES))}
    try:
        yield tmp_path
    finally:
        thinklens.__path__.remove(extra)
        for name in [m for m in sys.modules if m == "thinklens.toy" or m.startswith("thinklens.toy.")]:
            del sys.modules[name]
        for name, saved in tables.items():  # register_adapter writes into the tables themselves
            table = getattr(adapters, name)
            table.clear()
            table.update(saved)


@pytest.mark.parametrize(("name", "code", "line"), RUN, ids=[name for name, _, _ in RUN])
def test_the_example_runs(scratch, name, code, line):
    source = "\n" * (line - 1) + code  # a traceback's line numbers are the page's
    exec(compile(source, str(PAGE), "exec"), {"__name__": f"architecture_doc_{name.replace('-', '_')}"})


def test_the_toy_job_is_gone_after_its_test():
    """The fixture's undoing: the registry has no ``initial-rate`` and no scratch folder stays on the path."""
    import thinklens
    from thinklens.runs.jobs import job_names

    assert "initial-rate" not in job_names() and all(Path(p).is_relative_to(ROOT) for p in thinklens.__path__)
