"""Runs and jobs: the one contract every analysis, trainer and evaluation runs under.

- ``jobs``: the job contract in one import (:class:`Job`, the registry, :func:`run_job`), gathered from ``contract``
  (what a job module declares: :class:`Job`, :class:`DemoRun`), ``context`` (run options, progress, shards, the job
  context), ``config_files`` (a config from JSON), ``job_registry`` (every job by name) and ``runner`` (preflight, run
  folder, :func:`execute`, :func:`run_job`); ``entry_points``: a registry group's entry points, from a checkout's
  pyproject.toml when thinklens runs from one
- ``run_views``: what the app shows of a job's runs, as the job declares it (a trace reader, a comparison)
- ``folders``: run folders ``runs/<job>/<id>/`` (config, meta, results, figures), written atomically
- ``interrupts``: SIGINT and SIGTERM stop any job as :class:`JobInterrupted` (run marked interrupted, exit 130/143)
- ``stages``: resumable stages cached in a run folder; ``provenance``: the code version of a run, and the
  resume check against the code running now
- ``configcli``: command-line options generated from a job's config; ``headlines``: a run's one-line headline
- ``listing``: ``thinklens runs`` and ``thinklens runs show``
"""
