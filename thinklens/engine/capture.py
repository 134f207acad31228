"""``thinklens run capture``: activations of a prompt file at chosen sites, into an activation store.

Runs every prompt of a file through the model and stores its activations at the given sites (``kind.*`` is every
layer): one row per real token (``--positions all``) or per prompt (``last``). The run folder holds config.json
and meta.json as every run's, the :class:`~thinklens.engine.activation_store.ActivationStore` under ``<run>/store`` (sharded
safetensors, one shard per batch of prompts, that any number of readers stream back; each row's metadata names its
prompt and position) and ``results/capture.json`` (model, sites, positions, prompts and rows). Re-running the same
command resumes: batches whose shard is written are skipped, and a prompt file changed since is an error.

Example:
    >>> JOB.name, JOB.config.__name__, JOB.config().sites
    ('capture', 'CaptureConfig', ('resid_post.*',))
    >>> CaptureConfig(prompts="prompts.txt", positions="last").batch_size
    16
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from thinklens.data.prompts import read_prompts
from thinklens.errors import ThinklensError, opt
from thinklens.runs.configcli import ConfigGroup
from thinklens.runs.jobs import DemoRun, Job, JobContext

if TYPE_CHECKING:
    from thinklens.engine.activation_store import ActivationStore

POSITIONS = ("all", "last")
STORE = "store"
#: The summary keys of a data job (capture, import-traces): it claims nothing, so its findings are empty, and the
#: CLI's closing lines say why.
NO_FINDINGS: dict[str, Any] = {"findings": [], "findings_note": "data job: no findings"}
"""The store's folder inside the run folder."""


@dataclass(frozen=True)
class ReadOptions(ConfigGroup):
    """The fields of a job that runs given texts through a model in one deterministic pass and records sites
    (``capture``, ``import-traces``)."""

    model: str = "tiny-think"
    """Model that reads the texts: zoo name, local model folder or hub id."""
    seed: int = 0
    """Unused (one forward pass over given texts is deterministic); kept for the job contract."""
    sites: tuple[str, ...] = ("resid_post.*",)
    """Sites recorded, e.g. resid_post.1,final_norm; kind.* is every layer, negative layers count from the end."""
    batch_size: int = 16
    """Texts per forward pass."""

    def check(self) -> None:
        if not self.sites:
            raise ThinklensError.of("sites", self.sites, "at least one site", f"pass e.g. {opt('sites', 'resid_post.*')}")
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ThinklensError.of("batch_size", self.batch_size, "an integer >= 1", f"pass {opt('batch_size', 16)}")


@dataclass(frozen=True)
class CaptureConfig(ReadOptions):
    """Settings of ``thinklens run capture``."""

    prompts: str = ""
    """Prompt file: .txt (one prompt per line) or .jsonl with a prompt or question field."""
    positions: Literal["all", "last"] = "all"
    """Rows kept: every real token (all) or the last prompt token (last)."""
    batch_size: int = 16
    """Prompts per forward pass (one shard each: a resumed run skips the batches written)."""

    def check(self) -> None:
        if self.positions not in POSITIONS:
            raise ThinklensError.of("positions", self.positions, f"one of {', '.join(POSITIONS)}", "use all or last")


@dataclass(frozen=True)
class CaptureResult:
    """What a capture run wrote (also ``results/capture.json`` and the run's summary)."""

    store: str
    """The activation store's folder, absolute (``<run>/store``; capture.json says ``store``, relative to the run)."""
    model: str
    """The model captured."""
    sites: list[str]
    """The sites, patterns expanded."""
    positions: str
    """all or last."""
    prompts: str
    """The prompt file."""
    n_prompts: int
    """Prompts read."""
    n_rows: int
    """Rows in the store (one per kept token)."""

    def open_store(self) -> "ActivationStore":
        """The store, to stream its rows back."""
        from thinklens.engine.activation_store import ActivationStore  # lazy: CLI start-up (torch)

        return ActivationStore(self.store)


def _batch_id(k: int) -> str:
    return f"b{k:06d}"


def _written_batches(store: "ActivationStore") -> set[str]:
    """Batch ids whose shard exists (shard names are ``shard-batch-<batch id>-<seq>``)."""
    return {p.name.split("-")[2] for p, _ in store.shards()}


