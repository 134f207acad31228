"""Which committed validate records describe code that has changed since they were recorded.

A validate record (``results/records/<name>/``, its ``meta.json`` job ``validate``) is **stale** when

- it was made from a dirty tree (``code.git_dirty``): the code that made it is not known; or
- its commit (``code.git_commit``) is not in this clone's history (a shallow clone): it cannot be compared, and says
  so; or
- one of its **method's code files** differs between its commit and ``HEAD``.

A record's method's code files are computed at ``HEAD`` (:func:`method_files`):

1. the roots: for each registered setting the record has a row of (``method/setting``, mapped to its
   :class:`~thinklens.calibration.controls.Setting` by the registry), the module that holds its ``SETTINGS`` (the
   ``module:SETTINGS`` a job or entry point names) and the module of its ``run`` function (a ``functools.partial``
   unwrapped); and the module of every job a root runs by name (``ctx.run_job("lynx", ...)``: a string literal);
2. the import closure of each root, read by AST from the files at ``HEAD`` (every ``import`` and ``from ... import``
   in the file, function-level ones included; relative imports resolved; ``from thinklens.probes import X`` follows
   the package's lazy-export table to the module that defines ``X``; a package's ``__init__`` counts only when a name
   is taken from it directly), followed and kept only inside the root's **scope**: its capability folder
   (``analyses/``, ``probes/``, ``steering/``, ``latent/``) plus ``thinklens/calibration/`` (the statistics, intervals
   and equivalence tests every verdict is judged by); a root in ``thinklens/calibration/`` itself (the findings'
   settings) has that folder as its scope. A job that lives in the shared core is not a root.

Left out, by this rule: the shared core (``thinklens/engine``, ``generation``, ``data``, ``tasks``, ``runs``,
``zoo``), whose behaviour is held by oracle and parity tests in the default tier rather than by re-running every
record (``tests/core/test_capture.py`` against HF's own hidden states, ``tests/test_decode_oracles.py``,
``tests/core/test_interventions.py``), and which every record depends on alike; the validate job's harness
(``thinklens/calibration/validate.py``: it runs settings and copies their checks, and the docs' table re-judges every
row by today's expectation); committed weights and data files (they carry their own hashes).

A file **differs** when its program differs: both versions are parsed and compared as ASTs with every docstring and
bare string statement removed (comments and formatting never reach the AST), so a reworded docstring or comment does
not make a record stale; a file that is new since the commit, or that does not parse, differs when its text does.

``python -m tools.stale_records`` lists every stale validate record with why, exit 1 when any is (the strict check);
``--write`` writes the docs' marks: ``results/stale_records.json`` (read by the validation table's collector,
``results/validation_collectors.py``) and its template ``results/readme/stale_records.md`` (the block of
docs/validation.md), then run ``python results/collect.py validation`` and ``python -m tools.readme_results --write``.
``tests/core/test_stale_records.py`` fails while a stale record is not marked so.

Example:
    >>> code_differs('def f(x):\\n    "Old words."\\n    return x + 1  # why\\n', 'def f(x):\\n    "New."\\n    return x + 1\\n')
    False
    >>> code_differs("def f(x):\\n    return x + 1\\n", "def f(x):\\n    return x + 2\\n")
    True
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import datetime
import functools
import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, cast

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "results" / "records"
#: The docs' marks: which records are stale and why (written by ``--write``; the validation collector reads them).
MARKS = ROOT / "results" / "stale_records.json"
TEMPLATE = ROOT / "results" / "readme" / "stale_records.md"
#: The capability folders (``thinklens.lazy.CAPABILITIES``), each a scope of its own.
CAPABILITIES = ("probes", "steering", "latent", "analyses")
#: In every root's scope: what judges every setting's verdict.
CALIBRATION = "thinklens/calibration/"
COMMAND = "python -m tools.stale_records --write"
SHORT = 7


# ---------------------------------------------------------------------------------------------- git


class Git:
    """Reads of one repository's history: a revision's file list and a file's text at a revision (cached; the texts
    through one ``git cat-file --batch``)."""

    def __init__(self, root: Path = ROOT) -> None:
        self.root = root
        self._trees: dict[str, frozenset[str]] = {}
        self._texts: dict[tuple[str, str], str | None] = {}
        self._batch: subprocess.Popen | None = None

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=self.root, capture_output=True, text=True, check=check)

    def resolve(self, rev: str) -> str | None:
        """The full sha of ``rev``, or None when this clone does not hold it."""
        out = self._run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        return out.stdout.strip() if out.returncode == 0 else None

    def files(self, rev: str) -> frozenset[str]:
        """Every file path of ``rev``'s tree."""
        if rev not in self._trees:
            self._trees[rev] = frozenset(self._run("ls-tree", "-r", "--name-only", "-z", rev).stdout.split("\0")) - {""}
        return self._trees[rev]

    def text(self, rev: str, path: str) -> str | None:
        """The file at ``rev``, or None when ``rev`` has no such file."""
        if (rev, path) not in self._texts:
            self._texts[rev, path] = self._cat(f"{rev}:{path}") if path in self.files(rev) else None
        return self._texts[rev, path]

    def _cat(self, name: str) -> str:
        if self._batch is None:
            self._batch = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self.root, stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE)
        stdin, stdout = cast("IO[bytes]", self._batch.stdin), cast("IO[bytes]", self._batch.stdout)  # both piped
        stdin.write(name.encode() + b"\n")
        stdin.flush()
        header = stdout.readline().split()
        if len(header) != 3:  # "<name> missing"
            raise FileNotFoundError(f"git cat-file: {name}: {b' '.join(header).decode()}")
        data = stdout.read(int(header[2]) + 1)[:-1]  # the object, then a newline
        return data.decode("utf-8", errors="replace")

    def close(self) -> None:
        if self._batch is not None:
            self._batch.communicate()
            self._batch = None


