"""Write the committed run summaries that README.md's results blocks quote: ``python results/collect.py NAME ...``.

Each entry of :data:`COLLECTORS` reads the run folder(s) behind one README results block and returns the summary
``{"command", "date", "source", "config", "values"}``; ``main`` writes it to ``results/NAME.json``. With no NAME,
every summary is rewritten. ``tests/core/test_readme_results.py`` checks that each number of a block is in the
summary it names (:mod:`tools.readme_results`).

Inputs: the committed run records ``results/records/`` (``--record RUN NAME``, ``--record-demo``), the zoo's training
records ``data/zoo/*/zoo.json`` and the committed SAE's metrics; run folders not kept as records are read from
``./runs`` (``$THINKLENS_RUNS``). ``python results/collect.py --check`` rebuilds every summary from a copy of the repository's
tracked files only and says, per file, whether it is byte-identical, differs, or has no committed record (with the
command that rebuilds it). To add a summary: write a function returning that dict in the module of its capability
(``results/*_collectors.py``; the registry and the shared readers are in ``collect_core.py``) and register it with
``@collector("NAME")``.
"""


from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

# results/ is on sys.path as a script; each module registers its summaries, in this order
import anchors_collectors  # noqa: F401
import bench_collectors  # noqa: F401
import latent_collectors  # noqa: F401
import lens_collectors  # noqa: F401
import mi_collectors  # noqa: F401
import organism_collectors  # noqa: F401
import probe_collectors  # noqa: F401
import steering_collectors  # noqa: F401
import validation_collectors  # noqa: F401
import zoo_collectors  # noqa: F401
from collect_core import COLLECTORS, DEMO_RECORD, MAX_BYTES, OUT, RECORDS, ROOT, RUNS, WEIGHTS_RECORD, show
from lynx_summary import DELTA_SETS, NEGATIVES, delta_sets, where_negatives_lie
from mi_collectors import TRAJECTORY_NORMS, mi_model_values, trajectory_norms
from validation_collectors import validation_rows

from thinklens.runs.folders import to_jsonable

__all__ = ["COLLECTORS", "TRAJECTORY_NORMS", "mi_model_values", "validation_rows"]

# ---------------------------------------------------------------------------------------------- records

#: What a committed run record keeps of a run folder: its config, meta and JSON results (no tensors, caches or figures).
RECORD_FILES = ("config.json", "meta.json", "results/*.json", "latent.json")


def sha256_of(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def keep_record(run: Path, name: str) -> Path:
    """Copy the pruned run folder ``run`` (and its sub-runs' pruned folders: a model folder keeps its latent.json and
    the SHA-256 of its weights, :data:`WEIGHTS_RECORD`) to ``results/records/NAME``: the record a summary is rebuilt
    from in a fresh clone. ``python results/collect.py --record RUN NAME``."""
    import shutil

    dest = RECORDS / name
    if dest.exists():
        shutil.rmtree(dest)
    for sub in [run, *sorted(p.parent for p in run.glob("**/config.json") if p.parent != run)]:
        for pattern in RECORD_FILES:
            for f in sub.glob(pattern):
                target = dest / f.relative_to(run)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, target)
        weights = sorted(sub.glob("*.safetensors"))
        if weights:  # a model folder: what its weights were, so a rebuilt model can be checked against it
            (dest / sub.relative_to(run)).mkdir(parents=True, exist_ok=True)
            (dest / sub.relative_to(run) / WEIGHTS_RECORD).write_text(json.dumps(
                {f.name: {"sha256": sha256_of(f), "bytes": f.stat().st_size} for f in weights}, indent=1) + "\n")
    if (run / "trajectories").is_dir():  # an mi-peaks run: its state norms, not the trajectories (MBs of tokens)
        (dest / TRAJECTORY_NORMS).write_text(json.dumps(trajectory_norms(run)) + "\n")
    if (run / "arrays" / "test_events.safetensors").is_file():  # a LYNX run: its prediction sets, not its arrays
        (dest / DELTA_SETS).write_text(json.dumps(delta_sets(run)) + "\n")
    for arrays in sorted(run.glob("**/arrays/test_events.safetensors")):  # each LYNX run's (a validate's settings too)
        (dest / arrays.parents[1].relative_to(run) / NEGATIVES).write_text(json.dumps(where_negatives_lie(arrays.parents[1])) + "\n")
    return dest


def keep_demo_record(runs: Path = RUNS) -> Path:
    """Copy what the demo summaries read of the last ``make demo`` (its log ``runs/demo.log``, and each step's run
    folder's config.json and meta.json, which holds its findings) to ``results/records/demo``."""
    import shutil

    from thinklens.runs.demo_plan import DEMO_STEPS

    if DEMO_RECORD.exists():
        shutil.rmtree(DEMO_RECORD)
    DEMO_RECORD.mkdir(parents=True)
    shutil.copyfile(runs / "demo.log", DEMO_RECORD / "demo.log")
    for step in DEMO_STEPS:
        if step.kind is None:
            continue
        for f in ("config.json", "meta.json"):
            src = runs / step.kind / step.run_id / f
            if src.is_file():
                (DEMO_RECORD / step.kind / step.run_id).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, DEMO_RECORD / step.kind / step.run_id / f)
    return DEMO_RECORD


