"""Shared pieces of the Streamlit pages: run pickers (over ``thinklens.runs.discover_runs``), error cards.

Pages only read run folders (JSON results, plotly JSON figures) and call analysis functions;
they never register hooks themselves. A broken or half-written run shows an error card for that
run only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import streamlit as st

from thinklens.errors import ThinklensError
from thinklens.runs import RunFolder, discover_runs, validate_id


def runs_root() -> Path:
    return Path(os.environ.get("THINKLENS_RUNS", "runs")).resolve()


def safe_run_path(kind: str, run_id: str, root: Path | None = None) -> Path:
    """``root/kind/run_id``, refusing anything that would leave the runs folder."""
    root = (root or runs_root()).resolve()
    validate_id(kind, "run kind")
    validate_id(run_id)
    path = (root / kind / run_id).resolve()
    if root not in path.parents:
        raise ThinklensError.of("run path", str(path), f"a folder inside {root}", "pick a run from the list")
    return path


def error_card(title: str, err: object) -> None:
    st.error(f"**{title}**\n\n{err}")


def run_picker(kind: str, label: str = "Run", key: str | None = None) -> RunFolder | None:
    """A select box of complete runs of ``kind``; shows error cards for broken ones; None if none."""
    runs = discover_runs(runs_root(), kind)
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
