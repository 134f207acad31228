"""The same trace in other runs: a trace that a thought-anchors, tuned-lens or organism run shows is often also a
trajectory of an mi-peaks run or a rollout of a LYNX run (the same model, greedy, on the same problem), whose per-token
curves (MI with the answer, the probe's score at each cue) the viewer draws under it. Found through the trace readers the
registered jobs declare (``Job.traces``), so a new reader's curves come with no edit here.

Two traces are the same when their models have the same name and one's text starts with the other's (a run that
generated fewer tokens holds a prefix); a curve's values are placed on this trace's positions where a token of the other
run starts at the same character (:func:`aligned`), so two tokenizations of one text line up where they agree.

Example:
    >>> aligned(["Okay", ",", " so", " 4"], "", ["Okay,", " so", " 4"], "", [1.0, 2.0, 3.0])
    [1.0, None, 2.0, 3.0]
    >>> long = "Okay, Leo has 86 cards. First, Leo buys 10 more"
    >>> same_text(long + ", so 96.", long), same_text("Okay, Leo", long), same_text(long, long.replace("86", "85"))
    (True, False, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from app.trace_links import trace_link
from app.trace_records import trace_records
from app.trace_views import Curve
from thinklens.errors import ThinklensError
from thinklens.runs.folders import discover_runs
from thinklens.runs.jobs import jobs_by_kind

MIN_CHARS = 24
"""The shortest shared text that counts as the same trace (a few words could open many traces)."""
MAX_LOADS = 400
"""Traces loaded at most per search (a run whose config names other models, or whose generic records hold its texts
and not this one, is passed over without loading any)."""


def same_text(a: str, b: str) -> bool:
    """Whether two generated texts are one trace: one starts with the other, sharing at least :data:`MIN_CHARS`."""
    a, b = a.strip(), b.strip()
    short, long_ = sorted((a, b), key=len)
    return len(short) >= MIN_CHARS and long_.startswith(short)


def _starts(tokens: Sequence[str], separator: str) -> list[tuple[int, int | None]]:
    """Per token, where it starts in the joined text and where its first non-space character is (None for a token of
    spaces only), both counted from the text's first non-space character."""
    text = separator.join(tokens)
    lead = len(text) - len(text.lstrip())
    out: list[tuple[int, int | None]] = []
    at = 0
    for k, tok in enumerate(tokens):
        if k:
            at += len(separator)
        out.append((at - lead, at + len(tok) - len(tok.lstrip()) - lead if tok.strip() else None))
        at += len(tok)
    return out


def aligned(tokens: Sequence[str], separator: str, other: Sequence[str], other_separator: str,
            values: Sequence[float | None]) -> list[float | None]:
    """``values`` (one per token of ``other``) placed on the positions of ``tokens`` that start where a token of
    ``other`` starts, else whose first non-space character is that of a token of ``other`` (a BPE piece's leading
    space and a word tokenizer's separator are one); None elsewhere."""
    theirs = _starts(other, other_separator)
    raw = {s: k for k, (s, _) in enumerate(theirs)}
    word = {w: k for k, (_, w) in enumerate(theirs) if w is not None}
    out: list[float | None] = []
    for s, w in _starts(tokens, separator):
        k = raw.get(s, word.get(w) if w is not None else None)
        out.append(None if k is None or k >= len(values) else values[k])
    return out


def _same_model(a: str | None, b: str | None) -> bool:
    return bool(a) and bool(b) and Path(str(a).rstrip("/")).name == Path(str(b).rstrip("/")).name


MODEL_KEYS: tuple[str, ...] = ("model", "models", "compare")
"""Config fields that name the models a run generated with (a run that names others is not searched)."""


def _names_other_models(config: dict | None, model: str) -> bool:
    """Whether a run's config names the models it ran and ``model`` is not among them."""
    named = []
    for k in MODEL_KEYS:
        v = (config or {}).get(k)
        named += [v] if isinstance(v, str) and v else [x for x in v if isinstance(x, str)] if isinstance(v, list) else []
    return bool(named) and not any(_same_model(n, model) for n in named)


def same_trace_curves(root: Path, model: str | None, text: str, tokens: Sequence[str], separator: str = "", *,
                      skip: str | None = None) -> list[Curve]:
    """The default quantity of every trace, in the finished runs under ``root`` whose job declares a trace reader, that is
    this trace (``model`` and :func:`same_text`), aligned to ``tokens``; ``skip`` names this trace's own run."""
    if not model or len(text.strip()) < MIN_CHARS:
        return []
    out: list[Curve] = []
    loads = 0
    for kind, job in jobs_by_kind().items():
        reader = job.declared("traces")
        if reader is None:
            continue
        for e in discover_runs(root, kind):
            run = f"{kind}/{e.run_id}"
            if e.error is not None or e.status != "done" or run == skip or _names_other_models(e.config, model):
                continue
            records = trace_records(e.path)
            if records and not any(same_text(r.text, text) for r in records):
                continue  # its texts are on disk and none is this one: nothing to load
            try:
                listed = reader.list(e.path)
            except (ThinklensError, OSError, ValueError, KeyError):
                continue
            for tid, _ in listed:
                if loads >= MAX_LOADS:
                    return out
                loads += 1
                try:
                    t = reader.load(e.path, run, tid)
                except (ThinklensError, OSError, ValueError, KeyError, IndexError):
                    continue
                if not _same_model(t.model, model) or not same_text(t.separator.join(t.tokens), text):
                    continue
                q = t.default_quantity or next(iter(t.quantities), "")
                if q not in t.quantities:
                    continue
                values = aligned(tokens, separator, t.tokens, t.separator, t.quantities[q])
                if any(v is not None for v in values):
                    out.append(Curve(run, kind, tid, q, values, trace_link(run, tid, q)))
    return out
