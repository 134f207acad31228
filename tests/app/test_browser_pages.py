"""A real browser (headless Chromium) opens every page of the app on the demo's runs: no exception, no
error card, and a drawn chart or a table on each; Explore generates side by side. Screenshots of each
page are saved (the README's come from this test run on a real `make demo`).

The runs are the demo's own steps (``tools.demo.run_demo``) with smaller sizes appended (``SMALL``),
so the pages see every run kind the demo writes, in about a minute, and a ``--target correct`` probe run (the
demo's probe reads values: no generated answers behind it). A second test clicks every kind of link from a headline
number to its traces (Home's cards, the Steering and Probes pages' tables) and checks where it lands: the trace viewer
filtered as the link says, listing as many traces as the number counts, one of them drawn. To check (and photograph)
a real demo instead:

    thinklens run probe --model tiny-think --target correct --min-steps 5 --max-steps 8 --n-problems 120 --run-id correct
    THINKLENS_DEMO_RUNS=/path/to/runs THINKLENS_SCREENSHOTS=docs/screenshots pytest -m slow tests/app/test_browser_pages.py

With ``THINKLENS_DEMO_RUNS`` the app runs in that folder's parent, so the pages show the path ``runs``.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from browser import browser_session, click_grid_link, grid_rows, running_app, wait_for_text

from thinklens.calibration.findings import VERDICTS

SHOTS = Path(os.environ.get("THINKLENS_SCREENSHOTS", Path(__file__).resolve().parents[2] / "runs" / "screenshots"))

SMALL: dict[str, list[str]] = {
    "zoo-eval": ["--n-eval", "4", "--step-counts", "2,3"],
    "mi-peaks": ["--n-problems", "8", "--n-random", "1", "--rr-layers", "2", "--ttts-budgets", "0,8"],
    "mi-peaks-hard": ["--n-problems", "6"],
    "lynx": ["--n-train", "40", "--n-calibration", "40", "--n-test", "40", "--hidden-layer-sizes", "16"],
    # the discrimination gate needs its AUROC interval above 0.5 at the calibration cues: "lynx" (40 calibration
    # rollouts, a few dozen cue events) keeps it and abstains, which the page states in one line; at 120 rollouts the
    # interval's lower end sits at about 0.5, so "lynx-long" turns the gate off to have exits whose links are clicked
    "lynx-long": ["--n-train", "40", "--n-calibration", "120", "--n-test", "40", "--hidden-layer-sizes", "16",
                  "--gate-auroc", "none"],
    "probe": ["--n-problems", "24"],
    "sae": ["--d-sae", "64", "--k", "8", "--training-tokens", "20000", "--n-texts", "200", "--eval-texts", "20",
            "--stats-traces", "8", "--n-eval-batches", "1"],
    "steer": ["--n-prompts", "4", "--stats-traces", "16", "--no-diff-of-means"],
    "reasoning-vector": ["--n-eval", "3", "--step-counts", "2,3", "--groups", "all"],
    "hybrid": ["--n-train", "16", "--n-eval", "4", "--sae-steps", "20", "--vector-iters", "5"],
    "latent-eval": ["--n-eval", "6", "--seek-n", "2"],
}
"""Demo-sized runs in seconds: options appended to each demo step (the last value of an option wins)."""
CORRECT_PROBE = ["run", "probe", "--model", "tiny-think", "--target", "correct", "--min-steps", "5", "--max-steps", "8",
                 "--n-problems", "48", "--run-id", "correct"]
"""A probe of whether the answer is right, on problems tiny-think gets wrong often enough for 5-fold CV: its score
links the examples it gets most wrong."""

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
    ("/Validation", None, "(committed record): validated"),  # photographed by test_browser_lab.py (a failed setting)
    ("/Compare?kind=lynx", None, "Config: the keys that differ"),  # the same (two eval runs, a paired interval)
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


FINDING = re.compile(r"^(?:" + "|".join(map(re.escape, VERDICTS)) + r") · ")
"""A finding's card ("effect · LYNX at delta 0.1 loses accuracy ..."): red for a harm by design, not an error."""
FAILED_SETTINGS = re.compile(r"^.+: validated \d+/\d+ · failed: ")
"""The Validation page's headline of a source with failed settings: red by design (K short of N)."""


