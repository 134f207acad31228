"""A real browser (headless Chromium) opens every page of the app on the demo's runs: no exception, no
error card, and a drawn chart or a table on each; Explore generates side by side. Screenshots of each
page are saved (the README's come from this test run on a real `make demo`).

The runs are the demo's own steps (``tools.demo.run_demo``) with smaller sizes appended (``SMALL``),
so the pages see every run kind the demo writes, in about a minute. To check (and photograph) a real
demo instead:

    THINKLENS_DEMO_RUNS=/path/to/runs THINKLENS_SCREENSHOTS=docs/screenshots pytest -m slow tests/app/test_browser_pages.py

With ``THINKLENS_DEMO_RUNS`` the app runs in that folder's parent, so the pages show the path ``runs``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from browser import browser_session, running_app, wait_for_text

SHOTS = Path(os.environ.get("THINKLENS_SCREENSHOTS", Path(__file__).resolve().parents[2] / "runs" / "screenshots"))

SMALL: dict[str, list[str]] = {
    "zoo-eval": ["--n-eval", "4", "--step-counts", "2,3"],
    "mi-peaks": ["--n-problems", "8", "--n-random", "1", "--rr-layers", "2", "--ttts-budgets", "0,8"],
    "mi-peaks-hard": ["--n-problems", "6"],
    "lynx": ["--n-train", "40", "--n-calibration", "40", "--n-test", "40", "--hidden-layer-sizes", "16"],
    "lynx-long": ["--n-train", "40", "--n-calibration", "120", "--n-test", "40", "--hidden-layer-sizes", "16"],
    "probe": ["--n-problems", "24"],
    "sae": ["--d-sae", "64", "--k", "8", "--training-tokens", "20000", "--n-texts", "200", "--eval-texts", "20",
            "--stats-traces", "8", "--n-eval-batches", "1"],
    "steer": ["--n-prompts", "4", "--stats-traces", "16", "--no-diff-of-means"],
    "reasoning-vector": ["--n-eval", "3", "--step-counts", "2,3", "--groups", "all"],
    "hybrid": ["--n-train", "16", "--n-eval", "4", "--sae-steps", "20", "--vector-iters", "5"],
    "latent-eval": ["--n-eval", "6", "--seek-n", "2"],
}
"""Demo-sized runs in seconds: options appended to each demo step (the last value of an option wins)."""

# (path, screenshot, text that shows the page's own content has rendered)
PAGES = (
    ("", "home.png", "Zoo accuracy by step count"),
    ("/MI_peaks", "mi_peaks.png", "Trajectory ("),
    ("/Probes_and_LYNX", "lynx.png", "What δ guarantees"),
    ("/Steering", "steering.png", "Top contexts of feature"),
    ("/Trace_viewer", "trace_viewer.png", "Click a token"),
    ("/Features", "features.png", "Top contexts of feature"),
    ("/Latent_reasoning", "latent.png", "Latent decoding"),
    ("/Explore", "explore.png", "Side by side with"),
)

_STATE = """
var drawn = Array.from(document.querySelectorAll('.js-plotly-plot')).filter(function (g) {
  return g.offsetParent !== null && g._fullData && g._fullData.length > 0; }).length;  // plotted, any trace type
var tables = Array.from(document.querySelectorAll('[data-testid="stDataFrame"]')).filter(function (t) {
  return t.offsetParent !== null; }).length;
var running = document.querySelectorAll('[data-testid="stStatusWidget"]').length;
return [drawn, tables, running,
        document.querySelectorAll('[data-testid="stException"]').length,
        Array.from(document.querySelectorAll('[data-testid="stAlertContentError"]')).map(function (e) { return e.innerText; }),
        Array.from(document.querySelectorAll('.gtitle')).map(function (e) { return e.getAttribute('data-unformatted'); })];
"""


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    given = os.environ.get("THINKLENS_DEMO_RUNS")
    if given:
        return Path(given).resolve()
    from thinklens.zoo.registry import zoo_path
    from tools.demo import run_demo

    if zoo_path("tiny-think") is None:
        pytest.skip("the zoo is not trained")
    runs = tmp_path_factory.mktemp("demo") / "runs"
    before = os.environ.get("THINKLENS_RUNS")
    try:
        results = run_demo(runs, overrides=SMALL)
    finally:
        if before is None:
            os.environ.pop("THINKLENS_RUNS", None)
        else:
            os.environ["THINKLENS_RUNS"] = before
    failed = {name: rc for name, (rc, _) in results.items() if rc != 0}
    assert not failed, f"demo steps failed: {failed}"
    return runs


@pytest.fixture(scope="module")
def browser():
    yield from browser_session()


def _settle(drv, timeout: float = 60.0) -> tuple[int, int, list[str]]:
    """Wait until the script has finished (no running indicator) and the page holds a drawn chart or a table;
    no chart title reaches the page wrapped in Streamlit's ``<b>`` (doubled to ``<b><b>`` by its theme)."""
    t0 = time.perf_counter()
    state = None
    while time.perf_counter() - t0 < timeout:
        try:
            state = drv.execute_script(_STATE)
        except Exception:  # noqa: BLE001 - the DOM is being rebuilt
            state = None
        if state and state[3]:
            break  # an exception is shown: report it now
        if state and not state[2] and (state[0] or state[1]):
            time.sleep(0.5)  # let late elements (error cards below the fold) arrive, then read again
            state = drv.execute_script(_STATE)
            break
        time.sleep(0.2)
    assert state is not None, "the page never rendered"
    drawn, tables, _, exceptions, errors, titles = state
    assert not exceptions, f"{drv.current_url}: an exception is shown"
    assert not [t for t in titles if (t or "").startswith("<b>")], f"{drv.current_url}: titles {titles}"
    return drawn, tables, errors


