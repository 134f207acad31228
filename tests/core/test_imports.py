"""Imports at module top (docs/architecture.md, "Imports"): a function-local import says why it is local, and the CLI's
start-up imports no heavy library.

An import inside a function (at any depth) carries a trailing ``# lazy: <reason>`` on one of its lines, the reason
one of :data:`REASONS`; every other import sits at module top, where the dependency graph shows it. The files of
:data:`ALLOWLIST` are not converted yet: each still has an unmarked local import, and the test fails when one no
longer has any, so the list only shrinks. ``python tests/core/test_imports.py`` prints the counts and every unmarked
import with its file and line.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("thinklens", "probes", "steering", "latent", "analyses", "app")
CAPABILITY_LINKS = {"probes", "steering", "latent", "analyses"}
"""thinklens/probes etc. link to the top-level folders, which are walked themselves."""

REASONS = ("CLI start-up", "optional dependency", "import cost", "import cycle")
"""What a function-local import may buy: a heavy library kept out of a module the CLI imports when it starts or lists
jobs; a package that may be missing (an extra, a newer Python's module), its absence handled; a library that alone
takes seconds to import (sae_lens, transformer_lens), kept off a module imported for its other functions; a circle that
the layer order cannot break (none today: tests/core/test_layers.py)."""
MARKER = re.compile(r"#\s*lazy: (?:" + "|".join(re.escape(r) for r in REASONS) + r")\b")

ALLOWLIST = {
    # app/ is converted separately
    "app/common.py", "app/compare.py", "app/exports.py", "app/feature_views.py", "app/features.py",
    "app/pages/3_Probes_and_LYNX.py", "app/pages/6_Latent_reasoning.py", "app/pages/8_Validation.py",
    "app/pages/9_Explore.py", "app/run_diff.py", "app/trace_display.py", "app/trace_lens.py", "app/trace_records.py",
    "app/validation_table.py",
}
"""Files that still hold unmarked function-local imports."""

HEAVY = ("torch", "transformers", "sklearn", "scipy", "nnsight", "transformer_lens", "sae_lens", "peft", "safetensors",
         "accelerate", "datasets", "tokenizers", "huggingface_hub", "plotly", "streamlit", "matplotlib", "pandas",
         "vaderSentiment", "math_verify", "sympy", "gguf", "tqdm")
STARTUP_THIRD_PARTY = {"numpy"}
"""The third-party packages the CLI imports at start-up today (the task's generator, through the latent trainers'
config): numpy alone. A new one here is a regression; one fewer, an improvement to record by shrinking the set."""


@dataclass(frozen=True)
class LocalImport:
    file: str
    line: int
    code: str
    marked: bool

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.code}"


def files() -> list[Path]:
    out = []
    for folder in FOLDERS:
        for f in sorted((ROOT / folder).rglob("*.py")):
            parts = f.relative_to(ROOT).parts
            if "__pycache__" in parts or (parts[0] == "thinklens" and parts[1] in CAPABILITY_LINKS):
                continue
            out.append(f)
    return out


def local_imports(path: Path) -> list[LocalImport]:
    """Every import statement inside a function (or lambda) of the file, marked or not.

    Example:
        >>> import tempfile
        >>> f = Path(tempfile.mkdtemp()) / "m.py"
        >>> _ = f.write_text("import os\\ndef f():\\n    import json\\n    import torch  # lazy: CLI start-up (torch)\\n")
        >>> [(i.line, i.marked) for i in local_imports(f)]
        [(3, False), (4, True)]
    """
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    found: list[LocalImport] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                if in_function:
                    span = lines[child.lineno - 1: child.end_lineno]
                    found.append(LocalImport(rel, child.lineno, ast.unparse(child),
                                             any(MARKER.search(s) for s in span)))
                continue
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(text, filename=str(path)), False)
    return found


def all_local_imports() -> list[LocalImport]:
    return [i for f in files() for i in local_imports(f)]


def test_every_function_local_import_says_why():
    unmarked = [i for i in all_local_imports() if not i.marked and i.file not in ALLOWLIST]
    assert not unmarked, (
        f"{len(unmarked)} function-local imports without `# lazy: <reason>` (reasons: {', '.join(REASONS)}); move them to "
        "the module's top, or mark them (docs/architecture.md, Imports):\n" + "\n".join(map(str, unmarked)))


def test_the_allowlist_is_exact():
    """Each allowlisted file exists and still has an unmarked local import (else it leaves the list)."""
    unmarked = {i.file for i in all_local_imports() if not i.marked}
    done = sorted(ALLOWLIST - unmarked)
    assert not done, f"no unmarked local imports left in {done}: remove them from ALLOWLIST"


def _startup_modules() -> dict[str, list[str]]:
    """Modules imported by ``thinklens --help`` and by loading every job's config (``thinklens run <job> --help``),
    each in a fresh interpreter."""
    code = """
import contextlib, io, json, sys
from thinklens.cli import build_parser, main
which = sys.argv[1]
with contextlib.redirect_stdout(io.StringIO()):
    if which == "help":
        try:
            main(["--help"])
        except SystemExit:
            pass
    else:
        build_parser(None)  # every job's parser: every job module and its config
print(json.dumps(sorted(sys.modules)))
"""
    out = {}
    for which in ("help", "jobs"):
        proc = subprocess.run([sys.executable, "-c", code, which], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert proc.returncode == 0, proc.stderr
        out[which] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_cli_start_up_imports_no_heavy_library():
    for which, mods in _startup_modules().items():
        tops = {m.split(".")[0] for m in mods}
        heavy = sorted(tops & set(HEAVY))
        assert not heavy, f"{which}: the CLI's start-up imported {heavy}: mark the import that brings it `# lazy: CLI start-up`"
        third = {t for t in tops if t not in sys.stdlib_module_names and not t.startswith("_")
                 and t not in ("thinklens", "sitecustomize", "usercustomize")}
        assert third <= STARTUP_THIRD_PARTY, f"{which}: the CLI's start-up imported {sorted(third - STARTUP_THIRD_PARTY)}"


if __name__ == "__main__":
    imports = all_local_imports()
    marked = [i for i in imports if i.marked]
    print(f"function-local imports: {len(imports)}, marked: {len(marked)}, unmarked: {len(imports) - len(marked)}")
    for i in imports:
        if not i.marked:
            print(f"  {i}{'  (allowlisted)' if i.file in ALLOWLIST else ''}")
