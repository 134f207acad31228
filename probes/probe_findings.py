"""The probe job's findings (shared/specs/controls.md): the best site's score with its interval, against its control,
the site chosen honestly.

The layer choice is made on a held-out split, grouped by problem: the problems are split in two (seeded; stratified
by label for the correct target); the site is chosen by the cross-validated score on the *selection* half
(:func:`thinklens.probes.datasets.layer_sweep`), and every reported number comes from the *report* half alone (out-of-fold
predictions of a probe cross-validated within it, all positions of one problem in one fold). The sweep's own
full-data best score (the summary's ``best_score``) is optimistic by the winner's curse; the findings are not.

- ``correct`` target: the AUROC at the chosen site with a percentile bootstrap interval over the report problems,
  against the shuffled-label probe at the same site or chance (0.5), whichever is higher (the control task of
  Hewitt and Liang 2019: labels permuted over the report problems, predicted out of fold and scored against the
  permuted labels; the mean of :data:`N_SHUFFLES` permutations); the accuracy (Wilson) against the majority class
  (``at ceiling`` when even a perfect probe could not beat it significantly, :func:`thinklens.calibration.findings.no_headroom`);
  on synthetic problems the AUROC against the steps-only probe (problem difficulty) on the same problems, the
  difference bootstrapped paired.
- ``intermediate`` target: the pooled R^2 at the chosen site with a bootstrap interval over report problems
  (positions of a problem resampled together), against the shuffled-label probe (values permuted over the report
  rows, scored against the permuted values) or predicting the mean (0).

Verdicts: ``effect`` when the interval lies above the control; ``at ceiling`` when the control leaves no room (the
majority class, or a steps-only probe that ranks every problem right); ``too few samples`` below
:data:`thinklens.calibration.findings.MIN_N` report problems, or when a half cannot be cross-validated.

Example:
    >>> rng = np.random.default_rng(0); y = np.tile([0, 1], 40)
    >>> X = {"a": rng.normal(size=(80, 3)), "b": rng.normal(size=(80, 3)) + 2.0 * y[:, None]}
    >>> fs = probe_findings(X, y, target="correct", folds=3)
    >>> [(f.statistic, f.verdict) for f in fs], fs[0].extra["site"]
    ([('auroc', 'effect'), ('accuracy', 'effect')], 'b')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.stats import rankdata
from sklearn.base import clone
from sklearn.model_selection import GroupKFold, KFold, StratifiedGroupKFold, StratifiedKFold, cross_val_predict

from thinklens.calibration.findings import Finding, accuracy_finding, no_headroom, verdict_from_interval
from thinklens.calibration.stats import bootstrap_units, split_indices
from thinklens.errors import ThinklensError, opt
from thinklens.probes.datasets import layer_sweep
from thinklens.probes.estimators import LinearProbe, RidgeProbe

#: Label permutations of the shuffled-label control (its score is their mean: one permutation is noisy).
N_SHUFFLES = 5
#: Share of the problems on which the site is chosen; the findings are reported on the rest.
SELECT_FRACTION = 0.5
CHANCE_AUROC = 0.5


# ---------------------------------------------------------------- statistics over resampled problems


def auroc_rows(scores: np.ndarray, y: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """AUROC (rank formula, ties half) of each resample ``idx [n_boot, n]`` of ``(scores, y)``; 0.5 for a
    resample holding one class only (no ranking to score).

    Example:
        >>> float(auroc_rows(np.array([0.1, 0.6, 0.6, 0.9]), np.array([0, 0, 1, 1]), np.arange(4)[None])[0])
        0.875
    """
    s, lab = scores[idx], y[idx].astype(np.float64)  # [n_boot, n]
    ranks = rankdata(s, axis=1)  # average ranks for ties
    n1 = lab.sum(axis=1)
    n0 = lab.shape[1] - n1
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = ((ranks * lab).sum(axis=1) - n1 * (n1 + 1) / 2) / (n1 * n0)
    return np.where((n1 > 0) & (n0 > 0), auc, CHANCE_AUROC)


def r2_rows(pred: np.ndarray, y: np.ndarray, groups: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Pooled R^2 of each resample ``idx [n_boot, n_groups]`` of whole groups (a problem's positions together)."""
    _, g = np.unique(groups, return_inverse=True)
    count = np.bincount(g).astype(np.float64)  # [group]
    sy, syy = np.bincount(g, weights=y), np.bincount(g, weights=y * y)
    sse = np.bincount(g, weights=(y - pred) ** 2)
    n, s, ss, e = count[idx].sum(1), sy[idx].sum(1), syy[idx].sum(1), sse[idx].sum(1)  # [n_boot]
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - e / (ss - s * s / n)



