"""``thinklens runs``: the runs under a runs root in a table, and one run in full (``thinklens runs show``).

A run is named ``KIND/ID`` (its folder under the runs root), by its folder's path, or by its bare ``ID``
when one kind holds it. The headline of a run is the home page's (``app/dashboard.py``'s ``headline``:
its first findings in words, :func:`thinklens.calibration.findings.finding_sentence`) when the app sits beside the
package, else the first finding's sentence. No torch, no Streamlit: the command starts fast.

Example:
    >>> import tempfile
    >>> from thinklens.runs.folders import RunFolder
    >>> root = tempfile.mkdtemp()
    >>> RunFolder.create("demo", {"n": 1}, root=root, run_id="a").finish({"score": 1.0})
    >>> print(run_table(root)[0])
    kind  id  status  headline
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from thinklens.calibration.findings import finding_sentence
from thinklens.errors import ThinklensError, did_you_mean, in_cli, opt, opt_name
from thinklens.runs.folders import RunEntry, default_runs_root, discover_runs

_DASHBOARD = Path(__file__).resolve().parents[2] / "app" / "dashboard.py"


def _dashboard_headline() -> Callable[[RunEntry], str] | None:
    """The home page's ``headline`` (app/dashboard.py is pure Python, no Streamlit), or None outside a checkout."""
    name = "_thinklens_app_dashboard"
    if name in sys.modules:
        return getattr(sys.modules[name], "headline", None)
    if not _DASHBOARD.is_file():
        return None
    try:
        spec = importlib.util.spec_from_file_location(name, _DASHBOARD)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001 - a broken app never breaks the listing: the fallback below is used
        sys.modules.pop(name, None)
        return None
    return getattr(module, "headline", None)


def run_headline(entry: RunEntry) -> str:
    """The run in one line: the dashboard's headline, else its first finding in words, else ``-``."""
    if entry.error:
        return f"broken: {entry.error}"
    fn = _dashboard_headline()
    if fn is not None:
        try:
            return str(fn(entry))
        except Exception:  # noqa: BLE001 - fall back to the findings below
            pass
    if entry.status == "failed":  # outside a checkout: the dashboard's words for a failed run
        return f"failed: {entry.failure}" if entry.failure else "failed"
    findings = (entry.summary or {}).get("findings") or []
    if findings:
        return finding_sentence(findings[0])
    if entry.status == "interrupted":  # SIGINT or SIGTERM (thinklens.runs.interrupts)
        return "interrupted: rerun the same command to resume"
    return "still running (or stopped before it finished)" if entry.status == "running" else "-"


def _root(root: Path | str | None) -> Path:
    root = Path(root) if root is not None else default_runs_root()
    if not root.is_dir():
        raise ThinklensError.of("runs folder", str(root), "a folder holding runs/<kind>/<id> run folders",
                                f"pass {opt('runs', '<DIR>') if in_cli() else 'root=<DIR>'} (or set THINKLENS_RUNS), or run a job first: "
                                "`thinklens run JOB`")
    return root


def run_table(root: Path | str | None = None, kind: str | None = None) -> list[str]:
    """The lines of ``thinklens runs``: a header, then one row per run (kind, id, status, headline).

    An unknown ``kind`` (no run of it under ``root``) is an error naming the kinds there are.
    """
    root = _root(root)
    if kind is not None:
        kinds = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        if kind not in kinds:
            raise ThinklensError.of(opt_name("kind"), kind, f"a run kind under {root} ({', '.join(kinds) or 'none yet'})",
                                    did_you_mean(kind, kinds) if kinds else "run a job first: thinklens run JOB")
    entries = discover_runs(root, kind)
    if not entries:
        return [f"no runs under {root} yet (start one: thinklens run JOB; `thinklens run --help` lists the jobs)"]
    rows = [(e.kind, e.run_id, "broken" if e.error else e.status, run_headline(e)) for e in entries]
    header = ("kind", "id", "status", "headline")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    return ["  ".join([*(c.ljust(w) for c, w in zip(r[:3], widths)), r[3]]).rstrip() for r in [header, *rows]]


def find_run(ref: str, root: Path | str | None = None) -> RunEntry:
    """The run named by ``ref``: a run folder's path, ``KIND/ID`` under ``root``, or an ``ID`` one kind holds."""
    path = Path(ref).expanduser()
    if (path / "config.json").is_file():  # a path (relative to here or absolute) to a run folder
        entries = [e for e in discover_runs(path.parent.parent, path.parent.name) if e.run_id == path.name]
        return entries[0] if entries else RunEntry(path=path, kind=path.parent.name, run_id=path.name,
                                                   error="not a plain runs/<kind>/<id> folder")
    root = _root(root)
    entries = discover_runs(root)
    names = [f"{e.kind}/{e.run_id}" for e in entries]
    hits = [e for e in entries if f"{e.kind}/{e.run_id}" == ref.strip("/")] or [e for e in entries if e.run_id == ref]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise ThinklensError.of("run", ref, "one run", f"name it by kind: {', '.join(f'{e.kind}/{e.run_id}' for e in hits)}")

    close = difflib.get_close_matches(ref, names, n=1) or difflib.get_close_matches(ref, [e.run_id for e in entries], n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ThinklensError.of("run", ref, f"KIND/ID of a run under {root}, a run id, or a run folder's path",
                            f"{hint}`thinklens runs --runs {root}` lists its {len(names)} runs")


def write_lines(lines: list[str]) -> None:
    """Print ``lines`` to stdout; a reader that stops early (``thinklens runs | head -1``) ends the output quietly.

    Python's advice for a closed pipe: point stdout at devnull, so the flush at exit cannot raise again.
    """
    try:
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _value(v: Any, width: int = 100) -> str:
    text = v if isinstance(v, str) else json.dumps(v)
    return text if len(text) <= width else text[: width - 3] + "..."


def show_lines(ref: str, root: Path | str | None = None) -> list[str]:
    """The lines of ``thinklens runs show REF``: folder, kind, status, config, findings (or summary)."""
    e = find_run(ref, root)
    meta: dict[str, Any] = {}
    try:
        meta = json.loads((e.path / "meta.json").read_text()) if (e.path / "meta.json").exists() else {}
    except (OSError, ValueError):
        pass
    lines = [f"run: {e.path}", f"kind: {e.kind}" + (f" (job {meta['job']})" if meta.get("job", e.kind) != e.kind else ""),
             f"status: {'broken' if e.error else e.status}"]
    lines.append(f"headline: {run_headline(e)}")
    if e.created:
        lines.append(f"created: {e.created}")
    if e.config is not None:
        lines.append("config:")
        lines += [f"  {k}: {_value(v)}" for k, v in e.config.items()]
    summary = e.summary or {}
    findings = summary.get("findings") or []
    if findings:
        lines.append("findings:")
        lines += [f"  [{f.get('verdict')}] {finding_sentence(f)}" for f in findings]
    elif summary.get("findings_note"):
        lines.append(f"findings: none ({summary['findings_note']})")
    rest = {k: v for k, v in summary.items() if k not in ("findings", "findings_note")}
    if rest:
        lines.append("summary:")
        lines += [f"  {k}: {_value(v)}" for k, v in rest.items()]
    return lines
