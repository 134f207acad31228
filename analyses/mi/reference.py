"""The plain nHSIC formula, written literally in numpy float64: the oracle for the fast estimator.

Two explicit m x m inverses per step, exactly as the paper's code does it (there in float32 on the
CPU). Slow on purpose; tests and ``bench/mi.py`` compare :func:`thinklens.analyses.mi.nhsic_trajectory`
against it. Limit of the literal formula: when the coordinates are tiny next to sigma (|x| ~ 1e-3 at
sigma = 50), K is 1 to ten digits and centring cancels them, so this oracle itself drifts (~1e-5
relative); the fast estimator builds K - 1 with expm1 and stays exact there. Tests use activations
of ordinary size, where the oracle is good to ~1e-8.

Example:
    >>> import numpy as np
    >>> x = np.arange(8.0) * 20
    >>> round(plain_nhsic(x, x), 4) == round(plain_nhsic(x + 3.0, x), 4)  # shift invariant
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from thinklens.analyses.mi.config import NHSICConfig


def plain_r(v: np.ndarray, sigma: float, eps: float) -> np.ndarray:
    """R = Kc (Kc + eps m I)^-1 with Kc = K H, K the Gaussian kernel of the coordinates of v."""
    m = v.shape[0]
    h = np.eye(m) - np.ones((m, m)) / m
    k = np.exp(-((v[:, None] - v[None, :]) ** 2) / (2.0 * sigma**2))
    kc = k @ h
    return kc @ np.linalg.inv(kc + eps * m * np.eye(m))


def plain_nhsic(x: np.ndarray, y: np.ndarray, sigma: float = 50.0, eps: float = 1e-5,
                sigma_y: float | None = None) -> float:
    """nHSIC = trace(R_x R_y) of two vectors whose coordinates are the samples (float64)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    rx = plain_r(x, sigma, eps)
    ry = plain_r(y, sigma if sigma_y is None else sigma_y, eps)
    return float(np.trace(rx @ ry))


def plain_median_sigma(v: np.ndarray) -> float:
    """Median of |v_i - v_j| over pairs i < j; mean if that is 0; 1.0 for a constant vector."""
    i, j = np.triu_indices(v.shape[0], k=1)
    d = np.abs(v[i] - v[j])
    med = float(np.median(d))
    if med > 0:
        return med
    mean = float(d.mean())
    return mean if mean > 0 else 1.0


def plain_prepare(v: np.ndarray, config: NHSICConfig, target_norm: float) -> tuple[np.ndarray, float]:
    """Apply the config's normalisation and bandwidth rule to one vector: (vector, sigma)."""
    v = np.asarray(v, dtype=np.float64)
    if config.normalize == "l2":
        n = float(np.linalg.norm(v))
        if n > 0:
            v = v * (target_norm / n)
    sigma = plain_median_sigma(v) if config.bandwidth == "median" else config.sigma
    return v, sigma


def plain_trajectory(states: np.ndarray, answer: np.ndarray, config: NHSICConfig | None = None,
                     steps: Sequence[int] | None = None) -> np.ndarray:
    """The plain score for each step (row) of ``states`` against ``answer``; ``steps`` selects rows."""
    config = config if config is not None else NHSICConfig()
    states = np.asarray(states, dtype=np.float64)
    answer = np.asarray(answer, dtype=np.float64)
    target = config.norm if config.norm is not None else float(np.linalg.norm(answer))
    y, sy = plain_prepare(answer, config, target)
    rows = range(states.shape[0]) if steps is None else steps
    out = []
    for t in rows:
        x, sx = plain_prepare(states[t], config, target)
        out.append(plain_nhsic(x, y, sigma=sx, eps=config.eps, sigma_y=sy))
    return np.asarray(out)
