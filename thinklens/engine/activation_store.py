"""ActivationStore: activations as sharded safetensors plus JSON, written by many processes, streamed back.

Layout of a store folder::

    shard-<writer>-<seq>.safetensors   one tensor per site, [rows, d]
    shard-<writer>-<seq>.json          sidecar: rows, sites, dtype, per-row metadata
    index.json                         written by :meth:`ActivationStore.consolidate` (optional)

A shard counts once its sidecar exists; both are written atomically (temp + rename), sidecar
last, so a killed writer leaves no half shard. Writers need no lock: each has its own id.
Memory stays bounded: a writer buffers at most ``shard_mb`` before flushing, a reader maps
shards and slices batches out of them.

Traces: one row per generated token, with metadata ``{"trace", "step", "token"}``. Generation can stream
its per-step states here while it runs (:class:`TraceStream`, ``model.generate(..., stream_to=store)``);
:meth:`ActivationStore.trace_states` reads one trace's states back, and :class:`StoredStates` is the
lazy ``Trace.hidden`` of a streamed trace.

Example:
    >>> import tempfile, torch
    >>> store = ActivationStore(tempfile.mkdtemp())
    >>> with store.writer() as w:
    ...     w.add({Site("resid_post", 0): torch.ones(3, 4)}, meta=[{"i": i} for i in range(3)])
    >>> len(store), next(store.iter_batches(2))[Site("resid_post", 0)].shape
    (3, torch.Size([2, 4]))
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import Tensor

from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.generation.trace import Trace
from thinklens.runs.folders import atomic_write_json


class StoreWriter:
    """Copies rows into one preallocated shard buffer and flushes it when full. Use as a context manager.

    The buffer is the only large allocation (``shard_mb``), so a writer's memory does not grow
    with what it writes. ``dtype`` None keeps the dtype of the first rows added (bfloat16 rows are
    stored, and read back, as bfloat16).
    """

    def __init__(self, store: "ActivationStore", writer_id: str, shard_mb: float, dtype: torch.dtype | None):
        self.store, self.writer_id, self.dtype = store, writer_id, dtype
        self.limit = max(1, int(shard_mb * 2**20))
        self._buf: dict[Site, Tensor] = {}
        self._meta: list[dict[str, Any]] = []
        self._n = 0
        self._cap = 0
        self._seq = 0

    def _allocate(self, acts: dict[Site, Tensor]) -> None:
        if self.dtype is None:
            self.dtype = next(iter(acts.values())).dtype
        row_bytes = sum(a.shape[1] for a in acts.values()) * torch.empty((), dtype=self.dtype).element_size()
        self._cap = max(1, self.limit // row_bytes)
        self._buf = {s: torch.empty(self._cap, a.shape[1], dtype=self.dtype) for s, a in acts.items()}

    def add(self, acts: dict[Site, Tensor], meta: Sequence[dict[str, Any]] | None = None) -> None:
        """Append rows: every site ``[n, d]`` with the same n; ``meta`` one JSON-able dict per row."""
        ns = {s: a.shape[0] for s, a in acts.items()}
        if not acts or len(set(ns.values())) != 1 or any(a.ndim != 2 for a in acts.values()):
            raise ThinklensError.of("activation rows", {str(s): tuple(a.shape) for s, a in acts.items()},
                                    "2-D [rows, d] tensors with the same number of rows per site", "flatten batch and positions first")
        if self._buf and set(acts) != set(self._buf):
            raise ThinklensError.of("sites", sorted(map(str, acts)), f"the sites of earlier rows {sorted(map(str, self._buf))}",
                                    "write other sites to another store")
        for s, a in acts.items():
            if self._buf and self._buf[s].shape[1] != a.shape[1]:
                raise ThinklensError.of(f"width of {s}", a.shape[1], str(self._buf[s].shape[1]), "keep one width per site")
        n = next(iter(ns.values()))
        if meta is not None and len(meta) != n:
            raise ThinklensError.of("row metadata", len(meta), f"{n} entries (one per row)", "pass one dict per row")
        if not self._buf:
            self._allocate(acts)
        meta = list(meta) if meta is not None else [{}] * n
        start = 0
        while start < n:
            take = min(n - start, self._cap - self._n)
            for s, a in acts.items():
                self._buf[s][self._n:self._n + take] = a[start:start + take].detach()
            self._meta.extend(meta[start:start + take])
            self._n += take
            start += take
            if self._n == self._cap:
                self.flush()

    def add_traces(self, traces: Sequence[Trace], trace_ids: Sequence[str] | None = None) -> None:
        """One row per generated token of each trace (its hidden states at every captured site)."""
        for k, tr in enumerate(traces):
            tid = trace_ids[k] if trace_ids is not None else str(k)
            self.add(dict(tr.hidden), meta=[{"trace": tid, "step": t, "token": tr.token_ids[t]} for t in range(len(tr))])

    def flush(self) -> None:
        if self._n == 0:
            return
        name = f"shard-{self.writer_id}-{self._seq:05d}"
        tensors = {str(s): b[:self._n] for s, b in self._buf.items()}  # contiguous views, no copy
        d = self.store.path
        tmp = d / f".{name}.{uuid.uuid4().hex}.tmp"
        save_file(tensors, str(tmp))
        os.replace(tmp, d / f"{name}.safetensors")
        atomic_write_json(d / f"{name}.json", {
            "rows": self._n, "sites": {k: list(v.shape[1:]) for k, v in tensors.items()},
            "dtype": str(self.dtype).removeprefix("torch."), "meta": self._meta,
        })
        self._meta, self._n = [], 0
        self._seq += 1

    def __enter__(self) -> "StoreWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.flush()
        self._buf = {}


class ActivationStore:
    """A folder of activation shards; see the module docstring."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._trace_index: dict[str, dict[str, list[tuple[int, int, int]]]] = {}  # shard name -> runs of each trace

    def writer(self, writer_id: str | None = None, *, shard_mb: float = 64, dtype: torch.dtype | None = None) -> StoreWriter:
        """A writer with its own id (pid + random by default), so processes never collide.

        ``dtype``: the stored dtype; None (default) keeps the dtype of the rows given.
        """
        return StoreWriter(self, writer_id or f"{os.getpid()}-{uuid.uuid4().hex[:8]}", shard_mb, dtype)

    def shards(self) -> list[tuple[Path, dict[str, Any]]]:
        """Completed shards (those with a sidecar), in name order."""
        out = []
        for side in sorted(self.path.glob("shard-*.json")):
            st = side.with_suffix(".safetensors")
            if st.exists():
                out.append((st, json.loads(side.read_text())))
        return out

    def __len__(self) -> int:
        return sum(m["rows"] for _, m in self.shards())

    @property
    def sites(self) -> list[Site]:
        sh = self.shards()
        return [Site.parse(s) for s in sh[0][1]["sites"]] if sh else []

    def consolidate(self) -> dict[str, Any]:
        """Write ``index.json`` (shards, rows, sites) for tools that want one file."""
        shards = self.shards()
        index = {"rows": sum(m["rows"] for _, m in shards), "sites": [str(s) for s in self.sites],
                 "shards": [{"file": p.name, "rows": m["rows"]} for p, m in shards]}
        atomic_write_json(self.path / "index.json", index)
        return index

    def iter_batches(self, batch_size: int, sites: Sequence[Site | str] | None = None, *, with_meta: bool = False,
                     shuffle: bool = False, seed: int = 0) -> Iterator[dict[Site, Tensor]]:
        """Stream ``{site: [batch, d]}`` batches (the last may be smaller); shard order shuffled if asked.

        Rows are sliced from memory-mapped shards, so memory is O(batch), not O(store).
        """
        if batch_size < 1:
            raise ThinklensError.of("batch_size", batch_size, "an integer >= 1", "pass batch_size=256")
        shards = self.shards()
        if not shards:
            raise ThinklensError.of("activation store", str(self.path), "a folder with at least one shard", "write activations first")
        want = [Site.parse(s) for s in sites] if sites is not None else self.sites
        missing = [str(s) for s in want if str(s) not in shards[0][1]["sites"]]
        if missing:
            raise ThinklensError.of("sites", missing, f"sites stored here: {', '.join(shards[0][1]['sites'])}", "capture those sites first")
        order = list(range(len(shards)))
        if shuffle:
            g = torch.Generator().manual_seed(seed)
            order = torch.randperm(len(shards), generator=g).tolist()
        pending: dict[Site, list[Tensor]] = {s: [] for s in want}
        pending_meta: list[dict[str, Any]] = []
        have = 0
        for k in order:
            path, meta = shards[k]
            with safe_open(str(path), framework="pt") as f:
                slices = {s: f.get_slice(str(s)) for s in want}
                start = 0
                while start < meta["rows"]:
                    take = min(batch_size - have, meta["rows"] - start)
                    for s in want:
                        pending[s].append(slices[s][start:start + take])
                    pending_meta.extend(meta["meta"][start:start + take])
                    have += take
                    start += take
                    if have == batch_size:
                        yield self._emit(pending, pending_meta, with_meta)
                        pending, pending_meta, have = {s: [] for s in want}, [], 0
        if have:
            yield self._emit(pending, pending_meta, with_meta)

    def trace_states(self, trace_id: str, sites: Sequence[Site | str] | None = None) -> dict[Site, Tensor]:
        """``{site: [steps, d]}`` of one trace (rows whose metadata ``trace`` is ``trace_id``), in step order.

        Its rows may be spread over shards (a streamed generation interleaves the traces of a batch);
        only those rows are read.
        """
        want = [Site.parse(s) for s in sites] if sites is not None else self.sites
        parts: list[tuple[int, dict[Site, Tensor]]] = []  # (first step, {site: [n, d]}) per run of rows
        for path, meta in self.shards():
            rows = self._trace_rows(path, meta).get(trace_id)
            if not rows:
                continue
            with safe_open(str(path), framework="pt") as f:
                for start, stop, step in rows:
                    parts.append((step, {s: f.get_slice(str(s))[start:stop] for s in want}))
        if not parts:
            raise ThinklensError.of("trace", trace_id, f"a trace id stored in {self.path}", "check the id (Trace.hidden.trace_id)")
        parts.sort(key=lambda p: p[0])
        return {s: torch.cat([p[1][s] for p in parts]) for s in want}

    def _trace_rows(self, path: Path, meta: dict[str, Any]) -> dict[str, list[tuple[int, int, int]]]:
        """``{trace: [(start row, stop row, first step), ...]}``: the runs of consecutive steps of each trace in a shard
        (cached: a finished shard never changes)."""
        key = path.name
        if key not in self._trace_index:
            runs: dict[str, list[list[int]]] = {}
            for i, m in enumerate(meta["meta"]):
                tid, step = m.get("trace"), m.get("step")
                if tid is None or step is None:
                    continue
                own = runs.setdefault(str(tid), [])
                if own and own[-1][1] == i and own[-1][2] + (i - own[-1][0]) == step:
                    own[-1][1] = i + 1  # the next step of the same run
                else:
                    own.append([i, i + 1, int(step)])
            self._trace_index[key] = {t: [(a, b, c) for a, b, c in rs] for t, rs in runs.items()}
        return self._trace_index[key]

    @staticmethod
    def _emit(pending: dict[Site, list[Tensor]], meta: list[dict[str, Any]], with_meta: bool) -> dict:
        out: dict = {s: torch.cat(v) for s, v in pending.items()}
        if with_meta:
            out["meta"] = meta
        return out


