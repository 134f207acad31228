"""The trace viewer's reader of LYNX runs (``Job.traces`` of ``thinklens run lynx``): one trace per test rollout, in the
order of ``arrays/test_rollouts.safetensors``, coloured by the probe's score at each cue event, with the exit LYNX
takes at each δ marked; and the arrays the app's LYNX views read (rollouts, exits per δ).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from thinklens.errors import ThinklensError
from thinklens.runs.run_views import TraceData, TraceReader, read_result_json


def list_traces(path: Path) -> list[tuple[str, str]]:
    """``(trace id, label)`` of every test rollout."""
    ro = lynx_rollouts(path)
    return [(str(i), f"test rollout #{i} {'right' if c else 'wrong'}, {n} tokens")
            for i, (c, n) in enumerate(zip(ro["correct"].tolist(), ro["length"].tolist()))]


def lynx_rollouts(path: Path) -> dict[str, Any]:
    import safetensors.numpy

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
    import safetensors.numpy

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
            marks.setdefault(f"exit at δ {d:g}", []).append(pos)
    summary = read_result_json(path / "results" / "lynx.json").get("summary", {})
    return TraceData(
        run=run, kind="lynx", trace_id=trace, model=summary.get("model"), prompt=r.get("prompt", ""), tokens=tokens,
        token_ids=list(r.get("token_ids", [])) or None, prompt_ids=list(r.get("prompt_ids", [])) or None,
        quantities={"probe": probe}, marks=marks, separator=" " if r.get("text") == " ".join(tokens) else "",
        facts={"full rollout correct": bool(ro["correct"][i]), "length": int(ro["length"][i]),
               "stop": r.get("stop_reason"), "cue events": len(cues)},
        tables={"cue events (probe score per cue)": cues, "LYNX exit per δ": exits}, default_quantity="probe")


READER = TraceReader(list_traces, load_trace)
