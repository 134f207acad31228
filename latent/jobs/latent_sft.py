"""``thinklens run latent-sft``: train Latent-SFT (Deng et al. 2025) from a CoT model into a ``latent-train`` run
folder.

The job comes from the method table (:func:`latent.methods.training_job`), as every latent trainer's.

Example:
    >>> JOB.name, JOB.config.__name__, JOB.run_kind
    ('latent-sft', 'LatentSFTConfig', 'latent-train')
    >>> # thinklens run latent-sft --encoder-steps 80 --decoder-steps 80 --joint-steps 80 --stage2-steps 200
"""

from latent.methods import training_job

JOB = training_job("latent-sft")
