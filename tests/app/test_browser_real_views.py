"""A real browser (headless Chromium) opens the views of the real-weight results (issue 55) on small runs of the same
jobs: the Steering page's contrast-vector tab (dose-response, arms, one prompt side by side in VADER colours), the
trace viewer on an organism-eval trace (answer_known_at and the cues marked, the forced exit at each cue), and the
Validation page's readout and induction pictures with the map of every head computed on request, the pages Home's
cards of a steer-vector and a validate run open, and the Features page's SAE against SAELens (reached from the
Validation page) with both SAEs' contexts recomputed on request. No exception, no
error card (a validate run whose settings failed on the zoo is red by design), the pictures drawn; each is photographed
into ``THINKLENS_SCREENSHOTS`` (default ``runs/screenshots``).

    pytest -m slow tests/app/test_browser_real_views.py
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from browser import browser_session, running_app, wait_for_text
from real_view_runs import need_zoo, organism_eval_run, steer_vector_run, validate_controls_run, validate_sae_run

SHOTS = Path(os.environ.get("THINKLENS_SCREENSHOTS", Path(__file__).resolve().parents[2] / "runs" / "screenshots"))
RED_BY_DESIGN = re.compile(r"^.+: validated \d+/\d+ · failed: ")
"""A validation headline with failed settings (the zoo has no induction heads and no sentiment to read)."""

_STATE = """
var drawn = Array.from(document.querySelectorAll('.js-plotly-plot')).filter(function (g) {
  return g.offsetParent !== null && g._fullData && g._fullData.length > 0; }).map(function (g) {
  return ((g.layout || {}).title || {}).text || ''; });
return [drawn, document.querySelectorAll('[data-testid="stStatusWidget"]').length,
        document.querySelectorAll('[data-testid="stException"]').length,
        Array.from(document.querySelectorAll('[data-testid="stAlertContentError"]')).map(function (e) { return e.innerText; })];
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    need_zoo()
    root = tmp_path_factory.mktemp("real-views") / "runs"
    steer_vector_run(root)
    organism_eval_run(root)
    validate_controls_run(root)
    return root


@pytest.fixture(scope="module")
def browser():
    yield from browser_session()


def _settled(drv, want: str, timeout: float = 120.0) -> list[str]:
    """Wait for a drawn chart whose title holds ``want`` and the script to finish; the drawn charts' titles. No
    exception shown and no error card but the red-by-design validation headlines."""
    t0, state = time.perf_counter(), None
    while time.perf_counter() - t0 < timeout:
        state = drv.execute_script(_STATE)
        if state[2] or (not state[1] and any(want in t for t in state[0])):
            time.sleep(0.5)
            state = drv.execute_script(_STATE)
            break
        time.sleep(0.3)
    assert state is not None and not state[2], f"{drv.current_url}: an exception is shown"
    errors = [e for e in state[3] if e.strip() and not RED_BY_DESIGN.match(e)]
    assert not errors, f"{drv.current_url}: error cards {errors}"
    assert any(want in t for t in state[0]), f"{drv.current_url}: no chart {want!r} in {state[0]}"
    return state[0]


def _quiet(drv, timeout: float = 120.0) -> None:
    """Wait for the script to finish; no exception shown and no error card but the red-by-design headlines."""
    t0, state = time.perf_counter(), drv.execute_script(_STATE)
    while state[1] and time.perf_counter() - t0 < timeout:
        time.sleep(0.3)
        state = drv.execute_script(_STATE)
    time.sleep(0.5)
    state = drv.execute_script(_STATE)
    assert not state[1], f"{drv.current_url}: still running after {timeout} s"
    assert not state[2], f"{drv.current_url}: an exception is shown"
    errors = [e for e in state[3] if e.strip() and not RED_BY_DESIGN.match(e)]
    assert not errors, f"{drv.current_url}: error cards {errors}"


