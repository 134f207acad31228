"""The token-level trace viewer's logic, testable without Streamlit: the traces a run holds and one of them with its
per-token quantities, read through the reader the run's job declares (``Job.traces``, a
:class:`~thinklens.runs.run_views.TraceReader`), or, for any other job, from the generated
texts its run folder holds (``trace_records``), so a new job's traces show with no edit here. A run whose results
have the shape of a view the app knows (``trace_views``: a thought-anchors run's sentences, ``anchor_views``; a
tuned-lens run's answer along traces, ``lens_views``) is read through that view.

Beside it: ``trace_links`` (the viewer's URLs, which every page builds with :func:`trace_link`), ``trace_display``
(colours, the token strip), ``trace_lens`` (the logit lens and SAE features, with the model), ``run_refs`` (a
run's ``<kind>/<run id>`` and its kind, which ``trace_lens`` reads too); their names are importable from here too.

Trace ids per run kind are the reader's (``mi-peaks``: ``<model key>/<problem index>``; ``lynx``: the test rollout
index; ``steer``: ``<arm>/<feature>/<coeff>``; ``latent-eval``: ``<problem index>/<method>``); generic records are
``<source>/<index>``; a view's are its rows' indices. Position ``t`` is generated token ``t``; its per-token values
(MI, entropy, probe score, SAE activation, logit lens) are those of the state that *produced* it (the prompt's last
state for ``t = 0``).

Example:
    >>> trace_link("lynx/demo", "12", "probe", token=30)
    '/Trace_viewer?run=lynx/demo&trace=12&quantity=probe&token=30'
    >>> {"mi-peaks", "lynx"} <= set(reader_kinds())
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import safetensors.numpy

from app import anchor_views, lens_views
from app.run_refs import run_kind
from app.trace_display import (  # noqa: F401  (the viewer's names, importable from here)
    MARK_STYLES,
    PROBABILITIES,
    colour,
    highlighted,
    link_html,
    token_text,
    tokens_html,
    value_range,
)
from app.trace_lens import Lens, logit_lens, prompt_ids_of, sae_activations, saes_for  # noqa: F401
from app.trace_links import VIEWER_PATH, feature_quantity, parse_feature_quantity, trace_link, traces_link  # noqa: F401
from app.trace_records import has_traces, record, trace_records
from app.trace_truth import FORCED, has_truth, misplaced, model_tokens, tokenizer_of, truth_view
from app.trace_views import TraceView
from thinklens.analyses.mi.run_format import read_index, read_trajectory
from thinklens.analyses.mi.thinking_tokens import UNITS, TokenTrajectory
from thinklens.errors import ThinklensError
from thinklens.probes.lynx_traces import lynx_exits, lynx_rollouts, lynx_test_traces  # noqa: F401
from thinklens.runs.folders import discover_runs
from thinklens.runs.jobs import jobs_by_kind
from thinklens.runs.run_views import TraceData, TraceReader, read_result_json
from thinklens.steering.steer_traces import steer_trace_id, token_diff  # noqa: F401

COMPUTED: tuple[str, ...] = ("entropy",)
"""Quantities computed on demand with the model (for traces with token ids)."""


# ----------------------------------------------------------------------------------------------- listing traces

def reader(kind: str) -> TraceReader | None:
    """The trace reader ``kind``'s job declares (``Job.traces``), None when it declares none (its generated texts are
    found by their shape) or no registered job writes ``kind``."""
    job = jobs_by_kind().get(kind)
    return None if job is None else job.declared("traces")


VIEWS: tuple[TraceView, ...] = (anchor_views.VIEW, lens_views.VIEW)
"""The views a run folder is recognised by when its job declares no reader (``app.trace_views``)."""


def view_of(root: Path, run: str) -> TraceView | None:
    """The view whose results ``root/run`` holds (a thought-anchors or tuned-lens run), None for any other run and for
    a run whose job declares a reader of its own."""
    try:
        if reader(run_kind(run, root)) is not None:
            return None
    except ThinklensError:
        return None
    path = Path(root) / run
    return next((v for v in VIEWS if v.holds(path)), None)


def _reader_of(root: Path, run: str) -> TraceReader | None:
    """The reader of ``root/run``: its job's own, else that of the view its results have."""
    own = reader(run_kind(run, root))
    if own is not None:
        return own
    view = view_of(root, run)
    return None if view is None else view.reader


