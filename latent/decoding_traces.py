"""The trace viewer's reader of latent-eval runs (``Job.traces`` of ``thinklens run latent-eval``): one trace per
problem and method, ``<problem index>/<method>`` (``results/decoding.json``): the latent thoughts (their decoded top-k
shown, since they are continuous states, not tokens) followed by the answer's words.
"""

from __future__ import annotations

from pathlib import Path

from thinklens.runs.run_views import TraceData, TraceReader, read_result_json


def list_traces(path: Path) -> list[tuple[str, str]]:
    """``(trace id, label)`` of every problem and method."""
    doc = read_result_json(path / "results" / "decoding.json")
    return [(f"{i}/{m}", f"problem {i} · {m} ({'right' if v.get('correct') else 'wrong'})")
            for i, p in enumerate(doc) for m, v in p.get("methods", {}).items()]


def load_trace(path: Path, run: str, trace: str) -> TraceData:
    """One problem and method: its latent thoughts (decoded top-k as details) and the answer's words."""
    i, _, method = trace.partition("/")
    p = read_result_json(path / "results" / "decoding.json")[int(i)]
    m = p["methods"][method]
    latents = m.get("latents") or []
    tokens = [f"[latent {j + 1}: {lat['tokens'][0]}]" for j, lat in enumerate(latents)]
    words = str(m.get("text", "")).split()
    details = {j: list(zip(lat["tokens"], lat["probs"])) for j, lat in enumerate(latents)}
    q: dict[str, list[float | None]] = {
        "latent top-1 probability": [lat["probs"][0] for lat in latents] + [None] * len(words)}
    if any("entropy" in lat for lat in latents):
        q["latent entropy"] = [lat.get("entropy") for lat in latents] + [None] * len(words)
    return TraceData(
        run=run, kind="latent-eval", trace_id=trace, model=method, prompt=str(p.get("question", "")),
        tokens=tokens + words, quantities=q, details=details, default_quantity="latent top-1 probability", separator=" ",
        marks={"latent thought": list(range(len(latents)))},
        facts={"method": method, "correct": m.get("correct"), "gold answer": p.get("answer"),
               "reference CoT": p.get("cot"), "latent thoughts": len(latents)},
        no_lens="latent thoughts are continuous states, not tokens: their decoded top-k is shown instead")


READER = TraceReader(list_traces, load_trace)