class TraceStream:
    """Writes the per-step states of one batch of traces into a store while they are generated.

    The sink of :func:`thinklens.generation.decode_loop.decode`: every few steps it receives the states of the steps
    since the last call and adds one row per (trace, step) that belongs to a trace (steps after a row's
    stop are padding and are skipped), with metadata ``{"trace", "step", "token"}``.

    Args:
        writer: the store's writer (its ``shard_mb`` bounds the memory held before a shard is written).
        trace_ids: one id per row of the batch.
    """

    def __init__(self, writer: StoreWriter, trace_ids: Sequence[str]):
        self.writer = writer
        self.trace_ids = [str(t) for t in trace_ids]

    def write(self, states: dict[Site, Tensor], first: int, tokens: Tensor, lengths: list[int]) -> None:
        for r, tid in enumerate(self.trace_ids):
            n = min(tokens.shape[1], lengths[r] - first)
            if n <= 0:
                continue
            self.writer.add({s: a[r, :n] for s, a in states.items()},
                            meta=[{"trace": tid, "step": first + j, "token": int(tokens[r, j])} for j in range(n)])


class StoredStates(Mapping):
    """The ``hidden`` of a trace whose states are in a store: ``states[site]`` reads ``[steps, d]`` from it.

    Nothing is held in memory; each lookup reads that site's rows of the trace.

    Example:
        >>> # traces = model.generate(prompts, capture=["resid_post.*"], stream_to=ActivationStore("acts"))
        >>> # traces[0].hidden["resid_post.3"].shape    # read from the store now
    """

    def __init__(self, store: ActivationStore, trace_id: str, sites: Sequence[Site], n_layers: int | None = None):
        self.store, self.trace_id, self.sites, self.n_layers = store, str(trace_id), list(sites), n_layers

    def __getitem__(self, site: Site | str) -> Tensor:
        site = Site.parse(site, self.n_layers)
        if site not in self.sites:
            raise KeyError(site)
        return self.store.trace_states(self.trace_id, [site])[site]

    def __iter__(self) -> Iterator[Site]:
        return iter(self.sites)

    def __len__(self) -> int:
        return len(self.sites)

    def __repr__(self) -> str:
        return f"StoredStates({str(self.store.path)!r}, trace={self.trace_id!r}, sites={[str(s) for s in self.sites]})"
