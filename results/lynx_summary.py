"""The figures of a LYNX run folder that the README quotes (used by ``results/collect.py``).

``lynx_run_values``: splits, probe AUROC, per-delta outcomes and validity, baselines. ``delta_sets``: per delta,
which condition of the set {1} binds and how many test events get each prediction set (why the saving is not
monotone in delta). ``before_fix_breakdown``: for a run written by the code before issue 15's fix (fallback events
in the test split; an exit cost without the exit string), the AUROC by event kind, the exits at fallbacks and the
savings with each fix alone and both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

EXIT_STRING_TOKENS = 2  # "</think> ####" in the zoo tokenizer (the runs before the fix did not count it)
SPLIT_FIELDS = ("rollouts", "events", "cue_events", "fallback_events", "most_cue_events_per_rollout",
                "label_base_rate", "full_accuracy", "mean_rollout_tokens")
DELTA_FIELDS = ("accuracy", "accuracy_change", "saving", "rate", "lower", "upper", "n_exit", "n_neg",
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
    from probes.lynx_result import load_test_tables
    from thinklens.runs import RunFolder

    return load_test_tables(RunFolder.open(run))


def delta_sets(run: Path) -> dict[str, Any]:
    """Per delta: the binding condition and the counts of test events whose set is {1}, {0}, {0,1} or empty."""
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


def before_fix_breakdown(run: Path) -> dict[str, Any]:
    """What the fix changed, measured on a run written before it: events and AUROC by kind, and per delta the
    exits (at fallbacks), the saving as run, without fallback exits, with the reference's exit cost, and both."""
    from probes.exits import EventTable, evaluate_policy, first_exits
    from probes.intention import auroc_score

    ev, ro = _tables(run)
    cue = ev.is_cue
    # the zoo's cues and fallback events are one token (start = end = position)
    ref_cost = ev.position + EXIT_STRING_TOKENS + (ev.exit_tokens - ev.position - 1)

    def table(mask: np.ndarray, cost: np.ndarray) -> EventTable:
        return EventTable(rollout=ev.rollout[mask], position=ev.position[mask], label=ev.label[mask],
                          prob=ev.prob[mask], exit_tokens=cost[mask], is_cue=cue[mask])

    every = np.ones(ev.n, dtype=bool)
    cue_old_cost, all_ref_cost, cue_ref_cost = table(cue, ev.exit_tokens), table(every, ref_cost), table(cue, ref_cost)
    per_delta = {}
    for row in _read(run / "results" / "per_delta.json"):
        mask = (1 - ev.prob <= row["q_pos"]) & ~(ev.prob <= row["q_neg"])  # the set is exactly {1}
        pick = first_exits(ev, ro, mask)
        no_fallbacks = evaluate_policy("lynx", row["delta"], cue_old_cost, ro, first_exits(cue_old_cost, ro, mask[cue]))
        ref = evaluate_policy("lynx", row["delta"], all_ref_cost, ro, pick)
        both = evaluate_policy("lynx", row["delta"], cue_ref_cost, ro, first_exits(cue_ref_cost, ro, mask[cue]))
        per_delta[str(row["delta"])] = {
            "exits": int((pick >= 0).sum()), "fallback_exits": int((~cue[pick[pick >= 0]]).sum()),
            "saving_as_run": row["saving"], "accuracy_as_run": row["accuracy"],
            "saving_without_fallbacks": no_fallbacks.saving, "saving_reference_cost": ref.saving,
            "both_fixes": {"accuracy": both.accuracy, "saving": both.saving, "exits": int((both.exit_event >= 0).sum())},
        }
    return {"test_events": ev.n, "cue_events": int(cue.sum()), "fallback_events": int((~cue).sum()),
            "auroc_all": auroc_score(ev.label, ev.prob), "auroc_cue": auroc_score(ev.label[cue], ev.prob[cue]),
            "auroc_fallback": auroc_score(ev.label[~cue], ev.prob[~cue]), "per_delta": per_delta}
