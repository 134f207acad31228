"""The numerics every probe estimator fits and predicts with: label encoding, class and sample weights,
weighted standardisation, the logistic and softmax links.

Every probe predicts with its own numpy code from its own learned arrays (never by calling a
fitted scikit-learn object), so a probe loaded from safetensors predicts bit-for-bit like the
one that was saved, whatever scikit-learn version is installed at load time.

Example:
    >>> import numpy as np
    >>> balanced_weights(np.array([0, 0, 0, 1]))  # w_c = n / (K n_c)
    array([0.66666667, 0.66666667, 0.66666667, 2.        ])
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight

from thinklens.errors import ThinklensError


def as_features(X):
    """``X`` as the probes read it: a torch tensor (any device and dtype, bfloat16 included, which numpy
    lacks) becomes a float64 numpy array; anything else is returned as it is.

    Example:
        >>> import torch
        >>> as_features(torch.ones(2, 3, dtype=torch.bfloat16)).dtype
        dtype('float64')
    """
    if hasattr(X, "detach") and hasattr(X, "double"):  # a torch tensor, recognised without importing torch
        return X.detach().double().cpu().numpy()
    return X


def encode_labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(classes_, y_index)`` with ``classes_`` sorted; rejects continuous targets.

    Example:
        >>> encode_labels(np.array(["b", "a", "b"]))
        (array(['a', 'b'], dtype='<U1'), array([1, 0, 1]))
    """
    check_classification_targets(y)
    classes, y_index = np.unique(y, return_inverse=True)
    return classes, y_index.reshape(-1)


def balanced_weights(y_index: np.ndarray, n_classes: int | None = None) -> np.ndarray:
    """Per-sample weights ``n / (K n_c)``; for two classes this is LYNX's ``n / (2 n_c)``.

    Args:
        y_index: int[n], class indices 0..K-1.
        n_classes: K; defaults to the number of classes present.
    """
    counts = np.bincount(y_index)
    k = n_classes if n_classes is not None else int(np.count_nonzero(counts))
    n = y_index.shape[0]
    # classes absent from y_index never index into counts, so the division by 0 is never read
    with np.errstate(divide="ignore"):
        per_class = n / (k * counts.astype(np.float64))
    return per_class[y_index]


def standardisation(X: np.ndarray, sample_weight: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Weighted per-feature ``(mean, scale)``; zero-variance features get scale 1 (as StandardScaler).

    Weighted, so that weight 2 on a sample equals duplicating it (an estimator-contract check).
    """
    w = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    total = w.sum()
    mean = (w[:, None] * X).sum(axis=0) / total  # [feature]
    var = (w[:, None] * (X - mean) ** 2).sum(axis=0) / total  # [feature]
    scale = np.sqrt(var)
    # relative cut-off: a feature that is constant up to rounding must not be blown up to O(1)
    tiny = 10 * np.finfo(np.float64).eps * np.maximum(np.abs(mean), 1.0)
    scale = np.where(scale <= tiny, 1.0, scale)
    return mean, scale


def sigmoid(z: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function."""
    out = np.empty_like(z, dtype=np.float64)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


def softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax of ``z`` [n, K]."""
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def probabilities_from_scores(scores: np.ndarray) -> np.ndarray:
    """``[n, K]`` class probabilities from a binary ``[n]`` logit or a multiclass ``[n, K]`` one."""
    if scores.ndim == 1:
        p1 = sigmoid(scores)
        return np.column_stack([1.0 - p1, p1])
    return softmax(scores)


CLASS_WEIGHTS = (None, "balanced")


def check_choice(what: str, value: object, choices: tuple, fix: str) -> None:
    """Raise a :class:`ThinklensError` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ThinklensError.of(what, value, f"one of {choices}", fix)


def check_class_weight(class_weight: object) -> None:
    """Accept None, "balanced" or a ``{label: weight}`` dict (as scikit-learn does)."""
    if not isinstance(class_weight, dict):
        check_choice("class_weight", class_weight, CLASS_WEIGHTS, "use None, 'balanced' or {label: weight}")


def class_sample_weights(sample_weight, X: np.ndarray, classes: np.ndarray, y_index: np.ndarray,
                         class_weight) -> np.ndarray:
    """User weights (ones if None) times the class weights.

    ``"balanced"`` gives ``n / (K n_c)``; a dict maps labels to weights (absent labels weigh 1).
    """
    sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
    if class_weight == "balanced":
        sw = sw * balanced_weights(y_index)
    elif isinstance(class_weight, dict):
        per_class = np.array([float(class_weight.get(c, 1.0)) for c in classes.tolist()])
        sw = sw * per_class[y_index]
    return sw


def scaling(X: np.ndarray, sw: np.ndarray | None, standardize: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, scale)`` for standardisation, or the identity ``(0, 1)`` when switched off."""
    if standardize:
        return standardisation(X, sw)
    return np.zeros(X.shape[1]), np.ones(X.shape[1])


class ScoreClassifierMixin:
    """``predict_proba`` and ``predict`` of a probe from its ``decision_function`` (logits ``[n]`` for two classes,
    positive = ``classes_[1]``, else ``[n, K]``); column 1 of the probabilities is LYNX's ``p(x) = P(y=1 | x)``."""

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities ``[n, K]`` in the order of ``classes_``."""
        return probabilities_from_scores(self.decision_function(X))  # type: ignore[attr-defined]

    def predict(self, X) -> np.ndarray:
        """Predicted labels ``[n]``."""
        scores = self.decision_function(X)  # type: ignore[attr-defined]
        index = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[index]  # type: ignore[attr-defined]

