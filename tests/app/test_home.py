"""Chart titles reach the browser as the figure has them: Streamlit's own plotly theme wraps ``layout.title.text``
in ``<b>`` each time it is applied (twice once the page config arrives: ``<b><b>title</b></b>``), so charts are drawn
with ``theme=None`` in the same look (``exports.LOOK``), the title bold by its font weight."""

from __future__ import annotations

import json
from pathlib import Path

import plotly.graph_objects as go
from streamlit.testing.v1 import AppTest

from app.exports import LOOK, display_figure

APP = Path(__file__).resolve().parents[2] / "app"


def _streamlit_wrap(spec: dict) -> dict:
    """What Streamlit 1.67's plotly theme does to a title when it is applied (PlotlyChart's applyStreamlitTheme)."""
    title = spec.get("layout", {}).get("title")
    if title is not None:
        title = {"text": title} if isinstance(title, str) else title
        spec["layout"]["title"] = {**title, "text": f"<b>{title.get('text', '')}</b>"}
    return spec


def test_display_figure_keeps_the_title_text_and_the_figure():
    fig = go.Figure(go.Bar(x=[1], y=[2]))
    fig.update_layout(title="Feature steering vs equal-norm baselines", template="plotly_white", yaxis_title="rate",
                      title_x=0.5)
    before = fig.to_json()
    out = display_figure(fig)
    assert fig.to_json() == before  # the downloads' figure is untouched
    assert out.layout.title.text == "Feature steering vs equal-norm baselines" and "<b>" not in out.to_json()
    assert out.layout.title.x == 0.5  # what the figure sets itself wins over the look
    tl = out.layout.template.layout
    assert tl.title.font.weight == 700 and tl.title.x == 0 and tl.font.family == LOOK["font"]["family"]
    assert tl.xaxis.showgrid is False and tl.yaxis.title.standoff == 24
    assert list(tl.colorway) == list(go.Figure(layout={"template": "plotly_white"}).layout.template.layout.colorway)
    # the bug this avoids: the theme applied twice doubles the tag
    twice = _streamlit_wrap(_streamlit_wrap(json.loads(fig.to_json())))
    assert twice["layout"]["title"]["text"] == "<b><b>Feature steering vs equal-norm baselines</b></b>"


def test_home_chart_is_drawn_without_streamlits_title_wrapping(runs):
    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=60).run()
    assert not at.exception
    (el,) = at.get("plotly_chart")
    assert el.proto.theme == ""  # theme=None: the frontend leaves the title alone
    spec = json.loads(el.proto.spec)
    assert spec["layout"]["title"]["text"] == "Zoo accuracy by step count"
    assert spec["layout"]["template"]["layout"]["title"]["font"]["weight"] == 700
