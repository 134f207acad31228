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

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.neural_network import MLPClassifier
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from probes.numerics import (
    ScoreClassifierMixin,
    as_features,
    check_class_weight,
    class_sample_weights,
    encode_labels,
    scaling,
)
from thinklens.errors import ThinklensError


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
    ``intercepts_`` (list of [out]), ``n_iter_``, ``loss_curve_``, ``early_stopping_used_``,
    ``best_validation_score_`` (None without early stopping).

    Early stopping needs a stratified validation split with some samples of every class; when a
    class has fewer than ``ceil(2 / validation_fraction)`` samples (10 at the default 0.2) the probe
    trains on all data without it and records ``early_stopping_used_ = False``.
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

    def fit(self, X, y, sample_weight=None) -> LynxMLPProbe:
        """Fit on ``X`` [n, feature] and labels ``y`` [n]; returns self."""
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
        mlp.fit((X - self.mean_) / self.scale_, y_index, sample_weight=sw)
        self.coefs_ = [w.copy() for w in mlp.coefs_]
        self.intercepts_ = [b.copy() for b in mlp.intercepts_]
        self.n_iter_ = int(mlp.n_iter_)
        self.loss_curve_ = np.asarray(mlp.loss_curve_, dtype=np.float64)
        score = getattr(mlp, "best_validation_score_", None) if self.early_stopping_used_ else None
        self.best_validation_score_ = None if score is None else float(score)
        return self

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
        """The learned arrays and scalars (what :func:`probes.io.save_probe` writes)."""
        arrays = {"mean": self.mean_, "scale": self.scale_, "loss_curve": self.loss_curve_}
        for i, (w, b) in enumerate(zip(self.coefs_, self.intercepts_)):
            arrays[f"coef_{i}"], arrays[f"intercept_{i}"] = w, b
        meta = {"n_layers": len(self.coefs_), "n_iter": self.n_iter_,
                "early_stopping_used": self.early_stopping_used_,
                "best_validation_score": self.best_validation_score_}
        return arrays, meta

    def import_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Set the learned state from :meth:`export_state` output (what :func:`probes.io.load_probe` reads)."""
        n = int(meta["n_layers"])
        self.coefs_ = [arrays[f"coef_{i}"] for i in range(n)]
        self.intercepts_ = [arrays[f"intercept_{i}"] for i in range(n)]
        self.mean_, self.scale_, self.loss_curve_ = arrays["mean"], arrays["scale"], arrays["loss_curve"]
        self.n_iter_ = int(meta["n_iter"])
        self.early_stopping_used_ = bool(meta["early_stopping_used"])
        score = meta["best_validation_score"]
        self.best_validation_score_ = None if score is None else float(score)
