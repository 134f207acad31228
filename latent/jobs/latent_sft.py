"""``thinklens run latent-sft``: train Latent-SFT (Deng et al. 2025) from a CoT model into a ``runs/<job>/<id>``
run folder.

The job comes from the method table (:func:`latent.methods.training_job`), as every latent trainer's; its summary's
findings (:func:`latent.findings.training_findings`): the held-out accuracy against the majority guess and the
training-loss change of the last phase.

Example:
    >>> JOB.name, JOB.config.__name__, JOB.run_kind
    ('latent-sft', 'LatentSFTConfig', 'latent-sft')
    >>> # thinklens run latent-sft --encoder-steps 80 --decoder-steps 80 --joint-steps 80 --stage2-steps 200
"""

from latent.findings import with_training_findings
from latent.methods import training_job

JOB = with_training_findings(training_job("latent-sft"))  # its summary holds the held-out accuracy and loss findings
