"""Findings of ``thinklens run tuned-lens``: the tuned lens against the logit lens on held-out texts, and the answer's
lead along traces (shared/specs/controls.md).

The unit of every interval is a held-out text (its tokens' mean KL), never a token: tokens of one text share their
context. Per block: each lens's mean KL to the final output with its bootstrap interval, their difference with its
paired bootstrap interval and sign-flip p value (:func:`thinklens.calibration.stats.paired_bootstrap`). Findings:

- *every block*: the worst block's KL reduction (``min`` over blocks of the mean of ``logit - tuned``), its interval
  by resampling texts (:func:`thinklens.calibration.stats.bootstrap_units`); ``effect`` when it excludes 0, i.e.
  the tuned lens is below the logit lens at every block at once (Belrose et al.'s claim). The last block is left out:
  it has no translator, and both lenses are the model's output there (KL 0).
- *mean over blocks*: each text's mean KL over the blocks, tuned against logit, paired
  (:func:`thinklens.calibration.findings.paired_finding`, lower is the effect).
- *the answer's lead* (traces with a stated answer): the steps between the first step where some block's lens has the
  answer's token on top and the step where the model writes it, tuned against logit, paired over traces.

Example:
    >>> import numpy as np
    >>> logit = np.array([[3.0, 1.0, 0.0]] * 12) + np.linspace(0, 0.1, 12)[:, None]
    >>> tuned = logit - np.array([1.0, 0.2, 0.0])
    >>> f = every_block_finding(logit, tuned, model="m")
    >>> f.verdict, round(f.value, 3), f.n
    ('effect', 0.2, 12)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from thinklens.calibration.findings import Finding, _num, paired_finding, verdict_from_interval
from thinklens.calibration.stats import bootstrap_ci, bootstrap_units, paired_bootstrap

LOGIT = "logit lens"
"""The control every tuned-lens finding is measured against."""


def layer_table(logit: np.ndarray, tuned: np.ndarray, *, seed: int = 0) -> list[dict[str, Any]]:
    """Per block (``[text, layer]`` arrays of per-text mean KL): both lenses' means with 95% bootstrap intervals, the
    reduction ``logit - tuned`` with its paired interval and sign-flip p."""
    rows = []
    for li in range(logit.shape[1]):
        pr = paired_bootstrap(logit[:, li], tuned[:, li], seed=seed)
        row: dict[str, Any] = {"layer": li}
        for name, kl in (("logit", logit[:, li]), ("tuned", tuned[:, li])):
            row.update({f"{name}_kl": _num(kl.mean()), f"{name}_ci": [_num(x) for x in bootstrap_ci(kl, seed=seed)]})
        rows.append({**row, "reduction": _num(pr.diff), "reduction_ci": [_num(x) for x in pr.ci], "p": _num(pr.p), "n": pr.n})
    return rows


def every_block_finding(logit: np.ndarray, tuned: np.ndarray, *, model: str, seed: int = 0, lens: str = "tuned lens") -> Finding:
    """The worst block's KL reduction of ``lens`` against the logit lens, blocks ``0 .. L-2`` (``[text, layer]`` arrays
    over all ``L`` blocks); ``effect`` when its interval lies above 0."""
    diff = (logit - tuned)[:, :-1]  # [text, layer]: the last block has no translator
    means = diff.mean(0)  # [layer]
    worst = int(np.argmin(means))
    ci = bootstrap_units(diff.shape[0], lambda idx: diff[idx].mean(1).min(1), seed=seed)  # idx [boot, text]
    verdict = verdict_from_interval(ci, 0.0, n=diff.shape[0])
    return Finding(f"{model}: the {lens}'s held-out KL to the final output is below the logit lens's at every block",
                   "worst-block KL reduction (nats)", float(means[worst]), ci, diff.shape[0], f"{LOGIT} (no reduction)", 0.0,
                   verdict, extra={"worst_block": worst, "blocks": diff.shape[1], "unit": "held-out text",
                                   "interval": "percentile bootstrap over texts of the minimum over blocks (95%)"})


def mean_block_finding(logit: np.ndarray, tuned: np.ndarray, *, model: str, seed: int = 0, lens: str = "tuned lens") -> Finding:
    """Each text's mean KL over blocks ``0 .. L-2``, ``lens`` against the logit lens, paired over texts."""
    return paired_finding(f"{model}: the {lens}'s held-out KL to the final output, averaged over blocks, is below the logit lens's",
                          tuned[:, :-1].mean(1), logit[:, :-1].mean(1), control=LOGIT, statistic="mean KL over blocks (nats)",
                          higher_is_effect=False, seed=seed)


def lead_finding(traces: Sequence[dict[str, Any]], *, model: str, seed: int = 0) -> Finding | None:
    """Steps of lead (the answer written minus the first step where a block's lens has it on top), tuned against logit,
    paired over the traces read (rows of the job's ``traces`` table); None without traces."""
    rows = [t for t in traces if t.get("answer_step") is not None]
    if not rows:
        return None
    lead = {name: [t["answer_step"] - (t["first"][name][0] if t["first"][name] else t["answer_step"]) for t in rows]
            for name in ("logit", "tuned")}
    return paired_finding(f"{model}: the tuned lens has the answer's token on top earlier in the trace than the logit lens",
                          lead["tuned"], lead["logit"], control=LOGIT, statistic="steps of lead before the answer is written",
                          seed=seed)


def lens_findings(logit: np.ndarray, tuned: np.ndarray, *, model: str, traces: Sequence[dict[str, Any]] = (),
                  seed: int = 0) -> list[Finding]:
    """Every finding of a tuned-lens run (see the module's docstring)."""
    out = [every_block_finding(logit, tuned, model=model, seed=seed), mean_block_finding(logit, tuned, model=model, seed=seed)]
    lead = lead_finding(traces, model=model, seed=seed)
    return out + ([lead] if lead is not None else [])
