"""The trace viewer's view of a thought-anchors run (``results/anchors.json``: one row per trace with its sentences and
each measure's importance, as ``thinklens run thought-anchors`` writes it): one position per scored sentence, coloured
by a measure, its interval on hover; under it the importance of each sentence with its interval, the
sentence-to-sentence suppression matrix and the receiver heads; a clicked sentence opens the samples behind its numbers.

Measures (the job's definitions): forced-answer importance (answers forced after the prefix with the sentence minus
after the prefix without it: accuracy difference with Newcombe's interval, KL with a bootstrap interval over the
answers), resampling importance (rollouts that kept the sentence against rollouts from the prefix before it whose new
sentence replaced it), attention suppression (mean KL on later sentences' tokens when attention to the sentence is
masked; the run stores no interval for it) and the receiver-head score (mean vertical attention over the top-kurtosis
heads; no interval stored). Trace ids are the row's index; the text after the last scored sentence is shown unscored.

Example:
    >>> pieces(["Okay, 3.", "So 4."], "Okay, 3. So 4. Done.")
    ['Okay, 3.', 'So 4.', 'Done.']
    >>> interval(0.25, [-0.1, 0.6]), interval(None, None)
    ('0.25 [-0.1, 0.6]', '-')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.trace_links import trace_link
from app.trace_views import Curve, Section, TraceView, holds_rows, result_rows, row_at, rows_where
from thinklens.runs.run_views import TraceData, TraceReader, read_result_json

RESULT = Path("results") / "anchors.json"
"""Where a thought-anchors run keeps its rows."""
MEASURES: dict[str, tuple[str, str]] = {
    "resampling importance": ("resampling", "accuracy_diff"), "forced-answer importance": ("forced", "accuracy_diff"),
    "resampling KL": ("resampling", "kl"), "forced-answer KL": ("forced", "kl"),
}
"""Quantity -> (measure, field of its per-sentence score): the black-box measures, each with its interval."""
WHITE_BOX: dict[str, str] = {"attention suppression": "suppression", "receiver-head score": "receivers"}
"""Quantity -> the white-box measure (``scores[measure]``), stored without an interval."""
UNSCORED = "not scored (after the run's --max-sentences)"


def interval(value: Any, ci: Any, digits: int = 3) -> str:
    """``value [lo, hi]`` rounded to ``digits`` significant figures; ``-`` for a missing value."""
    if not _finite(value):
        return "-"
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(_finite(c) for c in ci):
        return f"{value:.{digits}g} [{ci[0]:.{digits}g}, {ci[1]:.{digits}g}]"
    return f"{value:.{digits}g}"


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def pieces(sentences: Sequence[str], trace: str) -> list[str]:
    """The sentences, then the rest of the trace after the last one found in it (unscored) when there is any."""
    at = 0
    for s in sentences:
        k = trace.find(s, at)
        if k < 0:
            return list(sentences)
        at = k + len(s)
    rest = trace[at:].strip()
    return list(sentences) + ([rest] if rest else [])


def rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a thought-anchors run folder."""
    return result_rows(Path(path) / RESULT, "thought-anchors")


def holds(path: Path) -> bool:
    """Whether the run folder holds thought-anchors rows (their sentences and scores)."""
    return holds_rows(Path(path) / RESULT, {"sentences", "scores"})


def _row(path: Path, trace: str) -> dict[str, Any]:
    return row_at(rows(path), trace)


def _top(scores: Sequence[Any]) -> int | None:
    best = [(v, -k) for k, v in enumerate(scores) if _finite(v)]
    return -max(best)[1] if best else None


def list_traces(path: Path) -> list[tuple[str, str]]:
    """``(trace id, label)`` of every trace: its problem, gold answer, sentences and top sentence per measure."""
    out = []
    for i, r in enumerate(rows(path)):
        tops = ", ".join(f"{m} #{k}" for m, k in ((m, _top(v)) for m, v in (r.get("scores") or {}).items()) if k is not None)
        out.append((str(i), f"{r.get('problem')} (gold {r.get('gold')}), {len(r.get('sentences') or [])} sentences"
                            + (f"; top: {tops}" if tops else "")))
    return out