# ---------------------------------------------------------------------------------------------- the rule


def module_path(module: str, files: frozenset[str]) -> str | None:
    """The file of a thinklens module in a tree (``thinklens.probes.lynx`` -> ``probes/lynx.py``), None outside
    thinklens or when the tree has no such module.

    Example:
        >>> module_path("thinklens.analyses.mi", frozenset({"analyses/mi/__init__.py"})), module_path("torch", frozenset())
        ('analyses/mi/__init__.py', None)
    """
    parts = module.split(".")
    if parts[0] != "thinklens":
        return None
    base = "/".join(parts[1:] if len(parts) > 1 and parts[1] in CAPABILITIES else parts)
    for path in (f"{base}.py", f"{base}/__init__.py"):
        if path in files:
            return path
    return None


def path_module(path: str) -> str:
    """The module a file of the tree is (``probes/lynx.py`` -> ``thinklens.probes.lynx``)."""
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts if parts[0] == "thinklens" else ["thinklens", *parts])


def scope(path: str) -> tuple[str, ...] | None:
    """The folders a root's closure is followed in: its capability folder and ``thinklens/calibration/``; None for a
    file of the shared core (not a root).

    Example:
        >>> scope("analyses/mi/validation.py"), scope("thinklens/calibration/settings.py"), scope("thinklens/engine/model.py")
        (('analyses/', 'thinklens/calibration/'), ('thinklens/calibration/',), None)
    """
    top = path.split("/")[0]
    if top in CAPABILITIES:
        return (f"{top}/", CALIBRATION)
    return (CALIBRATION,) if path.startswith(CALIBRATION) else None


def _lazy_target(init_text: str, name: str) -> str | None:
    """The module a package's lazy-export table sends ``name`` to (``"LinearProbe": "thinklens.probes.estimators"``)."""
    for node in ast.walk(ast.parse(init_text)):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if (isinstance(k, ast.Constant) and k.value == name and isinstance(v, ast.Constant)
                        and isinstance(v.value, str) and v.value.startswith("thinklens.")):
                    return v.value
    return None


