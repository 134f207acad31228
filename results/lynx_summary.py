"""The figures of a LYNX run folder that the README quotes (used by ``results/collect.py``).

``lynx_run_values``: splits, probe AUROC, per-delta outcomes and validity, baselines. ``delta_sets``: per delta,
which condition of the set {1} binds and how many test events get each prediction set (why the saving is not
monotone in delta); computed from the run's test arrays when the record is kept, and read from its
:data:`DELTA_SETS` file in a committed record (the arrays are not committed). ``where_negatives_lie``: the test
negatives split by whether their rollout's full answer is right (a cue before the answer was known) or wrong (a slipped
conclusion the rollout never repairs), and the probe's AUROC with and without the latter; kept as :data:`NEGATIVES`.
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


#: Where a LYNX record's test negatives lie, kept in place of its test arrays (:func:`where_negatives_lie`).
NEGATIVES = "negatives.json"


def auroc(labels: np.ndarray, scores: np.ndarray) -> float | None:
    """The probability that a positive outscores a negative (ties count half); None without both classes.

    Example:
        >>> auroc(np.array([0, 0, 1, 1]), np.array([0.1, 0.6, 0.4, 0.9]))
        0.75
    """
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not len(pos) or not len(neg):
        return None
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


def where_negatives_lie(run: Path) -> dict[str, Any]:
    """The test split's negative events (a forced exit there is wrong) in two kinds: in a rollout whose full answer is
    right (the answer was not yet known at that cue; the probe is asked to tell these from the positives) and in a
    rollout whose full answer is wrong (a slipped conclusion: every later cue is wrong too, and exiting there costs
    nothing against the full rollout). With the probe's AUROC over every event and over the events of rollouts whose
    full answer is right, and its mean score on each kind."""
    if (run / NEGATIVES).is_file():
        return _read(run / NEGATIVES)
    ev, ro = _tables(run)
    label, prob = np.asarray(ev.label), np.asarray(ev.prob)
    right = np.asarray(ro.correct)[np.asarray(ev.rollout)].astype(bool)
    neg = label == 0
    mean = lambda m: float(prob[m].mean()) if m.any() else None  # noqa: E731
    return {"n_events": int(label.size), "n_neg": int(neg.sum()), "neg_right_rollout": int((neg & right).sum()),
            "neg_wrong_rollout": int((neg & ~right).sum()), "pos_wrong_rollout": int((~neg & ~right).sum()),
            "wrong_rollouts": int((~np.asarray(ro.correct).astype(bool)).sum()), "rollouts": int(ro.n),
            "wrong_share_of_neg": float((neg & ~right).sum() / neg.sum()) if neg.any() else None,
            "auroc": auroc(label, prob), "auroc_right_rollouts": auroc(label[right], prob[right]),
            "mean_prob": {"pos": mean(~neg), "neg_right_rollout": mean(neg & right), "neg_wrong_rollout": mean(neg & ~right)}}
