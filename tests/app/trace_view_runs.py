"""Runs the trace viewer's thought-anchors and tuned-lens views are tested on: the committed records (results/records,
copied into a runs folder as ``<kind>/<id>``), and small real runs on the zoo's tiny-r1 that hold what a record does not
keep: a tuned-lens run with its (step, block) grids, an mi-peaks run whose greedy trajectories include the lens run's
traces (same model, problems and format), and an organism record of one of those texts (its ground truth hand-placed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

RECORDS = Path(__file__).resolve().parents[2] / "results" / "records"
COPIES = {"thought-anchors/tiny-overthink": "thought-anchors-tiny-overthink",
          "thought-anchors/smollm2-135m": "thought-anchors-smollm2-135m",
          "tuned-lens/tiny-r1": "tuned-lens-tiny-r1", "tuned-lens/smollm2-135m": "tuned-lens-smollm2-135m"}
"""Run (``<kind>/<id>``) -> the committed record it is a copy of."""


def record_runs(root: Path) -> Path:
    """The committed thought-anchors and tuned-lens records under ``root`` as runs."""
    for run, rec in COPIES.items():
        if not (root / run).exists():
            shutil.copytree(RECORDS / rec, root / run)
    return root


def lens_run(root: Path, run_id: str = "grids") -> Path:
    """tuned-lens on tiny-r1, its smallest settings but two traces of 60 tokens (problems 4 and 5 of seed 0)."""
    from thinklens.runs.runner import run_job

    run_job("tuned-lens", model="tiny-r1", n_train=2, n_eval=2, max_new_tokens=12, epochs=1, n_traces=2, trace_tokens=60,
            runs=root, run_id=run_id, progress=False, threads=1)
    return root / "tuned-lens" / run_id


def mi_run(root: Path, run_id: str = "match") -> Path:
    """mi-peaks on tiny-r1 over the same six problems (seed 0, 1-4 steps), greedy, 60 tokens: the lens run's traces
    are among its trajectories."""
    from thinklens.runs.runner import run_job

    run_job("mi-peaks", model="tiny-r1", n_problems=6, min_steps=1, max_steps=4, max_new_tokens=60, k=2,
            estimators=("reference",), ci="wilson", runs=root, run_id=run_id, progress=False, threads=1)
    return root / "mi-peaks" / run_id


def organism_run(root: Path, text: str, answer_known_at: int, run_id: str = "hand") -> Path:
    """An organism-eval-shaped run holding one tiny-r1 trace, ``text``, with ``answer_known_at`` (hand-placed)."""
    path = root / "organism-eval" / run_id
    (path / "results").mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps({"model": "tiny-r1"}))
    (path / "meta.json").write_text(json.dumps({"kind": "organism-eval", "id": run_id, "status": "done"}))
    doc = {"models": [{"model": "tiny-r1", "traces": [{"question": "hand", "answer": "?", "text": text,
                                                        "answer_known_at": answer_known_at, "cues": []}]}]}
    (path / "results" / "organism_eval.json").write_text(json.dumps(doc))
    return path
