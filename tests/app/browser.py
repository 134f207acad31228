"""Helpers for real-browser tests: Debian Chromium + ChromeDriver (installed on demand) and a live app."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from thinklens.cli import app_process


def ensure_chromium() -> tuple[str, str]:
    """Paths of chromium and chromedriver; installs Debian's packages when missing (root, apt)."""
    chrome, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chrome and driver):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        res = subprocess.run("apt-get update -qq && apt-get install -y -qq chromium chromium-driver", shell=True,
                             capture_output=True, text=True, env=env, timeout=900)
        chrome, driver = shutil.which("chromium"), shutil.which("chromedriver")
        if res.returncode != 0 or not (chrome and driver):
            pytest.fail(f"could not install chromium + chromium-driver with apt: {res.stderr[-400:]}")
    return chrome, driver


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_app(runs: Path, cwd: Path | None = None):
    """Start the Streamlit app on 127.0.0.1 with THINKLENS_RUNS=runs (in ``cwd``); yields its base URL."""
    port = free_port()
    cmd, env = app_process("127.0.0.1", port, runs)  # as `thinklens app` starts it
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("streamlit did not start")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def make_driver(chrome: str, driver: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chrome
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service(executable_path=driver), options=opts)


def browser_session(size: tuple[int, int] | None = (1400, 1100)):
    """A headless Chromium driver for a module's tests (``yield from browser_session()`` in a fixture)."""
    chrome, driver = ensure_chromium()
    drv = make_driver(chrome, driver)
    if size is not None:
        drv.set_window_size(*size)
    try:
        yield drv
    finally:
        drv.quit()


def wait_for_text(drv, text: str, timeout: float = 30.0) -> float:
    """Seconds until ``text`` appears in the page body (streamlit renders after load)."""
    from selenium.webdriver.common.by import By

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        try:
            if text in drv.find_element(By.TAG_NAME, "body").text:
                return time.perf_counter() - t0
        except Exception:  # noqa: BLE001 - the DOM is being rebuilt
            pass
        time.sleep(0.05)
    raise AssertionError(f"{text!r} did not appear within {timeout} s")


_GRID = """
var table = arguments[0].querySelector('table[role=grid]');
if (!table) { return null; }
return Array.from(table.querySelectorAll('tr')).map(function (r) {
  return Array.from(r.children).map(function (c) { return c.textContent; }); });
"""


def grid_rows(drv, frame) -> list[dict[str, str]]:
    """The rows of a dataframe element as header -> text, read from the grid's accessible table (which holds only the
    columns in view; a link cell's text is its URL)."""
    rows = drv.execute_script(_GRID, frame) or []
    if not rows:
        return []
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def click_grid_link(drv, frame, row: int, column: str, row_px: int = 35, header_px: int = 36) -> str:
    """Click the link of ``column`` in ``row`` of a dataframe (a ``LinkColumn``, drawn on a canvas) as a user does: the
    link's area is where the mouse pointer becomes a hand on that row; returns the handle of the tab it opens
    (Streamlit opens a table's links in a new tab)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    cells = grid_rows(drv, frame)[row]
    linked = [h for h, v in cells.items() if v.startswith("/") or v.startswith("http")]
    assert column in linked, f"row {row} has no link in {column!r} (links in view: {linked})"
    drv.execute_script("arguments[0].scrollIntoView({block: 'center'});", frame)
    time.sleep(0.5)
    canvas = frame.find_element(By.CSS_SELECTOR, "canvas[data-testid='data-grid-canvas']")
    w, h = canvas.rect["width"], canvas.rect["height"]
    y = header_px + row * row_px + row_px // 2
    assert y < h, f"row {row} is below the table's view"
    spans, start = [], None
    for x in range(2, int(w) - 2, 4):  # the pointer areas of the row's links, left to right
        ActionChains(drv).move_to_element_with_offset(canvas, int(x - w / 2), int(y - h / 2)).perform()
        hand = drv.execute_script("return getComputedStyle(arguments[0]).cursor", canvas) == "pointer"
        if hand and start is None:
            start = x
        elif not hand and start is not None:
            spans.append((start, x))
            start = None
    assert len(spans) == len(linked), f"{len(spans)} link areas on row {row} for the links {linked}"
    x0, x1 = spans[linked.index(column)]
    before = set(drv.window_handles)
    ActionChains(drv).move_to_element_with_offset(canvas, int((x0 + x1) / 2 - w / 2), int(y - h / 2)).click().perform()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 10:
        new = set(drv.window_handles) - before
        if new:
            return new.pop()
        time.sleep(0.1)
    raise AssertionError(f"clicking {column!r} of row {row} opened no tab")
