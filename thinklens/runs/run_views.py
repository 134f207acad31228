"""What the app shows of a job's runs, as a job declares it (``Job.traces``, ``Job.compare``,
``Job.headline_traces``): a :class:`TraceReader` turns a run folder into the trace viewer's :class:`TraceData`, a
:class:`Comparison` turns several finished runs into rows side by side and a chart, and :class:`HeadlineTraces` name the
traces each number of a run's headline counts (the app makes their links). All live beside the job's results format
(in its capability package), so the app reads the registry and never names a job.

Example:
    >>> t = TraceData(run="x/a", kind="x", trace_id="0", model=None, prompt="Q", tokens=["so", "4"])
    >>> t.quantities, rounded(0.12345), interval_text([0.1, 0.2]), verdicts_text({"findings": []})
    ({}, 0.123, '0.100-0.200', '-')
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.runs.folders import RunEntry


@dataclass
class TraceData:
    """One trace as the viewer shows it: tokens, per-token quantities, marks and facts."""

    run: str
    """Run folder relative to the runs root."""
    kind: str
    trace_id: str
    model: str | None
    """The model that wrote it (a zoo name or folder), None when unknown."""
    prompt: str
    tokens: list[str]
    token_ids: list[int] | None = None
    """Generated ids (None: the trace cannot be re-run through the model, e.g. latent thoughts)."""
    prompt_ids: list[int] | None = None
    """Prompt ids as the job fed them (None: tokenise ``prompt``)."""
    quantities: dict[str, list[float | None]] = field(default_factory=dict)
    """Name -> one value per token (None: not defined at that token, e.g. a probe score off a cue)."""
    marks: dict[str, list[int]] = field(default_factory=dict)
    """Name -> positions (peaks, cue events, the exit)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """Correctness, answers, stop reason: shown above the tokens."""
    details: dict[int, list[tuple[str, float]]] = field(default_factory=dict)
    """Position -> a stored top-k (a latent thought's decoded tokens and probabilities)."""
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Named tables shown under the tokens (per-cue scores, exits per δ, the unsteered text's diff)."""
    separator: str = ""
    """Text between tokens when the job joined them (the zoo's word tokens: " "), for finding words."""
    default_quantity: str = ""
    no_lens: str = ""
    """Why the logit lens is not available for this trace ("" when it is)."""


@dataclass(frozen=True)
class TraceReader:
    """How the trace viewer reads one job's runs (``Job.traces``): the traces a run holds, and one of them."""

    list: Callable[[Path], list[tuple[str, str]]]
    """``list(run folder)`` -> ``(trace id, label)`` of every trace, in the run's order."""
    load: Callable[[Path, str, str], TraceData]
    """``load(run folder, run, trace id)`` -> the trace (``run``: the folder relative to the runs root)."""
    where: Callable[[Path, str], list[tuple[str, str]] | None] | None = None
    """``where(run folder, filter)`` -> the traces a link's filter keeps (``exit_at=0.1``: the rollouts LYNX exits at
    δ 0.1), None for a filter it does not know (the viewer then filters the run's generic records); None: no filters."""
    marks: Callable[[Mapping[str, list[int]], str], list[str]] | None = None
    """``marks(a trace's marks, filter)`` -> those of its marks a link's filter names (``exit_at=0.1``: LYNX's exit at
    δ 0.1), which the viewer opens; [] for a filter that names none; None: its filters name no marks."""


@dataclass(frozen=True)
class HeadlineTraces:
    """One number a run's headline states and the traces it counts (``Job.headline_traces``): those a trace viewer's
    filter keeps, or one trace. The app makes the link, so the job never knows its URLs.

    Example:
        >>> HeadlineTraces("δ 0.3: 2 exits answering wrong", where="exit_at=0.3;exit_correct=false").trace is None
        True
    """

    label: str
    """The number in words (``δ 0.3: 3 early exits``)."""
    where: str | None = None
    """The trace viewer's filter of the traces it counts (``field=value`` conditions joined by ``;``, or a filter the
    job's :class:`TraceReader` knows); None: every trace of the run, or the one ``trace``."""
    trace: str | None = None
    """The id of the one trace it stands for (a run that kept one sample per setting), shown coloured by ``quantity``."""
    quantity: str = ""
    """The per-token quantity ``trace`` is coloured by ("": the reader's default)."""


@dataclass(frozen=True)
class Comparison:
    """What the app shows of several runs of one job side by side (``Job.compare``)."""

    rows: Callable[["RunEntry", Mapping[str, Any], Mapping[str, Any]], list[dict[str, Any]]]
    """``rows(run entry, summary, config)`` -> its rows (one per run, or per run and method); a row may set ``model``
    and ``data``, else the run's are used."""
    figure: Callable[[Sequence[Mapping[str, Any]]], Any] | None = None
    """``figure(rows)`` -> a plotly Figure of their headline numbers with its title and axis titles; None: the app's
    chart of the findings."""


def read_result_json(path: Path) -> Any:
    """A JSON file a job wrote; a ThinklensError that says to re-run the job when it cannot be read."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ThinklensError.of("result file", str(path), "a readable JSON file written by the job",
                                f"re-run the job for this run ({type(e).__name__})") from None


HEADLINED = 2
"""How many of a run's findings its headline states (Home's card; ``Job.headline_traces`` link the traces behind
each)."""


def headline_findings(path: Path) -> list[dict[str, Any]]:
    """The findings a run's headline states: the first :data:`HEADLINED` of the ``findings`` in the summary of
    ``path/meta.json``; [] when it is unreadable or holds none."""
    meta = json_or_none(Path(path) / "meta.json")
    summary = (meta.get("summary") if isinstance(meta, dict) else None) or {}
    found = (summary.get("findings") or []) if isinstance(summary, dict) else []
    return [f for f in found[:HEADLINED] if isinstance(f, dict)]


def headlined_values(path: Path, key: str) -> list[float]:
    """The distinct values of ``extra[key]`` across the run's headlined findings (:func:`headline_findings`), in order:
    the coefficients or δs whose numbers its headline states.

    Example:
        >>> import json, tempfile
        >>> run = Path(tempfile.mkdtemp())
        >>> _ = (run / "meta.json").write_text(json.dumps({"summary": {"findings": [
        ...     {"extra": {"delta": 0.1}}, {"extra": {"delta": 0.1}}, {"extra": {}}]}}))
        >>> headlined_values(run, "delta")
        [0.1]
    """
    return list(dict.fromkeys(float(f["extra"][key]) for f in headline_findings(path) if key in (f.get("extra") or {})))


def json_or_none(path: Path) -> Any:
    """A JSON file's content, None when it is missing or unreadable (a comparison row shows ``-`` for it)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def rounded(x: Any, digits: int = 3) -> Any:
    """A float rounded for a table; anything else as it is."""
    return round(x, digits) if isinstance(x, float) else x


