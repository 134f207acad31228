"""Issue 39's verdicts seen in the app, on a demo's runs in a real browser (headless Chromium): a LYNX finding whose
bound is rejected is never green, no page says "at ceiling" where its control is not at the top of its scale (the
demo's rates and accuracies below 1 are "no headroom"), and the MI trajectory chart draws the own-answer curve above
its shuffled-answer control. Needs a demo's runs folder (``make demo``):

    THINKLENS_DEMO_RUNS=runs pytest tests/app/test_browser_demo_verdicts.py
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from browser import browser_session, running_app, wait_for_text

DEMO = os.environ.get("THINKLENS_DEMO_RUNS")
pytestmark = pytest.mark.skipif(not DEMO, reason="needs a demo's runs folder: set THINKLENS_DEMO_RUNS")

_ALERTS = """
return Array.from(document.querySelectorAll('[data-testid^="stAlertContent"]')).map(
    e => [e.getAttribute('data-testid'), e.innerText]);
"""
_BUSY = "return document.querySelectorAll('[data-testid=\"stStatusWidget\"], [data-testid=\"stSpinner\"]').length;"
_TRACES = """
const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
return plots.map(p => (p.data || []).map(t => [t.name || '', t.zorder === undefined ? 0 : t.zorder]));
"""


@pytest.fixture(scope="module")
def app():
    root = Path(DEMO).resolve()
    with running_app(root, cwd=root.parent) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    yield from browser_session((1400, 2400))


def _settled(drv, page: str, text: str) -> None:
    drv.get(page)
    wait_for_text(drv, text, timeout=240)
    t0 = time.perf_counter()
    while drv.execute_script(_BUSY) and time.perf_counter() - t0 < 240:
        time.sleep(0.5)
    time.sleep(1.0)


def test_a_rejected_lynx_bound_is_never_green(browser, app):
    _settled(browser, app + "/Probes_and_LYNX", "LYNX")
    alerts = browser.execute_script(_ALERTS)
    green = [text for kind, text in alerts if kind == "stAlertContentSuccess"]
    assert not [t for t in green if "rejected" in t or "exceeds delta" in t or "loses accuracy" in t], green
    rejected = [kind for kind, text in alerts if "bound is rejected" in text and text.startswith("effect")]
    assert all(kind == "stAlertContentError" for kind in rejected)


@pytest.mark.parametrize("page, text", [("", "Runs"), ("/MI_peaks", "MI peaks"), ("/Latent_reasoning", "Latent"),
                                        ("/Probes_and_LYNX", "LYNX"), ("/Steering", "Steering")])
def test_no_page_says_at_ceiling_below_the_top_of_the_scale(browser, app, page, text):
    """The demo's controls are below 1.0 (0.983, 0.875, 0.467...): a gain they leave no room for is "no headroom"."""
    _settled(browser, app + page, text)
    body = browser.find_element("tag name", "body").text
    assert "at ceiling" not in body, [ln for ln in body.splitlines() if "at ceiling" in ln][:3]


def test_the_mi_chart_draws_the_own_curve_above_its_shuffled_control(browser, app):
    _settled(browser, app + "/MI_peaks", "MI peaks")
    t0 = time.perf_counter()
    traces = []
    while time.perf_counter() - t0 < 120:
        traces = [t for plot in browser.execute_script(_TRACES) for t in plot]
        if any("shuffled" in name for name, _ in traces):
            break
        time.sleep(1.0)
    shuffled = [z for name, z in traces if "shuffled" in name]
    own = [z for name, z in traces if "shuffled" not in name and not name.startswith("peaks")]
    assert shuffled and own and min(own) > max(shuffled), traces
