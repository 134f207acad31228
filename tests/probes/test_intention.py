"""Intention metrics against closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from thinklens.errors import ThinklensError
from thinklens.probes.intention import auroc_score, effective_dimensionality, intention_entropy, recoverability


def test_entropy_restricted_to_top_k_by_hand():
    # probabilities .5 .25 .125 .125 -> 1.75 bits
    logits = np.log(np.array([0.5, 0.25, 0.125, 0.125]))
    assert intention_entropy(logits) == pytest.approx(1.75)
    # top 2 of them renormalised: 2/3, 1/3 -> H = log2(3) - 2/3
    assert intention_entropy(logits, top_k=2) == pytest.approx(np.log2(3) - 2 / 3)
    # the tail beyond the top 100 is dropped entirely
    tail = np.r_[np.zeros(100), np.full(5000, -0.5)]
    assert intention_entropy(tail) == pytest.approx(np.log2(100))
    # batched, invariant to a shift of the logits, and no overflow for huge logits
    batch = np.stack([logits, logits + 1e4])
    np.testing.assert_allclose(intention_entropy(batch), [1.75, 1.75])


def test_entropy_errors():
    with pytest.raises(ThinklensError, match="top_k"):
        intention_entropy(np.zeros(5), top_k=0)
    with pytest.raises(ThinklensError, match="logits"):
        intention_entropy(np.zeros((3, 0)))


def test_effective_dimensionality_by_construction():
    rng = np.random.default_rng(0)
    basis = np.linalg.qr(rng.normal(size=(20, 20)))[0]  # orthonormal axes in 20 dims
    centred = rng.normal(size=(4000, 4))
    centred -= centred.mean(0)
    # orthonormal, centred columns scaled so the variances are exactly 50, 30, 15, 5 (%):
    # 50+30 = 80% < 90% <= 95% = 50+30+15
    scores = np.linalg.qr(centred)[0] * np.sqrt([50.0, 30.0, 15.0, 5.0])
    X = scores @ basis[:4]
    assert effective_dimensionality(X) == 3
    assert effective_dimensionality(X, variance=0.8) == 2
    assert effective_dimensionality(np.ones((5, 3))) == 0


def test_auroc_matches_sklearn_with_ties():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    s = np.round(rng.normal(size=300) + y, 1)  # rounding makes ties
    assert auroc_score(y, s) == pytest.approx(roc_auc_score(y, s))


def test_recoverability_signal_vs_chance():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    X = rng.normal(size=(300, 6))
    chance = recoverability(X, y, n_bootstrap=300)
    assert chance.ci_low < 0.5 + 0.1 and abs(chance.auroc - 0.5) < 0.12
    X[:, 2] += 1.5 * y
    signal = recoverability(X, y, n_bootstrap=300)
    assert signal.auroc > 0.8 and signal.ci_low > 0.7 and signal.ci_low <= signal.auroc <= signal.ci_high
    assert (signal.n, signal.folds) == (300, 5)
    with pytest.raises(ThinklensError, match="each class"):
        recoverability(X, np.r_[1, np.zeros(299, int)])
