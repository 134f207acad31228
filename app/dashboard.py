"""The home page's words about runs: model, data, age, two or three headline numbers, the page that shows
a run, the command that repairs a broken one, and the zoo's accuracy per step count.

Pure functions of ``thinklens.runs.folders.RunEntry`` values and small result files (no Streamlit here), so
they are tested directly.

Example:
    >>> from pathlib import Path
    >>> from thinklens.runs.folders import RunEntry
    >>> e = RunEntry(path=Path("runs/probe/a"), kind="probe", run_id="a", status="done",
    ...              summary={"target": "intermediate", "best_site": "resid_post.2", "best_score": 0.34, "scoring": "r2"},
    ...              config={"model": "tiny-think", "data": ""})
    >>> headline(e)
    'intermediate value read best at resid_post.2 (r2 0.34)'
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from thinklens.calibration.findings import finding_sentence
from thinklens.runs import demo_plan
from thinklens.runs.folders import RunEntry
from thinklens.runs.headlines import generic
from thinklens.runs.jobs import jobs_by_kind
from thinklens.runs.provenance import package_hashes
from thinklens.runs.run_views import HEADLINED


def jobs_of_kinds(errors: list[str] | None = None) -> dict[str, Any]:
    """Run kind -> the registered job whose runs it holds (``thinklens.runs.jobs.jobs_by_kind``; a job whose module
    fails to import is left out, its error appended to ``errors``)."""
    return jobs_by_kind(errors)


def page_title(page: str) -> str:
    """A page file's title as Streamlit shows it in the sidebar.

    Example:
        >>> page_title("pages/3_Probes_and_LYNX.py")
        'Probes and LYNX'
    """
    stem = Path(page).stem
    return stem.split("_", 1)[1].replace("_", " ") if re.match(r"\d+_", stem) else stem.replace("_", " ")


def pages() -> dict[str, tuple[str, str]]:
    """Run kind -> (page file, page title) of the page that shows its runs: each job's ``page``."""
    return {kind: (job.page, page_title(job.page)) for kind, job in jobs_of_kinds().items() if job.page}


def run_order(kind: str, jobs: Mapping[str, Any] | None = None) -> tuple[int, int]:
    """Where a kind's runs go on Home: its job's pipeline ``order`` (models and data first, latent reasoning last);
    a kind without one after them."""
    job = (jobs if jobs is not None else jobs_of_kinds()).get(kind)
    order = getattr(job, "order", None)
    return (1, 0) if order is None else (0, order)


