"""The job contract: one way to run every analysis, trainer and evaluation.

A job is one file holding one frozen config dataclass and one ``run(config, ctx)`` function, exported
as a :class:`Job` named ``JOB``. Capability packages register their jobs in the ``thinklens.jobs``
entry-point group of pyproject.toml (``lynx = "thinklens.probes.jobs.lynx:JOB"``), so the core never imports a
capability package. The CLI (``thinklens run <job>``), :func:`run_job` (Python and notebooks), the demo
and the app's "how to reproduce" hints are all built from that one contract.

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

import dataclasses
import json
import os
import re
import sys
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from thinklens.errors import ThinklensError, did_you_mean, in_cli, opt, opt_name

if TYPE_CHECKING:
    from thinklens.runs.folders import RunFolder

T = TypeVar("T")
ENTRY_POINT_GROUP = "thinklens.jobs"
DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class RunOptions:
    """How a job runs, as opposed to what it computes (the config). Common to every job."""

    device: str = "cpu"
    """Device of the models: cpu, cuda, cuda:1, mps, or auto (device_map="auto": one model over every visible GPU);
    under a multi-process launch cuda means each process's own GPU."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Weight dtype of the models: float32, bfloat16 or float16."""
    threads: int | None = None
    """torch CPU threads (default: torch's choice; 1 is fastest on a busy 2-core machine)."""
    runs: str | None = None
    """Root of the run folders (default: $THINKLENS_RUNS or ./runs)."""
    run_id: str | None = None
    """Run id (default: a timestamp); the same id with the same config resumes."""
    out: str | None = None
    """This run's folder, exactly (overrides --runs and --run-id)."""
    progress: bool = True
    """Show progress bars."""
    allow_stale: bool = False
    """Resume a run even though the code changed since it started (its cached work is reused; meta.json records it)."""

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ThinklensError.of(opt_name("dtype"), self.dtype, f"one of {', '.join(DTYPES)}", did_you_mean(self.dtype, DTYPES))
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise ThinklensError.of(opt_name("threads"), self.threads, "an integer >= 1 or None", f"pass {opt('threads', 1)}")

    @property
    def torch_dtype(self) -> Any:
        import torch

        return getattr(torch, self.dtype)


# Names a config field may not take: they are the runner's (model and seed are config fields by contract).
RESERVED = tuple(f.name for f in dataclasses.fields(RunOptions)) + ("config", "preset")


class Progress:
    """What a job reports while it runs: bars (hidden with ``--no-progress``) and log lines (stderr).

    Example:
        >>> p = Progress(enabled=False)
        >>> sum(p.iter(range(3), desc="x"))
        3
    """

    def __init__(self, enabled: bool = True, stream: Any = None):
        self.enabled = enabled
        self.stream = stream

    def iter(self, iterable: Iterable[T], desc: str = "", total: int | None = None) -> Iterator[T]:
        """``iterable`` with a progress bar (none when disabled)."""
        if not self.enabled:
            yield from iterable
            return
        from tqdm.auto import tqdm

        yield from tqdm(iterable, desc=desc, total=total, file=self.stream or sys.stderr, dynamic_ncols=True)

    def log(self, message: str) -> None:
        """One line of news (stage finished, figure written); shown even without bars."""
        print(message, file=self.stream or sys.stderr, flush=True)


@dataclass(frozen=True)
class Shards:
    """This process's place in a multi-process launch, and how a job splits its work over the processes.

    One process (the default): rank 0 of 1, :meth:`shard` returns every item, :meth:`merge` and :meth:`share`
    return at once, so a job written with them runs unchanged in one process.

    Example:
        >>> one = Shards()
        >>> one.shard(["b0", "b1", "b2"]), one.is_main, one.share(7)
        (['b0', 'b1', 'b2'], True, 7)
        >>> Shards(rank=1, size=2).shard(["b0", "b1", "b2"])
        ['b1']
    """

    rank: int = 0
    """This process (0 = the main process, which writes the run's results)."""
    size: int = 1
    """Processes of the launch."""

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def shard(self, items: Iterable[T]) -> list[T]:
        """This process's share of ``items``: every ``size``-th one from position ``rank``.

        Shard whole batches (each computed exactly as one process computes it, with its own seed) so that
        the merged result equals a one-process run.
        """
        return list(items)[self.rank::self.size]

    def merge(self) -> None:
        """Wait until every process has finished its share; then the stage items each recorded in the run
        folder (cache files, progress shards) are there for all to read."""
        if self.size > 1:
            import torch.distributed as dist

            dist.barrier()

    def share(self, value: T) -> T:
        """The main process's ``value`` on every process (the others pass anything, e.g. None); waits for the main one."""
        if self.size == 1:
            return value
        import torch.distributed as dist

        box = [value if self.is_main else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]


