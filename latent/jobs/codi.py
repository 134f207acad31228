"""``thinklens run codi``: train CODI (Shen et al. 2025) from a CoT model into a ``latent-train`` run folder.

The job comes from the method table (:func:`latent.methods.training_job`), as every latent trainer's.

Example:
    >>> JOB.name, JOB.config.__name__, JOB.run_kind
    ('codi', 'CODIConfig', 'latent-train')
    >>> # thinklens run codi --steps 400 --run-id codi-400 --publish data/zoo/tiny-codi
"""

from latent.methods import training_job

JOB = training_job("codi")
