"""The generated texts any run holds, found by their shape rather than by the job that wrote them: a job that writes
records with a text field (``completions/*.json``, ``results/*.json``, ``cache/*.json``; a list of records, or a
dict holding one) has traces in the viewer, links from its findings and paired comparisons, with no edit to the app.

A record is a dict with one of :data:`TEXT_KEYS` holding a string. Its other plain fields (``correct``, ``gold``,
``extracted``, ``stop_reason``, ...) are its facts; a link may keep only the records whose field has a value
(``where="correct=false"``; several conditions joined by ``;`` must all hold: ``"point=feature/7/1;broken=true"``).
Trace ids are ``<source>/<index>``, the source named after its file
(``completions`` for ``completions/batch-*.json``, ``rollouts.test`` for ``cache/rollouts.test.*.json``). Records one
level down, a list of them in each item of a list (organism-eval's ``{"models": [{"model": "smol-r1", "traces":
[...]}]}``), are found too: their source names the item by its ``model`` (``organism_eval.models.smol-r1.traces``), which
becomes a fact of each record.

Example:
    >>> import json, tempfile
    >>> run = Path(tempfile.mkdtemp())
    >>> (run / "completions").mkdir()
    >>> _ = (run / "completions" / "batch-00000.json").write_text(json.dumps(
    ...     [{"id": "p0", "text": "2 + 2 = 4", "correct": True}, {"id": "p1", "text": "so 7", "correct": False}]))
    >>> [(t.trace_id, t.facts["correct"]) for t in trace_records(run)]
    [('completions/0', True), ('completions/1', False)]
    >>> [t.trace_id for t in trace_records(run, where="correct=false")]
    ['completions/1']
    >>> [t.trace_id for t in trace_records(run, where="correct=false;id=p0")]
    []
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thinklens.errors import ThinklensError

TEXT_KEYS: tuple[str, ...] = ("text", "completion", "generated", "response", "output", "sample")
"""Fields that hold a record's generated text (the first one present is used)."""
PROMPT_KEYS: tuple[str, ...] = ("prompt", "question", "problem")
"""Fields that hold what the text was generated for."""
PROBLEM_KEYS: tuple[str, ...] = ("id", "problem_id", "question", "prompt", "problem")
"""Fields that name a record's problem (the first present), for pairing two runs' records."""
FOLDERS: tuple[str, ...] = ("completions", "results", "cache")
"""Run-folder subfolders searched for records, in this order."""
MAX_BYTES = 50_000_000
"""Files larger than this are not read for records (an activation dump is not a list of texts)."""


@dataclass
class Record:
    """One generated text of a run: where it is, its text, its prompt and its plain fields."""

    trace_id: str
    text: str
    prompt: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict, repr=False)
    """Its other fields, lists and dicts included (a trace's cues with their positions: ``app.trace_truth``)."""

    @property
    def problem(self) -> str | None:
        """What names its problem (``id``, else the question or prompt), for pairing; None when nothing does."""
        for k in PROBLEM_KEYS:
            v = self.facts.get(k, self.prompt if k in PROMPT_KEYS and self.prompt else None)
            if isinstance(v, (str, int)) and str(v):
                return f"{k}:{v}" + (f"#{self.facts['sample']}" if isinstance(self.facts.get("sample"), int) else "")
        return None


def _source(path: Path, key: str | None) -> str:
    stem = re.sub(r"[.-]?\d+$", "", path.stem) if path.parent.name != "results" else path.stem
    if path.parent.name == "completions":
        stem = "completions"
    return f"{stem or path.parent.name}.{key}" if key else (stem or path.parent.name)


def _text_of(rec: Mapping[str, Any]) -> str | None:
    return next((rec[k] for k in TEXT_KEYS if isinstance(rec.get(k), str)), None)


OWNER_KEYS: tuple[str, ...] = ("model",)
"""Fields of an item holding records one level down that name it (and become its records' facts)."""


def _is_records(x: Any) -> bool:
    return isinstance(x, list) and bool(x) and isinstance(x[0], Mapping) and _text_of(x[0]) is not None


def _owner_name(item: Mapping[str, Any], j: int) -> str:
    name = next((item[k] for k in OWNER_KEYS if isinstance(item.get(k), str)), "")
    return name if re.fullmatch(r"[A-Za-z0-9_.+-]+", name) else str(j)


