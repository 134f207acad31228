"""``thinklens run sft``: the token-level baselines of the latent table (CoT-SFT, or No-CoT with ``--cot false``)
trained by the latent trainer on the same batches as CODI, Coconut and Latent-SFT.

The job comes from the method table (:func:`latent.methods.training_job`), as every latent trainer's; its summary's
findings (:func:`latent.findings.training_findings`): the held-out accuracy against the majority guess and the
training-loss change of the last phase.

Example:
    >>> JOB.name, JOB.config.__name__, JOB.run_kind
    ('sft', 'SFTConfig', 'sft')
    >>> # thinklens run sft --cot false --steps 15000 --run-id nocot-15k
"""

from latent.findings import with_training_findings
from latent.methods import training_job

JOB = with_training_findings(training_job("sft"))  # its summary holds the held-out accuracy and loss findings
