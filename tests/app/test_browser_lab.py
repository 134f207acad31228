"""Issue 40 in a real browser (headless Chromium): the Validation page with K/N and its red failures, Home with a
truncated run shown "incomplete" and a card's trace link opening only the traces its number counts, the Compare
page of two eval runs with their config diff and paired interval, and a bad link that says it found nothing. Every
page: no exception, no raw JSON viewer. Screenshots go to ``THINKLENS_SCREENSHOTS`` (default runs/screenshots).

Without ``THINKLENS_DEMO_RUNS`` the runs are small folders in the jobs' formats (tests/app/lab_runs.py). For the
docs' screenshots, a demo's runs with two eval runs (ids ``think`` and ``cot``) and a truncated one (``cut``):

    THINKLENS_DEMO_RUNS=runs THINKLENS_SCREENSHOTS=docs/screenshots pytest tests/app/test_browser_lab.py
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from browser import browser_session, running_app, wait_for_text
from lab_runs import eval_run, truncated_run, validate_run

SHOTS = Path(os.environ.get("THINKLENS_SCREENSHOTS", Path(__file__).resolve().parents[2] / "runs" / "screenshots"))
A = [True, True, False, True, False, True, True, True, False, True, True, True]
B = [False, True, False, False, False, True, False, True, False, False, True, False]

_CHECK = """
return [document.querySelectorAll('[data-testid="stException"]').length,
        document.querySelectorAll('[data-testid="stJson"]').length,
        document.querySelectorAll('[data-testid="stStatusWidget"], [data-testid="stSpinner"]').length];
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    given = os.environ.get("THINKLENS_DEMO_RUNS")
    if given:
        return Path(given).resolve(), ("think", "cot")
    root = tmp_path_factory.mktemp("lab") / "runs"
    root.mkdir()
    eval_run(root, "think", "tiny-think", A)
    eval_run(root, "cot", "tiny-cot", B, max_new_tokens=32)
    truncated_run(root)
    validate_run(root)
    return root, ("think", "cot")


@pytest.fixture(scope="module")
def app(runs):
    root, _ = runs
    cwd = root.parent if os.environ.get("THINKLENS_DEMO_RUNS") else None
    with running_app(root, cwd=cwd) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    yield from browser_session()


def _clean(drv, timeout: float = 120.0) -> None:
    """Wait for the script to finish, then: no exception, no JSON viewer."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        exc, n_json, busy = drv.execute_script(_CHECK)
        if not busy:
            break
        time.sleep(0.2)
    time.sleep(0.5)
    exc, n_json, _ = drv.execute_script(_CHECK)
    assert exc == 0, f"{drv.current_url}: an exception is shown"
    assert n_json == 0, f"{drv.current_url}: a raw JSON viewer is shown"


def _shot(drv, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert drv.save_screenshot(str(SHOTS / name))


def test_validation_page(browser, app):
    browser.get(app + "/Validation")
    wait_for_text(browser, "The committed record", timeout=180)
    wait_for_text(browser, "(committed record): validated", timeout=180)
    wait_for_text(browser, "Validate runs in this runs folder", timeout=60)
    _clean(browser)
    body = browser.find_element("tag name", "body").text
    assert "Zoo organisms (committed record): validated" in body and "Real weights (committed record): validated" in body
    if not os.environ.get("THINKLENS_DEMO_RUNS"):
        assert "validate/quick: validated 1/2" in body and "sae/null" in body
    _shot(browser, "validation.png")


def test_home_incomplete_and_a_trace_link_from_a_number(browser, app, runs):
    from selenium.webdriver.common.by import By

    browser.get(app)
    wait_for_text(browser, "Validation", timeout=120)
    wait_for_text(browser, "incomplete", timeout=120)
    _clean(browser)
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "incomplete: it says done but results/eval.json cannot be read" in body
    _shot(browser, "home_lab.png")
    link, t0 = None, time.perf_counter()
    while link is None and time.perf_counter() - t0 < 60:  # the cards arrive one by one
        link = next((a for a in browser.find_elements(By.CSS_SELECTOR, "a.tl-link")
                     if "run=eval/think" in (a.get_attribute("href") or "") and "correct%3Dfalse" in a.get_attribute("href")),
                    None)
        time.sleep(0.2)
    assert link is not None, "no trace link to the wrong answers on the eval card"
    wrong = int(link.text.split(":")[1].split()[0])
    browser.execute_script("arguments[0].click();", link)
    wait_for_text(browser, "Only the traces with correct=false", timeout=120)
    _clean(browser)
    assert f"correct=false ({wrong})" in browser.find_element(By.TAG_NAME, "body").text
    traces, t0 = [], time.perf_counter()
    while not traces and time.perf_counter() - t0 < 60:  # the filter's caption comes before the traces it lists
        traces = browser.find_elements(By.CSS_SELECTOR, "div.tl-trace")
        time.sleep(0.2)
    assert traces, "the filtered viewer lists no trace"
    _shot(browser, "trace_viewer_filtered.png")


def test_compare_two_eval_runs(browser, app, runs):
    _, (a, b) = runs
    browser.get(f"{app}/Compare?kind=eval&a={a}&b={b}")
    wait_for_text(browser, "95% paired interval", timeout=180)
    _clean(browser)
    body = browser.find_element("tag name", "body").text
    assert "Config: the keys that differ" in body and "Code and data" in body and "exact McNemar" in body
    _shot(browser, "compare.png")


def test_bad_links_say_they_found_nothing(browser, app):
    for path, words in (("/Trace_viewer?run=eval/nope", "no run with traces eval/nope"),
                        ("/Compare?kind=eval&a=think&b=gone", "no eval run gone"),
                        ("/Validation?run=gone", "no validate run gone")):
        browser.get(app + path)
        wait_for_text(browser, "found nothing", timeout=180)
        _clean(browser)
        assert words in browser.find_element("tag name", "body").text, path