def _records_in(doc: Any) -> list[tuple[str | None, list[Mapping[str, Any]], dict[str, Any]]]:
    """``(key, records, facts its owner adds)`` of a parsed file: the file itself when it is a list of records, else
    each of its list fields that is one, and each list of records inside the items of its other list fields."""
    if _is_records(doc):
        return [(None, doc, {})]
    out: list[tuple[str | None, list[Mapping[str, Any]], dict[str, Any]]] = []
    if isinstance(doc, Mapping):
        for k, v in doc.items():
            if _is_records(v):
                out.append((str(k), v, {}))
            elif isinstance(v, list):
                for j, item in enumerate(v):
                    if not isinstance(item, Mapping):
                        break
                    owner = {o: item[o] for o in OWNER_KEYS if _plain(item.get(o)) and item.get(o) is not None}
                    out += [(f"{k}.{_owner_name(item, j)}.{sub}", recs, owner) for sub, recs in item.items()
                            if _is_records(recs)]
    return out


def _files(run: Path) -> list[Path]:
    out = []
    for sub in FOLDERS:
        folder = Path(run) / sub
        if folder.is_dir():
            out += sorted(p for p in folder.glob("*.json") if p.stat().st_size <= MAX_BYTES)
    return out


def _plain(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _matches(rec: Record, where: str | None) -> bool:
    for cond in (where or "").split(";"):
        if not cond.strip():
            continue
        key, _, want = cond.partition("=")
        if str(rec.facts.get(key.strip())).lower() != want.strip().lower():
            return False
    return True


def trace_records(run: Path | str, where: str | None = None) -> list[Record]:
    """Every generated text of the run folder ``run``, in file order (batches in order), optionally only those whose
    field matches ``where`` (``"correct=false"``). Unreadable files are skipped (the run's card says it is incomplete).
    """
    by_source: dict[str, list[Record]] = {}
    for path in _files(Path(run)):
        try:
            doc = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        for key, recs, owner in _records_in(doc):
            src = _source(path, key)
            into = by_source.setdefault(src, [])
            for r in recs:
                text_key = next((k for k in TEXT_KEYS if isinstance(r.get(k), str)), None)
                if text_key is None:
                    continue
                text = r[text_key]
                prompt = next((r[k] for k in PROMPT_KEYS if isinstance(r.get(k), str)), "")
                facts = owner | {k: v for k, v in r.items() if k != text_key and _plain(v)}
                into.append(Record(f"{src}/{len(into)}", text, prompt, facts,
                                   {k: v for k, v in r.items() if k != text_key and not _plain(v)}))
    out = [r for recs in by_source.values() for r in recs]
    return [r for r in out if _matches(r, where)]


def has_traces(run: Path | str) -> bool:
    """Whether the run folder holds any generated text (cheap enough for every run on Home)."""
    return bool(trace_records(run))


def record(run: Path | str, trace_id: str) -> Record:
    """The record ``trace_id`` of a run; a clear error when it holds none of that id."""
    for r in trace_records(run):
        if r.trace_id == trace_id:
            return r
    raise ThinklensError.of("trace id", f"{trace_id!r} of {run}", "an id the run holds (see the viewer's trace box)",
                            "pick a trace from the list")


def outcome_fields(records: list[Record]) -> dict[str, dict[str, int]]:
    """Field -> value -> count, for the true/false fields of the records (``correct``, ``closed``): the ways a link
    filters them.

    Example:
        >>> outcome_fields([Record("a/0", "x", facts={"correct": True}), Record("a/1", "y", facts={"correct": False})])
        {'correct': {'true': 1, 'false': 1}}
    """
    out: dict[str, dict[str, int]] = {}
    for r in records:
        for k, v in r.facts.items():
            if isinstance(v, bool):
                c = out.setdefault(k, {"true": 0, "false": 0})
                c[str(v).lower()] += 1
    return out


def problems_hash(records: list[Record]) -> str:
    """A short hash of the problems a run's records are about (their problem names, in order): two runs with the same
    hash were evaluated on the same problems.

    Example:
        >>> problems_hash([Record("c/0", "x", facts={"id": "p0"})]) == problems_hash([Record("c/0", "y", facts={"id": "p0"})])
        True
    """
    import hashlib

    names = [r.problem or "" for r in records]
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:12]