def _errors(texts: list[str]) -> list[str]:
    """The error cards that report an error: not a verdict shown red (a harm's finding, failed validation settings),
    not a card folded out of view ('')."""
    return [t for t in texts if t.strip() and not FINDING.match(t) and not FAILED_SETTINGS.match(t)]


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    given = os.environ.get("THINKLENS_DEMO_RUNS")
    if given:
        return Path(given).resolve()
    from thinklens.zoo.registry import zoo_path
    from tools.demo import run_demo

    if zoo_path("tiny-think") is None:
        pytest.skip("the zoo is not trained")
    from thinklens.cli import main as cli_main

    runs = tmp_path_factory.mktemp("demo") / "runs"
    before = os.environ.get("THINKLENS_RUNS")
    try:
        results = run_demo(runs, overrides=SMALL)
        results["probe --target correct"] = (cli_main(CORRECT_PROBE), 0.0)
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
    return drawn, tables, _errors(errors)


# slow: the demo's steps and ten pages take about a fifth of the default tier's summed test time
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
            if shot:
                assert browser.save_screenshot(str(SHOTS / shot))
        _comparison_views(browser, url)
    assert seen[""][1] >= 1 and seen["/MI_peaks"][0] >= 1 and seen["/Probes_and_LYNX"][0] >= 2, seen
    assert seen["/Validation"][1] >= 1 and seen["/Compare?kind=lynx"][1] >= 1, seen
    for _, shot, _ in PAGES:
        assert shot is None or (SHOTS / shot).stat().st_size > 20_000


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


# ------------------------------------------------------------------------------ from a number to its traces

def _where(url: str) -> str:
    return parse_qs(urlsplit(url).query).get("where", [""])[0]


def _count(label: str) -> int:
    """The number a link's label says it opens: ``'c=1: 14 problems it broke'`` -> 14."""
    return int(re.search(r"(\d+)", label.rsplit(": ", 1)[-1])[1])


