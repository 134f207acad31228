"""Run folders: ``runs/<kind>/<id>/`` with config.json, results and figures.

Every file is written atomically (temp file in the same folder, then ``os.replace``), so a
killed job never leaves a half-written result. Long jobs record finished items in
``progress.jsonl`` (one JSON object per line, appended and flushed) and skip them on resume.

Example:
    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> run = RunFolder.create("demo", {"n": 3}, root=root, run_id="r1")
    >>> for item in run.pending(["a", "b", "c"]):
    ...     run.mark_done(item, {"value": len(item)})
    >>> sorted(RunFolder.open(run.path).finished())
    ['a', 'b', 'c']
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any

from thinklens.errors import ThinklensError, in_cli, opt
from thinklens.runs.provenance import check_resume, code_version

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def default_runs_root() -> Path:
    """The runs folder: ``$THINKLENS_RUNS`` or ``./runs``."""
    return Path(os.environ.get("THINKLENS_RUNS", "runs"))


def validate_id(value: str, what: str = "run id") -> str:
    """Accept only plain names (no separators, no ``..``): run ids and kinds become path parts."""
    if not isinstance(value, str) or not _ID_RE.match(value) or ".." in value:
        raise ThinklensError.of(
            what, value, "letters, digits, '.', '_' or '-' (no '/' and no '..'), at most 128 characters",
            "pick a plain name such as 2026-11-29_mi-peaks",
        )
    return value


def to_jsonable(obj: Any) -> Any:
    """Plain JSON values from dataclasses, paths, numpy and torch values; NaN and infinities become None.

    JSON has no NaN: a metric that is undefined (an AUROC on one class, a mean of nothing) is written
    as ``null`` and read back as ``None``, in every file the project writes.

    Example:
        >>> to_jsonable({"auroc": float("nan"), "xs": (1, float("inf"))})
        {'auroc': None, 'xs': [1, None]}
    """
    if is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(asdict(obj))
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if hasattr(obj, "tolist"):  # numpy / torch scalars and arrays
        return to_jsonable(obj.tolist())
    return obj


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see either the old or the new file, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def replace_dir(tmp: Path, dest: Path) -> None:
    """Swap a fully written folder ``tmp`` in as ``dest`` (the old ``dest``, if any, is removed).

    Two renames on one filesystem: a reader sees the old folder or the new one, never a partial one.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp()); (root / "new").mkdir()
        >>> _ = (root / "new" / "f").write_text("2")
        >>> replace_dir(root / "new", root / "out"); (root / "out" / "f").read_text()
        '2'
    """
    old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
    shutil.rmtree(old, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        os.rename(dest, old)
    os.rename(tmp, dest)
    shutil.rmtree(old, ignore_errors=True)


def config_differences(old: Any, new: Any, prefix: str = "", limit: int = 8) -> str:
    """The keys whose values differ between two JSON configs, as ``key (old -> new)``, nested keys dotted.

    Example:
        >>> config_differences({"n": 2, "opt": {"lr": 0.1}, "seed": 0}, {"n": 3, "opt": {"lr": 0.2}, "seed": 0})
        'n (2 -> 3), opt.lr (0.1 -> 0.2)'
        >>> config_differences({"n": 2}, {"n": 2, "extra": True})
        'extra (absent -> true)'
    """
    def short(v: Any) -> str:
        text = "absent" if v is _ABSENT else json.dumps(v)
        return text if len(text) <= 40 else text[:37] + "..."

    def walk(a: Any, b: Any, key: str) -> Iterator[str]:
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b), key=str):
                yield from walk(a.get(k, _ABSENT), b.get(k, _ABSENT), f"{key}.{k}" if key else str(k))
        elif a != b:
            yield f"{key or '(whole config)'} ({short(a)} -> {short(b)})"

    diffs = list(walk(old, new, prefix))
    return ", ".join(diffs[:limit]) + (f", and {len(diffs) - limit} more" if len(diffs) > limit else "")


_ABSENT = object()


def atomic_write_json(path: Path, obj: Any) -> None:
    """JSON-encode (dataclasses, numpy and torch values included) and write atomically."""
    atomic_write_bytes(Path(path), json.dumps(to_jsonable(obj), indent=2, allow_nan=False).encode())


class RunFolder:
    """One run: ``<root>/<kind>/<id>/``.

    Files: ``config.json`` (what was asked), ``meta.json`` (kind, id, created, status, the code version;
    the job runner adds device, dtype and seed), ``results/*.json``, ``figures/*.json`` (plotly JSON) and ``*.html``, ``progress.jsonl``.
    """

    def __init__(self, path: Path, *, shard: int = 0):
        self.path = Path(path)
        self.shard = shard
        """This process's rank under a multi-process launch: rank r > 0 records its finished items in its own
        ``progress.rank-<r>.jsonl`` (rank 0 in ``progress.jsonl``); :meth:`finished` reads every shard."""

    # ---- creation / opening -------------------------------------------------------------
    @classmethod
    def create(
        cls, kind: str, config: Any, *, root: Path | str | None = None, run_id: str | None = None,
        resume: bool = True, path: Path | str | None = None, allow_stale: bool = False,
    ) -> "RunFolder":
        """Create ``root/kind/run_id`` (a timestamp id by default), or exactly ``path``, and write its config.

        A new folder's meta.json records the code version (``code``: :func:`thinklens.runs.provenance.code_version`).
        With ``resume`` and an existing folder whose config is equal, the folder is reused so
        :meth:`pending` skips finished items; a different config is an error (never overwritten), and so is
        code whose source changed since the run started, unless ``allow_stale`` (then meta.json's
        ``stale_resumes`` records what changed).
        """
        validate_id(kind, "run kind")
        if path is not None:
            path = Path(path).resolve()
            validate_id(path.name)
        else:
            parent = Path(root if root is not None else default_runs_root()) / kind
            if run_id is None:  # a timestamp id names a new run: two runs started in one second get -2, -3, ...
                stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
                run_id = next(c for c in (stamp, *(f"{stamp}-{k}" for k in range(2, 10_000)))
                              if not (parent / c).exists())
            path = parent / validate_id(run_id)
        cfg = to_jsonable(config)
        if (path / "config.json").exists():
            old = json.loads((path / "config.json").read_text())
            if resume and old != cfg and cls(path).restartable():  # a refused run, rerun with the fix
                atomic_write_json(path / "config.json", cfg)
                run = cls(path)
                run.write_meta(status="running", kind=kind, code=code_version(), restarted_from=old, error=None)
                return run
            if not resume or old != cfg:
                differs = config_differences(old, cfg)
                why = (f"its config differs in {differs} (old -> new)" if differs
                       else "the same config, but resuming is off")
                own = opt("config_file" if not in_cli() else "config", str(path / "config.json"))
                raise ThinklensError.of(
                    "run folder", str(path), f"a new run id, or the same config to resume ({why})",
                    f"pass a new {opt('run_id')} for this config, or resume with the run's own config ({own}); "
                    "or delete the folder to start over",
                )
            run = cls(path)
            run.check_code(allow_stale=allow_stale)
            return run
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path / "config.json", cfg)
        run = cls(path)
        run.write_meta(status="running", kind=kind, code=code_version())
        return run

    def restartable(self) -> bool:
        """Whether a new config may take this folder over: the run failed (a refusal, exit 2) before it finished
        any item, so there is no work a changed config would mix with.

        Example:
            >>> import tempfile
            >>> run = RunFolder.create("demo", {"n": 1}, root=tempfile.mkdtemp(), run_id="r")
            >>> run.restartable(), run.write_meta(status="failed") or run.restartable()
            (False, True)
            >>> again = RunFolder.create("demo", {"n": 2}, root=run.path.parents[1], run_id="r")
            >>> again.config(), again.meta()["status"], again.meta()["restarted_from"]
            ({'n': 2}, 'running', {'n': 1})
        """
        return self.meta().get("status") == "failed" and not self.finished()

    def check_code(self, *, allow_stale: bool = False) -> None:
        """Refuse to resume with code whose source differs from the code the run started with (see
        :func:`thinklens.runs.provenance.check_resume`); with ``allow_stale`` record the stale resume instead."""
        meta = self.meta()
        stale = check_resume(meta.get("code"), code_version(), where=str(self.path), allow_stale=allow_stale)
        if stale is not None:
            stale["at"] = _dt.datetime.now().isoformat(timespec="seconds")
            self.write_meta(stale_resumes=[*meta.get("stale_resumes", []), stale])

    @classmethod
    def open(cls, path: Path | str) -> "RunFolder":
        """Open an existing run folder (must hold config.json)."""
        path = Path(path)
        if not (path / "config.json").is_file():
            raise ThinklensError.of("run folder", str(path), "a folder holding config.json",
                                    "pass a folder under runs/<kind>/<id>")
        return cls(path)

    @property
    def kind(self) -> str:
        """The job kind recorded at creation (the parent folder's name for older runs)."""
        return self.meta().get("kind") or self.path.parent.name

    @property
    def run_id(self) -> str:
        return self.path.name

    def config(self) -> dict[str, Any]:
        return json.loads((self.path / "config.json").read_text())

    def meta(self) -> dict[str, Any]:
        p = self.path / "meta.json"
        return json.loads(p.read_text()) if p.exists() else {}

    def write_meta(self, **fields: Any) -> None:
        meta = self.meta()
        meta.setdefault("kind", self.path.parent.name)
        meta.update({"id": self.run_id}, **fields)
        meta.setdefault("created", _dt.datetime.now().isoformat(timespec="seconds"))
        atomic_write_json(self.path / "meta.json", meta)

    def finish(self, summary: dict[str, Any] | None = None) -> None:
        """Mark the run complete (the app shows only complete runs as such)."""
        self.write_meta(status="done", summary=to_jsonable(summary or {}))

    # ---- results ---------------------------------------------------------------------------
    def write_result(self, name: str, obj: Any) -> Path:
        """Write ``results/<name>.json`` atomically."""
        p = self.path / "results" / f"{validate_id(name, 'result name')}.json"
        atomic_write_json(p, obj)
        return p

    def read_result(self, name: str) -> Any:
        return json.loads((self.path / "results" / f"{validate_id(name, 'result name')}.json").read_text())

    def write_figure(self, name: str, fig: Any) -> Path:
        """Write a plotly figure as ``figures/<name>.json`` (and ``.html`` with plotly.js inlined)."""
        validate_id(name, "figure name")
        p = self.path / "figures" / f"{name}.json"
        atomic_write_bytes(p, fig.to_json().encode())
        atomic_write_bytes(p.with_suffix(".html"), fig.to_html(include_plotlyjs=True, full_html=True).encode())
        return p

    def read_figure(self, name: str) -> Any:
        import plotly.io as pio  # lazy: CLI start-up (plotly)

        return pio.from_json((self.path / "figures" / f"{validate_id(name, 'figure name')}.json").read_text())

    def figures(self) -> list[str]:
        d = self.path / "figures"
        return sorted(p.stem for p in d.glob("*.json")) if d.exists() else []

    # ---- resume ----------------------------------------------------------------------------
    def _progress(self) -> Path:
        return self.path / ("progress.jsonl" if not self.shard else f"progress.rank-{self.shard}.jsonl")

    def finished(self) -> dict[str, Any]:
        """Items already done (by any process of the run), with their recorded payloads (a torn last line is ignored)."""
        out: dict[str, Any] = {}
        for p in [self.path / "progress.jsonl", *sorted(self.path.glob("progress.rank-*.jsonl"))]:
            if not p.exists():
                continue
            for line in p.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a kill mid-append leaves at most one partial line
                out[rec["item"]] = rec.get("payload")
        return out

    def mark_done(self, item: str, payload: Any = None) -> None:
        """Record that ``item`` finished (appended and fsynced, so it survives a kill)."""
        line = json.dumps({"item": item, "payload": to_jsonable(payload)}, allow_nan=False)
        with open(self._progress(), "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def pending(self, items: Iterable[str]) -> Iterator[str]:
        """Yield the items not yet finished, in order."""
        done = self.finished()
        for item in items:
            if item not in done:
                yield item


def list_runs(root: Path | str | None = None) -> list[Path]:
    """All run folders under ``root`` (those with a config.json), newest first."""
    root = Path(root if root is not None else default_runs_root())
    runs = [p.parent for p in root.glob("*/*/config.json")]
    return sorted(runs, key=lambda p: p.stat().st_mtime, reverse=True)


