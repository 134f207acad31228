"""``thinklens run codi``: train CODI (Shen et al. 2025) from a CoT model into a ``runs/<job>/<id>`` run folder.

The job comes from the method table (:func:`latent.methods.training_job`), as every latent trainer's; its summary's
findings (:func:`latent.findings.training_findings`): the held-out accuracy against the majority guess and the
training-loss change of the last phase.

Example:
    >>> JOB.name, JOB.config.__name__, JOB.run_kind
    ('codi', 'CODIConfig', 'codi')
    >>> # thinklens run codi --steps 400 --run-id codi-400 --publish data/zoo/tiny-codi
"""

from latent.findings import with_training_findings
from latent.methods import training_job

JOB = with_training_findings(training_job("codi"))  # its summary holds the held-out accuracy and loss findings
