"""Resumable stages of a job: stage items cached in its run folder, computed once, read back on resume.

A stage item (one batch of rollouts, of features, of labels) is written atomically to
``<run>/cache/<item>.json`` or ``.safetensors`` and then recorded with ``RunFolder.mark_done``; on a
re-run with the same config, finished items are read back instead of recomputed. A job that draws
each batch from its own seed (:func:`batch_seed`) therefore computes exactly what an uninterrupted
run does, whichever batches were already cached. Nothing is pickled.

Example:
    >>> import tempfile, numpy as np
    >>> from thinklens.runs.folders import RunFolder
    >>> cache = StageCache(RunFolder.create("demo", {}, root=tempfile.mkdtemp(), run_id="r"))
    >>> calls = []
    >>> def compute():
    ...     calls.append(1)
    ...     return {"x": np.arange(3, dtype=np.float32)}
    >>> a = cache.arrays("features.train.0000", compute)
    >>> b = cache.arrays("features.train.0000", compute)  # read back, not recomputed
    >>> len(calls), b["x"].tolist()
    (1, [0.0, 1.0, 2.0])
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import safetensors.numpy

from thinklens.errors import ThinklensError
from thinklens.runs.folders import RunFolder, atomic_write_bytes, atomic_write_json, validate_id


class StageCache:
    """Finished stage items of one run folder, each a JSON or safetensors file under ``cache/``."""

    def __init__(self, run: RunFolder):
        self.run = run
        self.dir = run.path / "cache"
        self._done = set(run.finished())

    def refresh(self) -> None:
        """Re-read the finished items (after ``Shards.merge``: those the other processes recorded)."""
        self._done = set(self.run.finished())

    def done(self, item: str) -> bool:
        """Whether ``item`` finished in this or an earlier (interrupted) run."""
        return item in self._done

    def finish(self, item: str) -> None:
        """Record ``item`` as finished (for stages that write their own files, e.g. a saved probe)."""
        self.run.mark_done(item)
        self._done.add(item)

    def json(self, item: str, compute: Callable[[], Any]) -> Any:
        """The cached JSON value of ``item``, computing and caching it first if needed."""
        path = self.dir / f"{validate_id(item, 'stage item')}.json"
        if self.done(item) and path.is_file():
            return json.loads(path.read_text())
        value = compute()
        atomic_write_json(path, value)
        self.finish(item)
        return json.loads(path.read_text())  # the same (JSON-normalised) value on every run

    def arrays(self, item: str, compute: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """The cached arrays of ``item`` (safetensors), computing and caching them first if needed."""
        path = self.dir / f"{validate_id(item, 'stage item')}.safetensors"
        if self.done(item) and path.is_file():
            return safetensors.numpy.load_file(str(path))
        value = {k: np.ascontiguousarray(v) for k, v in compute().items()}
        atomic_write_bytes(path, safetensors.numpy.save(value))
        self.finish(item)
        return value


def batch_ranges(n: int, size: int) -> list[range]:
    """``range(n)`` cut into consecutive batches of at most ``size`` indices.

    Example:
        >>> batch_ranges(5, 2)
        [range(0, 2), range(2, 4), range(4, 5)]
    """
    if not isinstance(size, int) or size < 1:
        raise ThinklensError.of("batch size", size, "an integer >= 1", "use e.g. 32")
    return [range(lo, min(lo + size, n)) for lo in range(0, n, size)]


def batch_seed(seed: int, *coordinates: int) -> int:
    """A 31-bit seed for one batch, derived from the job seed and the batch's coordinates.

    Example:
        >>> batch_seed(0, 1, 2) == batch_seed(0, 1, 2) != batch_seed(0, 1, 3)
        True
    """
    return int(np.random.default_rng([int(seed), *map(int, coordinates)]).integers(2**31 - 1))