def _values(r: dict[str, Any], quantity: str) -> list[float | None]:
    n = len(r["sentences"])
    if quantity in MEASURES:
        m, key = MEASURES[quantity]
        scores = (r.get(m) or {}).get("scores") or []
        vals = [s.get(key) for s in scores]
    else:
        vals = list((r.get("scores") or {}).get(WHITE_BOX[quantity]) or [])
    return [float(v) if _finite(v) else None for v in (vals + [None] * n)[:n]]


def quantities_of(r: dict[str, Any]) -> list[str]:
    """The quantities a row has: its black-box measures (importance and KL) and its white-box scores."""
    out = [q for q, (m, _) in MEASURES.items() if r.get(m)]
    return out + [q for q, m in WHITE_BOX.items() if (r.get("scores") or {}).get(m) is not None]


def load_trace(path: Path, run: str, trace: str) -> TraceData:
    """One trace: its sentences as positions, each measure as a quantity, each measure's top sentence marked."""
    r = _row(path, trace)
    config = read_result_json(Path(path) / "config.json") if (Path(path) / "config.json").is_file() else {}
    sents = list(r["sentences"])
    tokens = pieces(sents, str(r.get("trace") or ""))
    pad = [None] * (len(tokens) - len(sents))
    names = quantities_of(r)
    quantities = {q: _values(r, q) + pad for q in names}
    marks = {}
    for q in names:
        if q in MEASURES and MEASURES[q][1] == "kl":
            continue
        k = _top(quantities[q])
        if k is not None:
            marks[f"anchor by {q}"] = [k]
    forced, res = r.get("forced") or {}, r.get("resampling") or {}
    facts = {"problem": r.get("problem"), "gold": r.get("gold"), "sentences scored": len(sents),
             "forced answers per prefix": (forced.get("details") or {}).get("n_forced"),
             "rollouts per prefix": (res.get("details") or {}).get("n_rollouts"),
             "same-sentence overlap": (res.get("details") or {}).get("similarity"),
             "measures": ", ".join(r.get("seconds") or {})}
    table = importance_rows(r, run, trace)
    return TraceData(run=run, kind="thought-anchors", trace_id=trace, model=config.get("model"), prompt="", tokens=tokens,
                     quantities=quantities or {"sentences": [None] * len(tokens)}, marks=marks, separator=" ",
                     facts=facts, tables={"importance of each sentence (95% intervals)": table},
                     default_quantity=names[0] if names else "sentences",
                     no_lens="a thought-anchors run stores sentences, not the token ids of the trace")


def importance_rows(r: dict[str, Any], run: str, trace: str) -> list[dict[str, Any]]:
    """One row per sentence: every measure's number with its interval and sample sizes, and the link to its samples."""
    out = []
    names = quantities_of(r)
    for k, s in enumerate(r["sentences"]):
        row: dict[str, Any] = {"sentence": k, "text": s}
        for m in ("forced", "resampling"):
            scores = (r.get(m) or {}).get("scores") or []
            if k < len(scores):
                sc = scores[k]
                row[f"{m} accuracy diff [95% CI]"] = interval(sc.get("accuracy_diff"), sc.get("accuracy_ci"))
                row[f"{m} KL nats [95% CI]"] = interval(sc.get("kl"), sc.get("kl_ci"))
                row[f"{m} n with / without"] = f"{sc.get('n_with')} / {sc.get('n_without')}"
        for q, m in WHITE_BOX.items():
            vals = (r.get("scores") or {}).get(m)
            if vals is not None:
                row[q] = interval(vals[k] if k < len(vals) else None, None)
        row["samples behind these numbers"] = trace_link(run, trace, names[0] if names else "sentences", token=k)
        out.append(row)
    return out


