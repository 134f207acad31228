"""What the Steering page shows of a ``steer-vector`` run (contrastive activation addition scored by VADER): the
dose-response (sentiment and fluency against the coefficient, the contrast vector beside its equal-norm random control,
each point with its interval), a row per (arm, coefficient) with its verdict and traces, and one prompt's
continuations side by side across the arms with every word coloured by its VADER valence.

Pure functions of the run's ``results/steer_vector.json`` (no Streamlit here), so they are tested directly.

Example:
    >>> doc = {"rows": [{"arm": "unsteered", "coeff": 0.0, "compound": 0.1}, {"arm": "contrast", "coeff": 1.0,
    ...         "compound": 0.4}, {"arm": "random", "coeff": 1.0, "compound": 0.1}]}
    >>> [(a, [r["coeff"] for r in rows]) for a, rows in arm_curves(doc).items()]
    [('contrast', [0.0, 1.0]), ('random', [0.0, 1.0])]
    >>> word_valences("I love it!", {"love": 3.2})
    [('I', None), ('love', 3.2), ('it!', None)]
"""

from __future__ import annotations

import functools
import html
import string
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from app.trace_display import colour

ARMS: tuple[str, ...] = ("contrast", "random")
"""The steered arms, each drawn through the unsteered point at c = 0."""
COLOURS = {"contrast": "#1f77b4", "random": "#7f7f7f"}
VALENCE_MAX = 4.0
"""VADER's lexicon rates words from -4 (most negative) to +4 (most positive)."""


