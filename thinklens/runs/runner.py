"""Running a job: its inputs checked before anything loads (:func:`preflight`), its models loaded, its run folder
opened (:func:`open_run_folder`), ``run`` called under the signal guard (:func:`execute`); :func:`run_job` does it from
Python and returns a :class:`JobResult`. Part of the job contract (:mod:`thinklens.runs.jobs`)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thinklens.data.problemsets import DataOptions
from thinklens.engine.training import launched_rank, launched_world_size, shared_run_folder
from thinklens.errors import ThinklensError
from thinklens.runs.context import JobContext, Progress, RunOptions, Shards, hooked_loader
from thinklens.runs.contract import Job
from thinklens.runs.folders import RunEntry, RunFolder, default_runs_root
from thinklens.runs.interrupts import JobInterrupted, catch_signals
from thinklens.runs.job_registry import get_job
from thinklens.runs.listing import run_headline


def open_run_folder(job: Job, config: Any, options: RunOptions) -> "RunFolder":
    """The run folder for ``config`` under ``options`` (created, or reopened to resume).

    Under a multi-process launch (accelerate launch, torchrun) rank 0 opens it and every rank uses that one,
    recording its finished items in its own progress shard (``RunFolder.shard``).
    """
    def create() -> "RunFolder":
        if options.out:
            return RunFolder.create(job.run_kind, config, path=Path(options.out).expanduser(),
                                    allow_stale=options.allow_stale)
        root = Path(options.runs) if options.runs else default_runs_root()
        return RunFolder.create(job.run_kind, config, root=root, run_id=options.run_id, allow_stale=options.allow_stale)

    run = shared_run_folder(create, cpu=options.device == "cpu")
    run.shard = launched_rank()
    return run


def preflight(job: Job, config: Any) -> None:
    """The checks of ``config``'s inputs that need no model: ``job.preflight``, else the problem set of a config
    with a ``data`` field (:class:`~thinklens.data.problemsets.DataOptions`) read and parsed, so a missing or
    malformed file is refused before a model loads or a run folder is made.

    Example:
        >>> from thinklens.data.problemsets import DataOptions
        >>> @dataclass(frozen=True)
        ... class Cfg(DataOptions):
        ...     model: str = ""
        ...     seed: int = 0
        >>> preflight(Job("x", Cfg, lambda c, ctx: None, help="x", models=()), Cfg(data="missing.jsonl"))
        Traceback (most recent call last):
        ...
        thinklens.errors.ThinklensError: bad data source: received 'missing.jsonl'; ...
    """
    if job.preflight is not None:
        job.preflight(config)
        return

    if isinstance(config, DataOptions) and config.data:
        config.load()


def execute(job: Job, config: Any, options: RunOptions, *, models: Mapping[str, Any] | None = None) -> tuple[Any, "RunFolder"]:
    """Run ``job`` with a built config: inputs checked (:func:`preflight`), models loaded, run folder opened, result
    returned with the folder.

    SIGINT and SIGTERM stop it with :class:`~thinklens.runs.interrupts.JobInterrupted` (the run folder marked
    ``interrupted``; re-running resumes); a refusal (ThinklensError) marks it ``failed`` with its reason.
    """
    if options.threads:
        import torch  # lazy: CLI start-up (torch)

        torch.set_num_threads(options.threads)
    shards = Shards(launched_rank(), launched_world_size())
    if shards.size > 1 and options.device == "cuda":  # one GPU per process, as accelerate launch assigns them
        options = dataclasses.replace(options, device=f"cuda:{int(os.environ.get('LOCAL_RANK', shards.rank))}")
    main_process = shards.is_main  # under a multi-process launch only rank 0 writes the run's meta
    run: "RunFolder | None" = None
    with catch_signals() as guard:
        try:
            preflight(job, config)  # bad input costs no model load and leaves no run folder
            given = dict(models or {})
            load = (lambda n: job.load(n, options)) if job.load else hooked_loader(options)
            loaded: dict[str, Any] = {}
            for fname in job.models:
                name = getattr(config, fname)
                if fname in given:
                    loaded[fname] = given[fname]
                elif name:
                    loaded[fname] = load(name)
            opened = open_run_folder(job, config, options)
            run = opened
            if main_process:
                opened.write_meta(job=job.name, status="running", options=dataclasses.asdict(options),
                                  models={k: str(getattr(config, k)) for k in job.models},
                                  model_sources={k: m.source for k, m in loaded.items() if getattr(m, "source", None)},
                                  device=options.device, dtype=options.dtype, seed=getattr(config, "seed", None))
            progress = Progress(options.progress and main_process)
            ctx = JobContext(models=loaded, run=opened, progress=progress, options=options, loader=load, shards=shards)
            try:
                result = job.run(config, ctx)
            except ThinklensError as e:  # a refusal (exit 2 in the CLI): the run says so; a rerun with the fix may reuse its id
                if main_process:
                    opened.write_meta(status="failed", error=str(e))
                raise
            except Exception as e:  # a crash: failed with its error too (`thinklens runs`), never left "running"
                if main_process:
                    opened.write_meta(status="failed", error=f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}")
                raise
            if main_process and opened.meta().get("status") != "done":
                summary = job.summary(result) if job.summary else (result if isinstance(result, dict) else {})
                opened.finish(summary)
        except KeyboardInterrupt as e:  # SIGINT or SIGTERM (JobInterrupted), or Ctrl-C off the main thread
            stopped = e if isinstance(e, JobInterrupted) else JobInterrupted.of(e)
            with guard.shield():
                if run is not None and main_process and run.meta().get("status") != "done":
                    at = {"signal": stopped.signal_name, "at": _dt.datetime.now().isoformat(timespec="seconds")}
                    run.write_meta(status="interrupted", interruptions=[*run.meta().get("interruptions", []), at])
            stopped.run = run.path if run is not None else None
            if stopped is e:
                raise
            raise stopped from e
    return result, opened


@dataclass(frozen=True, repr=False)
class JobResult:
    """What :func:`run_job` returns: the run folder, its summary, findings and headline, and the job's own result.

    The job's result stays reachable as before: ``result["key"]`` (and ``get``, ``keys``, ``in``, ``len``)
    index it when it is a mapping (else the summary), indexing and iteration walk it when it is a list (zoo-eval's
    rows), and an attribute the record lacks is read from it (a LYNX run's ``result.report``), so code written
    against the bare result keeps working.

    Example:
        >>> r = JobResult("echo", Path("runs/echo/a"), {"n": 2, "findings": []}, [], "-", {"n": 2})
        >>> r["n"], "n" in r, dict(r), r.get("x", 0), r.run_dir.name
        (2, True, {'n': 2}, 0, 'a')
        >>> rows = JobResult("table", Path("runs/table/a"), {"findings": []}, [], "-", ["row 1", "row 2"])
        >>> list(rows), rows[0], len(rows)
        (['row 1', 'row 2'], 'row 1', 2)
    """

    job: str
    """The job's name (``lynx``)."""
    run_dir: Path
    """The run folder (config.json, meta.json, results/, figures/)."""
    summary: dict[str, Any]
    """The summary meta.json records (what ``thinklens runs`` and the app read), with the keys of the job
    result's own ``summary`` dict when it has one (LYNX's splits and calibration)."""
    findings: list[dict[str, Any]]
    """The summary's findings (claim, estimate, interval, verdict; :mod:`thinklens.calibration.stats`), ``[]`` for none."""
    headline: str
    """The run in one line, as ``thinklens runs`` shows it."""
    value: Any = None
    """The job's own typed result (a dict, a ``LynxResult``, ...)."""

    def _mapping(self) -> Mapping[str, Any]:
        return self.value if isinstance(self.value, Mapping) else self.summary

    def _container(self) -> Any:
        """What indexing, ``in``, ``len`` and iteration read: the job's result when it is a mapping or a list (zoo-eval's
        rows), else the summary."""
        return self.value if isinstance(self.value, (list, tuple)) else self._mapping()

    def __getitem__(self, key: Any) -> Any:
        return self._container()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._container()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._container())

    def __len__(self) -> int:
        return len(self._container())

    def keys(self) -> Iterable[str]:
        return self._mapping().keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return self._mapping().items()

    def values(self) -> Iterable[Any]:
        return self._mapping().values()

    def get(self, key: str, default: Any = None) -> Any:
        return self._mapping().get(key, default)

    def __eq__(self, other: object) -> bool:
        """Equal to another record with equal fields, or to what the job returned (``run_job(...) == {...}``)."""
        if isinstance(other, JobResult):
            return (self.job, self.run_dir, self.summary, self.findings, self.headline, self.value) == (
                other.job, other.run_dir, other.summary, other.findings, other.headline, other.value)
        return bool(self.value == other)

    __hash__ = None  # type: ignore[assignment]

    def __getattr__(self, name: str) -> Any:  # only names the record lacks reach here
        if name.startswith("__") or name == "value":
            raise AttributeError(name)
        try:
            return getattr(self.value, name)
        except AttributeError:
            raise AttributeError(f"JobResult of job {self.job!r} has no attribute {name!r} "
                                 f"(nor has its result, a {type(self.value).__name__})") from None

    def __repr__(self) -> str:
        return f"JobResult(job={self.job!r}, run_dir={str(self.run_dir)!r}, headline={self.headline!r})"

    @classmethod
    def of(cls, job: str, run: "RunFolder", value: Any) -> "JobResult":
        """The record of a finished ``run`` whose job returned ``value``."""
        meta = run.meta()
        summary = dict(meta.get("summary") or {})
        own = getattr(value, "summary", None)
        if isinstance(own, Mapping):
            summary.update({k: v for k, v in own.items() if k not in summary})
        entry = RunEntry(path=run.path, kind=job, run_id=run.run_id, status=meta.get("status", "unknown"),
                         created=meta.get("created", ""), summary=meta.get("summary"), config=run.config())
        return cls(job, run.path, summary, list(summary.get("findings") or []), run_headline(entry), value)


