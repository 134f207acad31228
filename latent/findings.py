"""The latent table's findings: every latent method against the matched No-CoT row on the same problems
(McNemar), LatentSeek against the CoT chain it starts from (paired) and against oracle best-of-N at equal
compute; every row's accuracy with its Wilson interval.

Example:
    >>> rows = [{"label": "No-CoT SFT", "method": "direct", "problems": "3-4 steps", "accuracy": 0.1, "n": 20},
    ...         {"label": "CODI", "method": "codi", "problems": "3-4 steps", "accuracy": 0.9, "n": 20}]
    >>> correct = {"No-CoT SFT": [False] * 18 + [True] * 2, "CODI": [True] * 18 + [False] * 2}
    >>> [f["verdict"] for f in table_findings(rows, correct)]
    ['effect']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from thinklens.stats import accuracy_finding, findings_doc, paired_finding, wilson

#: Rows that are baselines, not latent methods compared with No-CoT.
BASELINES = ("direct", "cot", "explicit", "best_of_n", "latentseek")


def add_intervals(rows: list[dict[str, Any]]) -> None:
    """Every row's ``ci``: the Wilson 95% interval of its accuracy over its ``n`` problems."""
    for r in rows:
        k = int(round(r["accuracy"] * r["n"]))
        r["ci"] = list(wilson(k, int(r["n"])))


def table_findings(rows: Sequence[Mapping[str, Any]], correct: Mapping[str, Sequence[bool]], *,
                   seek: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Findings of a latent table.

    Args:
        rows: the table's rows (label, method, problems, accuracy, n).
        correct: row label -> per-problem correctness, in the table's problem order.
        seek: the LatentSeek run's per-problem ``original_correct`` / ``final_correct`` lists and its
            summary's ``baseline`` (oracle best-of-N by temperature), when the table has LatentSeek rows.
    """
    found = []
    direct = next((r for r in rows if r["method"] == "direct"), None)
    for r in rows:
        if r["method"] in BASELINES or direct is None or r["problems"] != direct["problems"]:
            continue
        a, b = correct.get(r["label"]), correct.get(direct["label"])
        if a is None or b is None or len(a) != len(b):
            continue
        found.append(paired_finding(f"{r['label']} beats {direct['label']} on the same {r['problems']} problems",
                                    [float(x) for x in a], [float(x) for x in b], control=direct["label"],
                                    statistic="accuracy", binary=True, ceiling=1.0, ceiling_margin=0.0))
    if seek:
        before, after = seek["original_correct"], seek["final_correct"]
        found.append(paired_finding("LatentSeek corrects the CoT chain it starts from", [float(x) for x in after],
                                    [float(x) for x in before], control="greedy CoT (same problems)", statistic="accuracy",
                                    binary=True, ceiling=1.0))
        for t, b in (seek.get("baseline") or {}).items():
            if b:
                k_seek = int(sum(after))
                k_oracle = int(round(b["best_of_n"] * b["n"]))
                found.append(accuracy_finding(f"LatentSeek beats oracle best-of-{b['samples']} sampling (T={t}) at equal compute",
                                              k_seek, len(after), control=f"oracle best-of-{b['samples']} (T={t})",
                                              control_k=k_oracle, control_n=int(b["n"])))
    return findings_doc(found)
