"""The latent-reasoning jobs, one file each, registered in pyproject.toml's ``thinklens.jobs`` entry points:
``codi``, ``coconut``, ``latent-sft`` (trainers), ``latent-seek`` and ``latent-eval``."""