def _shot(drv, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert drv.save_screenshot(str(SHOTS / name))


@pytest.mark.slow
def test_every_real_weight_view_opens_in_a_browser(browser, runs):
    from selenium.webdriver.common.by import By

    with running_app(runs) as url:
        browser.get(f"{url}/Steering?kind=steer-vector&run=sv")  # where Home's card for a steer-vector run leads
        wait_for_text(browser, "One prompt across the arms", timeout=180)
        _settled(browser, "Dose-response of")
        import json

        from app import contrast_views as cv

        doc = json.loads((runs / "steer-vector" / "sv" / "results" / "steer_vector.json").read_text())
        rated = sum(v is not None for _, _, text in cv.example_panels(doc, 0) for _, v in cv.word_valences(text))
        assert len(browser.find_elements(By.CSS_SELECTOR, "span.tl-valence")) == rated  # every word VADER rates
        body = browser.find_element(By.TAG_NAME, "body").text
        assert body.count("VADER compound") >= 5, "not five arms side by side"
        _shot(browser, "steer_vector.png")

        from app import traces as tr

        tid = next(i for i, _ in tr.list_traces(runs, "organism-eval/org") if "tiny-overthink" in i)
        browser.get(f"{url}/Trace_viewer?run=organism-eval/org&trace={tid}")
        wait_for_text(browser, "forced exit right at cue", timeout=180)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 60 and not browser.find_elements(By.CSS_SELECTOR, "div.tl-trace a.tl-tok"):
            time.sleep(0.3)
        state = browser.execute_script(_STATE)
        assert not state[2] and not [e for e in state[3] if e.strip()], state
        toks = browser.find_elements(By.CSS_SELECTOR, "div.tl-trace a.tl-tok")
        titles = [t.get_attribute("title") for t in toks]
        assert any("answer known (answer_known_at)" in t for t in titles), "answer_known_at not marked"
        assert sum("cue event" in t for t in titles) >= 1, "no cue marked"
        assert "Cues: what a forced exit answers before each" in browser.find_element(By.TAG_NAME, "body").text
        _shot(browser, "trace_viewer_organism.png")

        browser.get(f"{url}/Validation?run=controls")
        wait_for_text(browser, "Sentiment readout:", timeout=180)
        _settled(browser, "Sentiment readout by layer (tiny-think)")
        button, t0 = None, time.perf_counter()
        while button is None and time.perf_counter() - t0 < 120:  # below the pictures, drawn last
            button = next((b for b in browser.find_elements(By.TAG_NAME, "button")
                           if "Map every head (loads tiny-think" in (b.get_attribute("innerText") or "")), None)
            time.sleep(0.3)
        assert button is not None, "no button to map every head of tiny-think"
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();", button)
        wait_for_text(browser, "Recomputed top 5 heads match the record's", timeout=180)
        drawn = _settled(browser, "Prefix-matching score of every head of tiny-think")
        assert any("Loss rise on the repeated half" in t for t in drawn), drawn
        chart = next(c for c in browser.find_elements(By.CSS_SELECTOR, '[data-testid="stPlotlyChart"]')
                     if "Prefix-matching score of every head" in c.get_attribute("innerHTML"))
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", chart)
        time.sleep(0.5)
        _shot(browser, "validation_controls.png")


def _open_card_page(drv, url: str, kind: str, run: str, page: str, timeout: float = 180.0) -> None:
    """Click, as a user does, the link of Home's card of ``kind/run`` to its page, once Home has finished drawing; it
    must say "open in <page>" and land there."""
    from selenium.webdriver.common.by import By

    drv.get(url)
    wait_for_text(drv, "Runs", timeout=timeout)
    _quiet(drv, timeout)
    link = next((a for a in drv.find_elements(By.CSS_SELECTOR, 'a[data-testid="stPageLink-NavLink"]')
                 if f"kind={kind}" in (a.get_attribute("href") or "") and f"run={run}&" in (a.get_attribute("href") or "") + "&"),
                None)
    assert link is not None, f"Home has no card of {kind}/{run} linking a page"
    assert link.text.strip().endswith(f"open in {page}"), link.text
    _click(drv, link)
    t0 = time.perf_counter()
    while f"/{page}?" not in drv.current_url and time.perf_counter() - t0 < 30:
        time.sleep(0.2)
    assert f"/{page}?" in drv.current_url, f"Home's {kind} card led to {drv.current_url}"


def _click(drv, element) -> None:
    drv.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();", element)


@pytest.mark.slow
def test_home_cards_open_their_pages_and_the_sae_comparison(browser, tmp_path_factory):
    """Home's card of a steer-vector run and of a validate run each link a page of its own, clicked as a user does;
    from the Validation page, the SAE against SAELens on the Features page, its contexts recomputed on request."""
    from selenium.webdriver.common.by import By

    need_zoo()
    root = tmp_path_factory.mktemp("home-cards") / "runs"
    steer_vector_run(root)
    validate_sae_run(root)
    with running_app(root) as url:
        _open_card_page(browser, url, "steer-vector", "sv", "Steering")
        wait_for_text(browser, "One prompt across the arms", timeout=180)
        _settled(browser, "Dose-response of")

        _open_card_page(browser, url, "validate", "sae", "Validation")
        wait_for_text(browser, "as pictures (Features page)", timeout=600)  # the records are read first
        _quiet(browser, 300)  # the Validation page draws no chart of this run
        body = browser.find_element(By.TAG_NAME, "body").text
        assert "validate/sae: validated 2/2 · every setting as expected" in body
        href = next(a.get_attribute("href") for a in browser.find_elements(By.TAG_NAME, "a")
                    if "(Features page)" in a.text and "run=sae" in (a.get_attribute("href") or ""))
        browser.get(href)
        wait_for_text(browser, "One feature's top contexts from each SAE", timeout=300)
        _settled(browser, "thinklens's SAE against SAELens's on the same activations (tiny-think")
        assert "the run keeps no firing density per feature" in browser.find_element(By.TAG_NAME, "body").text
        button, t0 = None, time.perf_counter()
        while button is None and time.perf_counter() - t0 < 180:
            button = next((b for b in browser.find_elements(By.TAG_NAME, "button")
                           if "Recompute both features' contexts" in (b.get_attribute("innerText") or "")), None)
            time.sleep(0.3)
        assert button is not None, "no button to recompute the contexts"
        _click(browser, button)
        # regenerates the held-out texts: half a minute on an idle core, minutes on a busy machine
        wait_for_text(browser, "Recomputed contexts of thinklens's feature", timeout=900)
        _settled(browser, "Feature firing density")
        assert "match the run's" in browser.find_element(By.TAG_NAME, "body").text
        assert len(browser.find_elements(By.CSS_SELECTOR, "div.tl-sae-ctx")) == 9  # stored 3, then 3 from each SAE
        _shot(browser, "features_sae_vs_saelens.png")
