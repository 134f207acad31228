"""Findings of ``thinklens run thought-anchors`` (shared/specs/controls.md).

The unit is a trace. The anchor of a trace is chosen by one measure and its importance reported by another, so the
choice and the report use independent samples (choosing and reporting the top sentence on the same samples would
find an "anchor" in noise: the maximum of S noisy scores is above their mean):

- *resampling agrees*: each trace's sentence of highest forced-answer importance, its resampling importance against
  the mean resampling importance of the trace's other sentences, paired over traces (sign-flip test, bootstrap
  interval; :func:`thinklens.calibration.findings.paired_finding`);
- *suppression agrees*: the same sentence's attention-suppression importance against the other sentences' mean;
- *receivers agree*: the same for the receiver-head score.

A trace whose forced-answer importance has no single maximum (a tie, e.g. no sentence moves the forced answer) has no
anchor and is left out of the findings.

Example:
    >>> rows = [{"scores": {"forced": [0.0, 1.0, 0.0], "resampling": [0.1, 0.6 + k / 100, 0.0]}} for k in range(12)]
    >>> f = anchor_findings(rows, model="m")[0]
    >>> f.verdict, f.n
    ('effect', 12)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from thinklens.calibration.findings import Finding, paired_finding

CHOOSER = "forced"
"""The measure that picks each trace's anchor."""
REPORTED = {"resampling": "counterfactual resampling importance (accuracy difference)",
            "suppression": "attention-suppression importance (mean KL on later sentences, nats)",
            "receivers": "receiver-head score (mean attention received)"}
"""The measures each finding reports at the chosen anchor, with their statistic."""


def anchor_vs_rest(scores: dict[str, Sequence[float]], measure: str) -> tuple[float, float] | None:
    """The ``measure``'s value at the :data:`CHOOSER`'s top sentence, and its mean over the other sentences; None when
    either is missing."""
    chooser, other = scores.get(CHOOSER), scores.get(measure)
    if chooser is None or other is None or len(chooser) < 2:
        return None
    c, o = np.asarray(chooser, dtype=float), np.asarray(other, dtype=float)
    c = np.where(np.isfinite(c), c, -np.inf)
    top = int(np.argmax(c))
    if (c == c[top]).sum() > 1:  # no single anchor (e.g. no sentence moves the forced answer): the trace picks none
        return None
    rest = np.delete(o, top)
    rest = rest[np.isfinite(rest)]
    if not np.isfinite(o[top]) or not rest.size:
        return None
    return float(o[top]), float(rest.mean())


def anchor_findings(traces: Sequence[dict[str, Any]], *, model: str, seed: int = 0) -> list[Finding]:
    """One finding per reported measure present in the traces (each trace's ``scores``: measure -> per-sentence)."""
    out = []
    for measure, statistic in REPORTED.items():
        pairs = [p for t in traces if (p := anchor_vs_rest(t.get("scores", {}), measure)) is not None]
        if not pairs:
            continue
        top, rest = zip(*pairs)
        out.append(paired_finding(f"{model}: the sentence whose removal most changes the forced answer is also the most "
                                  f"important by {measure}", top, rest, control="the trace's other sentences (mean)",
                                  statistic=statistic, seed=seed))
    return out
