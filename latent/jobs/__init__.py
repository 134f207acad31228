"""The latent-reasoning jobs, registered in pyproject.toml's ``thinklens.jobs`` entry points: the trainers ``codi``,
``coconut``, ``latent-sft`` and ``sft`` (one per row of the method table, :mod:`thinklens.latent.jobs.trainers`), ``latent-seek``
and ``latent-eval``."""
