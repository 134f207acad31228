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

import importlib

_EXPORTS: dict[str, str] = {
    "answer_specific": "thinklens.analyses.mi.peaks",
    "CI_METHODS": "thinklens.analyses.mi.thinking_tokens",
    "ESTIMATORS": "thinklens.analyses.mi.config",
    "EnrichmentResult": "thinklens.analyses.mi.thinking_tokens",
    "METHODS": "thinklens.analyses.mi.estimator",
    "MICurve": "thinklens.analyses.mi.estimator",
    "MIPeaksJobConfig": "thinklens.analyses.mi.config",
    "MITrajectory": "thinklens.analyses.mi.trajectory",
    "NHSICConfig": "thinklens.analyses.mi.config",
    "PEAK_RULES": "thinklens.analyses.mi.peaks",
    "PRESETS": "thinklens.analyses.jobs.mi_peaks",
    "Peaks": "thinklens.analyses.mi.peaks",
    "REFERENCE_K": "thinklens.analyses.mi.peaks",
    "RecycledTrace": "thinklens.analyses.mi.recycling",
    "RecyclingResult": "thinklens.analyses.mi.recycling",
    "ShuffledControl": "thinklens.analyses.mi.answer_controls",
    "SuppressionResult": "thinklens.analyses.mi.suppression",
    "SuppressionRow": "thinklens.analyses.mi.suppression",
    "TTTSResult": "thinklens.analyses.mi.ttts",
    "TTTSRow": "thinklens.analyses.mi.ttts",
    "TokenTrajectory": "thinklens.analyses.mi.thinking_tokens",
    "TrajectoryRecord": "thinklens.analyses.mi.run_format",
    "WordEnrichment": "thinklens.analyses.mi.thinking_tokens",
    "accuracy_of": "thinklens.analyses.mi.suppression",
    "compare_estimators": "thinklens.analyses.mi.estimator",
    "default_layer": "thinklens.analyses.mi.recycling",
    "derangement": "thinklens.analyses.mi.answer_controls",
    "estimator_config": "thinklens.analyses.mi.config",
    "figure_controls": "thinklens.analyses.mi.figures_runs",
    "figure_enrichment": "thinklens.analyses.mi.figures",
    "figure_mean_curves": "thinklens.analyses.mi.figures",
    "figure_mi_curve": "thinklens.analyses.mi.figures",
    "figure_model_overlay": "thinklens.analyses.mi.figures",
    "figure_overlay": "thinklens.analyses.mi.figures_runs",
    "figure_recycling": "thinklens.analyses.mi.figures_interventions",
    "figure_rr_sweep": "thinklens.analyses.mi.figures_runs",
    "figure_sites": "thinklens.analyses.mi.figures_runs",
    "figure_suppression": "thinklens.analyses.mi.figures_interventions",
    "figure_trajectory": "thinklens.analyses.mi.figures_runs",
    "figure_ttts": "thinklens.analyses.mi.figures_interventions",
    "find_peaks": "thinklens.analyses.mi.peaks",
    "gold_text": "thinklens.analyses.mi.inputs",
    "golden_answer_vectors": "thinklens.analyses.mi.trajectory",
    "iqr_peaks": "thinklens.analyses.mi.peaks",
    "mean_curve": "thinklens.analyses.mi.figures",
    "mi_trajectories": "thinklens.analyses.mi.trajectory",
    "nhsic": "thinklens.analyses.mi.estimator",
    "nhsic_trajectory": "thinklens.analyses.mi.estimator",
    "peaks_for_all": "thinklens.analyses.mi.peaks",
    "permuted_coordinates_control": "thinklens.analyses.mi.answer_controls",
    "random_token_ids": "thinklens.analyses.mi.vocab",
    "read_index": "thinklens.analyses.mi.run_format",
    "read_trajectory": "thinklens.analyses.mi.run_format",
    "recycle_generate": "thinklens.analyses.mi.recycling",
    "recycling_eval": "thinklens.analyses.mi.recycling",
    "shuffled_answer_control": "thinklens.analyses.mi.answer_controls",
    "suppress_tokens": "thinklens.analyses.mi.suppression",
    "suppression_test": "thinklens.analyses.mi.suppression",
    "thinking_token_enrichment": "thinklens.analyses.mi.thinking_tokens",
    "token_ids_for_words": "thinklens.analyses.mi.vocab",
    "token_of": "thinklens.analyses.mi.thinking_tokens",
    "token_words": "thinklens.analyses.mi.thinking_tokens",
    "top_k_peaks": "thinklens.analyses.mi.peaks",
    "ttts_eval": "thinklens.analyses.mi.ttts",
    "word_of": "thinklens.analyses.mi.thinking_tokens",
    "write_index": "thinklens.analyses.mi.run_format",
    "write_trajectory": "thinklens.analyses.mi.run_format",
}
"""Public name -> defining module. Imported lazily (PEP 562): a page that only reads run folders
(``thinklens.analyses.mi.run_format``, ``thinklens.analyses.mi.figures_runs``) does not load the estimator, the solvers or the
model-side modules."""


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # cache: the next access is a plain attribute lookup
        return value
    raise AttributeError(f"module 'thinklens.analyses.mi' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = sorted(_EXPORTS)