def hover(path: Path, trace: str, quantity: str) -> list[str]:
    """Per sentence, the colouring measure's number with its interval and samples (or that none is stored)."""
    r = _row(path, trace)
    n = len(r["sentences"])
    if quantity in MEASURES:
        m, key = MEASURES[quantity]
        scores = (r.get(m) or {}).get("scores") or []
        out = []
        for k in range(n):
            sc = scores[k] if k < len(scores) else {}
            if not _finite(sc.get(key)):
                out.append(f"{quantity} undefined ({sc.get('n_with')} samples with the sentence, {sc.get('n_without')} "
                           "without)")
                continue
            out.append(f"{quantity} {interval(sc.get(key), sc.get(key.replace('accuracy_diff', 'accuracy') + '_ci'))}"
                       f" (95% CI; {sc.get('n_with')} samples with the sentence, {sc.get('n_without')} without)")
        return out
    if quantity in WHITE_BOX:
        return [f"{quantity} {interval(v, None)} (the run stores no interval for it)" for v in _values(r, quantity)]
    return [""] * n


def _right(answer: str, gold: Any) -> bool:
    from thinklens.data.answers import answers_equal  # lazy: import cost (math-verify)

    try:
        return answers_equal(str(answer), gold)
    except Exception:  # noqa: BLE001 - an answer the grader cannot parse is not right
        return False


def figure_importance(r: dict[str, Any], *, title: str):
    """Each black-box measure's accuracy difference per sentence with its 95% interval."""
    import plotly.graph_objects as go  # lazy: import cost (plotly)

    fig = go.Figure()
    for m in ("forced", "resampling"):
        scores = (r.get(m) or {}).get("scores") or []
        if not scores:
            continue
        y = [s.get("accuracy_diff") if _finite(s.get("accuracy_diff")) else None for s in scores]
        ci = [s.get("accuracy_ci") or [None, None] for s in scores]
        hi = [c[1] - v if v is not None and _finite(c[1]) else 0 for v, c in zip(y, ci)]
        lo = [v - c[0] if v is not None and _finite(c[0]) else 0 for v, c in zip(y, ci)]
        fig.add_trace(go.Bar(name=f"{m} (n {scores[0].get('n_with')} with)", x=list(range(len(scores))), y=y,
                             error_y={"type": "data", "array": hi, "arrayminus": lo},
                             hovertext=[s[:80] for s in r["sentences"]],
                             hovertemplate="sentence %{x}: %{y:.3g}<br>%{hovertext}<extra></extra>"))
    fig.update_layout(title=title, barmode="group", xaxis_title="sentence", yaxis_title="accuracy with - without",
                      template="plotly_white", height=320, margin={"t": 50, "b": 40, "l": 60, "r": 20})
    return fig


def sections(path: Path, run: str, trace: str, curves: Sequence[Curve] = ()) -> list[Section]:
    """The importance of each sentence with its interval, the sentence-to-sentence matrix and the receiver heads."""
    r = _row(path, trace)
    out = []
    if r.get("forced") or r.get("resampling"):
        out.append(Section("Importance of each sentence",
                           "Accuracy of the answers with the sentence minus without it, with Newcombe's 95% interval; "
                           "n: answers sampled with it (the table above has both sample sizes and the KLs).",
                           figure=figure_importance(r, title=f"{r.get('problem')}: accuracy with - without each sentence")))
    sup = r.get("suppression")
    if sup and sup.get("matrix"):
        from thinklens.analyses.anchors.figures import figure_suppression  # lazy: import cost (plotly)

        out.append(Section("Sentence to sentence (attention suppression)",
                           "Row: the sentence whose attention is masked; column: a later sentence; colour: the mean KL "
                           "(nats) of that sentence's next-token distributions, masked against clean. One forward pass "
                           "per sentence: the run stores no interval for it.",
                           figure=figure_suppression(r["sentences"], sup["matrix"],
                                                     title=f"{r.get('problem')}: attention suppression")))
    else:
        out.append(Section("Sentence to sentence (attention suppression)",
                           note="This run did not measure the white-box measures (its --measures left them out)."))
    rec = r.get("receivers")
    if rec and rec.get("heads"):
        kurt = rec.get("kurtosis") or []
        rows_ = [{"layer": layer, "head": head,
                  "kurtosis": kurt[layer][head] if layer < len(kurt) and head < len(kurt[layer]) else None}
                 for layer, head in rec["heads"]]
        out.append(Section("Receiver heads", f"The heads whose sentence-level vertical attention has the highest "
                                             f"kurtosis across sentences (sentences within {rec.get('proximity')} before "
                                             "a receiver left out); a sentence's receiver-head score is its mean over them.",
                           rows=rows_))
    return out