def imported_paths(path: str, text: str, files: frozenset[str], read: Any) -> set[str]:
    """The files of the tree that ``path`` imports (anywhere in it, function-level imports included).

    ``read(path)`` gives another file's text (a package ``__init__`` whose lazy-export table names a module)."""
    module = path_module(path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out |= {p for a in node.names if (p := module_path(a.name, files))}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            base_path = module_path(base, files)
            for a in node.names:
                sub = module_path(f"{base}.{a.name}", files)
                if sub:  # a submodule
                    out.add(sub)
                    continue
                target = _lazy_target(read(base_path), a.name) if base_path and base_path.endswith("__init__.py") else None
                if target and (p := module_path(target, files)):
                    out.add(p)  # a lazy export: the module that defines the name, not the package's table
                elif base_path:
                    out.add(base_path)
    return out


def run_job_names(text: str) -> set[str]:
    """Jobs a module runs by name: the string literal first argument of every ``run_job(...)`` call.

    Example:
        >>> sorted(run_job_names("def f(ctx):\\n    ctx.run_job('lynx', 'sub')\\n    run_job(name, 'x')\\n"))
        ['lynx']
    """
    out = set()
    for node in ast.walk(ast.parse(text)):
        if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and (getattr(node.func, "attr", None) == "run_job" or getattr(node.func, "id", None) == "run_job")):
            out.add(node.args[0].value)
    return out


def closure(roots: Iterable[str], files: frozenset[str], read: Any, job_files: dict[str, str],
            edges: dict[str, tuple[set[str], set[str]]] | None = None) -> set[str]:
    """Every file the roots import, transitively, each followed inside its root's :func:`scope`; jobs run by name
    (``job_files``: job name -> its module's file) are roots of their own. ``edges`` caches each file's (imports, jobs
    run by name) across calls on one tree."""
    edges = {} if edges is None else edges
    seen: set[tuple[str, tuple[str, ...]]] = set()
    todo = [(r, scope(r)) for r in roots]
    while todo:
        path, within = todo.pop()
        if within is None or (path, within) in seen or not path.startswith(within):
            continue
        seen.add((path, within))
        if path not in edges:
            text = read(path)
            edges[path] = (imported_paths(path, text, files, read), run_job_names(text))
        imports, jobs = edges[path]
        todo += [(p, within) for p in imports]
        todo += [(job_files[j], scope(job_files[j])) for j in jobs if j in job_files]
    return {path for path, _ in seen}


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """The tree without its docstrings and bare string statements (attribute docstrings included)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            node.body = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                                  and isinstance(s.value.value, str))] or [ast.Pass()]
    return tree


def code_differs(old: str | None, new: str | None) -> bool:
    """Whether two versions of a file differ as programs (their ASTs without docstrings); a missing version, or one
    that does not parse, differs when the texts do."""
    if old is None or new is None or old == new:
        return old != new
    a, b = _program(old), _program(new)
    return old != new if a is None or b is None else a != b


@functools.lru_cache(maxsize=1024)
def _program(text: str) -> str | None:
    """A file's AST without docstrings, as text (None when it does not parse); cached, since HEAD's files are compared
    with every record's commit."""
    try:
        return ast.dump(_strip_docstrings(ast.parse(text)))
    except SyntaxError:
        return None


def setting_roots() -> dict[str, tuple[str, ...]]:
    """Registered setting (``method/setting``) -> its root modules: the one holding its ``SETTINGS`` and its ``run``'s."""
    from thinklens.calibration.controls import setting_sources

    out: dict[str, tuple[str, ...]] = {}
    for ep, _jobs in setting_sources().values():
        for s in ep.load():
            run = s.run
            while isinstance(run, functools.partial):
                run = run.func
            out[s.key] = tuple(dict.fromkeys((ep.module, getattr(run, "__module__", ep.module))))
    return out


