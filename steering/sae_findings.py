"""The findings of an SAE's fidelity (the ``sae`` and ``sae-eval`` jobs; shared/specs/controls.md).

Every number rests on the positions that predict a token the model generated (:mod:`thinklens.steering.sae_fidelity`: never
prompt or padding positions), and its interval is a percentile bootstrap over the generated texts (rows), each
row's sums resampled together:

- ``CE loss recovered`` = ``(CE_zero - CE_sae) / (CE_zero - CE_clean)`` against the zero-ablation control (0 by
  definition): ``effect`` when the interval lies above 0. ``at ceiling`` when zero-ablating the site costs nothing
  (no loss to recover). A value above 1 means the spliced SAE predicts the generated tokens *better* than the clean
  model, which a faithful reconstruction cannot do: the claim says so and ``extra["flag"]`` holds the comment (it
  was the symptom of scoring padding and prompt positions); below 0 the SAE hurts more than zero-ablation. Either
  is flagged only beyond :data:`RANGE_TOLERANCE` (float32 rounding puts a perfect SAE at 1.00008).
- ``KL recovered`` (sae-lens's KL score) = ``(KL_zero - KL_sae) / KL_zero``, against zero ablation likewise.
- ``explained variance`` = ``1 - sum |x - x_hat|^2 / sum |x - mean|^2`` at the same positions (mean: their pooled
  mean), against predicting the mean (0); the claim carries the SAE's L0 in plain words (:func:`format_l0`).

A resample whose zero-ablation gap is not positive (the recovery is undefined there) counts as no recovery (0).

An SAE with more than :data:`MAX_DEAD_SHARE` of its features dead (never active on the held-out data) is flagged
(:func:`dead_feature_warning`): the explained-variance claim carries the flag and the run's summary its ``warnings``.

Example:
    >>> per_row = {"ce_clean": [1.0] * 20, "ce_sae": [1.5] * 20, "ce_zero": [6.0] * 20, "kl_sae": [0.4] * 20,
    ...            "kl_zero": [5.0] * 20, "res_ss": [1.0] * 20, "tot_ss": [10.0] * 20, "tokens": [4] * 20}
    >>> fs = sae_findings({"site": "resid_post.2", "l0": 32.0, "per_row": per_row})
    >>> [(f.statistic, round(f.value, 3), f.verdict) for f in fs]
    [('CE loss recovered', 0.9, 'effect'), ('KL recovered', 0.92, 'effect'), ('explained variance', 0.9, 'effect')]
    >>> fs[2].claim
    'the SAE at resid_post.2 (L0 32: active features per token) explains the activations at generated tokens'
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from thinklens.calibration.findings import Finding, verdict_from_interval
from thinklens.calibration.stats import bootstrap_units
from thinklens.errors import ThinklensError

ZERO_ABLATION = "zero ablation"
MEAN = "predicting the mean activation"
RANGE_TOLERANCE = 1e-3
"""How far outside [0, 1] a recovery may fall before it is flagged, as a share of the zero-ablation gap: an SAE as
good as the clean model recovers 1 up to float32 rounding of the summed losses (1.00008 was seen), while scoring the
wrong positions put it well above (the flag's reason)."""
MAX_DEAD_SHARE = 0.5
"""A share of dead features above this is flagged, stated before any run: most of the dictionary then codes nothing
(an SAE trained too briefly, at a too high learning rate, or on a residual whose mean it never learned)."""


def dead_feature_warning(metrics: Mapping[str, Any]) -> str | None:
    """The warning for an SAE with more than :data:`MAX_DEAD_SHARE` of its features dead, or None.

    ``metrics``: ``dead_features`` and ``d_sae`` (sae-lens's evals or :func:`thinklens.steering.sae.row_metrics`).

    Example:
        >>> dead_feature_warning({"dead_features": 333, "d_sae": 512})[:70]
        '333 of 512 features (65%) are dead (never active on the held-out data)'
        >>> dead_feature_warning({"dead_features": 20, "d_sae": 512}) is None
        True
    """
    dead, d_sae = metrics.get("dead_features"), metrics.get("d_sae")
    if not isinstance(dead, (int, float)) or not isinstance(d_sae, (int, float)) or d_sae <= 0:
        return None
    share = dead / d_sae
    if share <= MAX_DEAD_SHARE:
        return None
    return (f"{int(dead)} of {int(d_sae)} features ({share:.0%}) are dead (never active on the held-out data), more than "
            f"the {MAX_DEAD_SHARE:.0%} flagged: most of the dictionary codes nothing; train longer, lower the learning "
            "rate, or use fewer features")


def format_l0(l0: float | None) -> str:
    """L0 (mean active features per token) as a reader wants it: a whole number when it is one (a top-k SAE's
    ``32``, not ``32.000``), else one decimal.

    Example:
        >>> format_l0(32.0), format_l0(31.94), format_l0(None)
        ('32', '31.9', '-')
    """
    if l0 is None or (isinstance(l0, float) and math.isnan(l0)):
        return "-"
    return f"{l0:.0f}" if abs(l0 - round(l0)) < 0.05 else f"{l0:.1f}"


def sae_warnings(metrics: Mapping[str, Any]) -> list[str]:
    """What a run must say about its SAE whatever its findings (the summary's ``warnings``): too many dead features."""
    return [w for w in (dead_feature_warning(metrics),) if w]


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` where ``den > 0``, else 0 (an undefined recovery counts as none)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)



def _columns(per_row: Mapping[str, Sequence[float]], keys: Sequence[str]) -> dict[str, np.ndarray]:
    missing = [k for k in keys if k not in per_row]
    if missing:
        raise ThinklensError.of("per-row fidelity sums", sorted(per_row), f"the keys {', '.join(keys)}",
                                "pass the 'per_row' of thinklens.steering.sae_fidelity.sae_fidelity")
    cols = {k: np.asarray(per_row[k], dtype=np.float64) for k in keys}
    if len({c.size for c in cols.values()}) != 1:
        raise ThinklensError.of("per-row fidelity sums", {k: c.size for k, c in cols.items()}, "one value per row in each",
                                "pass the 'per_row' of one sae_fidelity call")
    return cols


def _range_comment(value: float, what: str) -> str | None:
    """The flag of a recovery outside [0, 1] by more than :data:`RANGE_TOLERANCE`, else None.

    Example:
        >>> _range_comment(1.00008, "CE loss recovered") is None, _range_comment(1.02, "CE loss recovered")[:30]
        (True, 'CE loss recovered above 1: the')
    """
    if value > 1 + RANGE_TOLERANCE:
        return (f"{what} above 1: the SAE-spliced model predicts the generated tokens better than the clean model, "
                "which a faithful reconstruction cannot do; check which positions are scored")
    if value < -RANGE_TOLERANCE:
        return f"{what} below 0: splicing the SAE in hurts more than zero-ablating the site"
    return None


def recovered_finding(claim: str, statistic: str, zero: np.ndarray, sae: np.ndarray, base: np.ndarray, *,
                      seed: int = 0, what_costs: str) -> Finding:
    """``(sum zero - sum sae) / (sum zero - sum base)`` over rows, with its bootstrap interval, against zero ablation.

    Args:
        zero, sae, base: per-row sums (CE or KL) with the site zero-ablated, with the SAE spliced in, and of the clean
            model (zeros for the KL, whose clean value is 0).
        what_costs: the quantity in words, for the comment when zero-ablation costs nothing.
    """
    n = int(zero.size)
    gap = float(zero.sum() - base.sum())
    extra: dict[str, Any] = {"interval": "percentile bootstrap over generated texts", "rows": n,
                             "zero_ablation": round(float(zero.sum()), 6), "clean": round(float(base.sum()), 6),
                             "with_sae": round(float(sae.sum()), 6)}
    if gap <= 0:
        nan = float("nan")
        extra["otherwise"] = f"zero-ablating the site costs no {what_costs} here: nothing to recover"
        return Finding(claim, statistic, nan, (nan, nan), n, ZERO_ABLATION, 0.0, "at ceiling", extra=extra)
    value = float(zero.sum() - sae.sum()) / gap
    ci = bootstrap_units(n, lambda idx: _ratio(zero[idx].sum(1) - sae[idx].sum(1), zero[idx].sum(1) - base[idx].sum(1)), seed=seed)
    comment = _range_comment(value, statistic)
    if comment:
        claim, extra["flag"] = f"{claim} [{comment}]", comment
    return Finding(claim, statistic, value, ci, n, ZERO_ABLATION, 0.0, verdict_from_interval(ci, 0.0, n=n), extra=extra)


def sae_findings(metrics: Mapping[str, Any], *, seed: int = 0) -> list[Finding]:
    """CE loss recovered, KL recovered and explained variance of an SAE from :func:`thinklens.steering.sae_fidelity.sae_fidelity`'s
    ``per_row`` sums (``metrics`` also gives ``site`` and ``l0``)."""
    per_row = metrics.get("per_row")
    if not per_row:
        raise ThinklensError.of("SAE metrics", sorted(metrics), "the per-row sums of sae_fidelity ('per_row')",
                                "compute the metrics with thinklens.steering.sae_fidelity.sae_fidelity")
    c = _columns(per_row, ("ce_clean", "ce_sae", "ce_zero", "kl_sae", "kl_zero", "res_ss", "tot_ss", "tokens"))
    site = metrics.get("site") or "its site"
    tokens = int(c["tokens"].sum())
    out = [recovered_finding(f"the SAE at {site} recovers the next-token loss that zero-ablating it loses",
                             "CE loss recovered", c["ce_zero"], c["ce_sae"], c["ce_clean"], seed=seed,
                             what_costs="cross-entropy"),
           recovered_finding(f"the SAE at {site} recovers the next-token distribution that zero-ablating it loses",
                             "KL recovered", c["kl_zero"], c["kl_sae"], np.zeros_like(c["kl_zero"]), seed=seed,
                             what_costs="KL divergence")]
    out.append(variance_finding(c["res_ss"], c["tot_ss"], site=site, l0=metrics.get("l0"), seed=seed,
                                where="at generated tokens", warning=dead_feature_warning(metrics)))
    return [dataclasses.replace(f, extra={**f.extra, "tokens": tokens, "scored_on": "generated tokens"}) for f in out]


def variance_finding(res_ss: np.ndarray, tot_ss: np.ndarray, *, site: str, l0: float | None, seed: int = 0,
                     where: str, warning: str | None = None) -> Finding:
    """Explained variance ``1 - sum res_ss / sum tot_ss`` over units (rows), with its bootstrap interval, against
    predicting the mean (0); ``warning`` (:func:`dead_feature_warning`) goes into the claim and ``extra["warning"]``."""
    res_ss, tot_ss = np.asarray(res_ss, dtype=np.float64), np.asarray(tot_ss, dtype=np.float64)
    n = int(res_ss.size)
    value = 1.0 - float(res_ss.sum()) / float(tot_ss.sum()) if tot_ss.sum() > 0 else float("nan")
    ci = bootstrap_units(n, lambda idx: 1.0 - _ratio(res_ss[idx].sum(1), tot_ss[idx].sum(1)), seed=seed)
    claim = f"the SAE at {site} (L0 {format_l0(l0)}: active features per token) explains the activations {where}"
    extra: dict[str, Any] = {"interval": "percentile bootstrap over units", "l0": format_l0(l0)}
    if value < 0:
        extra["flag"] = "explained variance below 0: the reconstruction is further from the activations than their mean"
        claim = f"{claim} [{extra['flag']}]"
    if warning:
        extra["warning"] = warning
        claim = f"{claim} [{warning}]"
    verdict = "too few samples" if math.isnan(value) else verdict_from_interval(ci, 0.0, n=n)
    return Finding(claim, "explained variance", value, ci, n, MEAN, 0.0, verdict, extra=extra)


def rows_variance_finding(sae: Any, rows: Any, *, site: str, l0: float | None, seed: int = 0,
                          warning: str | None = None) -> Finding:
    """Explained variance of ``sae`` on held-out activation rows ``[rows, d]`` (one unit per row), for an SAE trained
    on stored rows (no model, so no CE or KL)."""
    with torch.no_grad():
        x = rows.to(next(sae.parameters()).device, torch.float32)  # [rows, d]
        xhat = sae(x)  # [rows, d]
        res = ((x - xhat) ** 2).sum(-1).double().cpu().numpy()  # [rows]
        tot = ((x - x.mean(0)) ** 2).sum(-1).double().cpu().numpy()  # [rows]
    return variance_finding(res, tot, site=site, l0=l0, seed=seed, where="on held-out stored rows", warning=warning)

