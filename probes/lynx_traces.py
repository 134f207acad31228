"""The trace viewer's reader of LYNX runs (``Job.traces`` of ``thinklens run lynx``): one trace per test rollout, in the
order of ``arrays/test_rollouts.safetensors``, coloured by the probe's score at each cue event, with the exit LYNX
takes at each δ marked; and the arrays the app's LYNX views read (rollouts, exits per δ).

A link may keep only the rollouts LYNX exits early at one δ (:func:`exits_where`: ``exit_at=<δ>``, and with
``;exit_correct=false`` only those whose forced exit answer is wrong, the ones its accuracy loses); such a link opens
that δ's exit (:func:`filter_marks`: the mark :func:`exit_mark`). The δs its headline states link those exits
(``Job.headline_traces``: :func:`headline_traces`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import safetensors.numpy

from thinklens.errors import ThinklensError
from thinklens.runs.run_views import HeadlineTraces, TraceData, TraceReader, headlined_values, read_result_json


def list_traces(path: Path) -> list[tuple[str, str]]:
    """``(trace id, label)`` of every test rollout."""
    ro = lynx_rollouts(path)
    return [(str(i), f"test rollout #{i} {'right' if c else 'wrong'}, {n} tokens")
            for i, (c, n) in enumerate(zip(ro["correct"].tolist(), ro["length"].tolist()))]


def exits_where(delta: float, correct: bool | None = None) -> str:
    """The viewer's filter of the test rollouts LYNX exits early at ``delta`` (only right or wrong exits when given).

    >>> exits_where(0.1), exits_where(0.2, correct=False)
    ('exit_at=0.1', 'exit_at=0.2;exit_correct=false')
    """
    return f"exit_at={float(delta):g}" + ("" if correct is None else f";exit_correct={str(bool(correct)).lower()}")


def exit_mark(delta: float) -> str:
    """The name of the mark of LYNX's exit at ``delta`` in a trace (:func:`load_trace`).

    >>> exit_mark(0.05), exit_mark("0.300")
    ('exit at δ 0.05', 'exit at δ 0.3')
    """
    return f"exit at δ {float(delta):g}"


def _conditions(where: str | None) -> dict[str, str]:
    return dict(c.split("=", 1) for c in (where or "").split(";") if "=" in c)


def filter_marks(marks: Mapping[str, list[int]], where: str | None) -> list[str]:
    """The marks of a trace that a link's filter names (``TraceReader.marks``): ``exit_at=<δ>`` names the exit at that
    δ, so the view opens that exit, not another δ's; [] for any other filter.

    >>> filter_marks({"cue event": [1], "exit at δ 0.05": [3], "exit at δ 0.2": [1]}, "exit_at=0.050;exit_correct=false")
    ['exit at δ 0.05']
    >>> filter_marks({"exit at δ 0.2": [1]}, "correct=false"), filter_marks({"exit at δ 0.2": [1]}, "exit_at=x")
    ([], [])
    """
    try:
        name = exit_mark(float(_conditions(where)["exit_at"]))
    except (KeyError, ValueError):
        return []
    return [m for m in marks if m == name]


def exits_at(path: Path, delta: float) -> list[tuple[int, bool]]:
    """``(rollout, forced exit correct)`` of every test rollout LYNX exits early at ``delta``."""
    exits = lynx_exits(Path(path))
    if float(delta) not in exits:
        raise ThinklensError.of("δ", delta, f"one of {sorted(exits)}", "pick a δ LYNX was evaluated at")
    label = safetensors.numpy.load_file(str(Path(path) / "arrays" / "test_events.safetensors"))["label"]
    return [(i, bool(label[row])) for i, row in enumerate(exits[float(delta)]) if row >= 0]


def where_traces(path: Path, where: str) -> list[tuple[str, str]] | None:
    """The test rollouts a filter keeps (``exit_at=<δ>[;exit_correct=<true|false>]``); None for another filter."""
    conds = _conditions(where)
    if "exit_at" not in conds or set(conds) - {"exit_at", "exit_correct"}:
        return None
    try:
        delta = float(conds["exit_at"])
    except ValueError:
        raise ThinklensError.of("exit_at", conds["exit_at"], "a δ LYNX was evaluated at", "open the link from the LYNX page") from None
    want = conds.get("exit_correct", "").strip().lower()
    keep = {i for i, right in exits_at(path, delta) if not want or str(right).lower() == want}
    return [t for t in list_traces(path) if int(t[0]) in keep]


def headline_traces(path: Path) -> list[HeadlineTraces]:
    """Per δ of the headlined findings (its saving and accuracy change): the test rollouts LYNX exits early at δ and
    those whose exit answers wrong."""
    out = []
    for d in headlined_values(path, "delta"):
        try:
            taken = exits_at(path, d)
        except (OSError, KeyError, ValueError):  # a run whose arrays are gone: its card says so
            continue
        if not taken:
            continue
        out.append(HeadlineTraces(f"δ {d:g}: {len(taken)} early exits", where=exits_where(d)))
        wrong = sum(not right for _, right in taken)
        if wrong:
            out.append(HeadlineTraces(f"δ {d:g}: {wrong} exits answering wrong", where=exits_where(d, correct=False)))
    return out


def lynx_rollouts(path: Path) -> dict[str, Any]:
    try:
        return safetensors.numpy.load_file(str(path / "arrays" / "test_rollouts.safetensors"))
    except OSError as e:
        raise ThinklensError.of("LYNX arrays", str(path / "arrays"), "arrays/test_rollouts.safetensors of a finished run",
                                f"wait for the job to finish or re-run it ({e})") from None


def lynx_test_traces(path: Path) -> list[dict[str, Any]]:
    """The test rollouts of a LYNX run (``cache/rollouts.test.<k>.json`` in batch order)."""
    shards = sorted((Path(path) / "cache").glob("rollouts.test.*.json"))
    out: list[dict[str, Any]] = []
    for s in shards:
        out += read_result_json(s)
    return out


def lynx_exits(path: Path) -> dict[float, list[int]]:
    """δ -> the event row each test rollout exits at under LYNX (-1: it ran to the end)."""
    doc = read_result_json(Path(path) / "results" / "lynx.json")
    return {float(o["param"]): [int(e) for e in o["exit_event"]] for o in doc["outcomes"] if o["policy"] == "lynx"}


def load_trace(path: Path, run: str, trace: str) -> TraceData:
    """One test rollout: the probe's score at each cue event, the cue events and LYNX's exit at each δ marked."""
    i = int(trace)
    rollouts = lynx_test_traces(path)
    ro = lynx_rollouts(path)
    if len(rollouts) != len(ro["length"]):
        raise ThinklensError.of("LYNX test rollouts", f"{len(rollouts)} cached rollouts",
                                f"{len(ro['length'])} (arrays/test_rollouts.safetensors)", "re-run the job into a new run folder")
    r = rollouts[i]
    ev = safetensors.numpy.load_file(str(path / "arrays" / "test_events.safetensors"))
    rows = [j for j in range(len(ev["rollout"])) if int(ev["rollout"][j]) == i]
    tokens = list(r["tokens"])
    probe: list[float | None] = [None] * len(tokens)
    cues = []
    for j in rows:
        pos = int(ev["position"][j])
        if 0 <= pos < len(tokens):
            probe[pos] = float(ev["prob"][j])
        cues.append({"position": pos, "cue": tokens[pos] if 0 <= pos < len(tokens) else "?",
                     "probe score": float(ev["prob"][j]), "forced exit correct": bool(ev["label"][j]),
                     "tokens if exiting here": float(ev["exit_tokens"][j])})
    exits, marks = [], {"cue event": [c["position"] for c in cues]}
    for d, per in sorted(lynx_exits(path).items()):
        row = per[i] if i < len(per) else -1
        pos = int(ev["position"][row]) if row >= 0 else None
        exits.append({"δ": d, "exit position": "no exit (full rollout)" if pos is None else pos,
                      "cue": "" if pos is None else tokens[pos], "forced exit correct":
                      None if row < 0 else bool(ev["label"][row])})
        if pos is not None:
            marks.setdefault(exit_mark(d), []).append(pos)
    summary = read_result_json(path / "results" / "lynx.json").get("summary", {})
    return TraceData(
        run=run, kind="lynx", trace_id=trace, model=summary.get("model"), prompt=r.get("prompt", ""), tokens=tokens,
        token_ids=list(r.get("token_ids", [])) or None, prompt_ids=list(r.get("prompt_ids", [])) or None,
        quantities={"probe": probe}, marks=marks, separator=" " if r.get("text") == " ".join(tokens) else "",
        facts={"full rollout correct": bool(ro["correct"][i]), "length": int(ro["length"][i]),
               "stop": r.get("stop_reason"), "cue events": len(cues)},
        tables={"cue events (probe score per cue)": cues, "LYNX exit per δ": exits}, default_quantity="probe")


READER = TraceReader(list_traces, load_trace, where_traces, filter_marks)
