"""Accuracy and token counts of a model on a problem set: one row per completion, a summary overall and by
metadata group (synthetic ``n_steps``, MATH-500's ``level`` and ``subject``), and a plotly figure.

A row grades the completion with :func:`thinklens.data.answers.is_correct` against the problem's gold answer,
and counts its tokens: all of them, the reasoning and the answer (the prompt format's thinking-span
split, :meth:`thinklens.data.formats.PromptFormat.split_trace`; span markers belong to neither), whether the
span was closed, and why generation stopped.

Example:
    >>> rows = [{"correct": True, "n_tokens": 10, "n_reasoning_tokens": 7, "n_answer_tokens": 2, "closed": True,
    ...          "stop_reason": "eos", "i": 0, "metadata": {"level": 1}},
    ...         {"correct": False, "n_tokens": 20, "n_reasoning_tokens": 20, "n_answer_tokens": 0, "closed": False,
    ...          "stop_reason": "max_new_tokens", "i": 1, "metadata": {"level": 2}}]
    >>> s = summarize_eval(rows, ["level"])
    >>> s["overall"]["accuracy"], s["overall"]["mean_tokens"], s["by"]["level"]["2"]["stop_reasons"]
    (0.5, 15.0, {'max_new_tokens': 1})
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from thinklens.data.answers import extract_answer, is_correct
from thinklens.errors import ThinklensError, did_you_mean, opt

if TYPE_CHECKING:
    from thinklens.data.formats import PromptFormat
    from thinklens.data.problemsets import ProblemSet, RealProblem
    from thinklens.generation.trace import Trace

#: A metadata field is a group when its values are plain scalars taking 2 to this many distinct values.
MAX_GROUP_VALUES = 30


def _plain(value: Any) -> Any:
    """A JSON scalar for a metadata value (numpy scalars and other objects as text)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    item = getattr(value, "item", None)  # numpy scalars from parquet or datasets
    if callable(item):
        try:
            return _plain(item())
        except (TypeError, ValueError):
            pass
    return str(value)


def completion_row(problem: RealProblem, index: int, sample: int, trace: Trace, fmt: PromptFormat,
                   budget: int) -> dict[str, Any]:
    """One graded completion: correctness, token counts and the text."""
    split = fmt.split_trace(trace)
    return {
        "i": index, "sample": sample, "id": problem.id, "gold": problem.answer,
        "extracted": extract_answer(trace.text), "correct": is_correct(trace.text, problem.answer),
        "n_tokens": len(trace.token_ids), "n_reasoning_tokens": len(split.reasoning),
        "n_answer_tokens": len(split.answer), "closed": split.closed, "stop_reason": trace.stop_reason,
        "budget": budget, "metadata": {k: _plain(v) for k, v in problem.metadata.items()}, "text": trace.text,
    }


def group_fields(problems: ProblemSet, requested: Sequence[str] = ()) -> list[str]:
    """The metadata fields to summarize by: ``requested`` (checked), else every field whose values are
    scalars with 2 to :data:`MAX_GROUP_VALUES` distinct values (``n_steps``, ``level``, ``subject``).

    Example:
        >>> from thinklens.data.problemsets import load_problems
        >>> group_fields(load_problems("synthetic:2-3:2"))
        ['n_steps']
    """
    keys = list(dict.fromkeys(k for p in problems for k in p.metadata))
    if requested:
        bad = [g for g in requested if g not in keys]
        if bad:
            raise ThinklensError.of("group field", bad[0], f"a metadata field of the data: {', '.join(keys) or 'none'}",
                                    did_you_mean(bad[0], keys) or f"drop {opt('group_by')} to group by every small field")
        return list(requested)
    out = []
    for k in keys:
        values = [_plain(p.metadata.get(k)) for p in problems]
        if all(isinstance(v, (str, int, float, bool)) for v in values) and 2 <= len(set(values)) <= MAX_GROUP_VALUES:
            out.append(k)
    return out


def _stats(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    mean = (lambda key: sum(r[key] for r in rows) / n) if n else (lambda key: None)
    by_problem: dict[int, bool] = {}
    for r in rows:
        by_problem[r["i"]] = by_problem.get(r["i"], False) or bool(r["correct"])
    return {
        "n": n, "n_problems": len(by_problem), "n_correct": sum(bool(r["correct"]) for r in rows),
        "accuracy": mean("correct"), "any_correct": sum(by_problem.values()) / len(by_problem) if by_problem else None,
        "mean_tokens": mean("n_tokens"), "mean_reasoning_tokens": mean("n_reasoning_tokens"),
        "mean_answer_tokens": mean("n_answer_tokens"), "closed_fraction": mean("closed"),
        "max_tokens": max((r["n_tokens"] for r in rows), default=None),
        "stop_reasons": dict(Counter(r["stop_reason"] for r in rows)),
    }


def _order(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, (int, float)) and not isinstance(value, bool) else (1, str(value))


def summarize_eval(rows: Sequence[Mapping[str, Any]], groups: Sequence[str]) -> dict[str, Any]:
    """Accuracy (over completions; ``any_correct``: problems with a correct sample), token means, the
    fraction of closed thinking spans and the stop reasons: overall and for every value of each group."""
    if not rows:
        raise ThinklensError.of("completions", 0, "at least one graded completion", "evaluate some problems")
    by: dict[str, dict[str, Any]] = {}
    for g in groups:
        values = sorted({r["metadata"].get(g) for r in rows}, key=_order)
        by[g] = {str(v): _stats([r for r in rows if r["metadata"].get(g) == v]) for v in values}
    return {"overall": _stats(rows), "groups": list(groups), "by": by}


def figure_eval(summary: Mapping[str, Any], title: str = "") -> go.Figure:
    """Accuracy (top) and mean reasoning / answer tokens (bottom, stacked) per value of each group; one
    column per group (one "all" column without groups)."""
    panels = [(g, summary["by"][g]) for g in summary["groups"]] or [("all", {"all": summary["overall"]})]
    fig = make_subplots(rows=2, cols=len(panels), shared_xaxes=False, vertical_spacing=0.12,
                        subplot_titles=[f"accuracy by {g}" for g, _ in panels] + [f"tokens by {g}" for g, _ in panels])
    for c, (g, table) in enumerate(panels, start=1):
        x = list(table)
        stats = list(table.values())
        fig.add_trace(go.Bar(x=x, y=[s["accuracy"] for s in stats], name="accuracy", marker_color="#4c78a8",
                             text=[f"{s['n_correct']}/{s['n']}" for s in stats], textposition="outside",
                             showlegend=c == 1), row=1, col=c)
        for key, name, color in (("mean_reasoning_tokens", "reasoning tokens", "#f58518"),
                                 ("mean_answer_tokens", "answer tokens", "#54a24b")):
            fig.add_trace(go.Bar(x=x, y=[s[key] for s in stats], name=name, marker_color=color, showlegend=c == 1),
                          row=2, col=c)
        fig.update_yaxes(range=[0, 1.1], row=1, col=c)
        fig.update_xaxes(type="category", title_text=g, row=2, col=c)
    overall = summary["overall"]
    head = f"accuracy {overall['accuracy']:.3f} over {overall['n']} completions, {overall['mean_tokens']:.1f} tokens on average"
    fig.update_layout(barmode="stack", title={"text": f"{title}: {head}" if title else head}, height=620)
    return fig
