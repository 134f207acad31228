"""Steering: SAEs (sae-lens), feature steering, activation vectors, reasoning vectors, hybrid steering.

Modules (one concept each):

- :mod:`steering.sae`: train an sae-lens SAE at a HookedModel site from local data; load any sae-lens
  folder; sae-lens's metrics (explained variance, L0, dead features, CE loss recovered).
- :mod:`steering.features`: feature statistics over traces (top contexts, thinking-word and correctness
  correlations, activation along a trace).
- :mod:`steering.feature_steering`: ``add_feature`` (AddVector of ``W_dec[f]``), ``ClampFeature`` (error
  term kept), equal-norm baselines; :mod:`steering.effects` measures what steering does.
- :mod:`steering.vectors`: difference-of-means steering vectors.
- :mod:`steering.reasoning_vectors`: weight-space task vectors between checkpoints of one lineage
  (parameter groups from the core adapters); the GRPO donor ``tiny-grpo`` is the zoo's (:mod:`zoo.grpo`).
- :mod:`steering.hybrid` / :mod:`steering.hybrid_generate`: hybrid base/thinking steering (Venhoff et al.).
- :mod:`steering.configs`: the algorithms' settings (SAE training, hybrid steering, GRPO), light to import.
- :mod:`steering.jobs`: one file per job (``thinklens run sae|sae-eval|steer|reasoning-vector|hybrid``);
  :mod:`steering.figures`: plotly figures.

Example:
    >>> from steering.vectors import SteeringVector
    >>> import torch
    >>> SteeringVector("resid_post.2", torch.zeros(4), 1, 1, "last").norm
    0.0
"""

from thinklens.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "train_sae": "steering.sae", "load_sae": "steering.sae", "evaluate_sae": "steering.sae",
    "read_metrics": "steering.sae",
    "THINKING_WORDS": "steering.features", "FeatureStats": "steering.features", "feature_stats": "steering.features",
    "FeatureTrace": "steering.features", "feature_trace": "steering.features",
    "add_feature": "steering.feature_steering", "ClampFeature": "steering.feature_steering",
    "clamp_feature": "steering.feature_steering", "feature_direction": "steering.feature_steering",
    "random_feature": "steering.feature_steering",
    "SteeringVector": "steering.vectors", "diff_of_means": "steering.vectors", "mean_activation": "steering.vectors",
    "from_traces": "steering.vectors", "marked_diff_of_means": "steering.vectors",
    "next_token_diff_of_means": "steering.vectors", "word_starts": "steering.features",
    "ReasoningVector": "steering.reasoning_vectors", "reasoning_vector": "steering.reasoning_vectors",
    "apply_vector": "steering.reasoning_vectors", "alpha_sweep": "steering.reasoning_vectors",
    "lineage_report": "steering.reasoning_vectors",
    "HybridVectors": "steering.hybrid", "train_hybrid_vectors": "steering.hybrid",
    "HybridResult": "steering.hybrid_generate",
    "evaluate_hybrid": "steering.hybrid_generate",
    "SAETrainConfig": "steering.configs", "HybridConfig": "steering.configs", "GRPOConfig": "steering.configs",
    "steer_sweep": "steering.effects", "steer_prompt": "steering.effects",
    "SAEJobConfig": "steering.jobs.sae",
    "SAEEvalConfig": "steering.jobs.sae_eval",
    "SteerJobConfig": "steering.jobs.steer",
    "ReasoningVectorJobConfig": "steering.jobs.reasoning_vector",
    "HybridJobConfig": "steering.configs",
}
"""Public name -> defining module, imported on first use (PEP 562): ``import steering`` loads none of them,
``from steering import X`` loads X's module only, and ``dir(steering)`` lists them all (tab completion)."""

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
