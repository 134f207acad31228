"""A real browser (headless Chromium) reaches the trace viewer from the aggregates and opens tokens.

* from the MI page's enrichment table: the first linked peak of a token opens its trajectory with that token
  selected and every occurrence of the word framed; clicking another token opens its logit lens;
* from a LYNX δ row (the rollout link of ``traces.lynx_rollout_rows``) and from a latent problem (the link under its
  decoded latents), when such runs exist (``THINKLENS_DEMO_RUNS``).

Each load is timed (from the click or the URL until the token strip and, with a token open, the logit lens are
drawn) and photographed into ``THINKLENS_SCREENSHOTS`` (default ``runs/screenshots``). No page holds a JSON viewer
element, and every chart has both axis titles. Without ``THINKLENS_DEMO_RUNS`` the runs are a synthetic mi-peaks run
(``thinklens.analyses.mi.synthetic``), whose tokens the zoo's tiny-think reads for the logit lens.

    THINKLENS_DEMO_RUNS=runs THINKLENS_SCREENSHOTS=docs/screenshots pytest tests/app/test_browser_traces.py -s
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from browser import browser_session, running_app, wait_for_text

from app import traces as tr

SHOTS = Path(os.environ.get("THINKLENS_SCREENSHOTS", Path(__file__).resolve().parents[2] / "runs" / "screenshots"))
TIMES: dict[str, float] = {}

# [charts without an x or y axis title, JSON viewer elements, exceptions shown, error cards]
_CHECK = r"""
var bad = Array.from(document.querySelectorAll('.js-plotly-plot')).filter(function (g) {
  var l = g.layout || {};
  var axes = Object.keys(g._fullLayout || {}).filter(function (k) { return /^[xy]axis\d*$/.test(k); });
  return axes.length < 2 || axes.some(function (a) { return !(((l[a] || {}).title || {}).text); });
}).map(function (g) { return ((g.layout || {}).title || {}).text || '?'; });
return [bad, document.querySelectorAll('[data-testid="stJson"]').length,
        document.querySelectorAll('[data-testid="stException"]').length,
        Array.from(document.querySelectorAll('[data-testid="stAlertContentError"]')).map(function (e) { return e.innerText; })];
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    given = os.environ.get("THINKLENS_DEMO_RUNS")
    if given:
        return Path(given).resolve()
    from thinklens.analyses.mi.synthetic import build_synthetic_run

    root = tmp_path_factory.mktemp("runs")
    build_synthetic_run(root, n=16, models=("tiny-think",), run_id="demo", interventions=False)
    return root


@pytest.fixture(scope="module")
def app(runs):
    cwd = runs.parent if os.environ.get("THINKLENS_DEMO_RUNS") else None
    with running_app(runs, cwd=cwd) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    yield from browser_session()


def _el(drv, css: str, timeout: float = 60.0):
    from selenium.webdriver.common.by import By

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        found = drv.find_elements(By.CSS_SELECTOR, css)
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"{css!r} did not appear within {timeout} s on {drv.current_url}")


def _idle(drv, timeout: float = 120.0) -> None:
    """Wait until the script has finished (no running indicator, no spinner)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if not drv.execute_script("return document.querySelectorAll("
                                  "'[data-testid=\"stStatusWidget\"], [data-testid=\"stSpinner\"]').length"):
            return
        time.sleep(0.1)


def _check(drv) -> None:
    _idle(drv)
    bad, n_json, n_exc, errors = drv.execute_script(_CHECK)
    assert not n_exc, f"{drv.current_url}: an exception is shown"
    assert not errors, f"{drv.current_url}: {errors}"
    assert n_json == 0, f"{drv.current_url}: a JSON viewer element is shown"
    assert not bad, f"{drv.current_url}: charts without axis titles: {bad}"


def _click_label(drv, text: str, timeout: float = 60.0) -> None:
    """Click the widget label that reads ``text`` (a radio option), once the page has drawn it."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if drv.execute_script("var want = arguments[0]; var l = Array.from(document.querySelectorAll('label'))"
                              ".find(function (e) { return e.innerText.trim() === want; });"
                              " if (l) { l.click(); return true; } return false;", text):
            return
        time.sleep(0.1)
    raise AssertionError(f"no label {text!r} on {drv.current_url}")


