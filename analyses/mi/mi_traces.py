"""The trace viewer's reader of mi-peaks runs (``Job.traces`` of ``thinklens run mi-peaks``): one trace per model and
problem, ``<model key>/<problem index>`` (``trajectories/<key>/<index:05d>.json``), coloured by the MI of each
generated token's state with the answer, its peaks marked.

Position ``t`` is generated token ``t``; its MI is that of the state that *produced* it (the prompt's last state for
``t = 0``), as the MI store defines it.
"""

from __future__ import annotations

from pathlib import Path

from thinklens.analyses.mi.run_format import read_index, read_trajectory
from thinklens.runs.run_views import TraceData, TraceReader


def list_traces(path: Path) -> list[tuple[str, str]]:
    """``(trace id, label)`` of every trajectory of the run, model by model."""
    return [(f"{m['key']}/{r['i']}", f"{m['name']} #{r['i']} {'right' if r['correct'] else 'wrong'}, "
             f"{r['n_tokens']} tokens") for m in read_index(path)["models"] for r in m["index"]]


def load_trace(path: Path, run: str, trace: str) -> TraceData:
    """One trajectory: MI per token (at each stored site, and under the shuffled-answer controls), state norms, peaks."""
    key, _, i = trace.rpartition("/")
    rec = read_trajectory(path, key, int(i))
    entry = next((m for m in read_index(path)["models"] if m["key"] == key), {})
    q: dict[str, list[float | None]] = {"mi": list(rec.mi[rec.site])}
    q.update({f"mi@{s}": list(c) for s, c in rec.mi.items() if s != rec.site})
    q.update({f"mi shuffled answer ({e})": list(c) for e, c in rec.shuffled.items()})
    q["state norm"] = list(rec.norms)
    return TraceData(
        run=run, kind="mi-peaks", trace_id=trace, model=entry.get("name", rec.model), prompt=rec.prompt,
        tokens=list(rec.tokens), token_ids=list(rec.token_ids), quantities=q,
        marks={f"peak ({rule})": list(p) for rule, p in rec.peaks.items()}, separator=entry.get("token_separator", ""),
        facts={"correct": rec.correct, "gold answer": rec.answer, "parsed answer": rec.parsed,
               "stop": rec.stop_reason, "MI site": rec.site, "estimator": rec.estimator},
        default_quantity="mi")


READER = TraceReader(list_traces, load_trace)
