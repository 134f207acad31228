"""Downloads under every figure (PNG, HTML, JSON) and every table (CSV), with Streamlit's download buttons.

Each file is made only when its button is clicked (a callable ``data``), so a page with many figures
renders as fast as before. PNG needs kaleido (``pip install kaleido``) and a Chromium browser on the
machine (kaleido drives it; Debian's ``chromium`` package works offline); without them the PNG button
is disabled and says why, and HTML (plotly.js inlined, works offline) and JSON are offered.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

_PNG_LOCK = threading.Lock()  # one kaleido server per app process; figures are exported one at a time


@functools.cache
def png_unavailable() -> str | None:
    """None when figures can be exported as PNG here, else why not (shown on the disabled button)."""
    if importlib.util.find_spec("kaleido") is None:
        return ("PNG export needs kaleido (pip install kaleido) and a Chromium browser; "
                "download HTML (opens offline) or JSON instead")
    try:
        from choreographer.browsers.chromium import Chromium

        if Chromium.find_browser(skip_local=False) is None:
            return "PNG export needs a Chromium browser for kaleido (apt-get install chromium); HTML and JSON work"
    except Exception as e:  # noqa: BLE001 - an unexpected kaleido layout only disables PNG
        return f"PNG export is unavailable here ({type(e).__name__}: {e}); HTML and JSON work"
    return None


@st.cache_resource(show_spinner=False)
def _kaleido_server() -> bool:
    """Start kaleido's browser once per app process (0.5 s per PNG afterwards instead of ~6 s)."""
    import kaleido

    kaleido.start_sync_server(silence_warnings=True)
    return True


def figure_png(fig: Any, scale: float = 2.0) -> bytes:
    """The figure as PNG bytes (kaleido); raises when kaleido or its browser is missing."""
    with _PNG_LOCK:
        try:
            _kaleido_server()
        except Exception:  # noqa: BLE001 - outside a Streamlit runtime, or the server cannot start: one-shot export
            pass
        with warnings.catch_warnings():  # plotly notes that its kaleido options are ignored by the running server
            warnings.simplefilter("ignore", UserWarning)
            return fig.to_image(format="png", scale=scale)


def figure_html(fig: Any) -> str:
    """A standalone HTML page of the figure, plotly.js inlined (opens without a network)."""
    return fig.to_html(include_plotlyjs=True, full_html=True)


def file_stem(name: str) -> str:
    """A safe file name stem: ``'LYNX Pareto: demo'`` -> ``'LYNX-Pareto-demo'``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._") or "figure"


def figure_downloads(fig: Any, name: str, key: str) -> None:
    """A row of PNG / HTML / JSON download buttons for ``fig`` (files made on click)."""
    stem = file_stem(name)
    why = png_unavailable()
    row = st.container(horizontal=True, gap="small", key=f"dl-{key}")
    row.download_button("PNG", data=(lambda: figure_png(fig)) if why is None else b"", file_name=f"{stem}.png",
                        mime="image/png", key=f"png-{key}", disabled=why is not None, on_click="ignore",
                        type="tertiary", icon=":material/image:", help=why or "the figure as a PNG image")
    row.download_button("HTML", data=lambda: figure_html(fig), file_name=f"{stem}.html", mime="text/html",
                        key=f"html-{key}", on_click="ignore", type="tertiary", icon=":material/code:",
                        help="interactive figure, opens offline")
    row.download_button("JSON", data=lambda: fig.to_json(), file_name=f"{stem}.json", mime="application/json",
                        key=f"json-{key}", on_click="ignore", type="tertiary", icon=":material/data_object:",
                        help="plotly JSON (plotly.io.from_json reads it back)")


def legend_lines(fig: Any, width: int = 900) -> int:
    """About how many rows a horizontal legend of ``fig``'s named traces takes at ``width`` pixels."""
    names = [str(t.name) for t in fig.data if t.name and t.showlegend is not False]
    if len(names) < 2 and not any(t.showlegend for t in fig.data):
        return 0
    rows, used = 1, 0
    for n in names:
        w = 7 * len(n) + 45  # symbol, gap and text at plotly's default 12 px font
        if used and used + w > width:
            rows, used = rows + 1, 0
        used += w
    return rows


