"""Helpers for real-browser tests: Debian Chromium + ChromeDriver (installed on demand) and a live app."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app" / "Home.py"


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
    cmd = [sys.executable, "-m", "streamlit", "run", str(APP), "--server.address", "127.0.0.1", "--server.port", str(port),
           "--server.headless", "true", "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal"]
    proc = subprocess.Popen(cmd, env={**os.environ, "THINKLENS_RUNS": str(runs)}, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)
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