def position(path: Path, run: str, trace: str, k: int) -> list[Section]:
    """The samples behind sentence ``k``'s numbers: the forced answers after the prefixes with and without it, the
    rollouts that replaced it and those that kept it, its row of the suppression matrix."""
    r = _row(path, trace)
    n, gold = len(r["sentences"]), r.get("gold")
    if k >= n:
        return [Section(f"Position {k}", note=f"The text after sentence {n - 1} was {UNSCORED}: no numbers.")]
    out = []
    forced = r.get("forced")
    if forced and k + 1 < len(forced.get("answers") or []):
        sc = forced["scores"][k]
        without, with_ = forced["answers"][k], forced["answers"][k + 1]
        before = {0: "the prompt alone", 1: "sentence 0"}.get(k, f"sentences 0..{k - 1}")
        rows_ = [{"sample": j, "without it": a, "right without": _right(a, gold), "with it": b,
                  "right with": _right(b, gold)} for j, (a, b) in enumerate(zip(without, with_))]
        out.append(Section("Forced answers", f"The answer forced right after {before} (without sentence {k}) "
                                             f"and after sentences 0..{k} (with it), {len(with_)} each, gold {gold}; accuracy difference "
                                             f"{interval(sc.get('accuracy_diff'), sc.get('accuracy_ci'))}, KL "
                                             f"{interval(sc.get('kl'), sc.get('kl_ci'))} nats (95% intervals).",
                           rows=rows_))
    res = r.get("resampling")
    rolls = ((res or {}).get("details") or {}).get("rollouts") or []
    if res and k + 1 < len(rolls):
        sc, sim = res["scores"][k], res["details"].get("similarity")
        replaced = [{"rollout": j, "its sentence": x.get("first"), "overlap with the original": x.get("overlap"),
                     "replaced it": _finite(x.get("overlap")) and sim is not None and x["overlap"] < sim,
                     "answer": x.get("answer"), "right": _right(x.get("answer"), gold)} for j, x in enumerate(rolls[k])]
        kept = [{"rollout": j, "its next sentence": x.get("first"), "answer": x.get("answer"),
                 "right": _right(x.get("answer"), gold)} for j, x in enumerate(rolls[k + 1])]
        out.append(Section("Rollouts that replaced it", f"Rollouts from the prefix before sentence {k}; those whose "
                                                        f"first sentence overlaps it by less than {sim} (word overlap) "
                                                        f"replaced it ({sc.get('n_without')} of {len(rolls[k])}).",
                           rows=replaced))
        out.append(Section("Rollouts that kept it", f"Rollouts from the prefix that ends with sentence {k} "
                                                    f"({sc.get('n_with')}); resampling importance "
                                                    f"{interval(sc.get('accuracy_diff'), sc.get('accuracy_ci'))}, KL "
                                                    f"{interval(sc.get('kl'), sc.get('kl_ci'))} nats (95% intervals).",
                           rows=kept))
    sup = (r.get("suppression") or {}).get("matrix")
    if sup and k < len(sup):
        later = [{"later sentence": j, "text": r["sentences"][j], "KL when attention to it is masked (nats)": v}
                 for j, v in enumerate(sup[k]) if j > k and v is not None]
        if later:
            out.append(Section("Its effect on later sentences (attention suppression)",
                               "The row of the matrix: one forward pass, no interval stored.", rows=later))
    if not out:
        out.append(Section(f"Sentence {k}", note="This run stores no samples for this sentence."))
    return out


def where_traces(path: Path, where: str) -> list[tuple[str, str]]:
    """The traces whose row's plain fields match a link's ``field=value`` filter (``problem=synthetic-0-1``)."""
    keep = set(rows_where(rows(path), where))
    return [t for t in list_traces(path) if int(t[0]) in keep]


READER = TraceReader(list_traces, load_trace, where_traces)
VIEW = TraceView("thought anchors", holds, READER, hover, sections, position, unit="sentence",
                 clicked="Click a sentence for the forced answers and rollouts behind its numbers.")