@dataclass
class JobContext:
    """What the runner hands a job: its loaded models, its run folder, a progress reporter, the options."""

    models: dict[str, Any]
    """Config field name -> loaded model, for every field in ``Job.models``."""
    run: "RunFolder"
    progress: Progress
    options: RunOptions = field(default_factory=RunOptions)
    loader: Callable[[str], Any] | None = None
    shards: Shards = field(default_factory=Shards)
    """This process's share of the work under a multi-process launch (one process: all of it)."""
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def model(self) -> Any:
        """The job's first (main) model."""
        if not self.models:
            raise ThinklensError.of("job model", "none loaded", "a job that declares models", "declare Job(models=('model',))")
        return next(iter(self.models.values()))

    def load(self, name: str) -> Any:
        """Load another model by name on the same device and dtype (cached; e.g. comparison siblings)."""
        for m in self.models.values():
            if getattr(m, "name", None) == name:
                return m
        if name not in self._cache:
            self._cache[name] = (self.loader or _hooked_loader(self.options))(name)
        return self._cache[name]


@dataclass(frozen=True)
class DemoRun:
    """One run of a job in ``make demo``: ``thinklens run <job> <args> --run-id <run_id>``.

    Example:
        >>> DemoRun(("--n-eval", "20"), print_summary=False).argv("zoo-eval")
        ('run', 'zoo-eval', '--n-eval', '20', '--run-id', 'demo', '--no-progress')
    """

    args: tuple[str, ...] = ()
    """The job's options, demo-sized (``{runs}`` is the demo's runs root)."""
    run_id: str = "demo"
    """Run id of its folder (a second run of one job gets its own, for the app's comparisons)."""
    label: str = ""
    """The demo step's name (default: the job's name, then ``-<suffix>`` of a second run id ``demo-<suffix>``)."""
    print_summary: bool = True
    """Print the run's summary after the step (False: the job's report says it all)."""
    progress: bool = False
    """Keep the progress bars (the demo hides them by default)."""

    def argv(self, job: str) -> tuple[str, ...]:
        """The ``thinklens`` arguments of this run."""
        return ("run", job, *self.args, "--run-id", self.run_id, *(() if self.progress else ("--no-progress",)))

    def name(self, job: str) -> str:
        """The step's label."""
        if self.label:
            return self.label
        return job if self.run_id == "demo" else f"{job}-{self.run_id.removeprefix('demo-')}"