def job_files(files: frozenset[str]) -> dict[str, str]:
    """Job name -> the file of the module that registers it (the job registry's job modules; a module holding a list of
    jobs, ``JOBS``, is loaded to name them; the core's own entry points by the module of their ``run``)."""
    from thinklens.runs.job_registry import get_job, job_modules, job_names

    out: dict[str, str] = {}
    for ep in job_modules():
        if (p := module_path(ep.module, files)) is None:
            continue
        names = [j.name for j in ep.load()] if ep.attr.endswith("JOBS") else [ep.name]
        out |= {n: p for n in names if n not in out}
    for name in job_names():
        if name not in out:
            run = get_job(name).run
            while isinstance(run, functools.partial):
                run = run.func
            if p := module_path(getattr(run, "__module__", ""), files):
                out[name] = p
    return out


def method_files(settings: Iterable[str], *, rev: str = "HEAD", git: Git | None = None,
                 roots: dict[str, tuple[str, ...]] | None = None, jobs: dict[str, str] | None = None,
                 edges: dict[str, tuple[set[str], set[str]]] | None = None) -> tuple[str, ...]:
    """The method's code files of ``settings`` (``method/setting`` keys) at ``rev``: the rule of this module's
    docstring. Unregistered settings are skipped (:func:`record_state` names them)."""
    git = git or Git()
    files = git.files(rev)
    roots = setting_roots() if roots is None else roots
    jobs = job_files(files) if jobs is None else jobs
    starts = {p for key in settings for m in roots.get(key, ()) if (p := module_path(m, files))}
    return tuple(sorted(closure(starts, files, lambda p: git.text(rev, p) or "", jobs, edges)))


# ---------------------------------------------------------------------------------------------- records


@dataclasses.dataclass(frozen=True)
class RecordState:
    """Whether one committed validate record still describes the code at ``HEAD``, and why not."""

    record: str
    """The record's folder name under results/records."""
    commit: str
    """``code.git_commit`` of its meta.json (``unknown`` outside a git checkout)."""
    dirty: bool
    """``code.git_dirty``: made from a tree with uncommitted changes (its code is not known)."""
    known: bool
    """Whether this clone holds the commit (False in a shallow clone that lacks it)."""
    settings: tuple[str, ...]
    """Its rows' registered settings (``method/setting``)."""
    unregistered: tuple[str, ...]
    """Its rows' settings that are no longer registered (retired or renamed: not judged)."""
    files: tuple[str, ...]
    """The method's code files of its settings at HEAD (:func:`method_files`)."""
    changed: tuple[str, ...]
    """Of them, those whose code differs between its commit and HEAD (empty when the commit is not known)."""

    @property
    def stale(self) -> bool:
        return self.dirty or not self.known or bool(self.changed)

    @property
    def since(self) -> str:
        return self.commit[:SHORT]

    @property
    def why(self) -> str:
        """``stale since <commit>: <files>`` (with what else is wrong), or ``fresh since <commit>``."""
        if not self.known:
            return (f"stale: its commit {self.since} is not in this clone's history (a shallow clone? `git fetch "
                    "--unshallow`), so its code cannot be compared")
        dirty = " (recorded from a dirty tree: its code is not known)" if self.dirty else ""
        if not self.stale:
            return f"fresh since {self.since}"
        changed = ", ".join(self.changed) if self.changed else "no method file changed since the commit"
        return f"stale since {self.since}{dirty}: {changed}"


def validate_records(records: Path = RECORDS) -> list[str]:
    """Every committed record of a ``validate`` run, by name."""
    out = []
    for meta in sorted(records.glob("*/meta.json")):
        if json.loads(meta.read_text()).get("job") == "validate":
            out.append(meta.parent.name)
    return out