def arm_curves(doc: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Arm -> its rows by coefficient, each arm starting at the unsteered row (c = 0: no vector, the shared control)."""
    rows = list(doc.get("rows") or [])
    base = [r for r in rows if r.get("arm") == "unsteered"]
    return {arm: sorted(base + [r for r in rows if r.get("arm") == arm], key=lambda r: float(r["coeff"]))
            for arm in ARMS if any(r.get("arm") == arm for r in rows)}


def findings_by_coeff(doc: Mapping[str, Any]) -> dict[float, dict[str, Any]]:
    """Coefficient -> its finding (verdict, the contrast-minus-random difference with its interval)."""
    return {float(f["extra"]["coeff"]): f for f in doc.get("findings") or [] if (f.get("extra") or {}).get("coeff") is not None}


def _band(fig: Any, xs: list[float], ys: list[float], cis: list[Sequence[float] | None], *, name: str, line_colour: str,
          row: int, show: bool, dash: str | None = None) -> None:
    lo = [y - c[0] if c else 0.0 for y, c in zip(ys, cis)]
    hi = [c[1] - y if c else 0.0 for y, c in zip(ys, cis)]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=name, legendgroup=name, showlegend=show,
                             line={"color": line_colour, "dash": dash},
                             error_y={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo, "visible": True}),
                  row=row, col=1)


def figure_dose_response(doc: Mapping[str, Any]) -> Any:
    """Three panels against the coefficient, the contrast vector and its equal-norm random direction each drawn from the
    unsteered point: mean VADER compound (95% bootstrap interval over prompts), perplexity of the continuations under the
    unsteered model over the unsteered continuations' (the run stores no interval for it) with its bound, and the share
    of degenerate continuations (95% Wilson interval) with its bound."""
    bounds = doc.get("fluency_bounds") or {}
    curves = arm_curves(doc)
    n = next((r.get("n") for rows in curves.values() for r in rows), "?")
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.07,
                        subplot_titles=(f"sentiment: mean VADER compound (95% bootstrap interval, n={n} prompts)",
                                        "fluency: perplexity ratio to the unsteered continuations (no interval stored)",
                                        "fluency: degenerate continuations (95% Wilson interval)"))
    for arm, rows in curves.items():
        xs = [float(r["coeff"]) for r in rows]
        label = "contrast vector" if arm == "contrast" else "random direction (equal norm)"
        _band(fig, xs, [r["compound"] for r in rows], [r.get("compound_ci") for r in rows], name=label,
              line_colour=COLOURS[arm], row=1, show=True, dash=None if arm == "contrast" else "dot")
        fig.add_trace(go.Scatter(x=xs, y=[r.get("ppl_ratio") for r in rows], mode="lines+markers", name=label,
                                 legendgroup=label, showlegend=False,
                                 line={"color": COLOURS[arm], "dash": None if arm == "contrast" else "dot"}), row=2, col=1)
        _band(fig, xs, [r["degenerate"] for r in rows], [r.get("degenerate_ci") for r in rows], name=label,
              line_colour=COLOURS[arm], row=3, show=False, dash=None if arm == "contrast" else "dot")
    if bounds.get("max_ppl_ratio") is not None:
        fig.add_hline(y=float(bounds["max_ppl_ratio"]), line_dash="dash", line_color="#d62728", row=2, col=1,
                      annotation_text=f"bound {bounds['max_ppl_ratio']:g}", annotation_position="top left")
    if bounds.get("max_degenerate") is not None:
        fig.add_hline(y=float(bounds["max_degenerate"]), line_dash="dash", line_color="#d62728", row=3, col=1,
                      annotation_text=f"bound {bounds['max_degenerate']:g}", annotation_position="top left")
    ratios = [r.get("ppl_ratio") for rows in curves.values() for r in rows if r.get("ppl_ratio")]
    if ratios and max(ratios) > 20 * min(ratios):  # a broken arm's ratio of thousands would flatten the others
        fig.update_yaxes(type="log", row=2, col=1)
    fig.update_yaxes(title_text="compound", row=1, col=1)
    fig.update_yaxes(title_text="ratio", row=2, col=1)
    fig.update_yaxes(title_text="share", range=[0, 1.02], row=3, col=1)
    fig.update_xaxes(title_text="coefficient c (units of the typical token-state norm)", row=3, col=1)
    vec = doc.get("vector") or {}
    fig.update_layout(title=f"Dose-response of {vec.get('source', 'the contrast vector')} at {doc.get('site', '?')}",
                      template="plotly_white", height=760, margin={"t": 90},
                      legend={"orientation": "h", "y": 1.07, "x": 0})
    return fig


def _interval(ci: Sequence[float] | None, spec: str = "+.3f") -> str:
    return "–" if not ci else f"[{format(ci[0], spec)}, {format(ci[1], spec)}]"


def arm_rows(doc: Mapping[str, Any], trace_of: Any = None) -> list[dict[str, Any]]:
    """One row per (arm, coefficient): mean compound, the paired shift against the unsteered model and (contrast rows)
    against the random direction, each with its 95% interval, the fluency numbers against their bounds and the verdict;
    ``trace_of(arm, coeff)``: the link to the arm's continuations in the trace viewer."""
    found = findings_by_coeff(doc)
    bounds = doc.get("fluency_bounds") or {}
    out = []
    for r in doc.get("rows") or []:
        c = float(r["coeff"])
        f = found.get(c) if r.get("arm") == "contrast" else None
        extra = (f or {}).get("extra") or {}
        row = {"arm": r["arm"], "c": c, "n prompts": r.get("n"),
               "mean compound": r.get("compound"), "compound 95%": _interval(r.get("compound_ci")),
               "shift vs unsteered": None if r["arm"] == "unsteered" else r.get("shift"),
               "shift 95%": "–" if r["arm"] == "unsteered" else _interval(r.get("shift_ci")),
               "beyond random": extra.get("vs_random"), "beyond random 95%": _interval(extra.get("vs_random_ci")),
               f"perplexity ratio (≤ {bounds.get('max_ppl_ratio', '?')})": r.get("ppl_ratio"),
               f"degenerate (≤ {bounds.get('max_degenerate', '?')})": r.get("degenerate"),
               "degenerate 95%": _interval(r.get("degenerate_ci"), ".2f"),
               "verdict": (f or {}).get("verdict", "control" if r["arm"] != "contrast" else "–")}
        if trace_of is not None:
            row["continuations"] = trace_of(r["arm"], c) if r.get("examples") else None
        out.append(row)
    return out


def example_panels(doc: Mapping[str, Any], i: int) -> list[tuple[str, float, str]]:
    """``(arm, coefficient, continuation)`` of prompt ``i`` in every arm that kept it (the first sample the job kept per
    prompt: ``examples``), unsteered first, then by coefficient, the contrast vector before the random direction."""
    order = {"unsteered": 0, "contrast": 1, "random": 2}
    rows = sorted(doc.get("rows") or [], key=lambda r: (r.get("arm") != "unsteered", float(r["coeff"]), order.get(r["arm"], 3)))
    return [(r["arm"], float(r["coeff"]), r["examples"][i]) for r in rows if len(r.get("examples") or []) > i]


def n_examples(doc: Mapping[str, Any]) -> int:
    """How many prompts every arm kept a continuation of."""
    counts = [len(r.get("examples") or []) for r in doc.get("rows") or []]
    return min(counts) if counts else 0


@functools.cache
def vader() -> Any:
    """VADER's analyzer (the job's scorer: ``thinklens.steering.contrast.vader_compound``)."""
    return SentimentIntensityAnalyzer()


def compound(text: str) -> float:
    """VADER's compound sentiment of one text, in [-1, 1], as the job scores a continuation."""
    return float(vader().polarity_scores(text)["compound"])


def word_valences(text: str, lexicon: Mapping[str, float] | None = None) -> list[tuple[str, float | None]]:
    """Each whitespace-separated word with its valence in VADER's lexicon (-4 to +4; None when not rated), looked up
    lower-cased with its edge punctuation stripped, as VADER reads words (before its negation and booster rules)."""
    lex = vader().lexicon if lexicon is None else lexicon
    out = []
    for w in text.split():
        key = w.strip(string.punctuation).lower()
        v = lex.get(key, lex.get(w.lower()))
        out.append((w, None if v is None else float(v)))
    return out


def valence_html(text: str, lexicon: Mapping[str, float] | None = None) -> str:
    """The text as HTML, each rated word on a red (negative) to blue (positive) background by its VADER valence, its
    value in the hover title; unrated words plain.

    >>> page = valence_html("good <day>", {"good": 1.9})
    >>> page.count('data-valence="1.9"'), "&lt;day&gt;" in page
    (1, True)
    """
    parts = []
    for w, v in word_valences(text, lexicon):
        if v is None:
            parts.append(html.escape(w))
        else:
            parts.append(f'<span class="tl-valence" data-valence="{v:g}" title="VADER valence {v:+g}" '
                         f'style="background:{colour(v, -VALENCE_MAX, VALENCE_MAX)};border-radius:3px;padding:0 2px">'
                         f"{html.escape(w)}</span>")
    return ('<div style="white-space:pre-wrap;word-break:break-word;border:1px solid #ddd;border-radius:6px;padding:8px;'
            'line-height:1.8">' + (" ".join(parts) or "&nbsp;") + "</div>")
