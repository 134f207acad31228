"""Downloads: PNG / HTML / JSON under every figure, CSV under every table; PNG through kaleido when it and a
Chromium are installed (offline), else a disabled button that says why."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from app.exports import figure_html, file_stem, png_unavailable, table_csv


def _page() -> None:

    import plotly.graph_objects as go

    from app.exports import chart, table

    chart(go.Figure(go.Scatter(x=[1, 2], y=[3, 4])), key="fig", name="a figure")
    table([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}], key="tab", name="a table")


def test_every_figure_and_table_gets_its_buttons(monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    at = AppTest.from_function(_page, default_timeout=60).run()
    assert not at.exception
    buttons = {b.proto.label: b.proto for b in at.get("download_button")}
    assert set(buttons) == {"PNG", "HTML", "JSON", "CSV"}
    assert buttons["PNG"].disabled == (png_unavailable() is not None)
    if png_unavailable():
        assert "HTML" in buttons["PNG"].help
    assert len(at.get("plotly_chart")) == 1 and len(at.dataframe) == 1


def test_file_contents():
    fig = go.Figure(go.Bar(x=["a"], y=[1]))
    html = figure_html(fig)
    assert "<html>" in html[:40] and "plotly.js" in html and "cdn.plot.ly" not in html.split("<body>")[0]
    assert table_csv([{"δ": 0.05, "ok": True}]) == "δ,ok\n0.05,True\n"
    assert file_stem("LYNX Pareto: demo/x") == "LYNX-Pareto-demo-x"


def test_png_export_when_kaleido_and_chromium_are_installed():
    why = png_unavailable()
    if why is not None:
        pytest.skip(why)
    from app.exports import figure_png

    png = figure_png(go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2])), scale=1.0)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000
