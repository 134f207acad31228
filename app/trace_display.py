"""How the trace viewer draws a trace: the colour of each token's value, the value range, the highlighted word, the
marks, and the token strip as one HTML block whose tokens link back to the viewer (pure functions, no Streamlit).

Example:
    >>> colour(1.0, 0, 1), token_text("<b>")
    ('rgba(31,119,180,0.85)', '&lt;b&gt;')
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from app.trace_links import trace_link

if TYPE_CHECKING:
    from thinklens.runs.run_views import TraceData


def colour(value: float | None, lo: float, hi: float) -> str:
    """A white-to-blue background for ``value`` on ``[lo, hi]`` (negative-to-positive ranges: red-white-blue);
    transparent for None or nan.

    >>> colour(None, 0, 1), colour(1.0, 0, 1), colour(0.0, 0, 1), colour(0.3, 0.3, 0.3)
    ('transparent', 'rgba(31,119,180,0.85)', 'rgba(31,119,180,0.00)', 'rgba(31,119,180,0.85)')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "transparent"
    if lo < 0 < hi:  # diverging
        a = min(abs(value) / max(abs(lo), abs(hi)), 1.0) * 0.85
        return f"rgba(31,119,180,{a:.2f})" if value >= 0 else f"rgba(214,39,40,{a:.2f})"
    a = 0.85 if hi <= lo else min(max((value - lo) / (hi - lo), 0.0), 1.0) * 0.85  # one value: full colour
    return f"rgba(31,119,180,{a:.2f})"


PROBABILITIES: tuple[str, ...] = ("probe", "diff", "latent top-1 probability", "forced exit right at cue")
"""Quantities in [0, 1] by definition: coloured on that scale, so one trace compares with another."""


def value_range(values: list[float | None], quantity: str = "") -> tuple[float, float]:
    """``(min, max)`` of the defined values (``(0, 1)`` when none, and for the quantities in ``PROBABILITIES``).

    >>> value_range([0.2, None, 0.5]), value_range([0.7], "probe")
    ((0.2, 0.5), (0.0, 1.0))
    """
    xs = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if quantity in PROBABILITIES or not xs:
        return 0.0, 1.0
    return min(xs), max(xs)


def highlighted(tokens: list[str], word: str | None, separator: str = "") -> set[int]:
    """Positions whose token, or the word it belongs to, is ``word`` (case and BPE space markers ignored).

    >>> sorted(highlighted(["so", "x", "So"], "so", " ")), sorted(highlighted([" W", "ait"], "Wait"))
    ([0, 2], [0, 1])
    """
    if not word:
        return set()
    from thinklens.analyses.mi.thinking_tokens import token_of, token_words

    want = word.strip().lower()
    words = token_words(tokens, separator=separator)
    return {t for t, tok in enumerate(tokens)
            if (token_of(tok, lowercase=True) == want) or (words[t] or "").lower() == want}


MARK_STYLES: dict[str, str] = {"peak": "border-bottom:3px solid #2ca02c", "cue event": "border-bottom:3px solid #9467bd",
                               "exit": "box-shadow:inset 0 -3px 0 #d62728", "latent thought": "font-style:italic",
                               "answer known": "box-shadow:inset 3px 0 0 #17becf",
                               "anchor": "border-bottom:3px dashed #ff7f0e",
                               "answer token": "box-shadow:inset -3px 0 0 #17becf",
                               "logit lens": "border-top:3px solid #8c564b", "tuned lens": "border-bottom:3px solid #e377c2"}
"""How each kind of mark draws (a mark name starts with one of these)."""
_ESCAPES = str.maketrans({"*": "&#42;", "_": "&#95;", "`": "&#96;", "$": "&#36;", "#": "&#35;", "[": "&#91;",
                          "]": "&#93;", "~": "&#126;", "\\": "&#92;", "|": "&#124;", "<": "&lt;", ">": "&gt;",
                          "&": "&amp;", '"': "&quot;", "'": "&#39;", "\n": "↵", "\r": ""})


def token_text(tok: str) -> str:
    """A token as HTML that Markdown leaves alone (no emphasis, headers, maths or tables); newlines as ↵.

    >>> token_text("#### <b>*x*</b>'")
    '&#35;&#35;&#35;&#35; &lt;b&gt;&#42;x&#42;&lt;/b&gt;&#39;'
    """
    return tok.translate(_ESCAPES)


def tokens_html(trace: TraceData, values: list[float | None], *, quantity: str, selected: int | None = None,
                highlight: str | None = None, marks: tuple[str, ...] | None = None, hover: list[str] | None = None) -> str:
    """The trace's tokens as one HTML block: background = ``values`` (white to blue), a black ring on ``selected``
    (``data-selected``), an orange frame on the ``highlight`` word (``data-highlight``), a line under marked
    positions; each token (``data-pos``) links to this view with ``token=<position>`` (:func:`trace_link`). ``hover``:
    text per position that its hover shows in place of the bare value (an importance with its interval)."""
    lo, hi = value_range(values, quantity)
    lit = highlighted(trace.tokens, highlight, trace.separator)
    chosen = [m for m in trace.marks if marks is None or m in marks]
    out = []
    for t, tok in enumerate(trace.tokens):
        v = values[t] if t < len(values) else None
        style = [f"background:{colour(v, lo, hi)}", "padding:1px 2px", "margin:1px", "border-radius:3px",
                 "color:inherit", "text-decoration:none", "display:inline-block"]
        shadows = []
        for m in chosen:
            if t in trace.marks[m]:
                for k, s in MARK_STYLES.items():
                    if m.startswith(k):
                        (shadows.append(s.split(":", 1)[1]) if s.startswith("box-shadow") else style.append(s))
        attrs = f'data-pos="{t}"'
        if t in lit:
            style.append("outline:2px solid #ff7f0e")
            attrs += ' data-highlight="1"'
        if t == selected:
            shadows.append("0 0 0 3px #111")
            attrs += ' data-selected="1"'
        if shadows:
            style.append("box-shadow:" + ",".join(shadows))
        href = trace_link(trace.run, trace.trace_id, quantity, token=t, highlight=highlight or None)
        extra = hover[t] if hover is not None and t < len(hover) else ""
        title = f"position {t}" + (f" · {extra}" if extra else "" if v is None else f" · {quantity} = {v:.4g}")
        title += "".join(f" · {m}" for m in chosen if t in trace.marks[m])
        out.append(f'<a href="?{token_text(href.split("?", 1)[1])}" target="_self" class="tl-tok" {attrs} '
                   f'title="{token_text(title)}" style="{";".join(style)}">{token_text(tok) or "&nbsp;"}</a>')
    return '<div class="tl-trace" style="line-height:2.0;font-family:monospace;font-size:0.95rem">' + "".join(out) + "</div>"


def link_html(label: str, url: str) -> str:
    """An HTML link to ``url`` that opens in the same tab (for ``st.markdown(..., unsafe_allow_html=True)``).

    >>> link_html("#3 at 7", trace_link("mi-peaks/d", "m/3", "mi", token=7))
    '<a href="/Trace_viewer?run=mi-peaks/d&amp;trace=m/3&amp;quantity=mi&amp;token=7" target="_self" class="tl-link">&#35;3 at 7</a>'
    """
    import html

    return f'<a href="{html.escape(url, quote=True)}" target="_self" class="tl-link">{token_text(label)}</a>'
