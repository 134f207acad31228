"""The jobs column of the README's capability table, written from the job registry: each job names its row
(``Job.capability``), so a new job appears in the table with no hand edit. ``python -m tools.job_table`` says whether
README.md is current (exit 1 when not), ``--write`` rewrites the column; ``tests/core/test_readme_front_page.py``
holds the README to it.

A row's cell lists its jobs in pipeline order (``Job.order``, then by name), each as ```name```, then the entries that
are not job names (```validate --model```, ```make demo```, "every job"), as the README has them.

Example:
    >>> line = "| Steering | `steer`, `old-job`, `make x` | steering | [s](docs/s.md) | |"
    >>> render_row(line, {"Steering": ["sae", "steer"]})
    '| Steering | `sae`, `steer`, `make x` | steering | [s](docs/s.md) | |'
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SECTION = "## What it does"
_JOB_NAME = re.compile(r"`[a-z0-9][a-z0-9-]*`")


def jobs_by_capability() -> dict[str, list[str]]:
    """README row -> its jobs' names, in pipeline order (every registered job that names a row)."""
    from thinklens.runs.jobs import pipeline_jobs

    out: dict[str, list[str]] = {}
    for job in pipeline_jobs():
        if job.capability:
            out.setdefault(job.capability, []).append(job.name)
    return out


def table_lines(text: str) -> list[int]:
    """Indices of the capability table's rows (not its header or rule) in ``text.splitlines()``."""
    head, sep, _ = text.partition(SECTION)
    if not sep:
        raise ValueError(f"README has no section {SECTION!r}")
    start = head.count("\n") + 1
    lines = text.splitlines()
    out = []
    for i in range(start, len(lines)):
        if lines[i].startswith("## "):
            break
        if lines[i].startswith("| ") and not lines[i].startswith("| capability") and not lines[i].startswith("|---"):
            out.append(i)
    return out


def render_row(line: str, jobs: dict[str, list[str]]) -> str:
    """``line`` with its jobs cell rebuilt: ``jobs[its capability]`` and then the cell's entries that are not job names."""
    cells = line.split(" | ")
    capability = cells[0].removeprefix("| ").strip()
    extras = [item.strip() for item in cells[1].split(",") if item.strip() and not _JOB_NAME.fullmatch(item.strip())]
    cells[1] = ", ".join([f"`{name}`" for name in jobs.get(capability, [])] + extras)
    return " | ".join(cells)


def render(text: str) -> str:
    """The README ``text`` with every capability row's jobs cell written from the registry; a ValueError for a job
    that names a row the table does not have."""
    jobs = jobs_by_capability()
    lines = text.splitlines()
    rows = table_lines(text)
    names = {lines[i].split(" | ")[0].removeprefix("| ").strip() for i in rows}
    unknown = {c: js for c, js in jobs.items() if c not in names}
    if unknown:
        raise ValueError(f"jobs whose capability has no row in the README's table: {unknown} (rows: {sorted(names)}); "
                         "add the row, or name one of those rows in Job(capability=...)")
    for i in rows:
        lines[i] = render_row(lines[i], jobs)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = README.read_text(encoding="utf-8")
    new = render(text)
    if "--write" in args:
        if new != text:
            README.write_text(new, encoding="utf-8")
        print(f"{README.name}: capability table {'rewritten' if new != text else 'already current'}")
        return 0
    print(f"{README.name}: capability table {'current' if new == text else 'out of date: python -m tools.job_table --write'}")
    return 0 if new == text else 1


if __name__ == "__main__":
    raise SystemExit(main())
