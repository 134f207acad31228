"""The traces behind a headline's numbers come from the job registry (issue 40 item 5): a job that declares
``Job.headline_traces`` gets its links under its card, and a trace reader that declares ``TraceReader.marks`` gets its
marks opened by a link's filter, with no edit to the app (``app/evidence.py``, ``app/traces.py``).

Oracles: the URLs are written out by hand from the viewer's convention (``/Trace_viewer?run=...&where=...``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from app import evidence, traces
from thinklens.runs import job_registry, jobs
from thinklens.runs.run_views import HeadlineTraces, TraceData, TraceReader

ROOT = Path(__file__).resolve().parents[2]

KIND = "tally-words"


@dataclass(frozen=True)
class TallyConfig:
    model: str = ""
    """Unused."""
    seed: int = 0
    """Unused."""


def _run(config, ctx):
    return {}


def tally_headline(path: Path) -> list[HeadlineTraces]:
    """The fake job's headline numbers: its wrong answers (read from the run's findings) and its first text."""
    meta = json.loads((path / "meta.json").read_text())
    wrong = meta["summary"]["findings"][0]["extra"]["wrong"]
    return [HeadlineTraces(f"{wrong} wrong answers", where="correct=false"),
            HeadlineTraces("its first text", trace="completions/0", quantity="words")]


def _marks(marks, where: str) -> list[str]:
    return [m for m in marks if where == f"tally={m}"]


def _list(path: Path) -> list[tuple[str, str]]:
    return [("0", "the one trace")]


def _load(path: Path, run: str, trace: str) -> TraceData:
    return TraceData(run=run, kind="tally-read", trace_id=trace, model=None, prompt="", tokens=["a"], marks={"peak": [0]})


READER = TraceReader(_list, _load, marks=_marks)


def _register(monkeypatch, job: jobs.Job) -> None:
    """``job`` registered through the registry only, as a job module or an entry point would be."""
    monkeypatch.setitem(job_registry._entry_points(), job.name, job)
    monkeypatch.setattr(job_registry, "_JOBS", dict(job_registry._JOBS or {}))


@pytest.fixture
def tally_run(tmp_path, monkeypatch):
    """A run of a job no app file names, declaring its headline's traces; its generated texts found by their shape."""
    _register(monkeypatch, jobs.Job(KIND, TallyConfig, _run, help="count words", models=(),
                                    headline_traces=f"{__name__}:tally_headline"))
    run = tmp_path / KIND / "a"
    (run / "completions").mkdir(parents=True)
    (run / "completions" / "batch-00000.json").write_text(json.dumps(
        [{"id": "p0", "text": "4", "correct": True}, {"id": "p1", "text": "7", "correct": False},
         {"id": "p2", "text": "8", "correct": False}]))
    (run / "meta.json").write_text(json.dumps({"kind": KIND, "status": "done", "summary": {"findings": [
        {"claim": "c", "statistic": "accuracy", "value": 1 / 3, "verdict": "effect", "extra": {"wrong": 2}}]}}))
    return tmp_path


def test_a_registered_jobs_headline_traces_are_linked_without_an_app_edit(tally_run):
    """Catches: a hand-written table of kinds in the app (the job's links missing), a headline link of a filter not
    turned into the viewer's URL, the one-trace link made as a filter, the true/false field the headline already links
    repeated beside it."""
    assert evidence.links(tally_run, f"{KIND}/a") == [
        ("all 3 traces", f"/Trace_viewer?run={KIND}/a"),
        ("2 wrong answers", f"/Trace_viewer?run={KIND}/a&where=correct%3Dfalse"),
        ("its first text", f"/Trace_viewer?run={KIND}/a&trace=completions/0&quantity=words")]


def test_without_the_declaration_the_run_links_its_true_false_fields(tally_run, monkeypatch):
    _register(monkeypatch, jobs.Job(KIND, TallyConfig, _run, help="count words", models=()))
    assert [label for label, _ in evidence.links(tally_run, f"{KIND}/a")] == [
        "all 3 traces", "correct: 1 true", "correct: 2 false"]


def test_a_readers_marks_are_named_by_its_filters_without_an_app_edit(monkeypatch):
    """Catches: marks read from a hand-written filter syntax in the app (LYNX's only), a reader's marks not asked."""
    _register(monkeypatch, jobs.Job("tally-read", TallyConfig, _run, help="read", models=(), traces=f"{__name__}:READER"))
    marks = {"peak": [3], "trough": [1]}
    assert traces.where_marks(marks, "tally=peak") == ["peak"]
    assert traces.where_marks(marks, "correct=false") == [] and traces.where_marks(marks, None) == []


def test_lynx_exit_links_open_the_mark_lynx_writes():
    """The app names no LYNX mark: the filter LYNX's links carry names the mark its reader writes, through the registry."""
    from thinklens.probes.lynx_traces import exit_mark, exits_where

    marks = {"cue event": [1], exit_mark(0.05): [3], exit_mark(0.2): [1]}
    assert traces.where_marks(marks, exits_where(0.05, correct=False)) == [exit_mark(0.05)]
    assert traces.where_marks(marks, "exit_at=0.050") == [exit_mark(0.05)]


def test_the_method_jobs_declare_their_headline_traces():
    from thinklens.runs.jobs import get_job

    for name in ("steer", "lynx", "probe"):
        assert callable(get_job(name).declared("headline_traces")), name


@pytest.mark.parametrize("ref", ["tally_headline", "a.b:c:d", 7])
def test_a_malformed_headline_traces_reference_is_refused(ref):
    with pytest.raises(TypeError, match="headline_traces"):
        jobs.Job(KIND, TallyConfig, _run, help="count words", models=(), headline_traces=ref)
