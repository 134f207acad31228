"""A real browser (headless Chromium) opens thought-anchors and tuned-lens traces in the trace viewer: a committed
thought-anchors record's trace by sentence, coloured by its importance with the interval in each sentence's hover, its
sentence-to-sentence matrix drawn, and a click on a sentence opening the rollouts behind its numbers; a committed
tuned-lens record (the first top-1 per lens marked, the missing grids said); and, with the zoo, a small tuned-lens run
whose heat map is drawn beside the MI of the same trace from an mi-peaks run. No exception and no error card on any;
each is photographed into ``THINKLENS_SCREENSHOTS`` (default ``runs/screenshots``).

    pytest tests/app/test_browser_anchor_lens.py
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from browser import browser_session, running_app, wait_for_text
from trace_view_runs import lens_run, mi_run, record_runs

from app import traces as tr

SHOTS = Path(os.environ.get("THINKLENS_SCREENSHOTS", Path(__file__).resolve().parents[2] / "runs" / "screenshots"))

# [[title, trace types] of each drawn chart, running indicators, exceptions shown, error cards, the strip's tokens'
# (title, background colour)]
_STATE = """
var charts = Array.from(document.querySelectorAll('.js-plotly-plot')).filter(function (g) {
  return g._fullData && g._fullData.length > 0; }).map(function (g) {
  return [((g.layout || {}).title || {}).text || '', g._fullData.map(function (d) { return d.type + ':' + (d.name || ''); })]; });
var toks = Array.from(document.querySelectorAll('div.tl-trace a.tl-tok')).map(function (a) {
  return [a.getAttribute('title'), getComputedStyle(a).backgroundColor]; });
return [charts, document.querySelectorAll('[data-testid="stStatusWidget"]').length,
        document.querySelectorAll('[data-testid="stException"]').length,
        Array.from(document.querySelectorAll('[data-testid="stAlertContentError"]')).map(function (e) { return e.innerText; }),
        toks];
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from thinklens.zoo.registry import zoo_path

    root = record_runs(tmp_path_factory.mktemp("anchor-lens") / "runs")
    if zoo_path("tiny-r1") is not None:
        lens_run(root)
        mi_run(root)
    return root


@pytest.fixture(scope="module")
def browser():
    yield from browser_session()


def _settled(drv, want: str, timeout: float = 180.0) -> list:
    """Wait for a drawn chart whose title holds ``want``, the token strip and the script to finish; the page's state.
    No exception shown and no error card."""
    t0, state = time.perf_counter(), None
    while time.perf_counter() - t0 < timeout:
        state = drv.execute_script(_STATE)
        if state[2] or (not state[1] and state[4] and any(want in c[0] for c in state[0])):
            time.sleep(0.5)
            state = drv.execute_script(_STATE)
            break
        time.sleep(0.3)
    assert state is not None and not state[2], f"{drv.current_url}: an exception is shown"
    assert not [e for e in state[3] if e.strip()], f"{drv.current_url}: error cards {state[3]}"
    assert any(want in c[0] for c in state[0]), f"{drv.current_url}: no chart {want!r} in {[c[0] for c in state[0]]}"
    return state


def _shot(drv, name: str, chart: str | None = None) -> None:
    """A screenshot with the token strip at the top of the window (or the chart whose title holds ``chart``)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    drv.execute_script("var want = arguments[0]; var s = want ? Array.from(document.querySelectorAll('.js-plotly-plot'))"
                       ".find(function (g) { return (((g.layout || {}).title || {}).text || '').indexOf(want) >= 0; })"
                       " : document.querySelector('div.tl-trace'); if (s) { s.scrollIntoView({block: 'start'}); }", chart)
    time.sleep(0.3)
    assert drv.save_screenshot(str(SHOTS / name))
    try:  # a palette PNG: a third of the size, the same picture for text and flat colours
        from PIL import Image

        Image.open(SHOTS / name).convert("RGB").quantize(colors=96).save(SHOTS / name, optimize=True)
    except ImportError:
        pass


def test_anchor_and_lens_traces_open_in_a_browser(browser, runs):
    from selenium.webdriver.common.by import By

    with running_app(runs) as url:
        run = "thought-anchors/tiny-overthink"
        browser.get(f"{url}/Trace_viewer?run={run}&trace=1&quantity=resampling%20importance")
        state = _settled(browser, "attention suppression")
        t = tr.load_trace(runs, run, "1")
        toks = state[4]
        assert len(toks) == len(t.tokens), "not one position per sentence"
        scored = [v for v in t.quantities["resampling importance"] if v is not None]
        assert sum("95% CI" in title for title, _ in toks) == len(scored), "a sentence's hover lacks its interval"
        blue = [bg for _, bg in toks if bg.startswith("rgba(31, 119, 180,") and not bg.endswith(", 0)")]
        assert len(blue) == sum(v > 0 for v in scored), f"the sentences are not coloured by their importance: {toks}"
        assert any("accuracy with - without" in c[0] for c in state[0])
        _shot(browser, "trace_viewer_anchors.png")
        link = browser.find_elements(By.CSS_SELECTOR, 'div.tl-trace a.tl-tok[data-pos="1"]')[0]
        browser.execute_script("arguments[0].click();", link)  # the sentence's link: the samples behind its numbers
        wait_for_text(browser, "Rollouts that replaced it", timeout=120)
        _settled(browser, "attention suppression")
        assert "Forced answers" in browser.find_element(By.TAG_NAME, "body").text

        browser.get(f"{url}/Trace_viewer?run=tuned-lens/tiny-r1&trace=1")
        state = _settled(browser, "along the trace")
        titles = [title for title, _ in state[4]]
        assert any("tuned lens: answer top-1 first" in x for x in titles) and any("answer token written" in x for x in titles)
        assert "answer_lens_grids.json" in browser.find_element(By.TAG_NAME, "body").text  # the map is not stored: said
        _shot(browser, "trace_viewer_lens_record.png")

        if not (runs / "tuned-lens" / "grids").is_dir():
            pytest.skip("the zoo is not trained: no tuned-lens run with its grids")
        tid = next(i for i, label in tr.list_traces(runs, "tuned-lens/grids") if "no final answer" not in label)
        browser.get(f"{url}/Trace_viewer?run=tuned-lens/grids&trace={tid}")
        state = _settled(browser, "along the trace")
        kinds = next(c[1] for c in state[0] if "along the trace" in c[0])
        assert sum(k.startswith("heatmap") for k in kinds) == 2, kinds  # the logit and the tuned lens
        assert "scatter:mi (mi-peaks/match)" in kinds, "the MI of the same trace is not drawn beside the map"
        _shot(browser, "trace_viewer_lens_map.png", chart="along the trace")
