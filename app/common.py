"""Shared pieces of the Streamlit pages: run discovery with path validation, pickers, error cards.

Pages only read run folders (JSON results, plotly JSON figures) and call analysis functions;
they never register hooks themselves. A broken or half-written run shows an error card for that
run only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from thinklens.errors import ThinklensError
from thinklens.runs import RunFolder, validate_id


def runs_root() -> Path:
    return Path(os.environ.get("THINKLENS_RUNS", "runs")).resolve()


@dataclass
class RunInfo:
    """One run folder as the app sees it; ``error`` is set when it cannot be read."""

    kind: str
    run_id: str
    path: Path
    status: str = "?"
    created: str = ""
    summary: dict[str, Any] | None = None
    error: str | None = None


def safe_run_path(kind: str, run_id: str, root: Path | None = None) -> Path:
    """``root/kind/run_id``, refusing anything that would leave the runs folder."""
    root = (root or runs_root()).resolve()
    validate_id(kind, "run kind")
    validate_id(run_id)
    path = (root / kind / run_id).resolve()
    if root not in path.parents:
        raise ThinklensError.of("run path", str(path), f"a folder inside {root}", "pick a run from the list")
    return path


def discover_runs(kind: str | None = None, root: Path | None = None) -> list[RunInfo]:
    """Every run folder (newest first); unreadable ones come back with ``error`` set, never raise."""
    root = (root or runs_root())
    out: list[RunInfo] = []
    if not root.is_dir():
        return out
    kinds = [kind] if kind else sorted(p.name for p in root.iterdir() if p.is_dir())
    for k in kinds:
        kdir = root / k
        if not kdir.is_dir():
            continue
        for d in sorted(kdir.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True):
            if not d.is_dir() or d.name.startswith("."):
                continue
            info = RunInfo(k, d.name, d)
            try:
                safe_run_path(k, d.name, root)
                meta_p = d / "meta.json"
                json.loads((d / "config.json").read_text())
                meta = json.loads(meta_p.read_text()) if meta_p.exists() else {}
                info.status = meta.get("status", "unknown")
                info.created = meta.get("created", "")
                info.summary = meta.get("summary")
            except (OSError, ValueError, ThinklensError) as e:
                info.error = f"{type(e).__name__}: {e}"
            out.append(info)
    return out


def error_card(title: str, err: object) -> None:
    st.error(f"**{title}**\n\n{err}")


def run_picker(kind: str, label: str = "Run", key: str | None = None) -> RunFolder | None:
    """A select box of complete runs of ``kind``; shows error cards for broken ones; None if none."""
    runs = discover_runs(kind)
    good = [r for r in runs if r.error is None]
    for r in runs:
        if r.error is not None:
            error_card(f"run {r.kind}/{r.run_id} cannot be read", r.error)
    if not good:
        st.info(f"No `{kind}` runs yet under `{runs_root()}`. Create one with `thinklens run {kind} ...` or `make demo`.")
        return None
    labels = [f"{r.run_id} ({r.status})" for r in good]
    choice = st.selectbox(label, range(len(good)), format_func=lambda i: labels[i], key=key or f"pick-{kind}")
    r = good[choice]
    return RunFolder(safe_run_path(r.kind, r.run_id))


def show_figure(run: RunFolder, name: str, **kwargs: Any) -> bool:
    """Render ``figures/<name>.json`` of a run; an error card instead of an exception."""
    try:
        fig = run.read_figure(name)
    except (OSError, ValueError, ThinklensError) as e:
        error_card(f"figure {name!r} of {run.kind}/{run.run_id}", f"{type(e).__name__}: {e}")
        return False
    st.plotly_chart(fig, width="stretch", **kwargs)
    return True


def read_result(run: RunFolder, name: str) -> Any | None:
    """``results/<name>.json`` of a run, or None with an error card."""
    try:
        return run.read_result(name)
    except (OSError, ValueError, ThinklensError) as e:
        error_card(f"result {name!r} of {run.kind}/{run.run_id}", f"{type(e).__name__}: {e}")
        return None