@dataclass(frozen=True)
class Job:
    """A registered job: ``thinklens run <name>`` and ``run_job(<name>, ...)``."""

    name: str
    """CLI name, e.g. ``lynx``."""
    config: type
    """Frozen config dataclass; its field docstrings are the CLI help. Has ``model`` and ``seed`` fields."""
    run: Callable[[Any, JobContext], Any]
    """``run(config, ctx) -> result`` (a typed result; a dict is fine for small jobs)."""
    help: str
    """One line for ``thinklens run --help``."""
    description: str = ""
    """Paragraph for ``thinklens run <name> --help`` (default: the job module's docstring, up to its example)."""
    models: tuple[str, ...] = ("model",)
    """Config fields naming models the runner loads before ``run`` (empty: the job loads its own)."""
    load: Callable[[str, RunOptions], Any] | None = None
    """Loader for those models (default: ``HookedModel.load`` with the device and dtype)."""
    presets: Mapping[str, Any] | None = None
    """Named configs (``--preset NAME``) that options then override."""
    report: Callable[[Any], str] | None = None
    """The lines the CLI prints after the run folder (default: the result as JSON)."""
    summary: Callable[[Any], dict] | None = None
    """The run's summary for meta.json when the job did not call ``run.finish`` itself."""
    kind: str | None = None
    """Run-folder kind (default: ``name``)."""
    page: str | None = None
    """The app page that shows this job's runs (``pages/4_Steering.py``, relative to app/); None: Home only."""
    headline: Callable[[Mapping[str, Any], Path], str] | None = None
    """A run in words, ``headline(summary, run_folder)`` (Home's cards, ``thinklens runs``); default: the
    summary's findings, else its first numbers."""
    order: int | None = None
    """Place in the pipeline (Home's cards, the demo): data 10s, analyses 30s, probes 40s, steering 60-90,
    latent reasoning 100s; None: after those, by name."""
    demo: tuple["DemoRun", ...] = ()
    """The runs ``make demo`` makes of this job, in order (none: the demo skips it)."""
    former_kinds: tuple[str, ...] = ()
    """Run-folder kinds older versions of this job wrote (still shown, as this job's runs)."""
    preflight: Callable[[Any], None] | None = None
    """``preflight(config)``: the checks of its inputs that need no model (data files read and parsed, a word list,
    an SAE folder), run before any model loads or any run folder is made, so bad input costs neither; raises
    ThinklensError. Default: :func:`preflight` reads the config's problem set (``data``) when it has one."""

    def __post_init__(self) -> None:
        if not (dataclasses.is_dataclass(self.config) and self.config.__dataclass_params__.frozen):  # type: ignore[attr-defined]
            raise TypeError(f"job {self.name}: config must be a frozen dataclass")
        names = {f.name for f in dataclasses.fields(self.config)}
        missing = {"model", "seed"} - names
        if missing:
            raise TypeError(f"job {self.name}: config {self.config.__name__} lacks the contract fields {sorted(missing)}")
        clash = names & set(RESERVED)
        if clash:
            raise TypeError(f"job {self.name}: config fields {sorted(clash)} clash with the runner's options")
        if set(self.models) - names:
            raise TypeError(f"job {self.name}: models {sorted(set(self.models) - names)} are not config fields")

    @property
    def about(self) -> str:
        """The ``--help`` paragraph: ``description``, else the job module's docstring without its example."""
        if self.description:
            return self.description
        module = sys.modules.get(getattr(self.run, "__module__", ""))
        return plain_text((getattr(module, "__doc__", None) or "").split("Example:")[0]) or self.help

    @property
    def run_kind(self) -> str:
        return self.kind or self.name

    def make_config(self, *, preset: str | None = None, config_file: str | Path | None = None, **fields: Any) -> Any:
        """Defaults < preset < config file < ``fields``; the config's ``__post_init__`` validates."""
        base: dict[str, Any] = {}
        if preset is not None and preset != "default":
            if not self.presets or preset not in self.presets:
                choices = sorted(self.presets or {"default": None})
                raise ThinklensError.of(f"preset of {self.name}", preset, f"one of {', '.join(choices)}", did_you_mean(preset, choices))
            base = _fields_of(self.presets[preset])
        if config_file is not None:
            base.update(read_config_file(self.config, config_file))
        from thinklens.runs.configcli import rename_deprecated

        fields = rename_deprecated(self.config, fields)  # an old option name: one line naming the new one
        unknown = set(fields) - {f.name for f in dataclasses.fields(self.config)}
        if unknown:
            word = sorted(unknown)[0]
            names = [f.name for f in dataclasses.fields(self.config)]
            raise ThinklensError.of(f"option of job {self.name}", word, "a field of " + self.config.__name__,
                                    f"{did_you_mean(word, names)} (`thinklens run {self.name} --help` lists the options)")
        base.update(fields)
        return self.config(**base)


