"""The trace viewer's view of a tuned-lens run (``results/answer_lens.json``: per greedy trace its text, the step where
the final answer's first token is written and, per lens, the first (step, block) where that token is the lens's top
token; ``answer_lens_grids.json``: the (step, block) grids of its probability and rank under each lens, as
``thinklens run tuned-lens`` writes them): the trace's tokens, where each lens first reads the answer marked; under it
the heat map of the answer's probability per step and block for each lens, beside the curves of the same trace in other
runs (MI with the answer, a probe's score); a clicked step opens every block's reading there.

Step ``t`` is generated token ``t``: its states are those that produced it (the job's ``read_along``). The tokens are
the model's tokenizer's pieces of the stored text, checked against the stored answer token at its step (and against the
grids' tokens when stored); a run folder without ``answer_lens_grids.json`` (a record keeps only its results) shows the
first (step, block) per lens and says that the map is not stored.

Example:
    >>> first_text([14, 1]), first_text(None)
    ('step 14, block 1', 'never top-1')
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.trace_links import trace_link
from app.trace_truth import model_tokens, tokenizer_of
from app.trace_views import (
    Curve,
    Section,
    TraceView,
    add_curves,
    cached_json,
    curves_caption,
    holds_rows,
    result_rows,
    row_at,
    rows_where,
)
from thinklens.errors import ThinklensError
from thinklens.runs.run_views import TraceData, TraceReader, json_or_none

RESULT = Path("results") / "answer_lens.json"
"""The first top-1 per trace."""
GRIDS = "answer_lens_grids.json"
"""The grids per trace and lens (the job's ``GRIDS``)."""
LENSES = ("logit", "tuned")
NO_VALUES = "no per-step values stored"
"""The quantity of a trace whose grids the run folder does not hold."""
SEARCHED = "the finished runs with per-token traces (mi-peaks, lynx, ...) under the runs root"


def first_text(first: Any) -> str:
    """A lens's first top-1 ``[step, block]`` in words."""
    return f"step {first[0]}, block {first[1]}" if isinstance(first, (list, tuple)) and len(first) == 2 else "never top-1"


def p_quantity(lens: str) -> str:
    """The quantity of a lens's highest probability of the answer token over blocks, per step."""
    return f"{lens} lens p(answer), best block"


def rows(path: Path) -> list[dict[str, Any]]:
    """The traces of a tuned-lens run folder (``results/answer_lens.json``)."""
    return result_rows(Path(path) / RESULT, "tuned-lens")


def grids(path: Path) -> list[dict[str, Any]] | None:
    """The stored grids per trace, None when the run folder holds none."""
    got = cached_json(Path(path) / GRIDS)
    return got if isinstance(got, list) else None


def holds(path: Path) -> bool:
    """Whether the run folder holds the answer read along traces (rows with its text and ``answer_step``)."""
    return holds_rows(Path(path) / RESULT, {"text", "answer_step"})


def _row(path: Path, trace: str) -> dict[str, Any]:
    return row_at(rows(path), trace)


def _reads(path: Path, trace: str) -> dict[str, dict[str, Any]]:
    """The trace's stored grids per lens ({} when the run holds none for it)."""
    r, g = _row(path, trace), grids(path)
    if not g or int(trace) >= len(g) or g[int(trace)].get("problem") != r.get("problem"):
        return {}
    return {k: v for k, v in (g[int(trace)].get("reads") or {}).items() if isinstance(v, dict) and v.get("prob")}


def _model(path: Path) -> str | None:
    config = json_or_none(Path(path) / "config.json")
    return config.get("model") if isinstance(config, dict) else None


def list_traces(path: Path) -> list[tuple[str, str]]:
    """``(trace id, label)`` of every trace: its problem, gold answer and where each lens first reads the answer."""
    out = []
    for i, r in enumerate(rows(path)):
        if r.get("answer_step") is None:
            out.append((str(i), f"{r.get('problem')} (gold {r.get('gold')}): no final answer"))
            continue
        firsts = "; ".join(f"{k} {first_text(v)}" for k, v in (r.get("first") or {}).items())
        out.append((str(i), f"{r.get('problem')} (gold {r.get('gold')}), answer {r.get('target')!r} at step "
                            f"{r.get('answer_step')}; top-1 first: {firsts}"))
    return out


def tokens_of(path: Path, trace: str) -> tuple[list[str], str]:
    """The trace's tokens (the model's pieces of its text) and '' when they are its steps, else why not (the text's
    words are returned instead)."""
    r, reads = _row(path, trace), _reads(path, trace)
    text, model = str(r.get("text") or ""), _model(path)
    try:
        pieces, _ = model_tokens(text, tokenizer_of(str(model)))
    except (ThinklensError, OSError, ValueError, TypeError) as e:
        return text.split() or [""], f"the tokenizer of {model} cannot be loaded ({type(e).__name__}: {e})"
    step = r.get("answer_step")
    why = ""
    if "".join(pieces) != text:
        why = "re-tokenizing the text does not give it back"
    elif step is not None and (step >= len(pieces) or pieces[step] != r.get("target")):
        why = f"the answer token {r.get('target')!r} is not the text's token at step {step}"
    elif reads:
        grid_tokens = next(iter(reads.values())).get("tokens") or []
        if pieces[:len(grid_tokens)] != list(grid_tokens):
            why = "the text's tokens differ from the grids' tokens"
    return (pieces, "") if not why else (text.split() or [""], f"steps not placed: {why}")


def load_trace(path: Path, run: str, trace: str) -> TraceData:
    """One trace: its tokens, where the answer is written and where each lens first reads it marked, and (with the
    grids) each lens's highest probability of the answer token over blocks per step."""
    r, reads = _row(path, trace), _reads(path, trace)
    tokens, why = tokens_of(path, trace)
    quantities: dict[str, list[float | None]] = {}
    marks: dict[str, list[int]] = {}
    if not why:
        for lens, read in reads.items():
            best = [max(row) for row in read["prob"]]  # [step]
            quantities[p_quantity(lens)] = (best + [None] * len(tokens))[:len(tokens)]
        if r.get("answer_step") is not None:
            marks["answer token written"] = [int(r["answer_step"])]
        for lens in LENSES:
            first = (r.get("first") or {}).get(lens)
            if isinstance(first, list) and len(first) == 2:
                marks[f"{lens} lens: answer top-1 first"] = [int(first[0])]
    facts: dict[str, Any] = {"problem": r.get("problem"), "gold": r.get("gold"), "answer token": r.get("target"),
                             "written at step": r.get("answer_step")}
    facts |= {f"{k} lens top-1 first": first_text(v) for k, v in (r.get("first") or {}).items()}
    if r.get("answer_step") is not None:
        facts["lens heat map"] = "stored" if reads else f"not stored (no {GRIDS} in this run folder)"
    if why:
        facts["steps"] = why
    table = [{"lens": lens, "first top-1": first_text(v), "block": v[1] if v else None,
              "token there": tokens[v[0]] if v and not why and v[0] < len(tokens) else None,
              "steps before the answer is written": r["answer_step"] - v[0] if v and r.get("answer_step") is not None else None,
              "open that step": trace_link(run, trace, p_quantity(lens) if lens in reads else NO_VALUES, token=v[0]) if v else None}
             for lens, v in (r.get("first") or {}).items()]
    return TraceData(run=run, kind="tuned-lens", trace_id=trace, model=_model(path), prompt="", tokens=tokens,
                     quantities=quantities or {NO_VALUES: [None] * len(tokens)}, marks=marks, facts=facts,
                     tables={"the answer's first top-1 per lens": table} if table else {},
                     default_quantity=next(iter(quantities), NO_VALUES),
                     no_lens="the run stored the trace's text, not the prompt the model read")


def hover(path: Path, trace: str, quantity: str) -> list[str]:
    """Per step with stored grids: each lens's highest probability of the answer token over blocks, its rank there."""
    reads = _reads(path, trace)
    tokens, why = tokens_of(path, trace)
    out = [""] * len(tokens)
    if why or not reads:
        return out
    for t in range(len(tokens)):
        parts = []
        for lens, read in reads.items():
            if t < len(read["prob"]):
                j = max(range(len(read["prob"][t])), key=read["prob"][t].__getitem__)
                parts.append(f"{lens} lens: p(answer) {read['prob'][t][j]:.3g} (rank {read['rank'][t][j]}) at block "
                             f"{read['layers'][j]}, its highest")
        out[t] = "; ".join(parts)
    return out


def figure_lens_map(reads: dict[str, dict[str, Any]], first: dict[str, Any], answer_step: int | None, n_blocks: int | None,
                    curves: Sequence[Curve], tokens: Sequence[str], *, title: str):
    """One heat map (block x step) of the answer token's probability per lens, its first top-1 marked, then the curves
    of the same trace on the same steps; without grids, the first top-1 per lens as points instead."""
    import plotly.graph_objects as go  # lazy: import cost (plotly)
    from plotly.subplots import make_subplots  # lazy: import cost (plotly)

    panels = list(reads) if reads else ["first"]
    n = len(panels) + (1 if curves else 0)
    names = [f"{lens} lens: p(answer token)" + (f", top-1 first at {first_text(first.get(lens))}") for lens in reads] \
        if reads else ["the first (step, block) where each lens's top token is the answer's (the grids are not stored)"]
    fig = make_subplots(rows=n, cols=1, shared_xaxes=True, vertical_spacing=0.12 if n > 1 else 0.0,
                        subplot_titles=names + (["the same trace in other runs"] if curves else []))
    for i, lens in enumerate(reads, start=1):
        read = reads[lens]
        z = [list(col) for col in zip(*read["prob"])]  # [block][step]
        text = [[f"step {t} ({read['tokens'][t]!r}), block {b}: p={read['prob'][t][j]:.3f}, rank {read['rank'][t][j]}"
                 for t in range(len(read["prob"]))] for j, b in enumerate(read["layers"])]
        fig.add_trace(go.Heatmap(z=z, x=list(range(len(read["prob"]))), y=read["layers"], zmin=0, zmax=1,
                                 colorscale="Viridis", text=text, hovertemplate="%{text}<extra></extra>", showscale=i == 1,
                                 colorbar={"title": "p", "len": 0.4, "y": 1.0, "yanchor": "top"}), row=i, col=1)
        f = first.get(lens)
        if isinstance(f, list) and len(f) == 2:
            fig.add_trace(go.Scatter(x=[f[0]], y=[f[1]], mode="markers", name=f"{lens} lens: top-1 first",
                                     marker={"symbol": "x", "size": 12, "color": "red"}, showlegend=False,
                                     hovertemplate=f"{lens} lens: top-1 first at step %{{x}}, block %{{y}}<extra></extra>"),
                          row=i, col=1)
    if not reads:
        for lens, colour in zip(LENSES, ("#1f77b4", "#ff7f0e")):
            f = first.get(lens)
            if isinstance(f, list) and len(f) == 2:
                fig.add_trace(go.Scatter(x=[f[0]], y=[f[1]], mode="markers", name=f"{lens} lens: top-1 first",
                                         marker={"symbol": "x", "size": 12, "color": colour},
                                         hovertemplate=f"{lens} lens: top-1 first at step %{{x}}, block %{{y}}<extra></extra>"),
                              row=1, col=1)
        if answer_step is not None:
            fig.add_trace(go.Scatter(x=[answer_step, answer_step], y=[0, max((n_blocks or 1) - 1, 0)], mode="lines",
                                     name="answer token written", line={"dash": "dot", "color": "#17becf"}), row=1, col=1)
        if n_blocks:
            fig.update_yaxes(range=[-0.5, n_blocks - 0.5], row=1, col=1)
    for i in range(1, len(panels) + 1):
        fig.update_yaxes(title_text="block", row=i, col=1)
        fig.update_xaxes(title_text="step (token produced)", row=i, col=1)
    if curves:
        add_curves(fig, curves, tokens, row=n, col=1)
        fig.update_yaxes(title_text="value", row=n, col=1)
        fig.update_xaxes(title_text="step (token produced)", row=n, col=1)
    fig.update_layout(title=title, template="plotly_white", height=120 + 240 * n, margin={"t": 80, "b": 40, "l": 60, "r": 20},
                      legend={"orientation": "h"})
    return fig


def sections(path: Path, run: str, trace: str, curves: Sequence[Curve] = ()) -> list[Section]:
    """The answer's heat map per lens beside the curves of the same trace in other runs."""
    r, reads = _row(path, trace), _reads(path, trace)
    if r.get("answer_step") is None:
        return [Section("The answer along the trace", note="This trace states no final answer: the run read no lens along it.")]
    tokens, why = tokens_of(path, trace)
    meta = json_or_none(Path(path) / "meta.json") or {}
    n_blocks = len(((meta.get("summary") or {}).get("layers")) or []) or None
    fig = figure_lens_map(reads, r.get("first") or {}, r.get("answer_step"), n_blocks, [] if why else curves, tokens,
                          title=f"{r.get('problem')}: the answer token {r.get('target')!r} along the trace, per block")
    caption = ("Colour: the lens's probability of the answer's first token at each step (the states that produced that "
               "token) and block; x: the first step, then the lowest block, where it is the lens's top token. "
               if reads else "")
    caption += curves_caption([] if why else curves, searched=SEARCHED)
    note = "" if reads else (f"This run folder holds no {GRIDS}: the (step, block) grids of the heat map are not stored "
                             "(a record keeps its results only), so only the first top-1 of each lens is drawn. Re-run "
                             f"`thinklens run tuned-lens --config {Path(path) / 'config.json'}` to get the map.")
    return [Section("The answer's lens along the trace", caption, figure=fig, note=note)]


def position(path: Path, run: str, trace: str, t: int) -> list[Section]:
    """Every block's reading of the answer token at step ``t``, per lens (with the grids)."""
    reads = _reads(path, trace)
    if not reads:
        return [Section(f"Step {t} through the lenses", note=f"This run folder holds no {GRIDS}: the readings per block "
                                                             "are not stored.")]
    first = next(iter(reads.values()))
    if t >= len(first["prob"]):
        return [Section(f"Step {t} through the lenses", note=f"The lenses were read up to the step where the answer is "
                                                             f"written ({len(first['prob']) - 1}).")]
    out = []
    for j, b in enumerate(first["layers"]):
        row: dict[str, Any] = {"block": b}
        for lens, read in reads.items():
            row[f"{lens} p(answer)"] = read["prob"][t][j]
            row[f"{lens} rank (0: top)"] = read["rank"][t][j]
        out.append(row)
    return [Section(f"Step {t} through the lenses", f"The answer token {first.get('target_text')!r} at every block "
                                                    f"under each lens.", rows=out)]


def where_traces(path: Path, where: str) -> list[tuple[str, str]]:
    """The traces whose row's plain fields match a link's ``field=value`` filter (``problem=synthetic-0-1``)."""
    keep = set(rows_where(rows(path), where))
    return [t for t in list_traces(path) if int(t[0]) in keep]


READER = TraceReader(list_traces, load_trace, where_traces)
VIEW = TraceView("the answer's lens", holds, READER, hover, sections, position, unit="step",
                 clicked="Click a step for every block's reading of the answer token there.", curves=True)
