"""The registry every summary module adds to (``@collector``) and what they share: the repository's paths and readers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RUNS = Path(os.environ.get("THINKLENS_RUNS", ROOT / "runs"))
OUT = ROOT / "results"
RECORDS = OUT / "records"
#: The committed record of the last ``make demo``: its log and each step's config.json and meta.json.
DEMO_RECORD = RECORDS / "demo"
DEMO_COMMAND = "make demo 2>&1 | tee runs/demo.log; python results/collect.py --record-demo"
MAX_BYTES = 50_000
#: Beside a recorded model folder: the SHA-256 of its weights, which the record does not hold (its command rebuilds them).
WEIGHTS_RECORD = "weights.json"

COLLECTORS: dict[str, Callable[[], dict[str, Any]]] = {}


def collector(name: str) -> Callable:
    """Register a function returning one summary under ``name`` (written to results/NAME.json)."""
    def register(fn: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
        COLLECTORS[name] = fn
        return fn
    return register


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def run_date(*runs: Path) -> str:
    """The day the latest of the run folders was created (YYYY-MM-DD, from meta.json)."""
    return max(read_json(r / "meta.json")["created"][:10] for r in runs)


def show(path: Path) -> str:
    """A path as the summary names it: relative to the repository when inside it."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def summary(command: str, runs: list[Path], config: Any, values: Any, extra_sources: tuple[str, ...] = ()) -> dict:
    return {"command": command, "date": run_date(*runs), "source": ", ".join([*map(show, runs), *extra_sources]),
            "config": config, "values": values}


def setting_rows(record: str, method: str, detail_keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """``method``'s rows of a committed validate record: the row's headline fields and the named keys of its details."""
    doc = read_json(RECORDS / record / "results" / "validate.json")
    keep = ("method", "setting", "kind", "statistic", "value", "ci", "verdict", "expected", "n", "seconds")
    return [{k: r[k] for k in keep} | {"details": {k: d[k] for k in detail_keys if k in d}}
            for r in doc["rows"] if r["method"] == method for d in [r.get("details") or {}]]


def zoo_record(name: str) -> dict[str, Any]:
    """A zoo model's training record (data/zoo/NAME/zoo.json)."""
    return read_json(ROOT / "data" / "zoo" / name / "zoo.json")


def mean(xs: list[float]) -> float:
    return float(np.mean(xs))