def _photo(drv, name: str) -> None:
    """A screenshot with the token strip in view, as a palette PNG (a third of the size)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    drv.execute_script("var s = document.querySelector('div.tl-trace'); if (s) { s.scrollIntoView({block: 'center'}); }")
    time.sleep(0.3)
    assert drv.save_screenshot(str(SHOTS / name))
    try:
        from PIL import Image

        Image.open(SHOTS / name).convert("RGB").quantize(colors=96).save(SHOTS / name, optimize=True)
    except ImportError:
        pass


def _lands(drv, where: str, count: int, shot: str | None = None) -> None:
    """The trace viewer as a link left it: filtered to ``where``, ``count`` traces listed, the first one drawn (its
    facts hold the generic records' conditions), no exception and no error card."""
    from selenium.webdriver.common.by import By

    wait_for_text(drv, "Only the traces with", timeout=120)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 60 and not drv.find_elements(By.CSS_SELECTOR, "div.tl-trace a.tl-tok"):
        time.sleep(0.2)  # the filter's caption comes before the trace it draws
    errors = _done(drv)
    body = drv.find_element(By.TAG_NAME, "body").text
    assert f"Only the traces with {where} ({count})" in body, (drv.current_url, body[:600])
    assert f"Trace ({count})" in body, drv.current_url
    assert drv.find_elements(By.CSS_SELECTOR, "div.tl-trace a.tl-tok"), f"{drv.current_url}: no trace drawn"
    assert not _errors(errors), f"{drv.current_url}: {errors}"
    assert parse_qs(urlsplit(drv.current_url).query).get("where") == [where], drv.current_url  # kept while browsing
    facts = body.split("Colour by", 1)[-1]
    for cond in where.split(";"):
        key, _, value = cond.partition("=")
        if key not in ("exit_at", "exit_correct"):  # LYNX's own filter: its reader keeps the rollouts
            assert re.search(rf"{re.escape(key)}: {re.escape(value)}", facts, re.I), (cond, facts[:400])
    if shot:
        _photo(drv, shot)


def _done(drv, timeout: float = 120.0) -> list[str]:
    """Wait until the script has finished (a view of one trace may hold no chart and no table), then: no exception
    shown; the error cards' texts."""
    t0 = time.perf_counter()
    state = None
    while time.perf_counter() - t0 < timeout:
        state = drv.execute_script(_STATE)
        if state and not state[2]:
            time.sleep(0.5)  # late elements
            state = drv.execute_script(_STATE)
            break
        time.sleep(0.2)
    assert state is not None and not state[2], f"{drv.current_url}: still running after {timeout} s"
    assert not state[3], f"{drv.current_url}: an exception is shown"
    return state[4]


def _card_links(drv, url: str, kind: str, timeout: float = 60.0) -> list[tuple[str, str]]:
    """``(label, href)`` of the filtered links on Home's cards of ``kind`` (waited for up to ``timeout`` s)."""
    from selenium.webdriver.common.by import By

    drv.get(url)
    wait_for_text(drv, "Runs", timeout=120)
    _done(drv)
    t0, found = time.perf_counter(), []
    while not found and time.perf_counter() - t0 < timeout:  # the cards arrive one by one
        found = [(a.text, a.get_attribute("href")) for a in drv.find_elements(By.CSS_SELECTOR, "a.tl-link")
                 if f"run={kind}/" in (a.get_attribute("href") or "") and "where=" in (a.get_attribute("href") or "")]
        time.sleep(0.3)
    return found


def _click_card_link(drv, url: str, href: str) -> None:
    from selenium.webdriver.common.by import By

    drv.get(url)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 60:
        link = next((a for a in drv.find_elements(By.CSS_SELECTOR, "a.tl-link") if a.get_attribute("href") == href), None)
        if link is not None:
            drv.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();", link)
            return
        time.sleep(0.3)
    raise AssertionError(f"no link {href} on Home")


def _table_link(drv, page_url: str, column: str, count_column: str, shot: str | None, tab: str | None = None,
                also: tuple[str, str] | None = None) -> bool:
    """Open ``page_url`` (and ``tab``), click the first ``column`` link of its table as a user does (a new tab), check
    the viewer it opens counts what the row's ``count_column`` says; ``also``: another (column, count column) tried when
    no row links ``column`` (a count of 0 is not linked). False when no row links either."""
    from selenium.webdriver.common.by import By

    drv.get(page_url)
    if tab:
        tab_el = None
        t0 = time.perf_counter()
        while tab_el is None and time.perf_counter() - t0 < 120:
            tab_el = next((t for t in drv.find_elements(By.CSS_SELECTOR, "[role='tab']") if t.text.strip() == tab), None)
            time.sleep(0.3)
        assert tab_el is not None, f"no tab {tab!r} on {page_url}"
        tab_el.click()
    t0, frame = time.perf_counter(), None
    while frame is None and time.perf_counter() - t0 < 120:
        frame = next((f for f in drv.find_elements(By.CSS_SELECTOR, '[data-testid="stDataFrame"]')
                      if f.is_displayed() and column in f.get_attribute("innerHTML")), None)
        time.sleep(0.3)
    assert frame is not None, f"no table with {column!r} on {page_url}"
    _settle(drv)
    rows = grid_rows(drv, frame)
    for col, count_col in ((column, count_column),) + ((also,) if also else ()):
        row = next((i for i, r in enumerate(rows) if r.get(col, "").startswith("/")), None)
        if row is not None:
            column, count_column = col, count_col
            break
    else:
        return False
    count = int(float(rows[row][count_column]))
    home = drv.current_window_handle
    drv.switch_to.window(click_grid_link(drv, frame, row, column))
    try:
        _lands(drv, _where(rows[row][column]), count, shot)
    finally:
        drv.close()
        drv.switch_to.window(home)
    return True


@pytest.mark.slow
def test_every_link_from_a_number_lands_on_its_traces(browser, demo_runs):
    """Home's cards (steer, LYNX, probe, zoo-eval, reasoning-vector, hybrid), the Steering page's tables (a steer
    coefficient's broken problems, an α's and a hybrid mode's broken ones, an SAE feature's top contexts) and the
    Probes page's (LYNX's early exits at a δ, the examples a probe gets most wrong), each clicked as a user does."""

    cwd = demo_runs.parent if os.environ.get("THINKLENS_DEMO_RUNS") else None
    # (kind, a word of the label whose landing is photographed, its screenshot)
    shots = {"steer": ("broke", "trace_viewer_steer_broken.png"), "lynx": ("early exits", "trace_viewer_lynx_exits.png"),
             "probe": ("most wrong", "trace_viewer_probe_most_wrong.png"), "zoo-eval": ("wrong", "trace_viewer_zoo_eval.png")}
    with running_app(demo_runs, cwd=cwd) as url:
        clicked = {}
        # the headline's own links (steer, LYNX, probe: their counts are above 0 on the demo's runs); the paired
        # settings' links of the others depend on what the runs got wrong (none, on demo-sized runs, is no link)
        for kind, words in (("steer", "problems it broke"), ("lynx", "early exits"), ("probe", "gets most wrong"),
                            ("zoo-eval", None), ("reasoning-vector", None), ("hybrid", None)):
            found = _card_links(browser, url, kind, timeout=60 if words else 15)
            assert words is None or any(words in label for label, _ in found), f"Home's {kind} card: no {words!r}: {found}"
            word, shot = shots.get(kind, ("", None))
            shown = next((label for label, _ in found if word in label), None)
            for i, (label, href) in enumerate(found[:6]):  # the headline's own first, then the generic ones
                if i == 0:  # clicked as a user does; the others opened by their URL (Home takes a while to load)
                    _click_card_link(browser, url, href)
                else:
                    browser.get(href)
                _lands(browser, _where(href), _count(label), shot if label == shown else None)
                clicked[f"{kind}: {label}"] = _count(label)
        assert _table_link(browser, f"{url}/Steering?kind=steer&run=demo", "broken problems", "problems it broke", None)
        changed = [_table_link(browser, f"{url}/Steering", "broken problems", "broke", f"trace_viewer_{name}.png",
                               tab=tab, also=("fixed problems", "fixed"))
                   for tab, name in (("Reasoning vectors", "reasoning_vector"), ("Hybrid", "hybrid"))]
        assert any(changed), "neither the α table nor the hybrid table links a problem it broke or fixed"
        gates = {run_id: _exit_gate(demo_runs, run_id) for run_id in ("demo", "demo-long")}
        for run_id, gate in gates.items():  # an open gate: a δ's exits, clicked; a closed one: its line, no exits
            page = f"{url}/Probes_and_LYNX?kind=lynx&run={run_id}"
            if gate.get("open", True):
                assert _table_link(browser, page, "exits taken", "early exits", None), f"lynx {run_id}: no exit linked"
            else:
                _gate_line(browser, page, gate)
        assert any(g.get("open", True) for g in gates.values()), gates

        browser.get(f"{url}/Probes_and_LYNX?kind=probe&run=correct")  # the probe tab's link under its sweep
        _click_label_tab(browser, "Probe layer sweep")
        link = _wait_el(browser, "//a[contains(., 'examples the probe gets most wrong')]")
        n = _count("x: " + link.text.split("The ", 1)[1])
        home = browser.current_window_handle
        before = set(browser.window_handles)
        link.click()
        new = _new_tab(browser, before)
        if new:
            browser.switch_to.window(new)
        _lands(browser, "most_wrong=true", n)
        if new:
            browser.close()
            browser.switch_to.window(home)

        browser.get(f"{url}/Steering")  # an SAE feature's top contexts: the Features page on that feature
        frame = _wait_el(browser, "//div[@data-testid='stDataFrame'][.//th[text()='top contexts']]")
        _settle(browser)
        rows = grid_rows(browser, frame)
        browser.switch_to.window(click_grid_link(browser, frame, 0, "top contexts"))
        wait_for_text(browser, f"Top contexts of feature {rows[0]['feature']}", timeout=120)
        _, tables, errors = _settle(browser)
        assert tables and not errors, errors
        assert parse_qs(urlsplit(browser.current_url).query)["feature"] == [rows[0]["feature"]]
        browser.close()
        browser.switch_to.window(home)
    assert [k for k in clicked if k.split(":")[0] in ("zoo-eval", "reasoning-vector", "hybrid")], clicked
    print(clicked)


def _exit_gate(runs: Path, run_id: str) -> dict:
    """The LYNX run's discrimination gate (its summary's ``exit_gate``; {} for a run without one)."""
    import json

    return (json.loads((runs / "lynx" / run_id / "meta.json").read_text()).get("summary") or {}).get("exit_gate") or {}


def _gate_line(drv, page_url: str, gate: dict) -> None:
    """A LYNX run whose gate is closed: the page states the gate's line (AUROC, interval, n) and links no exit."""
    from selenium.webdriver.common.by import By

    drv.get(page_url)
    wait_for_text(drv, "Exit gate · " + gate["statement"], timeout=120)  # "... AUROC a, 95% interval [lo, hi], n=N ..."
    assert not _errors(_done(drv)), drv.current_url
    frame = next(f for f in drv.find_elements(By.CSS_SELECTOR, '[data-testid="stDataFrame"]')
                 if f.is_displayed() and "P(S={1}|y=0)" in f.get_attribute("innerHTML"))
    assert not any(v.startswith("/") for r in grid_rows(drv, frame) for v in r.values()), "a closed gate links exits"


def _wait_el(drv, xpath: str, timeout: float = 120.0):
    from selenium.webdriver.common.by import By

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        found = [e for e in drv.find_elements(By.XPATH, xpath) if e.is_displayed()]
        if found:
            return found[0]
        time.sleep(0.3)
    raise AssertionError(f"{xpath} did not appear on {drv.current_url}")


def _click_label_tab(drv, name: str) -> None:
    _wait_el(drv, f"//*[@role='tab'][contains(., '{name}')]").click()


def _new_tab(drv, before: set, timeout: float = 5.0) -> str | None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        new = set(drv.window_handles) - before
        if new:
            return new.pop()
        time.sleep(0.1)
    return None
