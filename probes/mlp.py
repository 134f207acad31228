"""The LYNX probe: StandardScaler + MLP (256, 64), ReLU, Adam, early stopping, balanced weights.

Restated from the LYNX paper (arXiv 2512.05325) and its reference ``train_probe.py``: a scikit-learn
``MLPClassifier(hidden_layer_sizes=(256, 64), activation="relu", solver="adam", max_iter=500,
early_stopping=True, n_iter_no_change=10, validation_fraction=0.2, random_state=42)`` behind a
StandardScaler, trained with per-sample weights ``w_c = n / (2 n_c)``. scikit-learn >= 1.7 accepts
``sample_weight`` in ``MLPClassifier.fit`` (installed: 1.9), so the weights go to the solver itself:
they scale each sample's loss and gradient, exactly as in the reference.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 6)); y = (X[:, 0] + 0.3 * X[:, 1] > 0.8).astype(int)
    >>> probe = LynxMLPProbe(hidden_layer_sizes=(16,)).fit(X, y)
    >>> probe.predict_proba(X).shape, probe.early_stopping_used_
    ((300, 2), True)
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import accuracy_score
from sklearn.neural_network import MLPClassifier
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from thinklens.errors import ThinklensError
from thinklens.probes.grouped_split import validation_split
from thinklens.probes.numerics import (
    ScoreClassifierMixin,
    as_features,
    check_class_weight,
    class_sample_weights,
    encode_labels,
    scaling,
)


class LynxMLPProbe(ScoreClassifierMixin, ClassifierMixin, BaseEstimator):
    """Standardise, then a ReLU MLP trained with Adam and early stopping (the LYNX probe).

    Args:
        hidden_layer_sizes: widths of the hidden layers.
        alpha: L2 penalty of the MLP.
        learning_rate_init: Adam step size.
        max_iter: epoch cap.
        early_stopping: hold out ``validation_fraction`` (stratified) and stop when the validation
            accuracy has not improved for ``n_iter_no_change`` epochs.
        validation_fraction: share of the training data held out for early stopping.
        n_iter_no_change: patience of early stopping (epochs).
        class_weight: "balanced" (LYNX: ``n / (K n_c)``, i.e. ``n / (2 n_c)`` for two classes),
            None or {label: weight}.
        random_state: seed of weight init, shuffling and the early-stopping split.

    Learned: ``classes_``, ``mean_``/``scale_`` [feature], ``coefs_`` (list of [in, out]),
    ``intercepts_`` (list of [out]), ``n_iter_``, ``loss_curve_``, ``early_stopping_used_``, ``early_stopping_grouped_``,
    ``best_validation_score_`` (None without early stopping).

    Early stopping needs a stratified validation split with some samples of every class; when a
    class has fewer than ``ceil(2 / validation_fraction)`` samples (10 at the default 0.2) the probe
    trains on all data without it and records ``early_stopping_used_ = False``. With ``groups`` (the rollout
    of every event) the early-stopping split is grouped (:func:`thinklens.probes.grouped_split.validation_split`): scikit-learn's
    own split is by sample, so events of one rollout would sit on both sides and the validation score that
    stops training would reward memorised neighbours. The epochs are then driven here (``partial_fit``, Adam
    state kept) with scikit-learn's rule: stop after ``n_iter_no_change`` epochs without a validation
    accuracy gain of ``tol``, and keep the best epoch's weights.
    """

    def __init__(self, hidden_layer_sizes: tuple[int, ...] = (256, 64), *, alpha: float = 1e-4,
                 learning_rate_init: float = 1e-3, max_iter: int = 500, early_stopping: bool = True,
                 validation_fraction: float = 0.2, n_iter_no_change: int = 10,
                 class_weight: str | None = "balanced", random_state: int | None = 42):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.alpha = alpha
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.class_weight = class_weight
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None, groups=None) -> LynxMLPProbe:
        """Fit on ``X`` [n, feature] and labels ``y`` [n] (``groups`` [n]: the rollout of every sample, for a
        grouped early-stopping split); returns self."""
        check_class_weight(self.class_weight)
        if not 0.0 < float(self.validation_fraction) < 1.0:
            raise ThinklensError.of("validation_fraction", self.validation_fraction, "a number in (0, 1)",
                                    "use 0.2 (the LYNX default)")
        X, y = validate_data(self, as_features(X), y, dtype=np.float64)
        self.classes_, y_index = encode_labels(y)
        user_sw = None if sample_weight is None else _check_sample_weight(sample_weight, X, dtype=np.float64)
        # the reference scaler is unweighted; only user weights (not class balance) enter it
        self.mean_, self.scale_ = scaling(X, user_sw, True)
        sw = class_sample_weights(user_sw, X, self.classes_, y_index, self.class_weight)
        min_count = int(np.bincount(y_index).min())
        self.early_stopping_used_ = bool(
            self.early_stopping and len(self.classes_) > 1
            and min_count >= int(np.ceil(2.0 / float(self.validation_fraction)))
        )
        mlp = MLPClassifier(
            hidden_layer_sizes=tuple(self.hidden_layer_sizes), activation="relu", solver="adam",
            alpha=self.alpha, learning_rate_init=self.learning_rate_init, max_iter=self.max_iter,
            early_stopping=self.early_stopping_used_, validation_fraction=self.validation_fraction,
            n_iter_no_change=self.n_iter_no_change, random_state=self.random_state,
        )
        Z = (X - self.mean_) / self.scale_  # [n, feature]
        self.early_stopping_grouped_ = bool(self.early_stopping_used_ and groups is not None)
        if self.early_stopping_grouped_:
            score = self._fit_grouped(mlp, Z, y_index, sw, groups)
        else:
            mlp.fit(Z, y_index, sample_weight=sw)
            score = getattr(mlp, "best_validation_score_", None) if self.early_stopping_used_ else None
        self.coefs_ = [w.copy() for w in mlp.coefs_]
        self.intercepts_ = [b.copy() for b in mlp.intercepts_]
        # partial_fit leaves n_iter_ at 1 whatever the epochs; the loss curve has one entry per epoch
        self.n_iter_ = len(mlp.loss_curve_) if self.early_stopping_grouped_ else int(mlp.n_iter_)
        self.loss_curve_ = np.asarray(mlp.loss_curve_, dtype=np.float64)
        self.best_validation_score_ = None if score is None else float(score)
        return self

    def _fit_grouped(self, mlp: MLPClassifier, Z: np.ndarray, y_index: np.ndarray, sw: np.ndarray | None,
                     groups) -> float:
        """Epochs of ``mlp`` on a grouped training share until the grouped validation accuracy stalls; leaves the
        best epoch's weights in ``mlp`` and returns its score."""
        groups = np.asarray(groups)
        if groups.shape != y_index.shape:
            raise ThinklensError.of("groups", groups.shape, f"one group (rollout) id per sample, shape {y_index.shape}",
                                    "pass the rollout index of every event")
        tr, va = validation_split(y_index, groups, float(self.validation_fraction),
                                  0 if self.random_state is None else int(self.random_state))
        w_tr, w_va = (None, None) if sw is None else (sw[tr], sw[va])
        mlp.set_params(early_stopping=False)
        classes = np.arange(len(self.classes_))
        best, best_state, stale = -np.inf, None, 0
        for _ in range(int(self.max_iter)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mlp.partial_fit(Z[tr], y_index[tr], sample_weight=w_tr, classes=classes)
            score = float(accuracy_score(y_index[va], mlp.predict(Z[va]), sample_weight=w_va))
            stale = stale + 1 if score < best + mlp.tol else 0
            if score > best:
                best, best_state = score, ([w.copy() for w in mlp.coefs_], [b.copy() for b in mlp.intercepts_])
            if stale > self.n_iter_no_change:
                break
        mlp.coefs_, mlp.intercepts_ = best_state
        return best

    def decision_function(self, X) -> np.ndarray:
        """Output-layer logits: ``[n]`` for two classes (positive = ``classes_[1]``), else ``[n, K]``."""
        check_is_fitted(self)
        X = validate_data(self, as_features(X), dtype=np.float64, reset=False)
        h = (X - self.mean_) / self.scale_  # [n, feature]
        for w, b in zip(self.coefs_[:-1], self.intercepts_[:-1]):
            h = np.maximum(h @ w + b, 0.0)  # [n, hidden]
        out = h @ self.coefs_[-1] + self.intercepts_[-1]  # [n, 1 or K]
        return out.ravel() if out.shape[1] == 1 else out

    def export_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The learned arrays and scalars (what :func:`thinklens.probes.io.save_probe` writes)."""
        arrays = {"mean": self.mean_, "scale": self.scale_, "loss_curve": self.loss_curve_}
        for i, (w, b) in enumerate(zip(self.coefs_, self.intercepts_)):
            arrays[f"coef_{i}"], arrays[f"intercept_{i}"] = w, b
        meta = {"n_layers": len(self.coefs_), "n_iter": self.n_iter_,
                "early_stopping_used": self.early_stopping_used_,
                "early_stopping_grouped": self.early_stopping_grouped_,
                "best_validation_score": self.best_validation_score_}
        return arrays, meta

    def import_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Set the learned state from :meth:`export_state` output (what :func:`thinklens.probes.io.load_probe` reads)."""
        n = int(meta["n_layers"])
        self.coefs_ = [arrays[f"coef_{i}"] for i in range(n)]
        self.intercepts_ = [arrays[f"intercept_{i}"] for i in range(n)]
        self.mean_, self.scale_, self.loss_curve_ = arrays["mean"], arrays["scale"], arrays["loss_curve"]
        self.n_iter_ = int(meta["n_iter"])
        self.early_stopping_used_ = bool(meta["early_stopping_used"])
        self.early_stopping_grouped_ = bool(meta.get("early_stopping_grouped", False))  # probes saved before it
        score = meta["best_validation_score"]
        self.best_validation_score_ = None if score is None else float(score)
