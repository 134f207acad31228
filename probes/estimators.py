"""Probes as scikit-learn estimators: linear (logistic / ridge), difference of means, LYNX MLP.

All probes follow the estimator contract (params in ``__init__``, ``fit`` returns self, learned
attributes end in ``_``) and pass ``sklearn.utils.estimator_checks.parametrize_with_checks``.
Training delegates to scikit-learn solvers; prediction runs our own numpy code on the learned
arrays, which is what :mod:`thinklens.probes.io` saves, so a loaded probe predicts exactly like the saved one.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 8)); y = (X[:, 0] > 0).astype(int)
    >>> LinearProbe().fit(X, y).score(X, y) > 0.95
    True
    >>> sorted(PROBES)
    ['DiffMeanProbe', 'LinearProbe', 'LynxMLPProbe', 'RidgeProbe']
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from thinklens.errors import ThinklensError
from thinklens.probes.mlp import LynxMLPProbe
from thinklens.probes.numerics import (
    ScoreClassifierMixin,
    as_features,
    check_choice,
    check_class_weight,
    class_sample_weights,
    encode_labels,
    scaling,
)


class LinearProbe(ScoreClassifierMixin, ClassifierMixin, BaseEstimator):
    """Logistic-regression probe on (optionally standardised) features.

    Args:
        C: inverse L2 regularisation strength (as in LogisticRegression).
        standardize: z-score features with the (weighted) training mean and std first.
        class_weight: None, "balanced" (weights n / (K n_c)) or {label: weight}.
        max_iter: L-BFGS iteration cap.
        tol: L-BFGS tolerance.

    Learned: ``classes_``, ``mean_``/``scale_`` [feature], ``coef_`` [1 or K, feature],
    ``intercept_`` [1 or K], ``n_iter_``.

    Example:
        >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([0, 0, 1, 1])
        >>> LinearProbe(C=10.0).fit(X, y).predict([[0.2], [2.9]])
        array([0, 1])
    """

    def __init__(self, C: float = 1.0, *, standardize: bool = True, class_weight: str | None = None,
                 max_iter: int = 1000, tol: float = 1e-4):
        self.C = C
        self.standardize = standardize
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, X, y, sample_weight=None) -> LinearProbe:
        """Fit on ``X`` [n, feature] and labels ``y`` [n]; returns self."""
        check_class_weight(self.class_weight)
        X, y = validate_data(self, as_features(X), y, dtype=np.float64)
        self.classes_, y_index = encode_labels(y)
        sw = class_sample_weights(sample_weight, X, self.classes_, y_index, self.class_weight)
        self.mean_, self.scale_ = scaling(X, sw, self.standardize)
        lr = LogisticRegression(C=self.C, max_iter=self.max_iter, tol=self.tol)
        lr.fit((X - self.mean_) / self.scale_, y_index, sample_weight=sw)
        self.coef_, self.intercept_ = lr.coef_.copy(), lr.intercept_.copy()
        self.n_iter_ = int(np.max(lr.n_iter_))
        return self

    def decision_function(self, X) -> np.ndarray:
        """Logits: ``[n]`` for two classes (positive = ``classes_[1]``), else ``[n, K]``."""
        check_is_fitted(self)
        X = validate_data(self, as_features(X), dtype=np.float64, reset=False)
        scores = ((X - self.mean_) / self.scale_) @ self.coef_.T + self.intercept_  # [n, 1 or K]
        return scores.ravel() if scores.shape[1] == 1 else scores

    def export_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The learned arrays and scalars (what :func:`thinklens.probes.io.save_probe` writes)."""
        arrays = {"mean": self.mean_, "scale": self.scale_, "coef": self.coef_, "intercept": self.intercept_}
        return arrays, {"n_iter": self.n_iter_}

    def import_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Set the learned state from :meth:`export_state` output (what :func:`thinklens.probes.io.load_probe` reads)."""
        self.mean_, self.scale_ = arrays["mean"], arrays["scale"]
        self.coef_, self.intercept_ = arrays["coef"], arrays["intercept"]
        self.n_iter_ = int(meta["n_iter"])


class RidgeProbe(RegressorMixin, BaseEstimator):
    """Ridge-regression probe for continuous targets (e.g. the running intermediate value).

    Args:
        alpha: L2 regularisation strength (as in Ridge).
        standardize: z-score features with the (weighted) training mean and std first.

    Learned: ``mean_``/``scale_``/``coef_`` [feature], ``intercept_`` (float).

    Example:
        >>> X = np.arange(10.0).reshape(-1, 1)
        >>> RidgeProbe(alpha=1e-6).fit(X, 3 * X.ravel() + 1).predict([[20.0]]).round(3)
        array([61.])
    """

    def __init__(self, alpha: float = 1.0, *, standardize: bool = True):
        self.alpha = alpha
        self.standardize = standardize

    def fit(self, X, y, sample_weight=None) -> RidgeProbe:
        """Fit on ``X`` [n, feature] and targets ``y`` [n]; returns self."""
        X, y = validate_data(self, as_features(X), y, dtype=np.float64, y_numeric=True)
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
        self.mean_, self.scale_ = scaling(X, sw, self.standardize)
        ridge = Ridge(alpha=self.alpha).fit((X - self.mean_) / self.scale_, y, sample_weight=sw)
        self.coef_ = np.asarray(ridge.coef_, dtype=np.float64).copy()
        self.intercept_ = float(ridge.intercept_)
        return self

    def predict(self, X) -> np.ndarray:
        """Predicted targets ``[n]``."""
        check_is_fitted(self)
        X = validate_data(self, as_features(X), dtype=np.float64, reset=False)
        return ((X - self.mean_) / self.scale_) @ self.coef_ + self.intercept_

    def export_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The learned arrays and scalars (what :func:`thinklens.probes.io.save_probe` writes)."""
        return {"mean": self.mean_, "scale": self.scale_, "coef": self.coef_}, {"intercept": self.intercept_}

    def import_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Set the learned state from :meth:`export_state` output (what :func:`thinklens.probes.io.load_probe` reads)."""
        self.mean_, self.scale_, self.coef_ = arrays["mean"], arrays["scale"], arrays["coef"]
        self.intercept_ = float(meta["intercept"])


class DiffMeanProbe(ClassifierMixin, BaseEstimator):
    """Difference-of-means probe: direction = mean(positive) - mean(negative); score = projection.

    Args:
        threshold: "midpoint" (projection of the midpoint of the two class means) or "balanced"
            (the cut between sorted training projections with the best balanced accuracy; ties go
            to the cut nearest the midpoint).
        normalize: scale the direction to unit length, so projections are in feature units.

    Learned: ``classes_`` (two), ``direction_`` [feature], ``threshold_`` (float).
    ``decision_function(X) = X @ direction_ - threshold_``; positive means ``classes_[1]``.

    Example:
        >>> X = np.array([[0.0, 1.0], [0.2, 1.0], [2.0, 1.0], [2.2, 1.0]]); y = [0, 0, 1, 1]
        >>> p = DiffMeanProbe().fit(X, y)
        >>> p.direction_.round(3).tolist(), round(p.threshold_, 3)
        ([1.0, 0.0], 1.1)
    """

    def __init__(self, threshold: str = "midpoint", *, normalize: bool = True):
        self.threshold = threshold
        self.normalize = normalize

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # a single direction separates exactly two classes; the checks then skip multiclass data
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X, y, sample_weight=None) -> DiffMeanProbe:
        """Fit on ``X`` [n, feature] and binary labels ``y`` [n]; returns self."""
        check_choice("threshold", self.threshold, ("midpoint", "balanced"), "use 'midpoint' or 'balanced'")
        X, y = validate_data(self, as_features(X), y, dtype=np.float64)
        self.classes_, y_index = encode_labels(y)
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
        class_weight_sums = np.bincount(y_index, weights=sw, minlength=len(self.classes_))
        if len(self.classes_) != 2 or np.any(class_weight_sums <= 0):
            # scikit-learn's contract checks match "Only binary classification is supported."
            raise ThinklensError.of(
                "labels for DiffMeanProbe",
                f"{len(self.classes_)} class(es) {self.classes_.tolist()[:5]} with total weights "
                f"{class_weight_sums.tolist()[:5]}",
                "exactly 2 classes, each with positive total weight (Only binary classification is "
                f"supported. The type of the target is {type_of_target(y)}.)",
                "binarise the labels, or use LinearProbe for multiclass targets",
            )
        pos, neg = y_index == 1, y_index == 0
        mu1 = np.average(X[pos], axis=0, weights=sw[pos])  # [feature]
        mu0 = np.average(X[neg], axis=0, weights=sw[neg])  # [feature]
        direction = mu1 - mu0
        norm = float(np.linalg.norm(direction))
        if self.normalize and norm > 0:
            direction = direction / norm
        self.direction_ = direction
        midpoint = float((mu0 + mu1) / 2 @ direction)
        if self.threshold == "midpoint":
            self.threshold_ = midpoint
        else:
            self.threshold_ = _best_balanced_cut(X @ direction, y_index, sw, midpoint)
        return self

    def project(self, X) -> np.ndarray:
        """Projection of ``X`` [n, feature] on the direction, ``[n]``."""
        check_is_fitted(self)
        X = validate_data(self, as_features(X), dtype=np.float64, reset=False)
        return X @ self.direction_

    def decision_function(self, X) -> np.ndarray:
        """Projection minus threshold, ``[n]``; > 0 predicts ``classes_[1]``."""
        return self.project(X) - self.threshold_

    def predict(self, X) -> np.ndarray:
        """Predicted labels ``[n]``."""
        scores = self.decision_function(X)  # checks fitted before classes_ is read
        return self.classes_[(scores > 0).astype(int)]

    def export_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The learned arrays and scalars (what :func:`thinklens.probes.io.save_probe` writes)."""
        return {"direction": self.direction_}, {"threshold": self.threshold_}

    def import_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Set the learned state from :meth:`export_state` output (what :func:`thinklens.probes.io.load_probe` reads)."""
        self.direction_ = arrays["direction"]
        self.threshold_ = float(meta["threshold"])


def _best_balanced_cut(scores: np.ndarray, y_index: np.ndarray, sw: np.ndarray, midpoint: float) -> float:
    """Threshold t (predict positive iff score > t) maximising weighted balanced accuracy.

    Candidates are the midpoints between consecutive distinct scores plus one cut below all.
    """
    values, inverse = np.unique(scores, return_inverse=True)  # values sorted ascending
    w_pos = np.bincount(inverse, weights=sw * (y_index == 1), minlength=len(values))
    w_neg = np.bincount(inverse, weights=sw * (y_index == 0), minlength=len(values))
    # cut after value i: negatives predicted for scores <= values[i]
    tnr = np.cumsum(w_neg) / w_neg.sum()
    tpr = 1.0 - np.cumsum(w_pos) / w_pos.sum()
    balanced = np.concatenate([[0.5], (tpr + tnr) / 2])  # index 0: cut below everything
    cuts = np.concatenate([[values[0] - 1.0], (values[:-1] + values[1:]) / 2, [values[-1] + 1.0]])
    best = np.flatnonzero(balanced >= balanced.max() - 1e-12)
    return float(cuts[best[np.argmin(np.abs(cuts[best] - midpoint))]])


#: Registry of probe classes by name; :mod:`thinklens.probes.io` and the CLI resolve class names here.
PROBES: dict[str, type[BaseEstimator]] = {
    cls.__name__: cls for cls in (LinearProbe, RidgeProbe, DiffMeanProbe, LynxMLPProbe)
}

__all__ = ["PROBES", "DiffMeanProbe", "LinearProbe", "LynxMLPProbe", "RidgeProbe"]
