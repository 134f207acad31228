"""``thinklens run sft``: the token-level baselines of the latent table (CoT-SFT, or No-CoT with ``--cot false``)
trained by the latent trainer on the same batches as CODI, Coconut and Latent-SFT.

The job comes from the method table (:func:`latent.methods.training_job`), as every latent trainer's.

Example:
    >>> JOB.name, JOB.config.__name__, JOB.run_kind
    ('sft', 'SFTConfig', 'latent-train')
    >>> # thinklens run sft --cot false --steps 15000 --run-id nocot-15k
"""

from latent.methods import training_job

JOB = training_job("sft")
