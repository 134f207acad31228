"""The trace viewer's reader of steer runs (``Job.traces`` of ``thinklens run steer``): one trace per row of
``results/steer.json`` (its sample), ``<arm>/<feature>/<coeff>`` (:func:`steer_trace_id`), coloured by where it differs
from the unsteered sample (:func:`token_diff`); and the traces behind its headline's coefficients
(``Job.headline_traces``: :func:`headline_traces`).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from thinklens.runs.run_views import HeadlineTraces, TraceData, TraceReader, headlined_values, read_result_json


def list_traces(path: Path) -> list[tuple[str, str]]:
    """``(trace id, label)`` of every steered sample."""
    return [(steer_trace_id(r), f"{r.get('arm')} {r.get('feature')} × {r.get('coeff'):g}: sample")
            for r in read_result_json(path / "results" / "steer.json").get("rows", [])]


def steer_trace_id(row: dict[str, Any]) -> str:
    """The trace id of one row of a steer run's ``results/steer.json`` (its sample): ``<arm>/<feature>/<coeff>``.

    >>> steer_trace_id({"arm": "feature", "feature": 633, "coeff": -1.0})
    'feature/633/-1'
    """
    feature = row.get("feature")
    return f"{row.get('arm')}/{'-' if feature is None else int(feature)}/{float(row.get('coeff', 0.0)):g}"


PROBLEMS = "steer_problems"
"""The result (``results/steer_problems.json``) holding every steered text with its grade."""


def problem_records(outcomes: list[dict[str, Any]], prompts: list[str], golds: list[Any] | None, *,
                    seed: int) -> list[dict[str, Any]]:
    """One record per (generation, prompt) of one seed's sweep (``steer_sweep(..., outcomes=)``): its text, prompt,
    gold, whether it is right, whether the unsteered text of that prompt was, and whether the steering ``broke`` it
    (right unsteered, wrong steered) or ``fixed`` it; ``point`` is the row's trace id (:func:`steer_trace_id`;
    ``unsteered`` for the baseline). Without answers or an unsteered generation (clamp mode) those are None."""
    base = next((o for o in outcomes if o["arm"] is None), None)
    base_right = base["correct"] if base is not None else None
    out = []
    for o in outcomes:
        point = "unsteered" if o["arm"] is None else steer_trace_id(o)
        for i, text in enumerate(o["texts"]):
            right = None if o["correct"] is None else bool(o["correct"][i])
            was = None if base_right is None or right is None else bool(base_right[i])
            steered = o["arm"] is not None
            out.append({"point": point, "seed": seed, "arm": o["arm"], "feature": o["feature"], "coeff": o["coeff"],
                        "problem": i, "prompt": prompts[i], "text": text,
                        "gold": None if golds is None else str(golds[i]), "correct": right, "unsteered_correct": was,
                        "broken": None if was is None else steered and was and not right,
                        "fixed": None if was is None else steered and not was and bool(right)})
    return out


def broken_where(point: str) -> str:
    """The viewer's filter (``where``) of the problems the steering at ``point`` broke."""
    return f"point={point};broken=true"


def broken_counts(path: Path) -> dict[str, int] | None:
    """Row trace id -> how many (seed, problem) pairs its steering broke; None when the run predates per-problem
    traces (no ``results/steer_problems.json``)."""
    file = Path(path) / "results" / f"{PROBLEMS}.json"
    if not file.is_file():
        return None
    counts: dict[str, int] = {}
    for r in read_result_json(file):
        counts[r["point"]] = counts.get(r["point"], 0) + bool(r.get("broken"))
    return counts


def headline_traces(path: Path) -> list[HeadlineTraces]:
    """Per coefficient of the headlined findings (the feature's word rate at c): the steered texts it counts and the
    problems that steering broke (``results/steer_problems.json``); a run from before that file: its one sample."""
    coeffs = headlined_values(path, "coeff")
    if not coeffs:
        return []
    feature = (read_result_json(Path(path) / "meta.json").get("summary") or {}).get("feature")
    points = {c: steer_trace_id({"arm": "feature", "feature": feature, "coeff": c}) for c in coeffs}
    file = Path(path) / "results" / f"{PROBLEMS}.json"
    if not file.is_file():
        return [HeadlineTraces(f"c={c:g}: its first sample", trace=point, quantity="diff") for c, point in points.items()]
    records = read_result_json(file)
    out = []
    for c, point in points.items():
        mine = [r for r in records if r.get("point") == point]
        if not mine:
            continue
        out.append(HeadlineTraces(f"c={c:g}: the {len(mine)} steered texts", where=f"point={point}"))
        broken = sum(bool(r.get("broken")) for r in mine)
        if broken:
            out.append(HeadlineTraces(f"c={c:g}: {broken} problems it broke", where=broken_where(point)))
    return out


def load_trace(path: Path, run: str, trace: str) -> TraceData:
    """One steered sample, coloured by where it differs from the unsteered sample (coefficient 0)."""
    doc = read_result_json(path / "results" / "steer.json")
    rows = doc.get("rows", [])
    row = next(r for r in rows if steer_trace_id(r) == trace)
    base = next((r for r in rows if r.get("arm") == row.get("arm") and r.get("feature") == row.get("feature")
                 and float(r.get("coeff", 1)) == 0.0), None) or next((r for r in rows if float(r.get("coeff", 1)) == 0.0), None)
    tokens = str(row.get("sample", "")).split()
    base_tokens = str(base.get("sample", "")).split() if base else []
    changed, ops = token_diff(base_tokens, tokens)
    config = read_result_json(path / "config.json") if (path / "config.json").is_file() else {}
    return TraceData(
        run=run, kind="steer", trace_id=trace, model=config.get("model"), prompt=f"(one of {row.get('n_traces', '?'):g} "
        f"steered samples; prompts: {doc.get('data', '?')})" if isinstance(row.get("n_traces"), float) else "",
        tokens=tokens, quantities={"diff": changed}, default_quantity="diff", separator=" ",
        facts={"arm": row.get("arm"), "feature": row.get("feature"), "coefficient": row.get("coeff"),
               "accuracy (all samples)": row.get("accuracy"), "unsteered accuracy": None if base is None else base.get("accuracy"),
               "site": doc.get("site")},
        tables={"token diff against the unsteered sample (coefficient 0)": ops},
        no_lens="the sample was generated under the steering intervention and its token ids were not stored")


def token_diff(before: list[str], after: list[str]) -> tuple[list[float | None], list[dict[str, Any]]]:
    """Per token of ``after``: 1.0 where it is not in a matching block with ``before`` (inserted or replaced), else
    0.0; and the diff's operations (what was removed, what came instead).

    >>> token_diff(["a", "b", "c"], ["a", "x", "c", "d"])[0]
    [0.0, 1.0, 0.0, 1.0]
    """
    changed: list[float | None] = [1.0] * len(after)
    ops = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if tag == "equal":
            for j in range(j1, j2):
                changed[j] = 0.0
        else:
            ops.append({"change": tag, "at position": j1, "unsteered": " ".join(before[i1:i2]),
                        "steered": " ".join(after[j1:j2])})
    return changed, ops


READER = TraceReader(list_traces, load_trace)
