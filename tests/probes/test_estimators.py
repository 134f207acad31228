"""Probe estimators against scikit-learn and hand-computed oracles."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from thinklens.errors import ThinklensError
from thinklens.probes.estimators import PROBES, DiffMeanProbe, LinearProbe, LynxMLPProbe, RidgeProbe
from thinklens.probes.numerics import balanced_weights


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=240) > 0.6).astype(int)  # imbalanced
    return X, y


def test_balanced_weights_are_lynx_formula():
    y = np.array([0, 0, 0, 1])
    w = balanced_weights(y)
    # w_c = n / (2 n_c): 4 / 6 for the 3 negatives, 4 / 2 for the positive
    np.testing.assert_allclose(w, [4 / 6, 4 / 6, 4 / 6, 2.0])
    assert w[y == 0].sum() == pytest.approx(w[y == 1].sum())


def test_linear_probe_matches_sklearn_pipeline(data):
    X, y = data
    ours = LinearProbe(C=0.5, tol=1e-8).fit(X, y)
    ref = make_pipeline(StandardScaler(), LogisticRegression(C=0.5, tol=1e-8, max_iter=1000)).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-6)
    assert ours.coef_.shape == (1, 5) and ours.decision_function(X).shape == (240,)


def test_linear_probe_multiclass_softmax(data):
    X, _ = data
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    p = LinearProbe().fit(X, y3).predict_proba(X)
    assert p.shape == (240, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)


def test_ridge_probe_matches_sklearn(data):
    X, _ = data
    target = X @ np.array([1.0, -2.0, 0.0, 0.5, 3.0]) + 7.0
    ours = RidgeProbe(alpha=0.1, standardize=False).fit(X, target)
    ref = Ridge(alpha=0.1).fit(X, target)
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), atol=1e-10)
    assert RidgeProbe().fit(X, target).score(X, target) > 0.999


def test_mlp_forward_matches_sklearn_and_uses_balanced_weights(data):
    X, y = data
    probe = LynxMLPProbe(hidden_layer_sizes=(8, 4)).fit(X, y)
    Z = (X - X.mean(0)) / X.std(0)
    ref = MLPClassifier(hidden_layer_sizes=(8, 4), activation="relu", solver="adam", max_iter=500,
                        early_stopping=True, validation_fraction=0.2, n_iter_no_change=10,
                        random_state=42).fit(Z, y, sample_weight=balanced_weights(y))
    assert probe.early_stopping_used_ and probe.n_iter_ == ref.n_iter_
    np.testing.assert_allclose(probe.predict_proba(X), ref.predict_proba(Z), atol=1e-12)
    assert probe.best_validation_score_ == pytest.approx(ref.best_validation_score_)


def test_mlp_reference_defaults():
    p = LynxMLPProbe()
    assert (p.hidden_layer_sizes, p.max_iter, p.early_stopping, p.class_weight, p.random_state) == \
        ((256, 64), 500, True, "balanced", 42)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_mlp_without_enough_data_for_early_stopping_says_so():
    X = np.array([[0.0], [0.1], [0.2], [1.0], [1.1], [1.2]])
    y = np.array([0, 0, 0, 1, 1, 1])
    probe = LynxMLPProbe(hidden_layer_sizes=(4,)).fit(X, y)
    assert probe.early_stopping_used_ is False and probe.best_validation_score_ is None


def test_diffmean_midpoint_hand_computed():
    X = np.array([[0.0, 0.0], [2.0, 0.0], [4.0, 2.0], [6.0, 2.0]])
    y = np.array([0, 0, 1, 1])
    p = DiffMeanProbe().fit(X, y)
    # means (1, 0) and (5, 2): direction (4, 2)/sqrt(20), midpoint (3, 1) -> threshold 14/sqrt(20)
    np.testing.assert_allclose(p.direction_, np.array([4.0, 2.0]) / np.sqrt(20))
    assert p.threshold_ == pytest.approx(14 / np.sqrt(20))
    np.testing.assert_allclose(p.decision_function([[3.0, 1.0]]), [0.0], atol=1e-12)
    raw = DiffMeanProbe(normalize=False).fit(X, y)
    np.testing.assert_allclose(raw.direction_, [4.0, 2.0])
    np.testing.assert_allclose(raw.project(X), X @ [4.0, 2.0])


def test_diffmean_balanced_threshold_beats_midpoint_on_skewed_scores():
    # negatives at 0, 1, 2, 3, 10 (one outlier drags the mean); positives at 4, 5
    X = np.array([0.0, 1.0, 2.0, 3.0, 10.0, 4.0, 5.0]).reshape(-1, 1)
    y = np.array([0, 0, 0, 0, 0, 1, 1])
    mid = DiffMeanProbe(threshold="midpoint").fit(X, y)
    bal = DiffMeanProbe(threshold="balanced").fit(X, y)
    # direction +1 (mean 4.5 vs 3.2): the balanced cut sits between 3 and 4
    assert bal.threshold_ == pytest.approx(3.5)
    assert mid.threshold_ == pytest.approx((3.2 + 4.5) / 2)
    assert (bal.predict(X) == y).sum() == 6  # only the outlier at 10 is wrong


def test_user_errors_are_thinklens_errors(data):
    X, y = data
    with pytest.raises(ThinklensError, match="class_weight"):
        LinearProbe(class_weight="even").fit(X, y)
    with pytest.raises(ThinklensError, match="exactly 2 classes"):
        DiffMeanProbe().fit(X, np.arange(240) % 3)
    with pytest.raises(ThinklensError, match="threshold"):
        DiffMeanProbe(threshold="median").fit(X, y)
    with pytest.raises(ThinklensError, match="validation_fraction"):
        LynxMLPProbe(validation_fraction=1.5).fit(X, y)


def test_registry_names_classes():
    assert {name: cls.__name__ for name, cls in PROBES.items()} == {n: n for n in PROBES}
