"""``thinklens run coconut``: train Coconut (Hao et al. 2024) from a CoT model into a ``latent-train`` run folder.

The job comes from the method table (:func:`latent.methods.training_job`), as every latent trainer's.

Example:
    >>> JOB.name, JOB.config.__name__, JOB.run_kind
    ('coconut', 'CoconutConfig', 'latent-train')
    >>> # thinklens run coconut --stage-steps 100 --final-stage-steps 100 --run-id coconut-short
"""

from latent.methods import training_job

JOB = training_job("coconut")
