"""Thought anchors (Bogdan, Macar, Nanda, Conmy 2025, arXiv 2506.19143): which sentences of a reasoning trace matter,
by forced answers, counterfactual resampling, attention suppression and receiver heads (``thinklens run
thought-anchors``; docs/anchors.md).

The public names below are importable from the package; each loads its module on first use.

Example:
    >>> from thinklens.analyses.anchors import split_sentences
    >>> split_sentences("The first one. The second one.")
    [(0, 14), (15, 30)]
"""

from thinklens.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "Importance": "thinklens.analyses.anchors.importance",
    "ReceiverHeads": "thinklens.analyses.anchors.attention",
    "Sentences": "thinklens.analyses.anchors.sentences",
    "SuppressAttention": "thinklens.analyses.anchors.attention",
    "Suppression": "thinklens.analyses.anchors.attention",
    "answer_kl": "thinklens.analyses.anchors.importance",
    "figure_importance": "thinklens.analyses.anchors.figures",
    "figure_suppression": "thinklens.analyses.anchors.figures",
    "forced_importance": "thinklens.analyses.anchors.importance",
    "receiver_heads": "thinklens.analyses.anchors.attention",
    "resampling_importance": "thinklens.analyses.anchors.importance",
    "sentences_of": "thinklens.analyses.anchors.sentences",
    "split_sentences": "thinklens.analyses.anchors.sentences",
    "suppression_matrix": "thinklens.analyses.anchors.attention",
    "word_overlap": "thinklens.analyses.anchors.sentences",
}
"""Public name -> defining module, imported on first use (PEP 562)."""

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
