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

_EXPORTS: dict[str, str] = {
    "CI_METHODS": "analyses.mi.thinking_tokens",
    "ESTIMATORS": "analyses.mi.config",
    "EnrichmentResult": "analyses.mi.thinking_tokens",
    "METHODS": "analyses.mi.estimator",
    "MICurve": "analyses.mi.estimator",
    "MIPeaksJobConfig": "analyses.mi.config",
    "MITrajectory": "analyses.mi.trajectory",
    "NHSICConfig": "analyses.mi.config",
    "PEAK_RULES": "analyses.mi.peaks",
    "PRESETS": "analyses.jobs.mi_peaks",
    "Peaks": "analyses.mi.peaks",
    "REFERENCE_K": "analyses.mi.peaks",
    "RecycledTrace": "analyses.mi.recycling",
    "RecyclingResult": "analyses.mi.recycling",
    "ShuffledControl": "analyses.mi.controls",
    "SuppressionResult": "analyses.mi.suppression",
    "SuppressionRow": "analyses.mi.suppression",
    "TTTSResult": "analyses.mi.ttts",
    "TTTSRow": "analyses.mi.ttts",
    "TokenTrajectory": "analyses.mi.thinking_tokens",
    "TrajectoryRecord": "analyses.mi.store",
    "WordEnrichment": "analyses.mi.thinking_tokens",
    "accuracy_of": "analyses.mi.suppression",
    "compare_estimators": "analyses.mi.estimator",
    "default_layer": "analyses.mi.recycling",
    "derangement": "analyses.mi.controls",
    "estimator_config": "analyses.mi.config",
    "figure_controls": "analyses.mi.figures_runs",
    "figure_enrichment": "analyses.mi.figures",
    "figure_mean_curves": "analyses.mi.figures",
    "figure_mi_curve": "analyses.mi.figures",
    "figure_model_overlay": "analyses.mi.figures",
    "figure_overlay": "analyses.mi.figures_runs",
    "figure_recycling": "analyses.mi.figures_interventions",
    "figure_rr_sweep": "analyses.mi.figures_runs",
    "figure_sites": "analyses.mi.figures_runs",
    "figure_suppression": "analyses.mi.figures_interventions",
    "figure_trajectory": "analyses.mi.figures_runs",
    "figure_ttts": "analyses.mi.figures_interventions",
    "find_peaks": "analyses.mi.peaks",
    "gold_text": "analyses.mi.problems",
    "golden_answer_vectors": "analyses.mi.trajectory",
    "iqr_peaks": "analyses.mi.peaks",
    "mean_curve": "analyses.mi.figures",
    "mi_trajectories": "analyses.mi.trajectory",
    "nhsic": "analyses.mi.estimator",
    "nhsic_trajectory": "analyses.mi.estimator",
    "peaks_for_all": "analyses.mi.peaks",
    "permuted_coordinates_control": "analyses.mi.controls",
    "random_token_ids": "analyses.mi.vocab",
    "read_index": "analyses.mi.store",
    "read_trajectory": "analyses.mi.store",
    "recycle_generate": "analyses.mi.recycling",
    "recycling_eval": "analyses.mi.recycling",
    "shuffled_answer_control": "analyses.mi.controls",
    "suppress_tokens": "analyses.mi.suppression",
    "suppression_test": "analyses.mi.suppression",
    "thinking_token_enrichment": "analyses.mi.thinking_tokens",
    "token_ids_for_words": "analyses.mi.vocab",
    "token_of": "analyses.mi.thinking_tokens",
    "token_words": "analyses.mi.thinking_tokens",
    "top_k_peaks": "analyses.mi.peaks",
    "ttts_eval": "analyses.mi.ttts",
    "word_of": "analyses.mi.thinking_tokens",
    "write_index": "analyses.mi.store",
    "write_trajectory": "analyses.mi.store",
}
"""Public name -> defining module. Imported lazily (PEP 562): a page that only reads run folders
(``analyses.mi.store``, ``analyses.mi.figures_runs``) does not load the estimator, the solvers or the
model-side modules."""


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # cache: the next access is a plain attribute lookup
        return value
    raise AttributeError(f"module 'analyses.mi' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = sorted(_EXPORTS)