def clear_legend(fig: Any) -> Any:
    """A horizontal legend left where plotly puts it (just under the plot, over the x axis title) moves to the
    bottom of the figure, with the bottom margin grown to hold tick labels, the axis title and the legend."""
    lg = fig.layout.legend
    if lg.orientation != "h" or lg.y is not None:
        return fig
    lines = legend_lines(fig)
    if not lines:
        return fig
    bottom = fig.layout.margin.b
    fig.update_layout(legend={"yref": "container", "y": 0, "yanchor": "bottom", "x": 0, "xanchor": "left"},
                      margin={"b": max(bottom or 0, 80 + 22 * lines)})
    return fig


_GREY, _INK, _GRID = "#808495", "#2F2D2B", "#e6eaf1"
_FONT = '"Source Sans", sans-serif'
LOOK: dict[str, Any] = {
    "font": {"color": _GREY, "family": _FONT, "size": 12, "weight": 400},
    "title": {"x": 0, "xanchor": "left", "pad": {"l": 4}, "font": {"family": _FONT, "size": 16, "color": _INK, "weight": 700}},
    "paper_bgcolor": "#FFFFFF", "plot_bgcolor": "#FFFFFF",
    "hoverlabel": {"bgcolor": "#FFFFFF", "bordercolor": "#DCD8D4", "font": {"color": _GREY, "family": _FONT, "size": 12}},
    "legend": {"title": {"font": {"size": 12, "color": _GREY}, "side": "top"}, "valign": "top", "borderwidth": 0,
               "font": {"size": 12, "color": "#262730"}},
    "xaxis": {"automargin": True, "gridcolor": _GRID, "zerolinecolor": _GRID, "showgrid": False, "zeroline": False,
              "tickcolor": _GRID, "tickfont": {"color": _GREY, "size": 12},
              "title": {"standoff": 20, "font": {"color": _GREY, "size": 14}}},
    "yaxis": {"automargin": True, "gridcolor": _GRID, "zerolinecolor": _GRID, "ticklabelposition": "outside",
              "tickcolor": _GRID, "tickfont": {"color": _GREY, "size": 12},
              "title": {"standoff": 24, "font": {"color": _GREY, "size": 14}}},
    "margin": {"pad": 8, "r": 0, "l": 0},
}
"""Streamlit's plotly theme (1.67, light), as the defaults it merges into a figure's template, with the title bold
by its font weight. Streamlit's own theme wraps ``layout.title.text`` in ``<b>...</b>`` each time it is applied
and its chart applies it twice once the page config arrives (``<b><b>title</b></b>`` in the page), so charts are
drawn with ``theme=None`` and this look instead: the title text reaches the browser exactly as the figure has it."""


def display_figure(fig: Any) -> Any:
    """A copy of ``fig`` in :data:`LOOK` (merged into its template: what the figure sets itself still wins);
    ``fig`` itself, and so every download, is left as it is."""
    import plotly.graph_objects as go

    out = go.Figure(fig)
    out.layout.template.layout.update(LOOK)
    return out


def chart(fig: Any, *, key: str, name: str | None = None, container: Any = None) -> None:
    """``st.plotly_chart`` plus its downloads (in ``container``, e.g. a column, when given); a horizontal
    legend is moved clear of the x axis title (:func:`clear_legend`); drawn in :data:`LOOK` with the title bold once
    (:func:`display_figure`)."""
    where = container if container is not None else st
    clear_legend(fig)
    where.plotly_chart(display_figure(fig), width="stretch", key=key, theme=None)
    with where.container():
        figure_downloads(fig, name or key, key)


def _frame(rows: Any) -> Any:
    import pandas as pd

    if isinstance(rows, pd.DataFrame):
        return rows
    return pd.DataFrame(list(rows))


def table_csv(rows: Any) -> str:
    """A table (rows of dicts or a DataFrame) as CSV text."""
    return _frame(rows).to_csv(index=False)


def table(rows: Sequence[dict] | Any, *, key: str, name: str | None = None, container: Any = None,
          column_config: dict | None = None, height: Any = "auto") -> None:
    """``st.dataframe`` plus a CSV download button (file made on click)."""
    where = container if container is not None else st
    frame = _frame(rows)
    where.dataframe(frame, hide_index=True, width="stretch", key=key, column_config=column_config, height=height)
    csv: Callable[[], str] = lambda: frame.to_csv(index=False)  # noqa: E731 - made on click
    where.download_button("CSV", data=csv, file_name=f"{file_stem(name or key)}.csv", mime="text/csv",
                          key=f"csv-{key}", on_click="ignore", type="tertiary", icon=":material/download:",
                          help="this table as CSV")
