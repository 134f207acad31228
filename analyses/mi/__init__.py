"""MI peaks and thinking tokens (Qian et al. 2025, arXiv 2506.02867).

Pure functions over captured hidden states: the nHSIC estimator (fast, batched, with norm-controlled
variants and controls), peak rules, thinking-token enrichment, and plotly figures; and, on a
:class:`thinklens.HookedModel`: traced MI trajectories, the suppression test, Representation
Recycling and thinking-token test-time scaling.

Example:
    >>> import torch
    >>> y = torch.linspace(-100.0, 100.0, 64)
    >>> curve = nhsic_trajectory(torch.stack([y * 0.5, y, y * 0.1]), y)
    >>> top_k_peaks(curve, k=1).indices
    (1,)
"""

from analyses.mi.config import ESTIMATORS, NHSICConfig, estimator_config
from analyses.mi.controls import (
    ShuffledControl,
    derangement,
    permuted_coordinates_control,
    shuffled_answer_control,
)
from analyses.mi.estimator import METHODS, MICurve, compare_estimators, nhsic, nhsic_trajectory
from analyses.mi.figures import figure_enrichment, figure_mi_curve, figure_model_overlay
from analyses.mi.figures_interventions import figure_recycling, figure_suppression, figure_ttts
from analyses.mi.peaks import (
    PEAK_RULES,
    REFERENCE_K,
    Peaks,
    find_peaks,
    iqr_peaks,
    peaks_for_all,
    top_k_peaks,
)
from analyses.mi.recycling import (
    RecycledTrace,
    RecyclingResult,
    default_layer,
    recycle_generate,
    recycling_eval,
)
from analyses.mi.suppression import (
    SuppressionResult,
    SuppressionRow,
    accuracy_of,
    suppress_tokens,
    suppression_test,
)
from analyses.mi.thinking_tokens import (
    CI_METHODS,
    EnrichmentResult,
    TokenTrajectory,
    WordEnrichment,
    thinking_token_enrichment,
    word_of,
)
from analyses.mi.trajectory import MITrajectory, golden_answer_vectors, mi_trajectories
from analyses.mi.ttts import TTTSResult, TTTSRow, ttts_eval
from analyses.mi.vocab import random_token_ids, token_ids_for_words

__all__ = [
    "CI_METHODS",
    "ESTIMATORS",
    "METHODS",
    "PEAK_RULES",
    "REFERENCE_K",
    "EnrichmentResult",
    "MICurve",
    "MITrajectory",
    "NHSICConfig",
    "Peaks",
    "RecycledTrace",
    "RecyclingResult",
    "ShuffledControl",
    "SuppressionResult",
    "SuppressionRow",
    "TTTSResult",
    "TTTSRow",
    "TokenTrajectory",
    "WordEnrichment",
    "accuracy_of",
    "compare_estimators",
    "default_layer",
    "derangement",
    "estimator_config",
    "figure_enrichment",
    "figure_mi_curve",
    "figure_model_overlay",
    "figure_recycling",
    "figure_suppression",
    "figure_ttts",
    "find_peaks",
    "golden_answer_vectors",
    "iqr_peaks",
    "mi_trajectories",
    "nhsic",
    "nhsic_trajectory",
    "peaks_for_all",
    "permuted_coordinates_control",
    "random_token_ids",
    "recycle_generate",
    "recycling_eval",
    "shuffled_answer_control",
    "suppress_tokens",
    "suppression_test",
    "thinking_token_enrichment",
    "token_ids_for_words",
    "top_k_peaks",
    "ttts_eval",
    "word_of",
]