def plain_text(rest: str) -> str:
    """A reST docstring as one plain paragraph for ``--help``: inline code and cross-references as plain words.

    Example:
        >>> plain_text("Writes ``results/x.json``,\\n graded by :func:`thinklens.data.answers.is_correct` (:class:`~a.Trace`\\\\ s).")
        'Writes results/x.json, graded by thinklens.data.answers.is_correct (Traces).'
    """
    text = re.sub(r":[a-z]+:`(~?)([^`]+)`", lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2], rest)
    return " ".join(text.replace("``", "").replace("\\ ", "").split())


def _fields_of(config: Any) -> dict[str, Any]:
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def _coerce(tp: Any, value: Any) -> Any:
    """A JSON value back to the annotation's Python type (lists to tuples, recursively)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if value is None:
        return None
    if origin is tuple and isinstance(value, list):
        inner = args[0] if args else Any
        return tuple(_coerce(inner, v) for v in value)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        for a in args:
            if a is not type(None):
                return _coerce(a, value)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def config_from_dict(cls: type, data: Mapping[str, Any], *, source: str = "config") -> dict[str, Any]:
    """Validated field values of ``cls`` from a JSON object (unknown keys are an error with a hint)."""
    if not isinstance(data, Mapping):
        raise ThinklensError.of(source, type(data).__name__, f"a JSON object of {cls.__name__} fields", "write {\"field\": value, ...}")
    from thinklens.runs.configcli import rename_deprecated

    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    out = {}
    for k, v in rename_deprecated(cls, data).items():  # a config file written before a rename still reads
        if k not in hints or k not in names:
            raise ThinklensError.of(f"key in {source}", k, f"a field of {cls.__name__}", did_you_mean(k, names))
        out[k] = _coerce(hints[k], v)
    return out


def read_config_file(cls: type, path: str | Path) -> dict[str, Any]:
    """The fields of a JSON config file (e.g. a run folder's config.json)."""
    p = Path(path)
    if not p.is_file():
        raise ThinklensError.of(f"{opt_name('config' if in_cli() else 'config_file')} file", str(p), "an existing JSON file",
                                "pass a run folder's config.json")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ThinklensError.of(f"{opt_name('config' if in_cli() else 'config_file')} file", str(p), "valid JSON",
                                f"fix the file ({e})") from None
    return config_from_dict(cls, data, source=str(p))


# ---------------------------------------------------------------- registry

_JOBS: dict[str, Job] | None = None
_ENTRY: dict[str, Any] | None = None


def _entry_points() -> dict[str, Any]:
    """Job name -> its entry point (loaded when the job is first asked for), or the :class:`Job` itself.

    An entry point whose object is named ``JOBS`` (``latent-trainers = "thinklens.latent.jobs:JOBS"``) holds a list of
    jobs, one per row of a method table: it is loaded here, since only its list names its jobs.
    """
    global _ENTRY
    if _ENTRY is None:
        from thinklens.runs.entry_points import entry_points

        out: dict[str, Any] = {}
        for ep in entry_points(ENTRY_POINT_GROUP):  # a checkout's own pyproject.toml, installed or not
            if ep.attr is not None and ep.attr.endswith("JOBS"):
                out.update({job.name: job for job in _job_list(ep)})
            else:
                out[ep.name] = ep
        _ENTRY = out
    return _ENTRY


def _job_list(ep: Any) -> list[Job]:
    jobs = ep.load()
    if not isinstance(jobs, (list, tuple)) or not all(isinstance(j, Job) for j in jobs):
        raise TypeError(f"entry point {ep.name} = {ep.value} is not a list of Jobs")
    return list(jobs)


def job_names() -> list[str]:
    """Every registered job, without importing any (cheap)."""
    return sorted(_entry_points())


def get_job(name: str | Job) -> Job:
    """The registered job ``name`` (its module is imported now)."""
    if isinstance(name, Job):
        return name
    global _JOBS
    _JOBS = _JOBS if _JOBS is not None else {}
    if name not in _JOBS:
        eps = _entry_points()
        if name not in eps:
            raise ThinklensError.of("job", name, f"one of {', '.join(sorted(eps))}", did_you_mean(name, sorted(eps)))
        entry = eps[name]
        job = entry if isinstance(entry, Job) else entry.load()
        if isinstance(job, (list, tuple)):  # an entry point returning a list of jobs: the one named here
            job = next((j for j in job if isinstance(j, Job) and j.name == name), None)
        if not isinstance(job, Job) or job.name != name:
            raise TypeError(f"entry point {name} = {getattr(entry, 'value', entry)} is not a Job named {name!r}")
        _JOBS[name] = job
    return _JOBS[name]


def all_jobs() -> list[Job]:
    """Every registered job, loaded."""
    return [get_job(n) for n in job_names()]


def pipeline_jobs(errors: list[str] | None = None) -> list[Job]:
    """Every registered job that loads, in pipeline order (``Job.order``, then by name; no order last).

    A job whose module fails to import is left out (a reader such as the app must still show the rest);
    its error is appended to ``errors``.
    """
    jobs = []
    for name in job_names():
        try:
            jobs.append(get_job(name))
        except Exception as e:  # noqa: BLE001 - one broken job module never hides the others
            if errors is not None:
                errors.append(f"job {name}: {type(e).__name__}: {e}")
    return sorted(jobs, key=lambda j: (j.order is None, j.order or 0, j.name))


def jobs_by_kind(errors: list[str] | None = None) -> dict[str, Job]:
    """Run-folder kind -> the job whose runs it holds (former kinds included; the first job in pipeline order wins).

    Example:
        >>> kinds = jobs_by_kind()
        >>> kinds["mi-peaks"].name, kinds["latent-train"].run_kind == kinds["latent-train"].name
        ('mi-peaks', True)
    """
    out: dict[str, Job] = {}
    jobs = pipeline_jobs(errors)
    for job in jobs:
        out.setdefault(job.run_kind, job)
    for job in jobs:
        for kind in job.former_kinds:
            out.setdefault(kind, job)
    return out


# ---------------------------------------------------------------- running


def _hooked_loader(options: RunOptions) -> Callable[[str], Any]:
    def load(name: str) -> Any:
        from thinklens.engine.model import HookedModel

        return HookedModel.load(name, device=options.device, dtype=options.torch_dtype)
    return load


def open_run_folder(job: Job, config: Any, options: RunOptions) -> "RunFolder":
    """The run folder for ``config`` under ``options`` (created, or reopened to resume).

    Under a multi-process launch (accelerate launch, torchrun) rank 0 opens it and every rank uses that one,
    recording its finished items in its own progress shard (``RunFolder.shard``).
    """
    from thinklens.engine.training import shared_run_folder
    from thinklens.runs.folders import RunFolder, default_runs_root

    def create() -> "RunFolder":
        if options.out:
            return RunFolder.create(job.run_kind, config, path=Path(options.out).expanduser(),
                                    allow_stale=options.allow_stale)
        root = Path(options.runs) if options.runs else default_runs_root()
        return RunFolder.create(job.run_kind, config, root=root, run_id=options.run_id, allow_stale=options.allow_stale)

    from thinklens.engine.training import launched_rank

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
    from thinklens.data.problemsets import DataOptions

    if isinstance(config, DataOptions) and config.data:
        config.load()


def execute(job: Job, config: Any, options: RunOptions, *, models: Mapping[str, Any] | None = None) -> tuple[Any, "RunFolder"]:
    """Run ``job`` with a built config: inputs checked (:func:`preflight`), models loaded, run folder opened, result
    returned with the folder.

    SIGINT and SIGTERM stop it with :class:`~thinklens.runs.interrupts.JobInterrupted` (the run folder marked
    ``interrupted``; re-running resumes); a refusal (ThinklensError) marks it ``failed`` with its reason.
    """
    from thinklens.engine.training import launched_rank, launched_world_size
    from thinklens.runs.interrupts import JobInterrupted, catch_signals

    if options.threads:
        import torch

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
            load = (lambda n: job.load(n, options)) if job.load else _hooked_loader(options)
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
                    import datetime as _dt

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
        from thinklens.runs.folders import RunEntry
        from thinklens.runs.listing import run_headline

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
