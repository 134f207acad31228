"""Words for a run's headline (``Job.headline``): percentages, numbers and a run's result files, read leniently.

A job's ``headline(summary, run_folder)`` says its run in one line for the app's Home cards and ``thinklens
runs``; these helpers write a missing value as ``?`` instead of failing, so a half-written run still reads.

Example:
    >>> pct(0.934), pct(None), num(0.3412), num("x"), generic({"score": 0.91234, "name": "a", "ok": True})
    ('93%', '?', '0.34', '?', 'score 0.912, name a')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def pct(x: Any) -> str:
    """A fraction as a whole percentage (``?`` when it is not a number)."""
    return "?" if not isinstance(x, (int, float)) else f"{100 * x:.0f}%"


def num(x: Any, digits: int = 2) -> str:
    """A number with ``digits`` decimals (``?`` when it is not a number)."""
    return "?" if not isinstance(x, (int, float)) else f"{x:.{digits}f}"


def result_json(folder: Path | str, name: str) -> Any:
    """The run folder's ``results/<name>.json``, or None when it is missing or unreadable."""
    try:
        return json.loads((Path(folder) / "results" / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None


def generic(summary: Mapping[str, Any]) -> str:
    """The first three plain numbers or words of a summary, for a job without a headline of its own."""
    parts = [f"{k} {num(v, 3) if isinstance(v, float) else v}" for k, v in summary.items()
             if isinstance(v, (int, float, str)) and not isinstance(v, bool)][:3]
    return ", ".join(parts) or "-"
