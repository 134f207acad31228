"""Intention metrics (intention collapse, arXiv 2601.01011), as pure functions.

- intention entropy: entropy in bits of the next-token distribution restricted to the top 100
  tokens and renormalised, from logits;
- effective dimensionality: the number of principal components needed for 90% of the variance
  across items (not the "effective rank" exp-entropy of singular values, a different metric);
- recoverability: cross-validated AUROC of a logistic-regression probe predicting correctness,
  with a bootstrap confidence interval.

Example:
    >>> import numpy as np
    >>> float(intention_entropy(np.zeros(1000)))  # uniform over the top 100: log2(100)
    6.643856189774724
    >>> effective_dimensionality(np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 0.1], [0.0, -0.1]]))
    1
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata
from sklearn.model_selection import StratifiedKFold

from thinklens.errors import ThinklensError
from thinklens.probes.estimators import LinearProbe


def intention_entropy(logits: np.ndarray, top_k: int = 100) -> np.ndarray:
    """Entropy in bits of softmax over the ``top_k`` largest logits (all if the vocab is smaller).

    Args:
        logits: [..., vocab] next-token logits (numpy, or a CPU tensor via ``np.asarray``).
        top_k: how many of the most likely tokens to keep before renormalising.

    Returns: [...] entropies in bits, in [0, log2(top_k)].

    Example:
        >>> intention_entropy(np.array([[0.0, 0.0, -1e9], [5.0, -1e9, -1e9]]), top_k=2).round(6).tolist()
        [1.0, 0.0]
    """
    if not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ThinklensError.of("top_k", top_k, "an integer >= 1", "use 100 (the paper's setting)")
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim == 0 or z.shape[-1] == 0:
        raise ThinklensError.of("logits", f"shape {z.shape}", "[..., vocab] with vocab >= 1",
                                "pass the next-token logits")
    k = min(int(top_k), z.shape[-1])
    top = np.partition(z, z.shape[-1] - k, axis=-1)[..., -k:]  # [..., k], order irrelevant
    top = top - top.max(axis=-1, keepdims=True)
    with np.errstate(under="ignore"):
        p = np.exp(top)
    p /= p.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log2(p), 0.0)
    return np.maximum(-terms.sum(axis=-1), 0.0)


def effective_dimensionality(X: np.ndarray, variance: float = 0.9) -> int:
    """Number of principal components that explain ``variance`` of the variance of ``X`` [item, d].

    0 for data without variance (all rows equal).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> effective_dimensionality(rng.normal(size=(500, 3)) @ np.diag([10.0, 1.0, 0.1]))
        1
    """
    if not 0.0 < variance <= 1.0:
        raise ThinklensError.of("variance", variance, "a share in (0, 1]", "use 0.9")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ThinklensError.of("X", f"shape {X.shape}", "[item, d] with at least 2 items",
                                "stack one state vector per item")
    s = np.linalg.svd(X - X.mean(axis=0), compute_uv=False)
    var = s**2
    total = var.sum()
    if total <= 0:
        return 0
    # tolerance: 0.9 of the variance reached up to rounding counts as reached
    return int(np.searchsorted(np.cumsum(var) / total, variance - 1e-12) + 1)


def auroc_score(y: np.ndarray, scores: np.ndarray) -> float:
    """AUROC by the rank (Mann-Whitney) formula, ties counted half; equals sklearn's roc_auc_score.

    A closed form, so the bootstrap's thousand evaluations cost milliseconds.

    Example:
        >>> auroc_score(np.array([0, 0, 1, 1]), np.array([0.1, 0.6, 0.6, 0.9]))
        0.875
    """
    y = np.asarray(y)
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    ranks = rankdata(scores)  # average ranks for ties
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


@dataclass(frozen=True)
class Recoverability:
    """Cross-validated AUROC of a linear correctness probe, with a bootstrap CI."""

    auroc: float
    """AUROC of the out-of-fold probe scores."""
    ci_low: float
    """Lower end of the bootstrap percentile interval."""
    ci_high: float
    """Upper end of the bootstrap percentile interval."""
    n: int
    """Number of items."""
    n_positive: int
    """Number of correct items."""
    folds: int
    """Cross-validation folds used."""


def recoverability(X: np.ndarray, y: np.ndarray, *, folds: int = 5, C: float = 1.0, n_bootstrap: int = 1000,
                   confidence: float = 0.95, seed: int = 0) -> Recoverability:
    """How well correctness ``y`` is linearly decodable from states ``X``.

    Out-of-fold decision scores of a standardised logistic regression (stratified, shuffled
    ``folds``-fold CV); the CI resamples items with replacement, keeping the out-of-fold scores
    fixed (it covers test-set sampling, not refitting), and skips resamples with one class.

    Args:
        X: [item, d] states.
        y: [item] binary labels (1 = correct).
        folds: CV folds; reduced to the minority-class count when that is smaller (at least 2).
        C: inverse regularisation of the logistic regression.
        n_bootstrap: bootstrap resamples.
        confidence: CI level.
        seed: seed of the fold split and the bootstrap.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> y = rng.integers(0, 2, 200); X = rng.normal(size=(200, 5)); X[:, 0] += 2 * y
        >>> r = recoverability(X, y, n_bootstrap=200)
        >>> r.auroc > 0.8 and r.ci_low < r.auroc < r.ci_high
        True
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ThinklensError.of("X, y", f"shapes {X.shape}, {y.shape}", "X [item, d] and y [item]",
                                "pass one label per state")
    if not set(np.unique(y).tolist()) <= {0, 1}:
        raise ThinklensError.of("y", np.unique(y)[:5].tolist(), "binary labels 0/1", "label correct items 1")
    y = y.astype(np.int64)
    minority = int(min(y.sum(), len(y) - y.sum()))
    if minority < 2:
        raise ThinklensError.of("labels", f"{int(y.sum())} correct of {len(y)}", "at least 2 items of each class",
                                "evaluate on more items, so that both outcomes occur")
    k = max(2, min(int(folds), minority))
    scores = np.empty(len(y))
    split = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    for train, test in split.split(X, y):
        scores[test] = LinearProbe(C=C).fit(X[train], y[train]).decision_function(X[test])
    auroc = auroc_score(y, scores)
    rng = np.random.default_rng(seed)
    stats = []
    for _ in range(int(n_bootstrap)):
        idx = rng.integers(0, len(y), len(y))
        if 0 < y[idx].sum() < len(idx):
            stats.append(auroc_score(y[idx], scores[idx]))
    a = (1.0 - confidence) / 2
    lo, hi = (np.quantile(stats, [a, 1 - a]) if stats else (np.nan, np.nan))
    return Recoverability(auroc=auroc, ci_low=float(lo), ci_high=float(hi), n=len(y), n_positive=int(y.sum()),
                          folds=k)
