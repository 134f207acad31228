"""A real browser (headless Chromium) opens the MI page on a run with 1000 trajectories.

The run folder is synthetic (no model: ``thinklens.analyses.mi.synthetic``) but written by the job's own
writers and stages, so it has exactly the job's format. Timed spans, each ending when the MI
curve's plotly figure has drawn its traces:

* ``app_mi_page_cold_s``: the first visit of the page in a fresh server and browser (the server
  imports the page's modules, the browser parses plotly.js once);
* ``app_mi_page_s``: a fresh load of the page afterwards, best of five (what every later visit
  costs; the budget of ``BUDGET_S`` applies to this one; other processes on a shared machine only
  ever add time, so the fastest load is the page's own cost, as in bench/);
* ``app_mi_switch_s``: choosing trajectory #999 in the trajectory box until its curve is drawn.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from browser import browser_session, running_app, wait_for_text

SHOTS = Path(os.environ.get("THINKLENS_SCREENSHOTS", Path(__file__).resolve().parents[2] / "runs" / "screenshots"))
N_TRAJECTORIES = 1000
BUDGET_S = 3.0
COLD_LIMIT_S = 30.0  # a regression guard only: the cold visit is dominated by one-off imports and plotly.js

# The title of the figure_trajectory figure once it has drawn at least one trace, else "".
_CURVE_TITLE = """
var g = Array.from(document.querySelectorAll('.js-plotly-plot')).find(function (g) {
  var t = g.layout && g.layout.title && (g.layout.title.text || '');
  return String(t).indexOf('MI with the answer per generated token') >= 0;  // streamlit wraps it in <b>
});
return (g && g.querySelectorAll('.scatterlayer .trace').length > 0) ? String(g.layout.title.text) : '';
"""


@pytest.fixture(scope="module")
def browser():
    yield from browser_session(size=None)


@pytest.fixture(scope="module")
def big_run(tmp_path_factory):
    from thinklens.analyses.mi.synthetic import build_synthetic_run

    root = tmp_path_factory.mktemp("mi-runs")
    build_synthetic_run(root, n=N_TRAJECTORIES, models=("tiny-think",), run_id="big")
    return root


def _wait_curve(drv, t0: float, contains: str = "", timeout: float = 60.0) -> float:
    """Seconds from ``t0`` until the MI curve (whose title holds ``contains``) is drawn."""
    while time.perf_counter() - t0 < timeout:
        try:
            title = drv.execute_script(_CURVE_TITLE)
            if title and contains in title:
                return time.perf_counter() - t0
        except Exception:  # noqa: BLE001 - the DOM is being rebuilt
            pass
        time.sleep(0.02)
    from selenium.webdriver.common.by import By

    body = drv.find_element(By.TAG_NAME, "body").text
    raise AssertionError(f"the MI curve {contains!r} was not drawn within {timeout} s; page: {body[:600]!r}")


@pytest.mark.slow  # a browser test (its AppTest twin stays in the default tier)
def test_mi_page_with_1000_trajectories_in_browser(browser, big_run):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    folder = big_run / "mi-peaks" / "big"
    assert len(list((folder / "trajectories" / "tiny-think").glob("*.json"))) == N_TRAJECTORIES
    assert (folder / "results" / "mi_models.json").stat().st_size < 1_000_000  # the page reads this, not 1000 files
    with running_app(big_run) as url:
        browser.get(url)
        wait_for_text(browser, "mi-peaks · big", timeout=90)  # the server is up and has imported the core
        # let the home page's script finish before leaving it (no two sessions importing at once)
        wait_for_text(browser, "Any local Hugging Face model folder works too", timeout=60)
        t0 = time.perf_counter()
        browser.get(url + "/MI_peaks")
        cold = _wait_curve(browser, t0)
        wait_for_text(browser, f"Trajectory ({N_TRAJECTORIES})", timeout=10)
        loads = []
        for _ in range(5):
            t0 = time.perf_counter()
            browser.get(url + "/MI_peaks")
            loads.append(_wait_curve(browser, t0))
        warm = min(loads)
        SHOTS.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(SHOTS / "mi_peaks.png"))
        box = browser.find_element(By.CSS_SELECTOR, f'input[aria-label="Trajectory ({N_TRAJECTORIES})"]')
        t0 = time.perf_counter()
        box.click()
        box.send_keys(f"#{N_TRAJECTORIES - 1} ")
        box.send_keys(Keys.ENTER)
        switch = _wait_curve(browser, t0, contains=f"#{N_TRAJECTORIES - 1},")
    print(f"app_mi_page_cold_s={cold:.2f}")
    print(f"app_mi_switch_s={switch:.2f}")
    print(f"app_mi_page_loads_s={','.join(f'{x:.2f}' for x in loads)}")
    print(f"app_mi_page_s={warm:.2f}")
    assert (SHOTS / "mi_peaks.png").stat().st_size > 10_000
    assert cold <= COLD_LIMIT_S, f"first visit took {cold:.1f} s"
    assert switch <= BUDGET_S, f"switching trajectory took {switch:.2f} s (budget {BUDGET_S} s)"
    assert warm <= BUDGET_S, f"MI page took {warm:.2f} s to draw the curve (budget {BUDGET_S} s)"
