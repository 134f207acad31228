"""The on-disk format of an mi-peaks run, shared by the job (writer) and the app (reader).

A run must stay fast to browse with thousands of trajectories, so nothing forces loading them all:

* ``trajectories/<model key>/<index:05d>.json``: one compact JSON per trajectory
  (:class:`TrajectoryRecord`: tokens, MI per site, estimator variants, shuffled-answer control,
  state norms, peaks by every rule and the answer-specific top-k peaks, :data:`SPECIFIC_PEAKS`);
* ``results/mi_models.json``: the small index: per model its settings, summary statistics, mean
  curves and one short row per trajectory (length, correctness, peak counts, max MI).

Plain JSON only (no pickles): any tool can read a run.

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> rec = TrajectoryRecord(index=0, model="tiny-think", prompt="Q", solution="S", answer="3", parsed="3",
    ...     correct=True, tokens=("so", "3"), token_ids=(5, 6), text="so 3", stop_reason="eos",
    ...     site="resid_post.3", estimator="reference", mi={"resid_post.3": [0.5, 0.9]},
    ...     variants={"reference": [0.5, 0.9]}, shuffled={"reference": [0.1, 0.2]}, shuffled_answer_of=1,
    ...     norms=[10.0, 12.0], peaks={"top_k": [1]}, thresholds={"top_k": 0.9})
    >>> _ = write_trajectory(root, rec)
    >>> read_trajectory(root, "tiny-think", 0).peaks_of("top_k").indices
    (1,)
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from thinklens.analyses.mi.peaks import Peaks
from thinklens.errors import ThinklensError
from thinklens.runs.folders import atomic_write_bytes

SCHEMA = 1
"""Version of this format (stored in the index; a newer reader can migrate older runs)."""
TRAJ_DIR = "trajectories"
INDEX = "mi_models"
"""Result name of the index: ``results/mi_models.json``."""
_KEY_RE = re.compile(r"[^A-Za-z0-9._-]+")
SPECIFIC_PEAKS = "top_k_specific"
"""Key in :attr:`TrajectoryRecord.peaks` of the answer-specific peaks: the top-k rule (the same k and clipping as
``top_k``) on own - shuffled-answer MI (:func:`thinklens.analyses.mi.peaks.answer_specific`). Absent from runs written
before it existed, which still read; those who need it recompute it from the stored curves."""


def model_key(name: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A folder-safe key for a model name or path, unique among ``taken``.

    Example:
        >>> model_key("tiny-think"), model_key("/models/Qwen2.5-1.5B/"), model_key("a/b", {"b"})
        ('tiny-think', 'Qwen2.5-1.5B', 'b-2')
    """
    base = _KEY_RE.sub("-", Path(str(name).rstrip("/")).name or str(name)).strip("-.") or "model"
    base = base[:100]
    key, n = base, 1
    while key in taken:
        n += 1
        key = f"{base}-{n}"
    return key


