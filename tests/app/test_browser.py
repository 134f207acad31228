"""A real browser (headless Chromium) loads the running app and saves screenshots."""

import os
from pathlib import Path

import pytest
from browser import ensure_chromium, make_driver, running_app, wait_for_text

from thinklens.runs import RunFolder

SHOTS = Path(os.environ.get("THINKLENS_SCREENSHOTS", Path(__file__).resolve().parents[2] / "runs" / "screenshots"))


@pytest.fixture(scope="module")
def browser():
    chrome, driver = ensure_chromium()
    drv = make_driver(chrome, driver)
    yield drv
    drv.quit()


def test_home_in_browser(browser, tmp_path):
    run = RunFolder.create("demo", {"x": 1}, root=tmp_path, run_id="browser-run")
    run.finish({"accuracy": 0.97})
    with running_app(tmp_path) as url:
        browser.get(url)
        wait_for_text(browser, "demo/browser-run", timeout=90)
        SHOTS.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(SHOTS / "home.png"))
        assert (SHOTS / "home.png").stat().st_size > 10_000
