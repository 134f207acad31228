"""The figures of a LYNX run folder that the README quotes (used by ``results/collect.py``).

``lynx_run_values``: splits, probe AUROC, per-delta outcomes and validity, baselines. ``delta_sets``: per delta,
which condition of the set {1} binds and how many test events get each prediction set (why the saving is not
monotone in delta); computed from the run's test arrays when the record is kept, and read from its
:data:`DELTA_SETS` file in a committed record (the arrays are not committed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

SPLIT_FIELDS = ("rollouts", "events", "cue_events", "fallback_events", "most_cue_events_per_rollout",
                "label_base_rate", "full_accuracy", "mean_rollout_tokens")
DELTA_FIELDS = ("accuracy", "accuracy_change", "saving", "rate", "lower", "upper", "n_neg_set_one", "n_neg",
                "q_pos", "q_neg")


def _read(path: Path) -> Any:
    return json.loads(path.read_text())


def lynx_run_values(run: Path) -> dict[str, Any]:
    """Splits, probe, calibration counts, per-delta outcomes (exits counted in rollouts) and baselines of a run."""
    doc = _read(run / "results" / "lynx.json")
    s = doc["summary"]
    rollouts = s["splits"]["test"]["rollouts"]
    per_delta = {}
    for row in _read(run / "results" / "per_delta.json"):
        per_delta[str(row["delta"])] = {**{k: row[k] for k in DELTA_FIELDS}, "one_minus_q_pos": 1 - row["q_pos"],
                                        "exits": round(row["exit_rate"] * rollouts)}
    full = next(o for o in doc["outcomes"] if o["policy"] == "full")
    baselines = {}
    for o in doc["outcomes"]:
        if o["policy"] in ("lynx", "full"):
            continue
        key = o["policy"] if o["param"] is None else f"{o['policy']} {o['param']:g}"
        baselines[key] = {"saving": o["saving"], "accuracy": o["accuracy"],
                          "accuracy_change": o["accuracy"] - full["accuracy"]}
    splits = {name: {k: split[k] for k in SPLIT_FIELDS if k in split} for name, split in s["splits"].items()}
    return {"splits": splits, "test_auroc": s["test_auroc"], "exit_string_tokens": s.get("exit_string_tokens"),
            "skipped_deltas": s["skipped_deltas"], "confidence": doc["validity"]["confidence"],
            "calibration": {k: s["calibration"][k] for k in ("n_pos", "n_neg")},
            "per_delta": per_delta, "baselines": baselines}


def _tables(run: Path):
    from thinklens.probes.lynx_result import load_test_tables
    from thinklens.runs.folders import RunFolder

    return load_test_tables(RunFolder.open(run))


#: The per-delta prediction-set counts a committed LYNX record keeps in place of its test arrays.
DELTA_SETS = "delta_sets.json"


def delta_sets(run: Path) -> dict[str, Any]:
    """Per delta: the binding condition and the counts of test events whose set is {1}, {0}, {0,1} or empty."""
    if (run / DELTA_SETS).is_file():
        return _read(run / DELTA_SETS)
    ev, ro = _tables(run)
    p = ev.prob
    out = {}
    for row in _read(run / "results" / "per_delta.json"):
        one, zero = 1 - p <= row["q_pos"], p <= row["q_neg"]  # class 1 in the set; class 0 in the set
        out[str(row["delta"])] = {
            "binding": "class 1" if 1 - row["q_pos"] > row["q_neg"] else "class 0",
            "set_one": int((one & ~zero).sum()), "set_zero": int((zero & ~one).sum()),
            "set_both": int((one & zero).sum()), "set_empty": int((~one & ~zero).sum()),
            "exits": int((np.bincount(ev.rollout[one & ~zero], minlength=ro.n) > 0).sum()),
        }
    return out
