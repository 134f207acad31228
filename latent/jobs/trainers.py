"""``thinklens run codi | coconut | latent-sft | sft``: the latent trainers, one job per row of the method table.

Each job comes from its row of :data:`thinklens.latent.methods.METHODS` (:func:`thinklens.latent.methods.training_job`), so a new latent
method is its config, its module and one table row: this list (registered once in pyproject.toml as
``latent-trainers = "thinklens.latent.jobs.trainers:JOBS"``) makes it ``thinklens run <name>``. Each trains from a CoT model
into its own ``runs/<name>/<id>`` folder; its summary's findings (:func:`thinklens.latent.latent_findings.training_findings`): the
held-out accuracy against the majority guess and the training-loss change of the last phase. ``sft`` is the
token-level baseline of the latent table (CoT-SFT, or No-CoT with ``--cot false``) on the same batches.

Example:
    >>> [(j.name, j.config.__name__) for j in JOBS], all(j.run_kind == j.name for j in JOBS)
    ([('coconut', 'CoconutConfig'), ('codi', 'CODIConfig'), ('latent-sft', 'LatentSFTConfig'), ('sft', 'SFTConfig')], True)
    >>> # thinklens run codi --steps 400 --run-id codi-400 --publish data/zoo/tiny-codi
    >>> # thinklens run sft --cot false --steps 15000 --run-id nocot-15k
"""

from thinklens.latent.latent_findings import with_training_findings
from thinklens.latent.methods import METHODS, training_job

JOBS = [with_training_findings(training_job(name)) for name in METHODS]  # summaries hold the accuracy and loss findings