@dataclass
class RunEntry:
    """One run folder as a reader (the app, a notebook) finds it; ``error`` says why it cannot be read."""

    path: Path
    """The run folder."""
    kind: str
    """The job kind (the folder's parent name)."""
    run_id: str
    """The run id (the folder's name)."""
    status: str = "?"
    """meta.json's status (running, done), "unknown" without a meta.json, "?" when unreadable."""
    created: str = ""
    """meta.json's creation time (ISO format)."""
    summary: dict[str, Any] | None = None
    """meta.json's summary of a finished run."""
    config: dict[str, Any] | None = None
    """The run's config.json."""
    error: str | None = None
    """Why the folder cannot be read (a missing or broken config.json, a bad name); None when it can."""
    failure: str | None = None
    """meta.json's error of a failed run: the refusal the job stopped with (None for a run that did not fail)."""


def _runs_root_inside(d: Path) -> bool:
    """A folder that is not a run but a runs folder of its own (``runs/real-jobs/<job>/<model>``): no config.json or
    meta.json of its own, runs below it. Read it with its own root (``--runs runs/real-jobs``), not as a broken run."""
    return not (d / "config.json").exists() and not (d / "meta.json").exists() and any(d.glob("*/config.json"))


def discover_runs(root: Path | str | None = None, kind: str | None = None) -> list[RunEntry]:
    """Every run folder under ``root`` (of one ``kind``, or all), kinds in name order, newest first in each.

    Never raises on a broken folder: it comes back with ``error`` set, so a reader can show it as broken
    and go on. Folders whose names are not plain ids, or that resolve outside ``root``, are errors too.

    Example:
        >>> import tempfile
        >>> root = tempfile.mkdtemp()
        >>> RunFolder.create("demo", {"n": 1}, root=root, run_id="a").finish({"score": 1.0})
        >>> [(e.kind, e.run_id, e.status, e.summary, e.config) for e in discover_runs(root)]
        [('demo', 'a', 'done', {'score': 1.0}, {'n': 1})]
    """
    root = Path(root if root is not None else default_runs_root())
    if not root.is_dir():
        return []
    top = root.resolve()
    kinds = [kind] if kind else sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    out: list[RunEntry] = []
    for k in kinds:
        kdir = root / k
        if not kdir.is_dir():
            continue
        for d in sorted(kdir.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True):
            if not d.is_dir() or d.name.startswith(".") or _runs_root_inside(d):
                continue
            entry = RunEntry(path=d, kind=k, run_id=d.name)
            try:
                validate_id(k, "run kind")
                validate_id(d.name)
                if top not in d.resolve().parents:
                    raise ThinklensError.of("run path", str(d.resolve()), f"a folder inside {top}", "remove the link")
                entry.config = json.loads((d / "config.json").read_text())
                meta = json.loads((d / "meta.json").read_text()) if (d / "meta.json").exists() else {}
                entry.status = meta.get("status", "unknown")
                entry.created = meta.get("created", "")
                entry.summary = meta.get("summary")
                entry.failure = meta.get("error") if entry.status == "failed" else None
            except (OSError, ValueError, ThinklensError) as e:
                entry.error = f"{type(e).__name__}: {e}"
            out.append(entry)
    return out