@dataclass(frozen=True)
class TrajectoryRecord:
    """Everything the app shows for one trajectory; ``mi[site][t]`` scores the state that produced
    ``tokens[t]``."""

    index: int
    """Problem index (the same problem for every model of a run)."""
    model: str
    """Model key."""
    prompt: str
    solution: str
    """Text whose last state is h_gt."""
    answer: str | int | None
    """The gold answer as the data set writes it (an int in runs written before real data sets)."""
    parsed: str | int | None
    """The answer extracted from the generation (``thinklens.data.answers.extract_answer``; None: none stated)."""
    correct: bool
    tokens: tuple[str, ...]
    token_ids: tuple[int, ...]
    text: str
    stop_reason: str
    site: str
    """Site that drives peaks, variants and controls."""
    estimator: str
    """Estimator of ``mi`` and of the peaks."""
    mi: dict[str, list[float]]
    """Site -> curve (primary estimator)."""
    variants: dict[str, list[float]]
    """Estimator -> curve at ``site``."""
    shuffled: dict[str, list[float]]
    """Estimator -> curve at ``site`` against the answer vector of problem ``shuffled_answer_of``."""
    shuffled_answer_of: int
    norms: list[float]
    """L2 norm of the state at ``site`` per step."""
    peaks: dict[str, list[int]]
    """Peak rule -> peak steps (of ``mi[site]``, the paper's); and :data:`SPECIFIC_PEAKS` -> the top-k steps of the
    answer-specific curve ``variants[estimator] - shuffled[estimator]`` (runs written since it existed)."""
    thresholds: dict[str, float]
    """Peak rule (or :data:`SPECIFIC_PEAKS`) -> threshold used."""
    small_scale: dict[str, list[float]] = field(default_factory=dict)
    """At ``site``, per step (:mod:`thinklens.analyses.mi.small_scale`): ``corr2`` / ``corr2_shuffled``, the squared correlation
    of the state's coordinates with the own / shuffled answer vector's; ``approx`` / ``approx_shuffled``, the
    small-scale nHSIC a_x a_y rho^2 of the first estimator; ``scale``, max |x_i - mean| / sigma. Empty when the first
    estimator has no fixed bandwidth, and in runs written before it existed."""

    def peaks_of(self, rule: str) -> Peaks:
        """The stored peaks of one rule as a :class:`Peaks` value (for figures)."""
        if rule not in self.peaks:
            raise ThinklensError.of("peak rule", rule, f"one of {sorted(self.peaks)}", "pick a stored rule")
        return Peaks(indices=tuple(self.peaks[rule]), rule=rule, threshold=self.thresholds[rule],
                     n_steps=len(self.tokens), k=len(self.peaks[rule]) if rule in ("top_k", SPECIFIC_PEAKS) else None)

    def to_json(self) -> dict[str, Any]:
        """A plain dict (shallow: dataclasses.asdict deep-copies every float, ~10x slower)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, obj: Any, where: str = "trajectory") -> TrajectoryRecord:
        """Validate and build; a missing field or a curve of the wrong length is a ThinklensError."""
        required = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]
        names = [f.name for f in fields(cls) if isinstance(obj, dict) and f.name in obj]
        if not isinstance(obj, dict) or any(n not in obj for n in required):
            missing = [n for n in required if not isinstance(obj, dict) or n not in obj]
            raise ThinklensError.of(where, f"missing fields {missing[:4]}", "a trajectory record of schema 1",
                                    "re-run the job (thinklens run mi-peaks) for this run")
        rec = cls(**{n: tuple(obj[n]) if n in ("tokens", "token_ids") else obj[n] for n in names})
        n = len(rec.tokens)
        for group in ("mi", "variants", "shuffled", "small_scale"):
            for name, curve in getattr(rec, group).items():
                if len(curve) != n:
                    raise ThinklensError.of(f"{where} {group}[{name}]", f"{len(curve)} values",
                                            f"{n} (one per token)", "re-run the job for this run")
        if len(rec.norms) != n or rec.site not in rec.mi:
            raise ThinklensError.of(where, "norms or site inconsistent with the tokens", "a complete record",
                                    "re-run the job for this run")
        return rec

    def index_row(self) -> dict[str, Any]:
        """The short row of the run index."""
        curve = self.mi[self.site]
        return {"i": self.index, "n_tokens": len(self.tokens), "correct": self.correct,
                "stop_reason": self.stop_reason, "max_mi": max(curve) if curve else 0.0,
                "n_peaks": {rule: len(p) for rule, p in self.peaks.items()}}


def trajectory_path(run_path: Path | str, key: str, index: int) -> Path:
    """``<run>/trajectories/<key>/<index:05d>.json``."""
    return Path(run_path) / TRAJ_DIR / key / f"{int(index):05d}.json"


def _write(path: Path, data: bytes, durable: bool) -> None:
    if durable:
        atomic_write_bytes(path, data)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)  # still atomic for readers; only the fsync is skipped


def write_trajectory(run_path: Path | str, record: TrajectoryRecord, *, durable: bool = True) -> Path:
    """Write one record atomically (compact JSON). ``durable=False`` skips the fsync (bulk test data)."""
    path = trajectory_path(run_path, record.model, record.index)
    _write(path, json.dumps(record.to_json(), separators=(",", ":"), allow_nan=False).encode(), durable)
    return path


def read_trajectory(run_path: Path | str, key: str, index: int) -> TrajectoryRecord:
    """Read one record; a missing or malformed file raises a ThinklensError naming it."""
    path = trajectory_path(run_path, key, index)
    try:
        obj = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ThinklensError.of("trajectory file", str(path), "a readable JSON record written by the job",
                                f"re-run the job for this run ({type(e).__name__})") from None
    return TrajectoryRecord.from_json(obj, where=f"trajectory {path.name} of {key}")


def write_index(run_path: Path | str, models: list[dict[str, Any]], **extra: Any) -> Path:
    """Write ``results/mi_models.json``: ``{"schema", "models": [...], **extra}``."""
    path = Path(run_path) / "results" / f"{INDEX}.json"
    # compact: the index holds one row per trajectory and is read on every page load
    data = json.dumps({"schema": SCHEMA, "models": models, **extra}, separators=(",", ":"), allow_nan=False)
    atomic_write_bytes(path, data.encode())
    return path


def read_index(run_path: Path | str) -> dict[str, Any]:
    """The run index, validated enough for the app: a ThinklensError says what is wrong."""
    path = Path(run_path) / "results" / f"{INDEX}.json"
    try:
        obj = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ThinklensError.of("mi-peaks index", str(path), "results/mi_models.json written by the job",
                                f"re-run the job, or wait until its first stage finished ({type(e).__name__})") from None
    models = obj.get("models") if isinstance(obj, dict) else None
    if not isinstance(models, list) or not models or any(
            not isinstance(m, dict) or not {"key", "index", "site"} <= set(m) for m in models):
        raise ThinklensError.of("mi-peaks index", str(path), "a 'models' list with key, site and index per model",
                                "re-run the job for this run")
    if obj.get("schema", SCHEMA) > SCHEMA:
        raise ThinklensError.of("mi-peaks schema", obj.get("schema"), f"at most {SCHEMA}", "update thinklens")
    return obj