# slow: the demo's eleven steps and eight pages take about a fifth of the default tier's summed test time
# (tests/README.md). Default-tier tests still cover what it checks: every page in AppTest (tests/app/test_*_page.py,
# test_trace_viewer.py, test_home.py, test_app_shell.py for Explore), a real browser on three pages
# (test_browser_mi.py, test_browser_traces.py, test_features_page.py::test_features_page_in_a_browser), titles
# not wrapped in <b> (test_home.py), every demo step's command line
# (tests/core/test_commands.py::test_every_demo_step_parses) and each job end to end in its own tests.
@pytest.mark.slow
def test_every_page_after_the_demo(browser, demo_runs):
    from selenium.webdriver.common.by import By

    SHOTS.mkdir(parents=True, exist_ok=True)
    seen = {}
    cwd = demo_runs.parent if os.environ.get("THINKLENS_DEMO_RUNS") else None
    with running_app(demo_runs, cwd=cwd) as url:
        for path, shot, marker in PAGES:
            browser.get(url + path)
            wait_for_text(browser, marker, timeout=120)
            drawn, tables, errors = _settle(browser)
            assert not errors, f"{path or '/'}: error cards {errors}"
            assert drawn or tables or path == "/Explore", f"{path or '/'}: no chart and no table"
            seen[path] = (drawn, tables)
            if path == "/Explore":  # generate one prompt with two models, side by side
                browser.find_element(By.XPATH, "//button[.//p[text()='Generate']]").click()
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < 120:
                    drawn, tables, errors = _settle(browser)
                    if drawn >= 4 or errors:
                        break
                    time.sleep(0.3)
                assert not errors and drawn >= 4, f"Explore: {drawn} charts, errors {errors}"
                seen[path] = (drawn, tables)
            assert browser.save_screenshot(str(SHOTS / shot))
        _comparison_views(browser, url)
    assert seen[""][1] >= 1 and seen["/MI_peaks"][0] >= 1 and seen["/Probes_and_LYNX"][0] >= 2, seen
    for _, shot, _ in PAGES:
        assert (SHOTS / shot).stat().st_size > 20_000


def _comparison_views(browser, url: str) -> None:
    """The MI runs overlaid and the LYNX Pareto curves of both demo runs on one chart (and their screenshots)."""
    from selenium.webdriver.common.by import By

    browser.get(url + "/MI_peaks")
    wait_for_text(browser, "Trajectory (", timeout=60)
    browser.find_element(By.XPATH, "//label[.//p[text()='Compare runs']]").click()
    wait_for_text(browser, "Runs to overlay", timeout=60)
    drawn, _, errors = _settle(browser)
    assert drawn >= 1 and not errors, errors
    legend = browser.execute_script("return Array.from(document.querySelectorAll('.legendtext')).map(e => e.textContent)")
    assert any(t.startswith("demo:") for t in legend) and any(t.startswith("demo-hard:") for t in legend), legend
    assert browser.save_screenshot(str(SHOTS / "mi_compare.png"))

    browser.get(url + "/Probes_and_LYNX")
    wait_for_text(browser, "What δ guarantees", timeout=60)
    _settle(browser)
    charts = browser.find_elements(By.CSS_SELECTOR, '[data-testid="stPlotlyChart"]')
    charts[0].screenshot(str(SHOTS / "lynx_validity.png"))
    browser.find_element(By.XPATH, "//*[@role='tab'][contains(., 'Compare LYNX runs')]").click()
    wait_for_text(browser, "LYNX runs on one chart", timeout=60)
    drawn, _, errors = _settle(browser)
    assert not errors, errors
    legend = browser.execute_script("return Array.from(document.querySelectorAll('.legendtext')).map(e => e.textContent)")
    assert {"demo: LYNX", "demo-long: LYNX"} <= set(legend), legend
    visible = [c for c in browser.find_elements(By.CSS_SELECTOR, '[data-testid="stPlotlyChart"]') if c.is_displayed()]
    visible[0].screenshot(str(SHOTS / "lynx_pareto.png"))