def record_state(name: str, *, rev: str = "HEAD", records: Path = RECORDS, git: Git | None = None,
                 roots: dict[str, tuple[str, ...]] | None = None, jobs: dict[str, str] | None = None,
                 edges: dict[str, tuple[set[str], set[str]]] | None = None) -> RecordState:
    """The :class:`RecordState` of record ``name`` against ``rev`` (``git``, ``roots``, ``jobs`` and ``edges``: what
    several records share, computed once by :func:`record_states`)."""
    git = git or Git()
    roots = setting_roots() if roots is None else roots
    meta = json.loads((records / name / "meta.json").read_text())
    rows = json.loads((records / name / "results" / "validate.json").read_text())["rows"]
    code = meta.get("code") or {}
    commit, dirty = str(code.get("git_commit", "unknown")), code.get("git_dirty") is not False
    keys = list(dict.fromkeys(f"{r['method']}/{r['setting']}" for r in rows))
    settings, unregistered = tuple(k for k in keys if k in roots), tuple(k for k in keys if k not in roots)
    files = method_files(settings, rev=rev, git=git, roots=roots, jobs=jobs, edges=edges)
    known = git.resolve(commit) is not None if commit != "unknown" else False
    changed = tuple(f for f in files if code_differs(git.text(commit, f), git.text(rev, f))) if known else ()
    return RecordState(name, commit, bool(dirty), known, settings, unregistered, files, changed)


def record_states(*, rev: str = "HEAD", records: Path = RECORDS, git: Git | None = None) -> list[RecordState]:
    """Every committed validate record's :class:`RecordState`, by name."""
    git = git or Git()
    roots, jobs, edges = setting_roots(), job_files(git.files(rev)), {}
    try:
        return [record_state(n, rev=rev, records=records, git=git, roots=roots, jobs=jobs, edges=edges)
                for n in validate_records(records)]
    finally:
        git.close()


# ---------------------------------------------------------------------------------------------- the docs' marks


def marks(states: list[RecordState]) -> dict[str, Any]:
    """The summary the docs are rendered from: every stale record with its mark (``results/stale_records.json``)."""
    stale = [s for s in states if s.stale]
    return {"command": COMMAND, "date": datetime.date.today().isoformat(),
            "source": "git history of the method's code files (tools/stale_records.py), results/records/*/meta.json",
            "config": {"rule": "tools/stale_records.py", "against": "HEAD"},
            "values": {"records": [{"record": s.record, "since": s.since, "dirty": s.dirty, "changed": list(s.changed),
                                    "mark": s.why} for s in stale],
                       "n_stale": len(stale), "n_records": len(states),
                       "fresh": [s.record for s in states if not s.stale]}}


def template(values: dict[str, Any]) -> str:
    """docs/validation.md's block: one line per stale record, then the count and the fresh ones."""
    lines = [f"- `{{{{values.records[{i}].record}}}}`: {{{{values.records[{i}].mark}}}}" for i in range(len(values["records"]))]
    tail = ("`stale_records={{values.n_stale|.0f}}/{{values.n_records|.0f}}` validate records (`" + COMMAND + "`); "
            "fresh: {{values.fresh}}.")
    return ("\n".join(lines) + "\n\n" if lines else "") + tail + "\n"


def write(states: list[RecordState]) -> None:
    doc = marks(states)
    MARKS.write_text(json.dumps(doc, indent=1) + "\n")
    TEMPLATE.write_text(template(doc["values"]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.stale_records", description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true", help=f"write the docs' marks ({MARKS.relative_to(ROOT)} and its "
                                                        "template), then exit 0")
    p.add_argument("--all", action="store_true", help="also list the fresh records and each record's method files")
    args = p.parse_args(argv)
    states = record_states()
    for s in states:
        if s.stale or args.all:
            print(f"{s.record}: {s.why}" + (f" [unregistered, not judged: {', '.join(s.unregistered)}]" if s.unregistered else ""))
        if args.all:
            print(f"  method files: {', '.join(s.files)}")
    n = sum(s.stale for s in states)
    print(f"stale_records={n}/{len(states)}")
    if args.write:
        write(states)
        print(f"wrote {MARKS.relative_to(ROOT)} and {TEMPLATE.relative_to(ROOT)}: now `python results/collect.py "
              "validation` and `python -m tools.readme_results --write`")
        return 0
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
