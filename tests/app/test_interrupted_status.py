"""A run the runner marked ``interrupted`` (SIGINT or SIGTERM, :mod:`thinklens.runs.interrupts`) has its own colour and
words on Home and in the run list (issue 41): not the grey of an unknown status, not the red of a failure, not the
orange of a run still going, and a line that says how to resume it."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from thinklens.runs.folders import RunFolder, discover_runs

APP = Path(__file__).resolve().parents[2] / "app"


def _interrupted(root: Path):
    """A probe run left as the runner leaves one stopped by a signal (``execute``'s KeyboardInterrupt branch)."""
    run = RunFolder.create("probe", {"model": "tiny-think", "seed": 0}, root=root, run_id="stopped")
    run.write_meta(status="interrupted", interruptions=[{"signal": "SIGINT", "at": "2025-01-01T00:00:00"}])
    return next(e for e in discover_runs(root, "probe") if e.run_id == "stopped")


def test_an_interrupted_run_has_its_own_colour_and_says_how_to_resume(runs):
    from app.dashboard import STATUS_COLOURS, run_rows, run_state, status_badge

    status, line = run_state(_interrupted(runs))
    assert status == "interrupted" and "resume" in line and line.startswith("interrupted")
    badge = status_badge(status)
    colour = badge.removeprefix(":").split("-badge")[0]
    others = {c for s, c in STATUS_COLOURS.items() if s != "interrupted"}
    assert badge == f":{colour}-badge[interrupted]" and colour not in others | {"gray", "grey"}
    (row,) = run_rows([_interrupted(runs)])
    assert (row["status"], row["headline"]) == ("interrupted", line)


def test_thinklens_runs_lists_an_interrupted_run_with_the_resume_words(runs):
    from thinklens.runs.listing import run_headline

    assert "rerun the same command to resume" in run_headline(_interrupted(runs))


def test_home_shows_the_interrupted_badge(runs):
    from app.dashboard import status_badge

    _interrupted(runs)
    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=60).run()
    assert not at.exception
    cards = [m.value for m in at.markdown if "`stopped`" in m.value]
    assert cards and status_badge("interrupted") in cards[0], cards
