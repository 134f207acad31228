"""Steering: SAEs (sae-lens), feature steering, activation vectors, reasoning vectors, hybrid steering.

Modules (one concept each):

- :mod:`thinklens.steering.sae`: train an sae-lens SAE at a HookedModel site from local data; load any sae-lens
  folder; sae-lens's metrics (explained variance, L0, dead features, CE loss recovered).
- :mod:`thinklens.steering.features`: feature statistics over traces (top contexts, thinking-word and correctness
  correlations, activation along a trace).
- :mod:`thinklens.steering.feature_steering`: ``add_feature`` (AddVector of ``W_dec[f]``), ``ClampFeature`` (error
  term kept), equal-norm baselines; :mod:`thinklens.steering.effects` measures what steering does.
- :mod:`thinklens.steering.vectors`: difference-of-means steering vectors.
- :mod:`thinklens.steering.reasoning_vectors`: weight-space task vectors between checkpoints of one lineage
  (parameter groups from the core adapters); the GRPO donor ``tiny-grpo`` is the zoo's (:mod:`thinklens.zoo.grpo`).
- :mod:`thinklens.steering.hybrid` / :mod:`thinklens.steering.hybrid_generate`: hybrid base/thinking steering (Venhoff et al.).
- :mod:`thinklens.steering.configs`: the algorithms' settings (SAE training, hybrid steering), light to import (GRPO's are
  the zoo's: :mod:`thinklens.zoo.grpo_config`).
- :mod:`thinklens.steering.jobs`: one file per job (``thinklens run sae|sae-eval|steer|reasoning-vector|hybrid``);
  :mod:`thinklens.steering.figures`: plotly figures.

Example:
    >>> from thinklens.steering.vectors import SteeringVector
    >>> import torch
    >>> SteeringVector("resid_post.2", torch.zeros(4), 1, 1, "last").norm
    0.0
"""

from thinklens.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "train_sae": "thinklens.steering.sae", "load_sae": "thinklens.steering.sae", "evaluate_sae": "thinklens.steering.sae",
    "read_metrics": "thinklens.steering.sae",
    "THINKING_WORDS": "thinklens.steering.features", "FeatureStats": "thinklens.steering.features",
    "feature_stats": "thinklens.steering.features",
    "FeatureTrace": "thinklens.steering.features", "feature_trace": "thinklens.steering.features",
    "add_feature": "thinklens.steering.feature_steering", "ClampFeature": "thinklens.steering.feature_steering",
    "clamp_feature": "thinklens.steering.feature_steering", "feature_direction": "thinklens.steering.feature_steering",
    "random_feature": "thinklens.steering.feature_steering",
    "SteeringVector": "thinklens.steering.vectors", "diff_of_means": "thinklens.steering.vectors",
    "mean_activation": "thinklens.steering.vectors",
    "from_traces": "thinklens.steering.vectors", "marked_diff_of_means": "thinklens.steering.vectors",
    "next_token_diff_of_means": "thinklens.steering.vectors", "word_starts": "thinklens.steering.features",
    "ReasoningVector": "thinklens.steering.reasoning_vectors", "reasoning_vector": "thinklens.steering.reasoning_vectors",
    "apply_vector": "thinklens.steering.reasoning_vectors", "alpha_sweep": "thinklens.steering.reasoning_vectors",
    "lineage_report": "thinklens.steering.reasoning_vectors",
    "HybridVectors": "thinklens.steering.hybrid", "train_hybrid_vectors": "thinklens.steering.hybrid",
    "HybridResult": "thinklens.steering.hybrid_generate",
    "evaluate_hybrid": "thinklens.steering.hybrid_generate",
    "SAETrainConfig": "thinklens.steering.configs", "HybridConfig": "thinklens.steering.configs",
    "steer_sweep": "thinklens.steering.effects", "steer_prompt": "thinklens.steering.effects",
    "SAEJobConfig": "thinklens.steering.jobs.sae",
    "SAEEvalConfig": "thinklens.steering.jobs.sae_eval",
    "SteerJobConfig": "thinklens.steering.jobs.steer",
    "ReasoningVectorJobConfig": "thinklens.steering.jobs.reasoning_vector",
    "HybridJobConfig": "thinklens.steering.configs",
}
"""Public name -> defining module, imported on first use (PEP 562): ``import thinklens.steering`` loads none of them,
``from thinklens.steering import X`` loads X's module only, and ``dir(steering)`` lists them all (tab completion)."""

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
