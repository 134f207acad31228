"""The findings of an evaluation (``thinklens run eval``, ``zoo-eval``, the trainers' held-out accuracy), built with
:mod:`thinklens.calibration.stats`, and the control every accuracy of free-form answers is measured against: the majority guess.

- :func:`~thinklens.calibration.findings.majority_correct` (in the core, which every evaluation's findings share):
  which problems a constant guess of the most frequent gold answer gets right (per group
  when given, e.g. per number of steps: a guesser that knows the group). Free-form answers have no chance level; the
  majority guess is the strongest answer-blind predictor that the gold answers themselves allow.
- :func:`eval_findings`: a model's accuracy against the majority guess on the same problems (McNemar with one
  completion per problem; with several samples the per-problem accuracy, sign-flip test), and, for a format with a
  thinking span, its reasoning tokens against its answer tokens on the same completions (sign-flip), the mean token
  count with its bootstrap interval. Without a thinking span every completion has 0 reasoning tokens by
  construction, so there is no such finding (it once read "not shown to write more reasoning than answer
  tokens" on a model that cannot write any).

Example:
    >>> majority_correct(["3", "5", "3", "7"])
    [True, False, True, False]
    >>> rows = [{"i": i, "sample": 0, "gold": str(i % 7), "correct": i % 3 > 0, "n_tokens": 12,
    ...          "n_reasoning_tokens": 10, "n_answer_tokens": 2} for i in range(60)]
    >>> [(f["statistic"], f["verdict"]) for f in eval_findings(rows, model="m", data="d")]
    [('accuracy', 'effect'), ('mean reasoning tokens', 'effect')]
    >>> [f["statistic"] for f in eval_findings(rows, model="m", data="d", thinking_span=False)]
    ['accuracy']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from thinklens.calibration.findings import MAJORITY, findings_doc, majority_correct, paired_finding
from thinklens.calibration.stats import bootstrap_ci


def _per_problem(rows: Sequence[Mapping[str, Any]], key: str) -> dict[int, float]:
    out: dict[int, list[float]] = {}
    for r in rows:
        out.setdefault(int(r["i"]), []).append(float(r[key]))
    return {i: float(np.mean(v)) for i, v in out.items()}


def eval_findings(rows: Sequence[Mapping[str, Any]], *, model: str, data: str, seed: int = 0,
                  thinking_span: bool | None = None) -> list[dict[str, Any]]:
    """The findings of an eval run from its completion rows (``i``, ``sample``, ``gold``, ``correct`` and the token
    counts, as :func:`thinklens.analyses.evaluation.completion_row` writes them); units are problems (a problem's samples are
    averaged first, so they do not count as independent).

    ``thinking_span``: whether the prompt format has a thinking span (the eval job passes it); False: no reasoning-
    token finding. None (rows from elsewhere): a span is assumed only when some completion has reasoning tokens."""
    graded = [r for r in rows if r.get("gold") is not None]
    found = []
    if graded:
        acc = _per_problem(graded, "correct")  # problem -> fraction of its samples right
        ids = sorted(acc)
        gold = {int(r["i"]): r["gold"] for r in graded}
        control = majority_correct([gold[i] for i in ids])
        one_each = len(graded) == len(ids)
        f = paired_finding(f"{model} answers {data} better than a {MAJORITY}", [acc[i] for i in ids],
                           [float(c) for c in control], control=f"{MAJORITY} (same problems)", statistic="accuracy",
                           binary=one_each, ceiling=1.0, seed=seed)
        f.extra.update(otherwise=f"{model} not shown to beat always giving the most frequent answer",
                       units="problems" if one_each else "problems (accuracy over each problem's samples)",
                       samples=len(graded) // max(1, len(ids)))
        found.append(f)
    if thinking_span is None:
        thinking_span = any(r.get("n_reasoning_tokens") for r in rows)
    if not thinking_span:  # no span: 0 reasoning tokens by construction, nothing to claim
        return findings_doc(found)
    reasoning, answer, total = (_per_problem(rows, k) for k in ("n_reasoning_tokens", "n_answer_tokens", "n_tokens"))
    ids = sorted(total)
    t = paired_finding(f"{model} writes more reasoning tokens than answer tokens", [reasoning[i] for i in ids],
                       [answer[i] for i in ids], control="answer tokens (same completions)",
                       statistic="mean reasoning tokens", seed=seed)
    t.extra.update(otherwise=f"{model} not shown to write more reasoning than answer tokens",
                   mean_tokens=float(np.mean([total[i] for i in ids])),
                   mean_tokens_ci=list(bootstrap_ci([total[i] for i in ids], seed=seed)))
    found.append(t)
    return findings_doc(found)
