"""Resumable stages of the probe jobs: cached stage outputs in a run folder, and sampled rollouts.

A stage item (one chunk of rollouts, of features, of labels) is written atomically to
``<run>/cache/<item>.json`` or ``.safetensors`` and then recorded with ``RunFolder.mark_done``; on a
re-run, finished items are read back instead of recomputed. Every chunk draws from its own seed, so
an interrupted and resumed job computes exactly what an uninterrupted one does. Nothing is pickled.

Example:
    >>> import tempfile, numpy as np
    >>> from thinklens.runs import RunFolder
    >>> cache = StageCache(RunFolder.create("demo", {}, root=tempfile.mkdtemp(), run_id="r"))
    >>> calls = []
    >>> def compute():
    ...     calls.append(1)
    ...     return {"x": np.arange(3, dtype=np.float32)}
    >>> a = cache.arrays("features.train.000", compute)
    >>> b = cache.arrays("features.train.000", compute)  # read back, not recomputed
    >>> len(calls), b["x"].tolist()
    (1, [0.0, 1.0, 2.0])
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import safetensors.numpy

from thinklens.errors import ThinklensError
from thinklens.runs import RunFolder, atomic_write_bytes, atomic_write_json, validate_id
from thinklens.trace import Trace


class StageCache:
    """Finished stage items of one run folder, each a JSON or safetensors file under ``cache/``."""

    def __init__(self, run: RunFolder):
        self.run = run
        self.dir = run.path / "cache"
        self._done = set(run.finished())

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


def trace_to_json(trace: Trace) -> dict[str, Any]:
    """The token-level part of a trace (no hidden states): what later stages need."""
    return {"prompt": trace.prompt, "prompt_ids": list(trace.prompt_ids), "token_ids": list(trace.token_ids),
            "tokens": list(trace.tokens), "text": trace.text, "stop_reason": trace.stop_reason}


def trace_from_json(doc: dict[str, Any]) -> Trace:
    """Inverse of :func:`trace_to_json` (hidden states and logit statistics are not kept)."""
    return Trace(prompt=doc["prompt"], prompt_ids=[int(i) for i in doc["prompt_ids"]],
                 token_ids=[int(i) for i in doc["token_ids"]], tokens=list(doc["tokens"]), text=doc["text"],
                 stop_reason=doc["stop_reason"])


def chunk_seed(seed: int, *parts: int) -> int:
    """A 31-bit seed for one chunk, derived from the job seed and the chunk's coordinates.

    Example:
        >>> chunk_seed(0, 1, 2) == chunk_seed(0, 1, 2) != chunk_seed(0, 1, 3)
        True
    """
    return int(np.random.default_rng([int(seed), *map(int, parts)]).integers(2**31 - 1))


def chunks(n: int, size: int) -> list[range]:
    """``range(n)`` cut into consecutive pieces of at most ``size``.

    Example:
        >>> chunks(5, 2)
        [range(0, 2), range(2, 4), range(4, 5)]
    """
    if size < 1:
        raise ThinklensError.of("batch size", size, "an integer >= 1", "use e.g. 32")
    return [range(lo, min(lo + size, n)) for lo in range(0, n, size)]


@dataclass(frozen=True)
class SamplingConfig:
    """How rollouts are sampled."""

    max_new_tokens: int
    """Upper bound on generated tokens per rollout."""
    temperature: float = 0.6
    """Sampling temperature (LYNX reference: 0.6)."""
    top_p: float = 0.95
    """Nucleus mass (LYNX reference: 0.95)."""
    do_sample: bool = True
    """Sample (True) or decode greedily (False)."""


def sample_rollouts(model, prompts: Sequence[str], sampling: SamplingConfig, cache: StageCache, *, name: str,
                    seed: int, batch_size: int, progress: bool = False) -> list[Trace]:
    """Rollouts for ``prompts``, one cached chunk of ``batch_size`` at a time (item ``<name>.<k>``).

    Chunk ``k`` samples with :func:`chunk_seed` ``(seed, k)``, so results do not depend on which
    chunks were already cached.
    """
    from tqdm.auto import tqdm

    out: list[Trace] = []
    parts = chunks(len(prompts), batch_size)
    for k, rows in enumerate(tqdm(parts, desc=name, disable=not progress)):
        def compute(rows=rows, k=k) -> list[dict[str, Any]]:
            traces = model.generate([prompts[i] for i in rows], max_new_tokens=sampling.max_new_tokens,
                                    do_sample=sampling.do_sample, seed=chunk_seed(seed, k),
                                    temperature=sampling.temperature, top_p=sampling.top_p, top_k_stats=1)
            return [trace_to_json(t) for t in traces]
        out.extend(trace_from_json(d) for d in cache.json(f"{name}.{k:04d}", compute))
    return out