# ---------------------------------------------------------------- the held-out choice


@dataclasses.dataclass(frozen=True)
class HeldOutChoice:
    """A site chosen on the selection half and the report half's out-of-fold predictions."""

    site: str
    """The chosen site."""
    select_scores: dict[str, float]
    """Mean CV score per site on the selection half."""
    report: np.ndarray
    """Row indices of the report half."""
    pred: dict[str, np.ndarray]
    """Out-of-fold predictions on the report rows (P(correct) for labels): ``site`` (the chosen site) and
    ``control`` (the control features, when given)."""
    shuffled: list[tuple[np.ndarray, np.ndarray]]
    """The shuffled-label probes at the chosen site: ``(permuted labels, out-of-fold predictions of them)``."""
    folds: int
    """Folds used within each half."""
    n_select: int
    """Problems in the selection half."""
    n_report: int
    """Problems in the report half."""


def _halves(y: np.ndarray, groups: np.ndarray | None, classify: bool, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of the two halves, split by problem (stratified by label for one row per problem)."""
    if groups is not None:
        units = np.unique(groups)
        sel, _ = split_indices(len(units), fraction=SELECT_FRACTION, seed=seed)
        in_sel = np.isin(groups, units[sel])
        return np.flatnonzero(in_sel), np.flatnonzero(~in_sel)
    if classify:
        parts = [np.flatnonzero(y == c) for c in np.unique(y)]
        picked = [p[split_indices(len(p), fraction=SELECT_FRACTION, seed=seed)[0]] if len(p) >= 2 else p[:0]
                  for p in parts]
        sel = np.sort(np.concatenate(picked))
        return sel, np.setdiff1d(np.arange(len(y)), sel)
    sel, rep = split_indices(len(y), fraction=SELECT_FRACTION, seed=seed)
    return sel, rep


def _folds_for(y: np.ndarray, groups: np.ndarray | None, classify: bool, folds: int) -> int:
    """The folds one half allows (each class, and each fold, needs a member)."""
    if classify:
        counts = np.unique(y, return_counts=True)[1]
        return int(min(folds, counts.min())) if len(counts) > 1 else 0
    return int(min(folds, len(np.unique(groups)) if groups is not None else len(y)))


def _oof(X: np.ndarray, y: np.ndarray, groups: np.ndarray | None, probe: Any, classify: bool, folds: int,
         seed: int) -> np.ndarray:
    """Out-of-fold predictions of ``probe`` (grouped folds when ``groups``), P(class 1) for labels."""
    if groups is None:
        cv = (StratifiedKFold if classify else KFold)(n_splits=folds, shuffle=True, random_state=seed)
    else:
        cv = (StratifiedGroupKFold if classify else GroupKFold)(n_splits=folds, shuffle=True, random_state=seed)
    out = cross_val_predict(clone(probe), X, y, cv=cv, groups=groups, method="predict_proba" if classify else "predict")
    return out[:, 1] if classify else out


def held_out_choice(features: Mapping[str, np.ndarray], y: np.ndarray, *, probe: Any, classify: bool, folds: int,
                    seed: int = 0, groups: np.ndarray | None = None,
                    control: np.ndarray | None = None) -> HeldOutChoice | None:
    """Choose the site on one half of the problems, predict out of fold on the other (None when a half cannot be
    cross-validated: too few problems, or one class only)."""
    y = np.asarray(y)
    sel, rep = _halves(y, groups, classify, seed)
    g_sel = None if groups is None else groups[sel]
    g_rep = None if groups is None else groups[rep]
    f_sel, f_rep = _folds_for(y[sel], g_sel, classify, folds), _folds_for(y[rep], g_rep, classify, folds)
    if min(f_sel, f_rep) < 2:
        return None
    sweep = layer_sweep({s: np.asarray(X)[sel] for s, X in features.items()}, y[sel], probe=probe, folds=f_sel, seed=seed,
                        task="classification" if classify else "regression", groups=g_sel,
                        scoring="roc_auc" if classify else "r2")
    site = sweep.best
    X_rep = np.asarray(features[site])[rep]
    pred = {"site": _oof(X_rep, y[rep], g_rep, probe, classify, f_rep, seed)}
    shuffled = []
    for i in range(N_SHUFFLES):  # the control task: held-out predictions of labels permuted over the report rows
        perm = np.random.default_rng([seed, 7, i]).permutation(y[rep])
        shuffled.append((perm, _oof(X_rep, perm, g_rep, probe, classify, f_rep, seed)))
    if control is not None:
        pred["control"] = _oof(np.asarray(control)[rep], y[rep], g_rep, probe, classify, f_rep, seed)
    n_units = (lambda idx: len(np.unique(groups[idx]))) if groups is not None else len
    return HeldOutChoice(site, {s: float(m) for s, m in zip(sweep.sites, sweep.mean)}, rep, pred, shuffled, f_rep,
                         n_units(sel), n_units(rep))


# ---------------------------------------------------------------- findings


def _choice_extra(choice: HeldOutChoice) -> dict[str, Any]:
    return {"site": choice.site, "layer_choice": f"held-out split: site chosen by {choice.folds}-fold CV on "
            f"{choice.n_select} problems, scored on {choice.n_report} others (CV within them)",
            "select_scores": {s: round(v, 6) for s, v in choice.select_scores.items()},
            "n_select": choice.n_select, "folds": choice.folds}


def too_few(claim: str, statistic: str, control: str, control_value: float, n: int, why: str) -> Finding:
    """A finding that could not be measured on this many problems."""
    nan = float("nan")
    return Finding(claim, statistic, nan, (nan, nan), n, control, control_value, "too few samples", extra={"why": why})


def correct_findings(features: Mapping[str, np.ndarray], y: np.ndarray, *, probe: Any, folds: int, seed: int = 0,
                     steps: np.ndarray | None = None) -> list[Finding]:
    """The correct target's findings: AUROC vs the shuffled-label probe (or chance), accuracy vs the majority class,
    and (with ``steps``, one-hot difficulty features) AUROC vs the steps-only probe, paired."""
    y = np.asarray(y).astype(np.int64)
    claim = "a probe at the last prompt token predicts whether the model's answer is right"
    choice = held_out_choice(features, y, probe=probe, classify=True, folds=folds, seed=seed, control=steps)
    if choice is None:
        return [too_few(claim, "auroc", "chance", CHANCE_AUROC, len(y), "a half of the problems has fewer than 2 of "
                        "one outcome: no held-out layer choice")]
    yr, p, n = y[choice.report], choice.pred["site"], len(choice.report)
    auc = float(auroc_rows(p, yr, np.arange(n)[None])[0])
    ci = bootstrap_units(n, lambda idx: auroc_rows(p, yr, idx), seed=seed)
    shuffled = float(np.mean([auroc_rows(q, perm, np.arange(n)[None])[0] for perm, q in choice.shuffled]))
    control_value = max(CHANCE_AUROC, shuffled)
    extra = {**_choice_extra(choice), "interval": "percentile bootstrap over problems", "chance": CHANCE_AUROC,
             "shuffled_label_auroc": round(shuffled, 6), "shuffles": len(choice.shuffled)}
    out = [Finding(f"{claim} ({choice.site})", "auroc", auc, ci, n, "shuffled-label probe or chance, the higher",
                   control_value, verdict_from_interval(ci, control_value, n=n), extra=extra)]
    k = int(np.sum((p >= 0.5) == yr))
    major = int(max(yr.sum(), n - yr.sum()))
    acc = accuracy_finding(f"the probe at {choice.site} beats always guessing the majority outcome", k, n,
                           control="majority class", control_value=major / n)
    if acc.verdict == "no effect" and no_headroom(major, n):
        acc = dataclasses.replace(acc, verdict="no headroom")  # the majority guess leaves no room to show a gain
    out.append(dataclasses.replace(acc, extra={**acc.extra, "site": choice.site, "majority_k": major}))
    if "control" in choice.pred:
        c = choice.pred["control"]
        ctrl = float(auroc_rows(c, yr, np.arange(n)[None])[0])
        diff_ci = bootstrap_units(n, lambda idx: auroc_rows(p, yr, idx) - auroc_rows(c, yr, idx), seed=seed)
        verdict = verdict_from_interval(diff_ci, 0.0, n=n)
        if verdict == "no effect" and ctrl >= 1.0:  # difficulty alone ranks every problem: no AUROC could beat it
            verdict = "at ceiling"
        out.append(Finding(f"the probe at {choice.site} knows more than the problem's number of steps", "auroc", auc, ci,
                           n, "steps-only probe (same problems)", ctrl, verdict,
                           extra={"diff": round(auc - ctrl, 6), "diff_ci": [round(diff_ci[0], 6), round(diff_ci[1], 6)],
                                  "test": "paired bootstrap of the AUROC difference over problems", "site": choice.site}))
    return out


def intermediate_findings(features: Mapping[str, np.ndarray], y: np.ndarray, groups: np.ndarray, *, probe: Any,
                          folds: int, seed: int = 0) -> list[Finding]:
    """The intermediate target's finding: pooled R^2 on the report problems vs the shuffled-label probe (or 0)."""
    y, groups = np.asarray(y, dtype=np.float64), np.asarray(groups)
    claim = "a probe decodes the running value from the states"
    choice = held_out_choice(features, y, probe=probe, classify=False, folds=folds, seed=seed, groups=groups)
    n_problems = len(np.unique(groups))
    if choice is None:
        return [too_few(claim, "r2", "predicting the mean", 0.0, n_problems, "too few problems for a held-out choice")]
    yr, gr = y[choice.report], groups[choice.report]
    units = len(np.unique(gr))
    p = choice.pred["site"]
    r2 = float(r2_rows(p, yr, gr, np.arange(units)[None])[0])
    ci = bootstrap_units(units, lambda idx: r2_rows(p, yr, gr, idx), seed=seed)
    shuffled = float(np.mean([r2_rows(q, perm, gr, np.arange(units)[None])[0] for perm, q in choice.shuffled]))
    control_value = max(0.0, shuffled)
    extra = {**_choice_extra(choice), "interval": "percentile bootstrap over problems (positions resampled together)",
             "shuffled_label_r2": round(shuffled, 6), "shuffles": len(choice.shuffled), "rows": int(len(yr))}
    return [Finding(f"{claim} ({choice.site})", "r2", r2, ci, units, "shuffled-label probe or the mean, the higher",
                    control_value, verdict_from_interval(ci, control_value, n=units), extra=extra)]


def probe_findings(features: Mapping[str, np.ndarray], y: np.ndarray, *, target: str, probe: Any = None,
                   folds: int = 5, seed: int = 0, groups: np.ndarray | None = None,
                   steps: np.ndarray | None = None) -> list[Finding]:
    """The findings of a probe sweep over ``features`` (site -> ``[rows, d]``): see the module docstring."""
    if target not in ("correct", "intermediate"):
        raise ThinklensError.of("probe target", target, "correct or intermediate", f"pass the probe job's {opt('target')}")
    if target == "correct":
        return correct_findings(features, y, probe=probe or LinearProbe(), folds=folds, seed=seed, steps=steps)
    if groups is None:
        groups = np.arange(len(y))
    return intermediate_findings(features, y, groups, probe=probe or RidgeProbe(), folds=folds, seed=seed)


__all__ = ["HeldOutChoice", "auroc_rows", "correct_findings", "held_out_choice", "intermediate_findings",
           "probe_findings", "r2_rows"]