def interval_text(ci: Any) -> str:
    """A ``[lo, hi]`` interval as ``lo-hi`` (3 decimals); ``-`` when it is not one."""
    return f"{ci[0]:.3f}-{ci[1]:.3f}" if isinstance(ci, (list, tuple)) and len(ci) == 2 else "-"


def verdicts_text(summary: Mapping[str, Any]) -> str:
    """A summary's findings as ``verdict: claim; ...``; ``-`` for none."""
    found = summary.get("findings") or []
    return "; ".join(f"{f.get('verdict')}: {f.get('claim')}" for f in found) or "-"


def paired_records(points: Sequence[tuple[str, Sequence[str], Sequence[bool]]], baseline: str,
                   prompts: Sequence[str], golds: Sequence[Any], **fields: Any) -> list[dict[str, Any]]:
    """One record per (point, problem) of a job that scores one problem set under several settings (an alpha, a mode):
    its ``text``, ``prompt``, ``gold``, ``correct``, the ``baseline`` point's grade of that problem
    (``baseline_correct``), and whether the point ``broke`` it (right at the baseline, wrong here) or ``fixed`` it;
    ``point`` names the setting. The trace viewer reads them as generic records, so a number links
    :func:`changed_where` of its point. ``fields`` are added to every record.

    Example:
        >>> recs = paired_records([("a=0", ["4", "9"], [True, False]), ("a=1", ["5", "9"], [False, True])], "a=0",
        ...                       ["2+2", "4+5"], ["4", "9"])
        >>> [(r["point"], r["broken"], r["fixed"]) for r in recs], changed_where("a=1", "broken")
        ([('a=0', False, False), ('a=0', False, False), ('a=1', True, False), ('a=1', False, True)], 'point=a=1;broken=true')
    """
    base = next(c for name, _, c in points if name == baseline)
    out = []
    for name, texts, correct in points:
        for i, (text, right) in enumerate(zip(texts, correct)):
            was = bool(base[i])
            out.append({"point": name, "problem": i, "prompt": str(prompts[i]), "text": text, "gold": str(golds[i]),
                        "correct": bool(right), "baseline_correct": was, "broken": was and not right,
                        "fixed": not was and bool(right), **fields})
    return out


def changed_where(point: str, change: str) -> str:
    """The trace viewer's filter of the problems ``point`` broke (``change="broken"``) or fixed (``"fixed"``)."""
    return f"point={point};{change}=true"


def changed_counts(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Point -> how many problems it broke and fixed (``{"broken": n, "fixed": m}``)."""
    out: dict[str, dict[str, int]] = {}
    for r in records:
        c = out.setdefault(str(r["point"]), {"broken": 0, "fixed": 0})
        c["broken"] += bool(r.get("broken"))
        c["fixed"] += bool(r.get("fixed"))
    return out

