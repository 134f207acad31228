"""Every thought-anchor measure of one trace (:func:`anchors_of_trace`), as one typed result (:class:`TraceAnchors`).

Example:
    >>> TraceAnchors.ranks([0.1, 0.9, 0.5])
    [1, 2, 0]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from thinklens.analyses.anchors.attention import PROXIMITY, TOP_K, ReceiverHeads, Suppression, receiver_heads, suppression_matrix
from thinklens.analyses.anchors.importance import SIMILARITY, Importance, forced_importance, resampling_importance
from thinklens.analyses.anchors.sentences import Sentences


@dataclass(frozen=True)
class TraceAnchors:
    """The sentences of one trace and their importance by each measure."""

    problem: str
    """The problem's id."""
    gold: str
    """Its answer."""
    sentences: list[str]
    """The trace's sentences (:mod:`thinklens.analyses.anchors.sentences`)."""
    forced: Importance | None
    """Forced-answer importance (None: not measured)."""
    resampling: Importance | None
    """Counterfactual resampling importance (None: not measured)."""
    suppression: Suppression | None
    """Attention-suppression matrix (None: not measured)."""
    receivers: ReceiverHeads | None
    """Receiver heads (None: not measured)."""
    seconds: dict[str, float]
    """Wall time of each measure."""

    @staticmethod
    def ranks(scores: Sequence[float]) -> list[int]:
        """Sentence indices from the most important down (NaN last; ties by position)."""
        s = np.asarray(scores, dtype=float)
        return [int(k) for k in np.argsort(-np.where(np.isfinite(s), s, -np.inf), kind="stable")]

    def scores(self) -> dict[str, list[float]]:
        """Per measure, the per-sentence importance it ranks by: the accuracy difference of the black-box measures,
        the suppression row mean, the receiver score."""
        out: dict[str, list[float]] = {}
        if self.forced is not None:
            out["forced"] = self.forced.accuracy_diff.tolist()
        if self.resampling is not None:
            out["resampling"] = self.resampling.accuracy_diff.tolist()
        if self.suppression is not None:
            out["suppression"] = list(self.suppression.importance)
        if self.receivers is not None:
            out["receivers"] = list(self.receivers.importance)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data."""
        return {**asdict(self), "scores": self.scores()}


def anchors_of_trace(model: Any, sents: Sentences, gold: Any, *, problem: str = "", exit_string: str, n_forced: int = 8,
                     n_rollouts: int = 8, rollout_tokens: int = 32, temperature: float = 1.0, similarity: float = SIMILARITY,
                     proximity: int = PROXIMITY, top_k: int = TOP_K, measures: Sequence[str] = ("forced", "resampling", "white-box"),
                     seed: int = 0, log: Callable[[str], None] | None = None) -> TraceAnchors:
    """Each measure named in ``measures`` on one trace (the white-box ones need local weights)."""

    secs: dict[str, float] = {}
    t = time.perf_counter()
    forced = resampling = suppression = receivers = None
    if "forced" in measures:
        forced = forced_importance(model, sents, gold, exit_string=exit_string, n_forced=n_forced, temperature=temperature,
                                   seed=seed, log=log)
        secs["forced"], t = time.perf_counter() - t, time.perf_counter()
    if "resampling" in measures:
        resampling = resampling_importance(model, sents, gold, exit_string=exit_string, n_rollouts=n_rollouts,
                                           rollout_tokens=rollout_tokens, temperature=temperature, similarity=similarity,
                                           seed=seed, log=log)
        secs["resampling"], t = time.perf_counter() - t, time.perf_counter()
    if "white-box" in measures:
        ids, owner = sents.token_sentence(model.tokenizer)
        suppression = suppression_matrix(model, ids, owner)
        receivers = receiver_heads(model, ids, owner, proximity=proximity, top_k=top_k)
        secs["white-box"] = time.perf_counter() - t
    return TraceAnchors(problem, str(gold), sents.sentences, forced, resampling, suppression, receivers, secs)