# ---------------------------------------------------------------------------------------------- main


def summary_text(name: str) -> str:
    """Summary ``name`` as results/NAME.json holds it (refused when over MAX_BYTES)."""
    text = json.dumps(to_jsonable(COLLECTORS[name]()), indent=1, allow_nan=False) + "\n"
    if len(text.encode()) > MAX_BYTES:
        raise SystemExit(f"results/{name}.json would be {len(text.encode())} bytes (limit {MAX_BYTES}): prune it")
    return text


def write(name: str) -> Path:
    """Collect summary ``name`` and write it to results/NAME.json."""
    path = OUT / f"{name}.json"
    path.write_text(summary_text(name))
    return path


# ---------------------------------------------------------------------------------------------- --check

#: What ``--check`` copies of the tracked files: the folders a collector may read, and the kinds of file it reads.
CHECK_FOLDERS = ("results", "data")
CHECK_SUFFIXES = (".json", ".jsonl", ".md", ".log", ".txt", ".py")
#: Environment variables naming run folders outside the copy; ``--check`` runs without them.
RUN_ENV = ("THINKLENS_RUNS",)
#: Reads that are not inputs: code, the interpreter's own files, the kernel's.
_CODE_SUFFIXES = (".py", ".pyc", ".so", ".pth", ".pyi", ".typed", "pyproject.toml")


def tracked_copy(dest: Path) -> int:
    """Copy the repository's tracked inputs (``git ls-files`` under :data:`CHECK_FOLDERS`, no weights) to ``dest``, as a
    fresh clone has them; how many files."""
    import shutil
    import subprocess

    if (ROOT / ".git").exists():
        names = subprocess.run(["git", "ls-files", "-z", "--", *CHECK_FOLDERS], cwd=ROOT, check=True, capture_output=True,
                               text=True).stdout.split("\0")
    else:  # an unpacked archive: every file there is committed
        names = [str(f.relative_to(ROOT)) for folder in CHECK_FOLDERS for f in sorted((ROOT / folder).rglob("*"))]
    n = 0
    for name in names:
        if name.endswith(CHECK_SUFFIXES) and (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, dest / name)
            n += 1
    return n


def _watch_reads(root: Path) -> list[str]:
    """Record every file opened, and every folder listed, outside ``root`` that is not code or the interpreter's
    (an audit hook: this process only)."""
    outside: list[str] = []
    allowed = tuple({sys.prefix, sys.base_prefix, "/proc", "/sys", "/dev", "/usr", "/etc"})
    here = str(root)

    def hook(event: str, args: tuple) -> None:
        if event not in ("open", "os.scandir", "os.listdir") or not args or not isinstance(args[0], (str, os.PathLike)):
            return
        path = os.path.abspath(os.fspath(args[0]))
        if path.startswith(here) or path.startswith(allowed) or path.endswith(_CODE_SUFFIXES):
            return
        if event == "open" and (len(args) < 2 or not isinstance(args[1], str) or "r" not in args[1]):
            return  # a write (a cache), not an input
        if event != "open" and (os.path.isdir(os.path.join(path, "__pycache__"))
                                or os.path.isfile(os.path.join(path, "__init__.py"))):
            return  # a package folder listed by the import system (in a fresh clone, before its first __pycache__)
        outside.append(path)

    sys.addaudithook(hook)
    return outside


def check_here() -> tuple[list[str], bool, list[dict[str, str]]]:
    """Rebuild every summary from this tree and compare it with the file: one line per summary, whether none
    differs or read outside the tree, and each summary's status. A summary whose inputs are not here is reported as
    having no record, with the command that rebuilds it (from its committed ``command``)."""
    outside = _watch_reads(ROOT)
    lines, same, ok = [], 0, True
    for name in COLLECTORS:
        path = OUT / f"{name}.json"
        committed = path.read_text() if path.is_file() else None
        before = len(outside)
        try:
            text = summary_text(name)
        except FileNotFoundError as e:
            command = json.loads(committed)["command"] if committed else "?"
            lines.append(f"no record: results/{name}.json (rebuild: {command}; python results/collect.py {name}) "
                         f"[missing {show(Path(e.filename)) if e.filename else e}]")
            continue
        except Exception as e:  # noqa: BLE001 - one summary's failure is reported, the others still checked
            ok = False
            lines.append(f"failed: results/{name}.json ({type(e).__name__}: {e})")
            continue
        if len(outside) > before:
            ok = False
            lines.append(f"read outside the repository: results/{name}.json read {', '.join(sorted(set(outside[before:])))}")
        elif text == committed:
            same += 1
            lines.append(f"identical: results/{name}.json")
        else:
            ok = False
            old = (committed or "").splitlines()
            i = next((i for i, (a, b) in enumerate(zip(old, text.splitlines())) if a != b), min(len(old), len(text.splitlines())))
            lines.append(f"differs: results/{name}.json at line {i + 1} (write it with `python results/collect.py {name}`)")
    statuses = [{"summary": m.group(2), "status": m.group(1), "missing": m.group(3) or ""} for m in
                (re.match(r"([a-z ]+): (results/\w+\.json)(?:.*\[missing (.*)\])?", x) for x in lines) if m]
    lines.append(f"summaries_identical={same}/{len(COLLECTORS)}")
    return lines, ok, statuses


