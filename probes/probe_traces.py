"""The texts behind a ``--target correct`` probe's score: one record per problem in ``results/probe_problems.json``
(its prompt, the model's greedy answer, whether it is right, and the probe's held-out probability that it is, at the
site the findings report), read by the trace viewer as generic records. The probe's ``most_wrong`` examples (largest
``|p - y|``) are the ones a link opens (:data:`MOST_WRONG_WHERE`; under a run's headline: :func:`headline_traces`).
Runs before it have no such file.

Example:
    >>> recs = problem_records(["Q0", "Q1", "Q2"], ["4", "7", "9"], [1, 0, 1], [0.9, 0.8, 0.3], ids=["a", "b", "c"],
    ...                        golds=["4", "6", "9"], site="resid_post.1", k=2)
    >>> [(r["id"], round(r["error"], 2), r["most_wrong"]) for r in recs]
    [('a', 0.1, False), ('b', 0.8, True), ('c', 0.7, True)]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold, cross_val_predict

from thinklens.runs.run_views import HeadlineTraces, headline_findings, read_result_json

PROBLEMS = "probe_problems"
"""The result (``results/probe_problems.json``) holding one record per problem."""
MOST_WRONG = 20
"""How many examples a run flags as its most wrong (all of them when it has fewer)."""
MOST_WRONG_WHERE = "most_wrong=true"
"""The trace viewer's filter of the most-wrong examples."""


def held_out_probabilities(probe: Any, X: np.ndarray, y: np.ndarray, *, folds: int, seed: int) -> np.ndarray:
    """``P(y = 1)`` of each row from the probe fitted on the other folds (stratified, shuffled, seeded as the sweep's
    folds, :func:`thinklens.probes.datasets.layer_sweep`): ``[row]``."""
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return cross_val_predict(clone(probe), np.asarray(X), y, cv=splitter, method="predict_proba")[:, 1]


def problem_records(prompts: Sequence[str], texts: Sequence[str], y: Sequence[int], p: Sequence[float], *,
                    ids: Sequence[Any], golds: Sequence[Any], site: str, k: int = MOST_WRONG) -> list[dict[str, Any]]:
    """One record per problem: prompt, answer text, gold, ``correct`` (the label), ``p_correct`` (held-out), ``error``
    ``|p - y|`` and ``most_wrong`` (among the ``k`` largest errors; ties: the earlier problem)."""
    errors = [abs(float(pi) - float(yi)) for pi, yi in zip(p, y)]
    worst = set(sorted(range(len(errors)), key=lambda i: (-errors[i], i))[:k])
    return [{"id": str(ids[i]), "prompt": prompts[i], "text": texts[i], "gold": str(golds[i]), "correct": bool(y[i]),
             "p_correct": float(p[i]), "error": errors[i], "site": site, "most_wrong": i in worst}
            for i in range(len(errors))]


def most_wrong_count(path: Path) -> int | None:
    """How many examples the run flags as most wrong; None when it predates per-problem traces."""
    file = Path(path) / "results" / f"{PROBLEMS}.json"
    return sum(bool(r.get("most_wrong")) for r in read_result_json(file)) if file.is_file() else None


def headline_traces(path: Path) -> list[HeadlineTraces]:
    """A correctness probe's score: the examples it gets most wrong (largest held-out ``|p - y|``); nothing for a value
    probe (it reads teacher-forced text, no generated answer) or a run that predates per-problem traces."""
    n = most_wrong_count(path)
    if not n:
        return []
    score = next((f for f in headline_findings(path) if isinstance(f.get("value"), (int, float))), None)
    what = f"{score.get('statistic', 'score')} {score['value']:.3f}: " if score else ""
    return [HeadlineTraces(f"{what}the {n} examples it gets most wrong", where=MOST_WRONG_WHERE)]
