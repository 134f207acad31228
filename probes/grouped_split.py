"""The train / validation split of LYNX's events, grouped by rollout (:func:`validation_split`): what
:func:`thinklens.probes.lynx.train_lynx_probe` scores the probe on and what the probe's own early stopping
(:class:`thinklens.probes.mlp.LynxMLPProbe`) holds out, below both.
"""

from __future__ import annotations

import numpy as np

from thinklens.errors import ThinklensError, opt_name


def validation_split(y: np.ndarray, groups: np.ndarray, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train and validation event indices, grouped by rollout: every rollout's events on one side only (events of
    one rollout share its prompt and most of its states, so a split through a rollout reports memorised neighbours
    as generalisation). Stratified by label as far as the groups allow (scikit-learn's StratifiedGroupKFold with
    ``round(1 / val_fraction)`` folds, shuffled with ``seed``; the first fold whose two sides both hold both classes
    is the validation share); with fewer rollouts than folds, a seeded GroupShuffleSplit.

    Args:
        y: [event] 0/1 labels; groups: [event] rollout ids.

    Example:
        >>> y = np.array([0, 1] * 50); groups = np.repeat(np.arange(20), 5)
        >>> tr, va = validation_split(y, groups, 0.2, 42)
        >>> len(va), set(groups[tr]) & set(groups[va])
        (20, set())
    """
    from sklearn.model_selection import GroupShuffleSplit, StratifiedGroupKFold  # lazy: CLI start-up (sklearn)

    y, groups = np.asarray(y), np.asarray(groups)
    if groups.shape != y.shape:
        raise ThinklensError.of("event groups", groups.shape, f"one rollout id per event, shape {y.shape}",
                                "pass the rollout index of every event")
    n_splits = max(2, round(1.0 / val_fraction))
    if np.unique(groups).size >= n_splits:
        folds = list(StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed).split(y, y, groups))
    else:
        folds = list(GroupShuffleSplit(n_splits=10, test_size=val_fraction, random_state=seed).split(y, y, groups))
    for tr, va in folds:  # a side with one class cannot train (or score) the probe
        if np.unique(y[tr]).size == 2 and np.unique(y[va]).size == 2:
            return np.sort(tr), np.sort(va)
    for tr, va in folds:
        if np.unique(y[tr]).size == 2:
            return np.sort(tr), np.sort(va)
    raise ThinklensError.of("probe validation split", f"{np.unique(groups).size} rollouts", "rollouts whose events "
                            "leave both labels in the training share", f"label more rollouts ({opt_name('n_train')})")