def reader_kinds() -> tuple[str, ...]:
    """Run kinds whose job declares a trace reader of its own (per-token quantities, marks), in pipeline order."""
    return tuple(k for k, job in jobs_by_kind().items() if job.traces)


def __getattr__(name: str) -> Any:
    if name == "KINDS":  # read from the registry each time (a job registered since is in it)
        return reader_kinds()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def trace_kinds(root: Path) -> list[str]:
    """Every run kind whose runs under ``root`` hold traces: the registered jobs' kinds (the job registry, so a new job
    needs no edit here) and any other kind found there, those with a reader of their own first."""
    own = reader_kinds()
    kinds = list(own) + [k for k in jobs_by_kind() if k not in own]
    out = []
    for kind in kinds:
        runs = [e for e in discover_runs(root, kind) if e.error is None]
        if runs and (kind in own or any(has_traces(e.path) or any(v.holds(e.path) for v in VIEWS) for e in runs)):
            out.append(kind)
    return out


def list_traces(root: Path, run: str, where: str | None = None) -> list[tuple[str, str]]:
    """``(trace id, label)`` of every trace of ``root/run``, in the run's order (only those matching ``where`` when
    given: a filter the job's reader knows, else ``field=value`` conditions of the generic records)."""
    path = Path(root) / run
    own = _reader_of(root, run)
    if own is not None and where is None:
        return own.list(path)
    if own is not None and own.where is not None:
        kept = own.where(path, where)
        if kept is not None:
            return kept
    if own is not None and not trace_records(path):
        return []
    return [(r.trace_id, _record_label(r)) for r in trace_records(path, where)]


def where_marks(marks: dict[str, list[int]], where: str | None) -> list[str]:
    """The marks of a trace that a link's filter names (the view opens the first): those the trace readers of the
    registered jobs name for it (``TraceReader.marks``; a filter of another job's names none of this trace's marks);
    [] for no filter or one that names none.

    >>> where_marks({"cue event": [1]}, None), where_marks({"cue event": [1]}, "correct=false")
    ([], [])
    """
    if not where:
        return []
    named: list[str] = []
    for kind in reader_kinds():
        own = reader(kind)
        if own is not None and own.marks is not None:
            named += [m for m in own.marks(marks, where) if m not in named]
    return named


def _record_label(r: Any) -> str:
    verdict = {True: "right", False: "wrong"}.get(r.facts.get("correct"), "")
    name = r.facts.get("id") or r.facts.get("problem_id") or ""
    return " ".join(str(x) for x in (r.trace_id, name, verdict, f"{len(r.text.split())} words") if x != "")


def load_trace(root: Path, run: str, trace: str) -> TraceData:
    """The trace ``trace`` of ``root/run`` with its stored quantities; a ThinklensError names what is wrong."""
    path = Path(root) / run
    own = _reader_of(root, run)
    loader = own.load if own is not None and not _is_record_id(path, trace) else _record_trace
    try:
        return loader(path, run, trace)
    except (KeyError, IndexError, ValueError, TypeError, StopIteration) as e:
        if isinstance(e, ThinklensError):
            raise
        raise ThinklensError.of("trace id", f"{trace!r} of {run} ({type(e).__name__}: {e})",
                                "an id the run holds (see the viewer's trace box)", "pick a trace from the list") from None


def _is_record_id(path: Path, trace: str) -> bool:

    return "/" in trace and any(r.trace_id == trace for r in trace_records(path))