def _check_same_prompts(ctx: JobContext, prompts: list[str], path: str) -> None:
    """Record the prompts' digest on the first run; a resumed run must read the same prompts."""
    digest = hashlib.sha256("\n".join(prompts).encode()).hexdigest()
    seen = ctx.run.finished().get("prompts")
    if seen is None:
        ctx.run.mark_done("prompts", {"sha256": digest, "n": len(prompts)})
    elif seen.get("sha256") != digest:
        raise ThinklensError.of("prompt file", path, "the prompts this run started with (some batches are written)",
                                f"pass another {opt('run_id')}, or restore the file")


def _prompts(config: CaptureConfig) -> list[str]:
    if not config.prompts:
        raise ThinklensError.of("prompts", "nothing", "a prompt file", f"pass {opt('prompts', 'prompts.txt')}")
    return read_prompts(config.prompts)


def preflight(config: CaptureConfig) -> None:
    """The prompt file read before the model loads (a missing, malformed or empty file costs no load)."""
    _prompts(config)


def run(config: CaptureConfig, ctx: JobContext) -> CaptureResult:
    """Capture every batch not yet in the store; write results/capture.json."""
    from thinklens.engine.activation_store import ActivationStore  # lazy: CLI start-up (torch)

    prompts = _prompts(config)
    model = ctx.model
    sites = model.resolve_sites(config.sites)
    last = config.positions == "last"
    _check_same_prompts(ctx, prompts, config.prompts)
    store = ActivationStore(ctx.run.path / STORE)
    done = _written_batches(store)
    size = config.batch_size
    for k in ctx.progress.iter(range(0, len(prompts), size), desc="capture", total=-(-len(prompts) // size)):
        wid = _batch_id(k // size)
        if wid in done:
            continue
        chunk = prompts[k:k + size]
        batch = model.capture(chunk, sites, positions="last" if last else None)
        mask = batch.attention_mask.bool()  # [batch, pos], left padded
        rows = {s: batch.acts[s][:, -1] if last else batch.acts[s][mask] for s in sites}  # [rows, d] each
        meta: list[dict[str, Any]] = []
        for r, n in enumerate(mask.sum(1).tolist()):  # logical positions: 0 = the prompt's first token
            meta += [{"prompt": k + r, "pos": i} for i in ([n - 1] if last else range(n))]
        batch_mb = sum(v.numel() * 4 for v in rows.values()) / 2**20
        with store.writer(f"batch-{wid}", shard_mb=batch_mb) as w:  # one shard per batch: resume is per batch
            w.add(rows, meta=meta)
    store.consolidate()
    result = CaptureResult(store=str(store.path.resolve()), model=config.model, sites=[str(s) for s in sites],
                           positions=config.positions, prompts=config.prompts, n_prompts=len(prompts),
                           n_rows=len(store))
    written = {**asdict(result), "store": STORE, **NO_FINDINGS}  # relative: the run folder may move
    ctx.run.write_result("capture", written)
    ctx.run.finish(written)
    return result


def report(result: CaptureResult) -> str:
    """The line the CLI prints after the run folder."""
    return f"captured {result.n_rows} rows at {', '.join(result.sites)} -> {result.store}"


def headline(summary: dict, folder: Path) -> str:
    """The run in a line (Home, ``thinklens runs``): rows, sites and prompts captured."""
    sites = summary.get("sites") or []
    return (f"{summary.get('n_rows', '?')} rows at {len(sites)} sites from {summary.get('n_prompts', '?')} prompts "
            f"({summary.get('positions', '?')} positions)")


DEMO = (DemoRun(("--model", "tiny-think", "--sites", "resid_post.*", "--prompts", "{runs}/demo-prompts.txt")),)


JOB = Job("capture", CaptureConfig, run, preflight=preflight, order=20, demo=DEMO, headline=headline,
          report=report, help="capture activations of prompts into an activation store",
          findings="thinklens.engine.capture:NO_FINDINGS", capability="Models and sites",
          smallest=("--model", "tiny-think", "--prompts", "{prompts}", "--sites", "resid_post.0,resid_post.1", "--batch-size", "1"))