def run_job(name: str | Job, *, config: Any = None, preset: str | None = None, config_file: str | Path | None = None,
            device: str = "cpu", dtype: str = "float32", threads: int | None = None, runs: str | Path | None = None,
            run_id: str | None = None, out: str | Path | None = None, progress: bool = True, allow_stale: bool = False,
            **fields: Any) -> JobResult:
    """Run a job from Python and return its typed result (:class:`JobResult`: run folder, summary, findings,
    headline, and the job's own result as ``.value``).

    Args:
        name: a registered job name (``"lynx"``) or a :class:`Job`.
        config: a ready config object (then ``fields`` replace some of its values).
        allow_stale: resume a run whose code changed since it started (see :class:`RunOptions`).
        fields: config fields. A model field may hold a loaded ``HookedModel`` instead of a name: it is
            used as it is and its name is recorded in the config.

    Example:
        >>> # result = thinklens.run_job("lynx", model="tiny-think", n_train=50, runs="runs")
    """
    job = get_job(name)
    given_models = {}
    for fname in job.models:
        v = fields.get(fname)
        if v is not None and not isinstance(v, str):
            given_models[fname] = v
            fields[fname] = str(getattr(v, "name", fname))
    if config is not None:
        if not isinstance(config, job.config):
            raise ThinklensError.of(f"config of job {job.name}", type(config).__name__, job.config.__name__,
                                    f"build it with {job.config.__name__}(...)")
        cfg = dataclasses.replace(config, **fields)
    else:
        cfg = job.make_config(preset=preset, config_file=config_file, **fields)
    options = RunOptions(device=str(device), dtype=dtype, threads=threads, runs=None if runs is None else str(runs),
                         run_id=run_id, out=None if out is None else str(out), progress=progress,
                         allow_stale=allow_stale)
    result, run = execute(job, cfg, options, models=given_models)
    return JobResult.of(job.name, run, result)
