"""What the runner hands every job besides its config: how it runs (:class:`RunOptions`), its progress reporter
(:class:`Progress`), its share of a multi-process launch (:class:`Shards`) and its :class:`JobContext` (loaded models,
run folder). Part of the job contract (:mod:`thinklens.runs.jobs`)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from thinklens.errors import ThinklensError, did_you_mean, opt, opt_name

if TYPE_CHECKING:
    from thinklens.runs.folders import RunFolder

T = TypeVar("T")
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
        import torch  # lazy: CLI start-up (torch)

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
        from tqdm.auto import tqdm  # lazy: CLI start-up (tqdm)

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
            import torch.distributed as dist  # lazy: CLI start-up (torch)

            dist.barrier()

    def share(self, value: T) -> T:
        """The main process's ``value`` on every process (the others pass anything, e.g. None); waits for the main one."""
        if self.size == 1:
            return value
        import torch.distributed as dist  # lazy: CLI start-up (torch)

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
            self._cache[name] = (self.loader or hooked_loader(self.options))(name)
        return self._cache[name]


def hooked_loader(options: RunOptions) -> Callable[[str], Any]:
    def load(name: str) -> Any:
        from thinklens.engine.model import HookedModel  # lazy: CLI start-up (torch)

        return HookedModel.load(name, device=options.device, dtype=options.torch_dtype)
    return load

