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
  (parameter groups from the core adapters); :mod:`steering.grpo` makes the GRPO donor ``tiny-grpo``.
- :mod:`steering.hybrid` / :mod:`steering.hybrid_generate`: hybrid base/thinking steering (Venhoff et al.).
- :mod:`steering.configs`: the algorithms' settings (SAE training, hybrid steering, GRPO), light to import.
- :mod:`steering.jobs`: one file per job (``thinklens run sae|sae-eval|steer|reasoning-vector|hybrid|grpo``);
  :mod:`steering.figures`: plotly figures.

Example:
    >>> from steering.vectors import SteeringVector
    >>> import torch
    >>> SteeringVector("resid_post.2", torch.zeros(4), 1, 1, "last").norm
    0.0
"""
