"""What the app puts side by side for several latent-eval runs (``Job.compare``): one row per run and method (its
model, problems, accuracy with its interval, reasoning positions) and the accuracy per method with a bar per run.

Example:
    >>> from thinklens.runs.folders import RunEntry
    >>> e = RunEntry(path=Path("/nonexistent"), kind="latent-eval", run_id="a", status="done", summary={}, config={})
    >>> LATENT_EVAL.rows(e, {"rows": [{"label": "CODI", "accuracy": 0.975, "ci": [0.91, 0.99], "n": 80}]}, {})[0]["95% interval"]
    '0.910-0.990'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from thinklens.runs.run_views import Comparison, interval_text, json_or_none, rounded

if TYPE_CHECKING:
    from thinklens.runs.folders import RunEntry


def latent_rows(entry: "RunEntry", s: Mapping[str, Any], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    table = json_or_none(Path(entry.path) / "results" / "table.json") or s.get("rows") or []
    return [{"model": r.get("model") or r.get("label"), "data": r.get("problems") or "-", "method": r.get("label"),
             "accuracy": rounded(r.get("accuracy")), "95% interval": interval_text(r.get("ci")), "n": r.get("n"),
             "reasoning positions": rounded(r.get("reasoning_positions"), 1)} for r in table]


def latent_figure(rows: Sequence[Mapping[str, Any]]) -> Any:
    fig = go.Figure()
    for run in dict.fromkeys(r["run"] for r in rows):
        sel = [r for r in rows if r["run"] == run]
        fig.add_trace(go.Bar(x=[f"{r['method']} ({r['data']})" for r in sel], y=[r["accuracy"] for r in sel], name=run))
    return fig.update_layout(title="Latent reasoning across runs", xaxis_title="method (problems)", yaxis_title="accuracy")


LATENT_EVAL = Comparison(latent_rows, latent_figure)