def age(created: str, now: dt.datetime | None = None) -> str:
    """``'2026-11-30T11:31:23'`` -> ``'5 min ago'`` (``'?'`` when unknown).

    Example:
        >>> age("2026-11-30T10:00:00", now=dt.datetime(2026, 11, 30, 12, 30))
        '2 h ago'
    """
    try:
        then = dt.datetime.fromisoformat(created)
    except (TypeError, ValueError):
        return "?"
    s = ((now or dt.datetime.now()) - then).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{int(s // size)} {unit} ago"
    return "just now"


def model_of(entry: RunEntry) -> str:
    """The model(s) of a run: its config's model fields."""
    cfg = entry.config or {}
    names = [cfg.get("model")] + [cfg.get(k) for k in ("thinking", "compare", "models") if cfg.get(k)]
    out: list[str] = []
    for n in names:
        for part in (n if isinstance(n, list) else str(n or "").split(",")):
            part = str(part).strip()
            if part and part not in out:
                out.append(part)
    if entry.kind == "steer" and not out and cfg.get("sae"):
        out.append(Path(str(cfg["sae"])).name)
    return ", ".join(out) or "-"


def data_of(entry: RunEntry) -> str:
    """What the run read: its --data, prompts or the synthetic task with its step range."""
    cfg = entry.config or {}
    for k in ("data", "prompts"):
        if cfg.get(k):
            return Path(str(cfg[k])).name
    counts = cfg.get("step_counts", cfg.get("steps"))  # "steps" in configs written before the rename
    if isinstance(counts, list) and counts:
        return f"synthetic, {min(counts)}-{max(counts)} steps"
    if "min_steps" in cfg and "max_steps" in cfg:
        return f"synthetic, {cfg['min_steps']}-{cfg['max_steps']} steps"
    if cfg.get("n_problems") or cfg.get("n"):
        return "synthetic task"
    return "-"


def findings_headline(findings: list[Mapping[str, Any]], limit: int = HEADLINED) -> str:
    """The run's first findings in words (thinklens.calibration.findings.finding_sentence): what the CLI's closing lines and the
    page headline say too, so a claim whose verdict is not ``effect`` is never headlined as one."""
    return " · ".join(finding_sentence(f) for f in findings[:limit])


def finding_tone(finding: Mapping[str, Any]) -> str:
    """How a page shows a finding: ``success`` for an effect the method claims, ``error`` for an effect that is a
    harm (``extra["harm"]``: a significant accuracy loss, a rejected LYNX bound), ``warning`` for anything not shown
    and for an effect over an unmatched baseline (``extra["baseline"]``: the latent table's tiny-direct).

    Example:
        >>> finding_tone({"verdict": "effect"}), finding_tone({"verdict": "effect", "extra": {"harm": True}})
        ('success', 'error')
        >>> finding_tone({"verdict": "too few samples", "extra": {"harm": True}})
        'warning'
        >>> finding_tone({"verdict": "effect", "extra": {"as_expected": False}})  # validate: an effect on a null
        'error'
    """
    extra = finding.get("extra") or {}
    if extra.get("as_expected") is False:  # a validation setting that did not come out as a working method's would
        return "error"
    if finding.get("verdict") != "effect" or extra.get("baseline") == "unmatched":
        return "warning"
    return "error" if extra.get("harm") else "success"


def failed_headline(entry: RunEntry) -> str:
    """A failed run in a line: the refusal it stopped with (meta.json's error).

    Example:
        >>> failed_headline(RunEntry(path=Path("runs/lynx/a"), kind="lynx", run_id="a", status="failed",
        ...                          failure="bad cue events: received 'none'"))
        "failed: bad cue events: received 'none'"
    """
    return f"failed: {entry.failure}" if entry.failure else "failed (no error recorded in meta.json)"


def headline(entry: RunEntry) -> str:
    """The run in a line: its findings when the job reports them (claim, interval, control, verdict), else two or
    three headline numbers in words (``'-'`` for a run without a summary)."""
    if entry.status == "running":
        return "still running (or stopped before it finished: rerun the same command to resume)"
    if entry.status == "interrupted":  # SIGINT or SIGTERM (thinklens.runs.interrupts): no summary to read yet
        return INTERRUPTED
    if entry.status == "failed":  # its summary is empty: a job's own headline would read it as results ("0/0 valid")
        return failed_headline(entry)
    s = entry.summary or {}
    if s.get("findings"):
        return findings_headline(list(s["findings"]))
    words = getattr(jobs_of_kinds().get(entry.kind), "headline", None)  # the job's own (Job.headline)
    try:
        return words(s, entry.path) if words is not None else (generic(s) if s else "-")
    except (AttributeError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return generic(s)


NONE = "–"
"""What a table cell shows for a value a run or a model does not have (never ``None``)."""
INTERRUPTED = "interrupted: stopped by SIGINT or SIGTERM before it finished; rerun the same command to resume"
"""The headline of a run the runner marked ``interrupted`` (:mod:`thinklens.runs.interrupts`)."""


def run_state(entry: RunEntry, lacking: list[str] | None = None) -> tuple[str, str]:
    """A run's status and headline as the home page shows them: a half-written run (``lacking``: what
    ``common.missing_results`` says its done run lacks) is ``'results missing'``, never ``'done'`` with a stale headline.

    Example:
        >>> from thinklens.runs.folders import RunEntry
        >>> e = RunEntry(path=Path("runs/probe/a"), kind="probe", run_id="a", status="done", summary={"best_score": 0.3})
        >>> run_state(e, ["results/"])
        ('results missing', 'results missing: it says done but lacks results/ (its old headline is stale)')
    """
    if lacking:
        cut = [x for x in lacking if x.endswith(INCOMPLETE_MARK)]
        if cut:
            return "incomplete", (f"incomplete: it says done but {', '.join(x.removesuffix(INCOMPLETE_MARK) for x in cut)} "
                                  "cannot be read (cut off while writing; its old headline is stale)")
        return "results missing", f"results missing: it says done but lacks {', '.join(lacking)} (its old headline is stale)"
    validated = validation_count(entry)
    if validated is not None:  # a validate run: done is not a verdict; K/N settings validated is
        k, n, failed = validated
        line = f"validated {k}/{n}" + (f"; failed: {', '.join(failed)}" if failed else "; every setting as expected")
        return f"validated {k}/{n}", line
    line = headline(entry) or NONE
    older = older_version(entry) if entry.status == "done" else None
    if older:  # said on the card; a summary this version cannot read is never shown as numbers (a '?' read as 0%)
        unread = line in (NONE, "-") or "?" in line
        return "older version", (f"{older}: this version cannot read its summary (rerun it to read it here)" if unread
                                 else f"{older}; {line}")
    return entry.status or NONE, line


INCOMPLETE_MARK = " (truncated)"
"""What ``common.missing_results`` appends to a result file that exists but cannot be read (cut off while writing)."""


def validation_count(entry: RunEntry) -> tuple[int, int, list[str]] | None:
    """``(K, N, failed settings)`` of a finished validate run (its summary's ``validated``, ``n_settings`` and
    ``failed``); None for any other run.

    Example:
        >>> e = RunEntry(path=Path("runs/validate/a"), kind="validate", run_id="a", status="done",
        ...              summary={"validated": 5, "n_settings": 6, "failed": ["sae/null"]})
        >>> validation_count(e), run_state(e)
        ((5, 6, ['sae/null']), ('validated 5/6', 'validated 5/6; failed: sae/null'))
    """
    s = entry.summary or {}
    if entry.status != "done" or not isinstance(s.get("validated"), int) or not isinstance(s.get("n_settings"), int):
        return None
    return s["validated"], s["n_settings"], [str(x) for x in s.get("failed") or []]


STATUS_COLOURS: dict[str, str] = {"done": "green", "running": "orange", "interrupted": "blue", "results missing": "red",
                                  "incomplete": "red", "failed": "red", "older version": "gray"}
"""The badge colour of each run status (:func:`status_badge`; any other status is grey)."""


def status_badge(status: str) -> str:
    """A run status as a coloured badge: green only for a plain ``done`` or every setting validated (K/N with K = N),
    red for a failure, a half-written run or a validation short of N, grey for an older version, orange while running,
    blue for a run stopped by a signal (``interrupted``: resumable, neither a failure nor still running).

    Example:
        >>> status_badge("validated 5/6"), status_badge("validated 6/6"), status_badge("incomplete")
        (':red-badge[validated 5/6]', ':green-badge[validated 6/6]', ':red-badge[incomplete]')
        >>> status_badge("interrupted")
        ':blue-badge[interrupted]'
    """
    if status.startswith("validated "):
        k, _, n = status.removeprefix("validated ").partition("/")
        return f":{'green' if k == n else 'red'}-badge[{status}]"
    return f":{STATUS_COLOURS.get(status, 'gray')}-badge[{status}]"


def _job_package(kind: str) -> str | None:
    """The code package of the job whose runs ``kind`` holds (``thinklens.probes`` for lynx), as meta.json's
    ``code.package_hashes`` names it."""
    job = jobs_of_kinds().get(kind)
    module = getattr(getattr(job, "run", None), "__module__", "") or ""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 and parts[0] == "thinklens" else None


_CURRENT_CODE: dict[str, Any] = {}


def current_package_hashes() -> dict[str, str]:
    """The source hash of each package of the code running now (computed once per process)."""
    if "hashes" not in _CURRENT_CODE:
        _CURRENT_CODE["hashes"] = package_hashes()
    return _CURRENT_CODE["hashes"]


def older_version(entry: RunEntry, current: Mapping[str, str] | None = None) -> str | None:
    """``'written by an older version (thinklens.probes changed since commit 1a2b3c4d)'`` when the run's recorded
    code differs from the code running now in the package that holds its job (meta.json's ``code``); None when
    it is the same, or the run records no code.

    Example:
        >>> import json, tempfile
        >>> d = Path(tempfile.mkdtemp())
        >>> _ = (d / "meta.json").write_text(json.dumps({"code": {"package_hashes": {"thinklens.probes": "old"},
        ...                                                            "git_commit": "1a2b3c4d5e"}}))
        >>> e = RunEntry(path=d, kind="lynx", run_id="a", status="done")
        >>> older_version(e, {"thinklens.probes": "new"})
        'written by an older version (thinklens.probes changed since commit 1a2b3c4d)'
        >>> older_version(e, {"thinklens.probes": "old"}) is None
        True
    """
    try:
        code = json.loads((entry.path / "meta.json").read_text()).get("code") or {}
    except (OSError, ValueError, AttributeError):
        return None
    old = code.get("package_hashes") or {}
    package = _job_package(entry.kind)
    if not old or package not in old:
        return None
    now = current if current is not None else current_package_hashes()
    if now.get(package) in (None, old[package]):
        return None
    commit = str(code.get("git_commit") or "?")[:8]
    return f"written by an older version ({package} changed since commit {commit})"


def run_rows(entries: list[RunEntry], lacking: Mapping[str, list[str]] | None = None,
             now: dt.datetime | None = None) -> list[dict[str, str]]:
    """The home page's table of runs, one row of strings per run (``lacking``: ``'kind/run_id'`` -> what a
    half-written run lacks); an unknown value is ``'–'``, never None."""
    rows = []
    for e in entries:
        status, line = run_state(e, (lacking or {}).get(f"{e.kind}/{e.run_id}"))
        row = {"kind": e.kind, "id": e.run_id, "status": status, "model": model_of(e), "data": data_of(e),
               "age": age(e.created, now), "headline": line}
        rows.append({k: NONE if v in (None, "", "-", "?") else str(v) for k, v in row.items()})
    return rows


def zoo_table_rows(rows: list[dict], step_cols: list[str]) -> list[dict[str, str]]:
    """``zoo_accuracy_rows``'s rows for display: size (or ``'not trained'``), accuracy per step count as
    ``'92%'`` and ``'–'`` where the model was not evaluated at that step count, the description last.

    Example:
        >>> zoo_table_rows([{"model": "m", "trained": True, "MB": 2.05, "description": "d", "2 steps": 92.0}],
        ...                ["2 steps", "3 steps"])
        [{'model': 'm', 'size': '2.05 MB', '2 steps': '92%', '3 steps': '–', 'description': 'd'}]
    """
    out = []
    for r in rows:
        row = {"model": r["model"], "size": f"{r['MB']:g} MB" if r.get("trained") else "not trained"}
        for c in step_cols:
            v = r.get(c)
            row[c] = f"{v:.0f}%" if isinstance(v, (int, float)) else NONE
        row["description"] = r.get("description") or NONE
        out.append(row)
    return out


def _job_of(entry: RunEntry) -> str:
    """The job that made a run (meta.json's ``job``; for older runs the job of its kind, else the kind)."""
    try:
        job = json.loads((entry.path / "meta.json").read_text()).get("job")
    except (OSError, ValueError, AttributeError):
        job = None
    return str(job or getattr(jobs_of_kinds().get(entry.kind), "name", None) or entry.kind)


def rerun_command(job: str, path: Path, *extra: str) -> str:
    """``thinklens run <job> --config <path>/config.json --out <path> ...``: reruns (resumes) a run in its folder."""
    return shlex.join(["thinklens", "run", job, "--config", str(Path(path) / "config.json"), "--out", str(path), *extra])


def fix_command(entry: RunEntry, demo_argv: Mapping[str, list[str]] | None = None) -> str:
    """The command that repairs a broken run: the demo's own step for a demo run, else a rerun of its id.

    A readable config reruns into the same folder (``--config`` of its config.json resumes it); an
    unreadable one is removed first and the job run again (a demo run with the demo's own step).
    """
    job = _job_of(entry)
    demo = (demo_argv or {}).get(f"{entry.kind}/{entry.run_id}")
    remove = shlex.join(["rm", "-r", str(entry.path)])
    if demo:
        return " ".join([remove, "&&", shlex.join(["thinklens", *demo])])
    if entry.config is not None:
        return rerun_command(job, entry.path)
    return " ".join([remove, "&&", shlex.join(["thinklens", "run", job, "--run-id", entry.run_id])])


def demo_commands(runs: Path) -> dict[str, list[str]]:
    """``'kind/run_id'`` -> the demo's ``thinklens`` arguments that make that run (from :mod:`thinklens.runs.demo_plan`)."""
    try:
        steps = demo_plan.DEMO_STEPS  # read from the job registry each time
    except ImportError:
        return {}
    out: dict[str, list[str]] = {}
    for step in steps:
        args = [a.format(runs=runs) for a in step.argv]
        if args[:1] == ["run"] and len(args) > 1 and "--run-id" in args[:-1]:
            out.setdefault(f"{args[1]}/{args[args.index('--run-id') + 1]}", args)
    return out


def zoo_accuracy_rows(zoo_names: list[str], zoo_dir: Path, descriptions: Mapping[str, str]) -> tuple[list[dict], list[str]]:
    """One row per zoo model: trained, size, description and held-out accuracy per step count (as numbers).

    Returns the rows and the step-count columns (``'2 steps'``...), in order.
    """
    rows, steps = [], set()
    for name in zoo_names:
        folder = zoo_dir / name
        meta: dict[str, Any] = {}
        for fname in ("zoo.json", "latent.json"):
            try:
                meta = json.loads((folder / fname).read_text())
                break
            except (OSError, ValueError):
                continue
        acc = (meta.get("eval") or {}).get("accuracy") or {}
        acc = acc if isinstance(acc, Mapping) else {}
        size = sum(p.stat().st_size for p in folder.glob("*.safetensors")) if folder.exists() else 0
        row: dict[str, Any] = {"model": name, "trained": (folder / "config.json").exists(),
                               "MB": round(size / 2**20, 2), "description": descriptions.get(name, "")}
        for k, v in acc.items():
            if isinstance(v, (int, float)) and str(k).isdigit():
                row[f"{k} steps"] = round(100 * v, 1)
                steps.add(int(k))
        rows.append(row)
    cols = [f"{k} steps" for k in sorted(steps)]
    return rows, cols
