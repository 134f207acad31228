"""The thought-anchors summary (docs/anchors.md): ``thinklens run thought-anchors`` on tiny-overthink and SmolLM2-135M,
and its validation settings (``results/collect.py``)."""

from __future__ import annotations

from typing import Any

from collect_core import RECORDS, collector, read_json, setting_rows, summary

#: model -> the committed record of its ``thought-anchors`` run.
ANCHORS_RECORDS = {"tiny-overthink": "thought-anchors-tiny-overthink", "smollm2-135m": "thought-anchors-smollm2-135m"}
#: The planted and null settings at full size (``validate --methods thought-anchors``).
ANCHORS_VALIDATE_RECORD = "validate-anchors"


def _job_values(record: str) -> dict[str, Any]:
    s = read_json(RECORDS / record / "meta.json")["summary"]
    rows = read_json(RECORDS / record / "results" / "anchors.json")
    findings = [{k: f[k] for k in ("statistic", "value", "ci", "n", "control_value", "verdict", "p")} | {
                "diff": f["extra"]["diff"], "diff_ci": f["extra"]["diff_ci"]} for f in s["findings"]]
    traces = []
    for r in rows:
        sc = r["scores"]
        traces.append({"problem": r["problem"], "gold": r["gold"], "sentences": len(r["sentences"]),
                        "seconds": r["seconds"], "forced_accuracy": r["forced"]["accuracy"],
                        "resampling_accuracy": r["resampling"]["accuracy"], "suppression": sc["suppression"],
                        "receivers": sc["receivers"], "receiver_heads": r["receivers"]["heads"]})
    n = len(traces)
    mean_seconds = {m: sum(t["seconds"][m] for t in traces) / n for m in traces[0]["seconds"]}
    return {"n_traces": n, "findings": findings, "traces": traces, "mean_seconds": mean_seconds}


#: What the docs read of each thought-anchors setting's details.
ANCHOR_DETAILS = ("hit_rate", "hit_ci", "mutants", "means", "margin")


@collector("anchors")
def anchors() -> dict[str, Any]:
    """Per model: the findings (anchor picked by forced-answer importance, other measures reported there), each trace's
    accuracies, suppression and receiver scores and seconds per measure; the planted and null settings' rows."""
    recs = (*ANCHORS_RECORDS.values(), ANCHORS_VALIDATE_RECORD)
    runs = [RECORDS / r for r in recs]
    config = {model: read_json(RECORDS / rec / "config.json") for model, rec in ANCHORS_RECORDS.items()}
    values = {"models": {model: _job_values(rec) for model, rec in ANCHORS_RECORDS.items()},
              "settings": setting_rows(ANCHORS_VALIDATE_RECORD, "thought-anchors", ANCHOR_DETAILS)}
    command = ("thinklens run thought-anchors --model tiny-overthink --n-traces 12 --threads 1 --out RUN1; thinklens run "
               "thought-anchors --model smollm2-135m --n-traces 2 --max-new-tokens 160 --max-sentences 7 --n-forced 4 "
               "--n-rollouts 4 --rollout-tokens 24 --threads 1 --out RUN2; thinklens run validate --methods thought-anchors "
               "--threads 1 --out RUN3; "
               + "; ".join(f"python results/collect.py --record RUN{i + 1} {rec}" for i, rec in enumerate(recs)))
    return summary(command, runs, config, values)
