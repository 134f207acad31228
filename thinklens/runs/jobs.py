"""The job contract: one way to run every analysis, trainer and evaluation.

A job is one file holding one frozen config dataclass and one ``run(config, ctx)`` function, exported
as a :class:`Job` named ``JOB``, which also declares what the rest reads of it (its findings, README row, demo runs,
validation settings, trace reader, comparison, smallest run: :class:`~thinklens.runs.contract.Job`). A module of a
``jobs`` package registers by its file (``probes/jobs/lynx.py`` is ``thinklens run lynx``: the registry lists those
folders, :mod:`thinklens.runs.job_registry`), so the core never imports a capability package and a new job needs no
entry point and no reinstall. The CLI (``thinklens run <job>``), :func:`run_job` (Python and notebooks), the demo,
the app's pages and the README's table are all built from that one contract.

What the runner does for every job, in order:
1. the config: the job's defaults, then a named preset, then a JSON ``--config`` file (a run folder's
   own config.json reproduces the run), then the options given (CLI) or keywords (Python);
2. the run folder: exactly ``out``, else ``<runs>/<job>/<run_id or a timestamp>``; the same id with the
   same config resumes, another config is an error, and so is code changed since the run started (unless
   ``allow_stale``); meta.json records the code version, device, dtype and seed;
3. the models: each config field named in ``Job.models`` is loaded once with the device and dtype
   (``Job.load`` for jobs whose models are not plain :class:`~thinklens.engine.model.HookedModel`\\ s);
4. ``job.run(config, ctx)``; the typed result it returns is handed back; the run is marked done.

Several processes (``accelerate launch --num_processes N`` or ``torchrun``): every process runs the job in
the same run folder, each recording its finished items in its own progress shard. A job opts in to
splitting its work through ``ctx.shards`` (:class:`Shards`): ``shard(items)`` is this process's share,
``merge()`` waits for every share, after which the main process reads them all and writes the results,
and ``share(value)`` hands the main process's result to the others. A job that does not use it runs whole
in every process (trainers split their batches through Accelerate instead).

A job module imports nothing heavy at its top (no torch, transformers or scikit-learn): ``thinklens
run --help`` loads every job's config, and must stay fast.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class EchoConfig:
    ...     model: str = ""
    ...     '''Unused.'''
    ...     seed: int = 0
    ...     '''Seed.'''
    ...     word: str = "hi"
    ...     '''What to write.'''
    >>> def echo(config, ctx):
    ...     ctx.run.write_result("echo", {"word": config.word})
    ...     return {"word": config.word, "seed": config.seed}
    >>> job = Job("echo", EchoConfig, echo, help="write a word", models=())
    >>> import tempfile
    >>> result = run_job(job, word="ho", seed=3, runs=tempfile.mkdtemp(), run_id="r", progress=False)
    >>> result["word"], result.value, result.run_dir.name, result.findings
    ('ho', {'word': 'ho', 'seed': 3}, 'r', [])
"""

from __future__ import annotations

from thinklens.runs.config_files import config_from_dict, read_config_file
from thinklens.runs.context import DTYPES, RESERVED, JobContext, Progress, RunOptions, Shards
from thinklens.runs.contract import DemoRun, Job, plain_text
from thinklens.runs.job_registry import ENTRY_POINT_GROUP, all_jobs, get_job, job_names, jobs_by_kind, pipeline_jobs
from thinklens.runs.runner import JobResult, execute, open_run_folder, preflight, run_job

__all__ = [
    "DTYPES", "ENTRY_POINT_GROUP", "RESERVED", "DemoRun", "Job", "JobContext", "JobResult", "Progress", "RunOptions",
    "Shards", "all_jobs", "config_from_dict", "execute", "get_job", "job_names", "jobs_by_kind", "open_run_folder",
    "pipeline_jobs", "plain_text", "preflight", "read_config_file", "run_job",
]