def _record_trace(path: Path, run: str, trace: str) -> TraceData:
    """A generic record (``trace_records``): its words, its prompt and its plain fields as facts; a record with ground
    truth in its model's tokens (``answer_known_at``, cues: ``app.trace_truth``) by those tokens, with the answer's and
    each cue's position marked and the forced exit's answer at each cue."""
    r = record(path, trace)
    config = read_result_json(path / "config.json") if (path / "config.json").is_file() else {}
    tokens = r.text.split() or [""]
    ids = r.facts.get("token_ids")
    data = TraceData(run=run, kind=run_kind(run, path.parents[len(Path(run).parts) - 1]), trace_id=trace,
                     model=r.facts.get("model") or config.get("model") or None, prompt=r.prompt, tokens=tokens,
                     quantities={"words": [None] * len(tokens)}, default_quantity="words", separator=" ",
                     facts={k: v for k, v in r.facts.items() if k not in ("prompt", "question")},
                     no_lens="the run stored the text, not its token ids" if not isinstance(ids, list) else "")
    fields = r.facts | r.fields
    if has_truth(fields) and data.model:
        try:
            pieces, _ = model_tokens(r.text, tokenizer_of(str(data.model)))
            why = misplaced(pieces, r.text, fields)
        except (ThinklensError, OSError, ValueError, TypeError) as e:
            why = f"the tokenizer of {data.model} cannot be loaded ({type(e).__name__}: {e})"
        if why:
            data.facts["ground truth"] = f"not marked: {why}"
        else:
            marks, quantities, tables = truth_view(fields, pieces)
            data.tokens, data.separator, data.marks, data.tables = pieces, "", marks, tables
            data.quantities, data.default_quantity = quantities, FORCED
            data.no_lens = "the run stored the question, not the chat prompt the model read"
    return data


# ----------------------------------------------------------------------------------------------- enrichment links

def peak_occurrences(root: Path, run: str, key: str, rule: str, word: str, unit: str = "words",
                     lowercase: bool = False) -> list[tuple[int, int]]:
    """``(trajectory index, position)`` of every peak (of ``rule``) whose token counts as ``word`` in the
    enrichment's ``unit`` (``thinklens.analyses.mi.thinking_tokens.UNITS``): the trajectories behind one enrichment row."""
    path = Path(root) / run
    entry = next(m for m in read_index(path)["models"] if m["key"] == key)
    separator = entry.get("token_separator", "")
    out = []
    for r in entry["index"]:
        rec = read_trajectory(path, key, r["i"])
        units = UNITS[unit](TokenTrajectory.of(rec.tokens, rec.peaks[rule], separator), lowercase)
        out += [(rec.index, p) for p in rec.peaks[rule] if 0 <= p < len(units) and units[p] == word]
    return out


def lynx_rollout_rows(path: Path, run: str, delta: float) -> list[dict[str, Any]]:
    """One row per test rollout of a LYNX run at ``delta``: its cue events, where LYNX exits (position, cue), whether
    the full rollout and the exit are correct, and its trace-viewer link (coloured by the probe score, the exit opened)."""
    ev = safetensors.numpy.load_file(str(Path(path) / "arrays" / "test_events.safetensors"))
    ro = lynx_rollouts(Path(path))
    exits = lynx_exits(Path(path))
    if float(delta) not in exits:
        raise ThinklensError.of("δ", delta, f"one of {sorted(exits)}", "pick a δ LYNX was evaluated at")
    per = exits[float(delta)]
    n_events = [0] * len(ro["length"])
    for r in ev["rollout"].tolist():
        n_events[r] += 1
    rows = []
    for i, row in enumerate(per):
        pos = int(ev["position"][row]) if row >= 0 else None
        rows.append({"rollout": i, "cue events": n_events[i], "exit position": pos,
                     "exit score": None if row < 0 else float(ev["prob"][row]),
                     "full rollout correct": bool(ro["correct"][i]),
                     "exit correct": None if row < 0 else bool(ev["label"][row]), "length": int(ro["length"][i]),
                     "trace": trace_link(run, str(i), "probe", token=pos)})
    return rows
