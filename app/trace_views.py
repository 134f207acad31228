"""Views of the trace viewer that a run folder's results are recognised by, rather than its job's declared reader: a
run whose results have the shape a view knows (a thought-anchors run's sentences and their importance, a tuned-lens
run's answer read along traces) is shown through it, with what the token strip alone cannot show: per-position hover
text (an importance's interval), sections under the strip (the sentence graph, the lens heat map) and sections for a
clicked position (the rollouts behind a sentence's numbers). Also the curves of the same trace found in other runs
(:class:`Curve`) and their figure.

Example:
    >>> fig = curves_figure([Curve("mi-peaks/a", "mi-peaks", "m/0", "mi", [0.1, None, 0.3], "/Trace_viewer?x")],
    ...                     ["a", "b", "c"], title="t")
    >>> [d.name for d in fig.data], fig.layout.xaxis.title.text
    (['mi (mi-peaks/a)'], 'position (token of this trace)')
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thinklens.errors import ThinklensError
from thinklens.runs.run_views import TraceReader, json_or_none


@dataclass(frozen=True)
class Section:
    """One block the viewer draws under a trace: a heading, then a note, a figure and a table, each optional."""

    title: str
    caption: str = ""
    """What it shows and what each number is against."""
    figure: Any = None
    """A plotly Figure (its axes titled)."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    """A table; a column whose values are trace-viewer links is drawn as links."""
    note: str = ""
    """What the run does not store for it (shown as an info box instead of a number)."""


@dataclass(frozen=True)
class Curve:
    """A per-token quantity of the same trace in another run, aligned to this trace's positions."""

    run: str
    """The other run (``<kind>/<run id>``)."""
    kind: str
    trace_id: str
    """The trace's id in that run."""
    quantity: str
    """The quantity (its reader's default: ``mi``, ``probe``)."""
    values: list[float | None]
    """One per position of this trace (None where that run has no value or no token starts there)."""
    link: str
    """The trace viewer on that run's trace, coloured by ``quantity``."""


@dataclass(frozen=True)
class TraceView:
    """A view of the runs whose folder :attr:`holds` its results: their traces, hover text and sections."""

    name: str
    """What it shows (``thought anchors``)."""
    holds: Callable[[Path], bool]
    """``holds(run folder)``: whether the run's results have this view's shape."""
    reader: TraceReader
    """The run's traces as the viewer lists and loads them."""
    hover: Callable[[Path, str, str], list[str]]
    """``hover(run folder, trace id, quantity)`` -> text per position added to its hover ('' for none)."""
    sections: Callable[[Path, str, str, Sequence[Curve]], list[Section]]
    """``sections(run folder, run, trace id, curves)`` -> the blocks under the token strip (``curves``: the same trace
    in other runs)."""
    position: Callable[[Path, str, str, int], list[Section]]
    """``position(run folder, run, trace id, position)`` -> the blocks of a clicked position."""
    unit: str = "token"
    """What one position is (``sentence``)."""
    clicked: str = ""
    """What clicking a position opens (the viewer's prompt under the strip)."""
    curves: bool = False
    """Whether its sections draw the curves of the same trace in other runs (its positions are a model's tokens)."""


@functools.lru_cache(maxsize=16)
def _read(path: str, mtime: float) -> Any:
    return json_or_none(Path(path))


def cached_json(f: Path) -> Any:
    """A JSON file a job wrote, read once per change of the file; None when it is missing or unreadable."""
    try:
        mtime = Path(f).stat().st_mtime
    except OSError:
        return None
    return _read(str(f), mtime)


def result_rows(f: Path, job: str) -> list[dict[str, Any]]:
    """The list of rows ``job`` wrote to ``f``; a ThinklensError when the file is missing or holds no list."""
    got = cached_json(f)
    if not isinstance(got, list):
        raise ThinklensError.of("results", str(f), f"{Path(f).parent.name}/{Path(f).name} of a finished {job} run",
                                "wait for the run to finish or re-run it")
    return got


def holds_rows(f: Path, keys: set[str]) -> bool:
    """Whether ``f`` holds a list of rows whose first has every field of ``keys``."""
    got = cached_json(f)
    return isinstance(got, list) and bool(got) and isinstance(got[0], dict) and keys <= set(got[0])


def row_at(rows: Sequence[dict[str, Any]], trace: str) -> dict[str, Any]:
    """The row a trace id (its index) names; a ThinklensError for any other id."""
    try:
        return rows[int(trace)]
    except (ValueError, IndexError):
        raise ThinklensError.of("trace id", repr(trace), f"0..{len(rows) - 1} (the run's traces)",
                                "pick a trace from the list") from None


def rows_where(rows: Sequence[Mapping[str, Any]], where: str) -> list[int]:
    """Indices of the rows whose plain fields match every ``field=value`` condition of ``where`` (joined by ``;``,
    case ignored), as the generic records' filters do.

    Example:
        >>> rows_where([{"gold": "4", "problem": "a"}, {"gold": 5}], "gold=5"), rows_where([{"gold": "4"}], "x=1;gold=4")
        ([1], [])
    """
    conds = [c.partition("=") for c in where.split(";") if c.strip()]
    return [i for i, r in enumerate(rows)
            if all(str(r.get(k.strip())).lower() == v.strip().lower() for k, _, v in conds)]


def curves_figure(curves: Sequence[Curve], tokens: Sequence[str], *, title: str):
    """The curves of the same trace in other runs, one line each over this trace's positions (hover: the token)."""
    import plotly.graph_objects as go  # lazy: import cost (plotly)

    fig = go.Figure()
    add_curves(fig, curves, tokens)
    fig.update_layout(title=title, xaxis_title="position (token of this trace)", yaxis_title="value",
                      template="plotly_white", height=300, margin={"t": 50, "b": 40, "l": 60, "r": 20})
    return fig


def add_curves(fig: Any, curves: Sequence[Curve], tokens: Sequence[str], **where: Any) -> None:
    """Add each curve as a line (gaps where it has no value) to ``fig`` (at subplot ``row=, col=`` when given)."""
    import plotly.graph_objects as go  # lazy: import cost (plotly)

    for c in curves:
        fig.add_trace(go.Scatter(x=list(range(len(c.values))), y=list(c.values), mode="lines+markers",
                                 name=f"{c.quantity} ({c.run})", connectgaps=False, marker={"size": 4},
                                 hovertext=list(tokens[:len(c.values)]),
                                 hovertemplate="position %{x} (%{hovertext}): %{y:.4g}<extra></extra>"), **where)


def curves_caption(curves: Sequence[Curve], *, searched: str) -> str:
    """Where each curve comes from (its run and trace, linked), or where none was found.

    Example:
        >>> curves_caption([], searched="the mi-peaks and lynx runs of tiny-r1")
        'None of the mi-peaks and lynx runs of tiny-r1 holds this trace (the same model and text): no curve to draw.'
    """
    if not curves:
        return f"None of {searched} holds this trace (the same model and text): no curve to draw."
    return "From " + "; ".join(f"[{c.quantity} of {c.run}, trace {c.trace_id}]({c.link})" for c in curves) + \
        " (the same model and text; values placed where a token of that run starts at the same character)."