#: The README block listing which summaries rebuild from committed records (``--check --write``).
RECORDS_SUMMARY, RECORDS_TEMPLATE = OUT / "records.json", OUT / "readme" / "records.md"


def records_template(n: int) -> str:
    rows = "".join(f"| `{{{{values.summaries[{i}].summary}}}}` | {{{{values.summaries[{i}].status}}}} |\n" for i in range(n))
    return ("Which summaries a fresh clone rebuilds (`python results/collect.py --check`: every collector run on a copy "
            "of the\ntracked files alone, its output compared byte for byte; \"no record\": the run folders are not "
            "in the repository,\nthe summary's `command` rebuilds them):\n\n| summary | rebuilt from committed files "
            "|\n|---|---|\n" + rows + "\n`summaries_identical={{values.identical}}/{{values.total}}`\n")


def write_records_summary(statuses: list[dict[str, str]]) -> None:
    """results/records.json and its README template from a check's statuses."""
    import datetime

    identical = sum(s["status"] == "identical" for s in statuses)
    summary = {"command": "python results/collect.py --check --write", "date": datetime.date.today().isoformat(),
               "source": "results/collect.py --check (a copy of the tracked files under results/ and data/)",
               "config": {"folders": list(CHECK_FOLDERS), "suffixes": list(CHECK_SUFFIXES)},
               "values": {"summaries": statuses, "identical": identical, "total": len(statuses),
                          "no_record": [s["summary"] for s in statuses if s["status"] == "no record"]}}
    RECORDS_SUMMARY.write_text(json.dumps(summary, indent=1) + "\n")
    RECORDS_TEMPLATE.write_text(records_template(len(statuses)))


def check(write: bool = False) -> int:
    """``--check``: rebuild the summaries in a child process without ``$THINKLENS_RUNS``;
    in a git checkout, in a copy of the tracked inputs (so that untracked run folders cannot stand in for a missing
    record), elsewhere (an unpacked archive) here. ``write``: also write results/records.json (each summary's status)
    and its README template."""
    import subprocess
    import tempfile

    env = {k: v for k, v in os.environ.items() if k not in RUN_ENV}
    with tempfile.TemporaryDirectory(prefix="thinklens-check-") as tmp:
        tree = ROOT
        if (ROOT / ".git").exists():
            tree = Path(tmp) / "tree"
            n = tracked_copy(tree)
            print(f"copied {n} tracked files under {', '.join(CHECK_FOLDERS)}/ (no weights)", flush=True)
        status = Path(tmp) / "check-status.json"
        rc = subprocess.call([sys.executable, str(tree / "results" / "collect.py"), "--check-here", str(status)],
                             cwd=tree, env=env)
        if write and status.is_file():
            write_records_summary(json.loads(status.read_text()))
        return rc


def main(argv: list[str]) -> int:
    if argv[:1] == ["--record"]:
        if len(argv) != 3:
            raise SystemExit("usage: python results/collect.py --record RUN_FOLDER NAME")
        print(keep_record(Path(argv[1]), argv[2]))
        return 0
    if argv == ["--record-demo"]:
        print(keep_demo_record())
        return 0
    if argv[:1] == ["--check"] and argv[1:] in ([], ["--write"]):
        return check(write=argv[1:] == ["--write"])
    if argv[:1] == ["--check-here"] and len(argv) <= 2:
        lines, ok, statuses = check_here()
        print("\n".join(lines))
        if len(argv) == 2:  # where the statuses go (--check reads them)
            Path(argv[1]).write_text(json.dumps(statuses))
        return 0 if ok else 1
    names = argv or list(COLLECTORS)
    unknown = [n for n in names if n not in COLLECTORS]
    if unknown:
        raise SystemExit(f"unknown summary {', '.join(unknown)}; known: {', '.join(COLLECTORS)} (or --check [--write], "
                         "--record RUN NAME, --record-demo)")
    for name in names:
        print(f"{write(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