def _shot(drv, name: str) -> None:
    """A screenshot with the token strip at the top of the window."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    drv.execute_script("var s = document.querySelector('div.tl-trace'); if (s) { s.scrollIntoView({block: 'center'}); }")
    time.sleep(0.3)
    drv.save_screenshot(str(SHOTS / name))
    try:  # a palette PNG: a third of the size, the same picture for text and flat colours
        from PIL import Image

        Image.open(SHOTS / name).convert("RGB").quantize(colors=96).save(SHOTS / name, optimize=True)
    except ImportError:
        pass


def _viewer_open(drv, token: int | None, t0: float, name: str) -> float:
    """Seconds from ``t0`` until the token strip (and, with ``token``, its logit lens) is drawn; a screenshot."""
    _el(drv, "div.tl-trace a.tl-tok", timeout=120)
    if token is not None:
        _el(drv, f'a.tl-tok[data-pos="{token}"][data-selected="1"]')
        wait_for_text(drv, "Logit lens", timeout=180)
    took = time.perf_counter() - t0
    TIMES[name] = took
    _check(drv)
    _shot(drv, f"trace_viewer_{name}.png")
    url, t1 = drv.current_url, time.perf_counter()  # the same view loaded again: what a later visit costs
    drv.get(url)
    _el(drv, "div.tl-trace a.tl-tok", timeout=120)
    if token is not None:
        wait_for_text(drv, "Logit lens", timeout=180)
    TIMES[f"{name}_again"] = time.perf_counter() - t1
    _idle(drv)
    print(f"trace viewer from {name}: {took:.2f} s (first), {TIMES[f'{name}_again']:.2f} s (loaded again)")
    return took


@pytest.mark.slow  # a browser test (its AppTest twin stays in the default tier)
def test_enrichment_word_reaches_its_peak_with_the_token_highlighted(app, runs, browser):
    from selenium.webdriver.common.by import By

    run = next(p.name for p in sorted((runs / "mi-peaks").iterdir()) if (p / "results" / "enrichment.json").is_file())
    browser.get(f"{app}/MI_peaks?run={run}&kind=mi-peaks")
    wait_for_text(browser, "Trajectory (", timeout=120)
    _check(browser)
    _click_label(browser, "Thinking tokens")
    wait_for_text(browser, "sits at a peak", timeout=60)
    link = _el(browser, "a.tl-link[href*='highlight=']")
    params = dict(p.split("=", 1) for p in link.get_attribute("href").split("?", 1)[1].split("&"))
    token = int(params["token"])
    t0 = time.perf_counter()
    link.click()
    _viewer_open(browser, token, t0, "mi_enrichment")
    assert "/Trace_viewer" in browser.current_url and f"token={token}" in browser.current_url
    lit = browser.find_elements(By.CSS_SELECTOR, 'a.tl-tok[data-highlight="1"]')
    assert str(token) in [e.get_attribute("data-pos") for e in lit]  # the peak's token is one of the framed words
    assert "orange frame" in browser.find_element(By.TAG_NAME, "body").text


def test_clicking_a_token_opens_its_detail(app, browser):
    from selenium.webdriver.common.by import By

    if "/Trace_viewer" not in browser.current_url:
        pytest.skip("needs the viewer opened by the enrichment test")
    toks = browser.find_elements(By.CSS_SELECTOR, "a.tl-tok")
    other = next(e for e in toks if e.get_attribute("data-selected") != "1")
    pos = int(other.get_attribute("data-pos"))
    t0 = time.perf_counter()
    other.click()
    _el(browser, f'a.tl-tok[data-pos="{pos}"][data-selected="1"]')
    wait_for_text(browser, f"Token {pos}:", timeout=120)
    wait_for_text(browser, "Logit lens", timeout=120)
    TIMES["token_click"] = time.perf_counter() - t0
    _check(browser)
    print(f"token click to its logit lens: {TIMES['token_click']:.2f} s")


def test_lynx_rollout_link_opens_the_exit(app, runs, browser):
    lynx = sorted(p for p in (runs / "lynx").iterdir() if (p / "results" / "lynx.json").is_file()) if (runs / "lynx").is_dir() else []
    if not lynx:
        pytest.skip("no finished LYNX run (set THINKLENS_DEMO_RUNS)")
    rel = f"lynx/{lynx[0].name}"
    deltas = sorted(tr.lynx_exits(lynx[0]))
    rows = tr.lynx_rollout_rows(lynx[0], rel, deltas[len(deltas) // 2])  # the page's default δ
    row = next((r for r in rows if r["exit position"] is not None), rows[0])
    t0 = time.perf_counter()
    browser.get(app + row["trace"])
    _viewer_open(browser, row["exit position"], t0, "lynx_delta")
    assert "LYNX exit per δ" in browser.page_source


def test_latent_problem_link_opens_its_latents(app, runs, browser):
    if not (runs / "latent-eval").is_dir():
        pytest.skip("no latent-eval run (set THINKLENS_DEMO_RUNS)")
    browser.get(f"{app}/Latent_reasoning")
    wait_for_text(browser, "Latent decoding", timeout=120)
    _check(browser)
    link = _el(browser, "a.tl-link[href*='latent']")
    t0 = time.perf_counter()
    link.click()
    _el(browser, 'a.tl-tok[data-pos="0"][data-selected="1"]', timeout=120)
    wait_for_text(browser, "Decoded latent thought", timeout=60)
    TIMES["latent_problem"] = time.perf_counter() - t0
    _check(browser)
    _shot(browser, "trace_viewer_latent_problem.png")
    t1 = time.perf_counter()
    browser.get(browser.current_url)
    wait_for_text(browser, "Decoded latent thought", timeout=120)
    TIMES["latent_problem_again"] = time.perf_counter() - t1
    print(f"trace viewer from latent_problem: {TIMES['latent_problem']:.2f} s (first), "
          f"{TIMES['latent_problem_again']:.2f} s (loaded again)")
