"""Shared pieces of the Streamlit pages: run pickers (over ``thinklens.runs.folders.discover_runs``), error cards,
figures and tables with their downloads.

Pages only read run folders (JSON results, plotly JSON figures) and call analysis functions;
they never register hooks themselves. A broken or half-written run shows an error card for that
run only, with the command that repairs it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import streamlit as st

from app.dashboard import INCOMPLETE_MARK
from app.exports import chart
from thinklens.errors import ThinklensError
from thinklens.runs.folders import RunFolder, discover_runs, validate_id


def runs_root() -> Path:
    return Path(os.environ.get("THINKLENS_RUNS", "runs")).resolve()


def display_path(path: Path | str) -> str:
    """A path as the user would type it: relative to the working folder when inside it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        return str(p)


def safe_run_path(kind: str, run_id: str, root: Path | None = None) -> Path:
    """``root/kind/run_id``, refusing anything that would leave the runs folder."""
    root = (root or runs_root()).resolve()
    validate_id(kind, "run kind")
    validate_id(run_id)
    path = (root / kind / run_id).resolve()
    if root not in path.parents:
        raise ThinklensError.of("run path", str(path), f"a folder inside {root}", "pick a run from the list")
    return path


def error_card(title: str, err: object, fix: str | None = None) -> None:
    """A red card: what failed, why, and (when known) the command that repairs it."""
    st.error(f"**{title}**\n\n{err}" + ("\n\nTo fix it, run:" if fix else ""))
    if fix:
        st.code(fix, language="bash", wrap_lines=True)


def rerun_command(job: str, path: Path) -> str:
    from app.dashboard import rerun_command as command

    return command(job, path)


def _broken_card(entry: Any) -> None:
    from app.dashboard import demo_commands, fix_command

    error_card(f"run {entry.kind}/{entry.run_id} cannot be read", entry.error,
               fix=fix_command(entry, demo_commands(runs_root())))


def _wanted_index(kind: str, ids: list[str]) -> int | None:
    """The run named by the page's ``?run=ID`` link (from the home page), else the newest; None when the link names
    a run of this kind that is not there (the picker then says it found nothing instead of showing another run)."""
    qp = st.query_params
    want, want_kind = qp.get("run"), qp.get("kind")
    if want in ids and (want_kind in (None, kind)):
        return ids.index(want)
    if want is not None and link_names_nothing(want, want_kind, kind):
        return None
    return 0


def link_names_nothing(want: str, want_kind: str | None, kind: str, root: Path | None = None) -> bool:
    """Whether a ``?run=want[&kind=want_kind]`` link meant for a picker of ``kind`` names a run that is not there: its
    kind is this one (or not given, and no run of any kind has that id)."""
    if want_kind not in (None, kind):
        return False  # a link for another picker of the page
    if want_kind == kind:
        return True
    return not any(e.run_id == want for e in discover_runs(root or runs_root()))


def nothing_found(what: str, want: str, root: Path | None = None) -> None:
    """The card of a link that names nothing: what was asked for, where it was looked for, what to do."""
    st.error(f"**found nothing** · no {what} `{want}` under `{display_path(root or runs_root())}` (the link is old, or "
             "the run was removed or made under another runs folder). Nothing else is shown in its place: pick one "
             "below.")


def not_done_card(entry: Any) -> None:
    """What a run that has no results to show is: failed (with its one-line reason), interrupted or still running."""
    from thinklens.runs.listing import run_headline

    where = f"run `{entry.kind}/{entry.run_id}`"
    if entry.status == "failed":
        st.error(f"**failed** · {where} stopped with an error, so it has no results to show: "
                 f"{entry.failure or run_headline(entry)}")
    elif entry.status == "interrupted":
        st.warning(f"**interrupted** · {where} was stopped before it finished; re-run the same command to resume it.")
    else:
        st.info(f"**{entry.status}** · {where} has not finished yet; its results appear here when it does.")


def run_picker(kind: str, label: str = "Run", key: str | None = None) -> RunFolder | None:
    """A select box of the readable runs of ``kind``, finished ones first (the newest finished run is the default;
    failed, interrupted and running ones are listed after them with their status, and picking one says what it is);
    error cards for broken ones; None if none, or if the pick has no results."""
    runs = discover_runs(runs_root(), kind)
    readable = [r for r in runs if r.error is None]
    good = [r for r in readable if r.status == "done"] + [r for r in readable if r.status != "done"]
    for r in runs:
        if r.error is not None:
            _broken_card(r)
    if not good:
        st.info(f"No `{kind}` runs yet under `{display_path(runs_root())}`. Create one with `thinklens run {kind} ...` "
                "or `make demo`.")
        return None
    labels = [f"{r.run_id} ({r.status})" for r in good]
    index = _wanted_index(kind, [r.run_id for r in good])
    if index is None:
        nothing_found(f"`{kind}` run", str(st.query_params.get("run")))
    choice = st.selectbox(label, range(len(good)), index=index, format_func=lambda i: labels[i],
                          key=key or f"pick-{kind}", placeholder="pick a run")
    if choice is None:
        return None
    r = good[choice]
    if r.status != "done":
        not_done_card(r)
        return None
    run = RunFolder(safe_run_path(r.kind, r.run_id))
    if not results_missing(run):  # a half-written run: its card and command instead of its stale findings
        show_findings(run)
    return run


def show_findings(run: RunFolder) -> None:
    """The run's findings as the page's headline, in the words of the CLI's closing lines and the Home card
    (thinklens.calibration.findings.finding_sentence): an effect as a claim, anything else as what was not shown."""
    from app.dashboard import finding_tone
    from thinklens.calibration.findings import finding_sentence

    findings = (run.meta().get("summary") or {}).get("findings") or []
    for f in findings:
        text = f"**{f.get('verdict')}** · {finding_sentence(f)}"
        # a harm's effect (a rejected LYNX bound, a significant accuracy loss) is a failure, never shown green
        {"success": st.success, "error": st.error}.get(finding_tone(f), st.warning)(text)
    show_evidence(run)


def show_evidence(run: RunFolder) -> None:
    """The links to the traces behind the run's numbers (``evidence.links``), under its headline."""
    from app.evidence import links, links_html

    try:
        rel = run.path.resolve().relative_to(runs_root().resolve()).as_posix()
        html = links_html(links(runs_root(), rel))
    except (ValueError, OSError, ThinklensError):
        return
    if html:
        st.markdown(html, unsafe_allow_html=True)


def runs_multiselect(kind: str, label: str, key: str, default: int = 2) -> list[RunFolder]:
    """A multiselect of the readable, finished runs of ``kind`` (the ``default`` newest preselected)."""
    good = [r for r in discover_runs(runs_root(), kind) if r.error is None and r.status == "done"]
    ids = [r.run_id for r in good]
    chosen = st.multiselect(label, ids, default=ids[:default], key=key)
    return [RunFolder(safe_run_path(kind, i)) for i in chosen]


def show_figure(run: RunFolder, name: str, key: str | None = None, **kwargs: Any) -> bool:
    """Render ``figures/<name>.json`` of a run with its downloads; an error card instead of an exception."""
    try:
        fig = run.read_figure(name)
    except (OSError, ValueError, ThinklensError) as e:
        error_card(f"figure {name!r} of {run.kind}/{run.run_id}", f"{type(e).__name__}: {e}",
                   fix=rerun_command(run.meta().get("job", run.kind), run.path))
        return False
    chart(fig, key=key or f"fig-{run.kind}-{run.run_id}-{name}", name=f"{run.kind}-{run.run_id}-{name}")
    return True


def read_result(run: RunFolder, name: str) -> Any | None:
    """``results/<name>.json`` of a run, or None with an error card."""
    try:
        return run.read_result(name)
    except (OSError, ValueError, ThinklensError) as e:
        error_card(f"result {name!r} of {run.kind}/{run.run_id}", f"{type(e).__name__}: {e}",
                   fix=rerun_command(run.meta().get("job", run.kind), run.path))
        return None


def missing_results(path: Path, needed: tuple[str, ...] = ()) -> list[str]:
    """What a run that says it is done lacks: ``results/<name>.json`` of ``needed`` (any result when empty).

    A run whose meta.json is not ``done`` lacks nothing yet (it is running or was stopped); a finished run
    whose ``results/`` was removed or never fully written is half-written.

    Example:
        >>> import tempfile
        >>> from thinklens.runs.folders import RunFolder
        >>> run = RunFolder.create("demo", {}, root=tempfile.mkdtemp(), run_id="a")
        >>> run.finish({}); missing_results(run.path)
        ['results/']
        >>> _ = run.write_result("table", []); missing_results(run.path, ("table", "seek"))
        ['results/seek.json']
        >>> _ = (run.path / "results" / "table.json").write_text('[{"cut off'); missing_results(run.path)
        ['results/table.json (truncated)']
    """
    import json

    try:
        status = json.loads((Path(path) / "meta.json").read_text()).get("status")
    except (OSError, ValueError, AttributeError):
        return []
    if status != "done":
        return []
    results = Path(path) / "results"
    if not needed:
        if not (results.is_dir() and any(results.glob("*.json"))):
            return ["results/"]
        return [f"results/{f.name}{INCOMPLETE_MARK}" for f in sorted(results.glob("*.json")) if not _readable(f)]
    lacking = [f"results/{n}.json" for n in needed if not (results / f"{n}.json").is_file()]
    return lacking + [f"results/{n}.json{INCOMPLETE_MARK}" for n in needed
                      if (results / f"{n}.json").is_file() and not _readable(results / f"{n}.json")]


def _readable(path: Path) -> bool:
    """Whether a result file parses as JSON (a file cut off while being written does not)."""
    import json

    try:
        json.loads(path.read_bytes())
        return True
    except (OSError, ValueError):
        return False


def results_missing(run: RunFolder, needed: tuple[str, ...] = ()) -> bool:
    """True, with a "results missing" card and the command that finishes the run, when ``run`` says it is done
    but lacks its results (:func:`missing_results`); False otherwise. Any page calls it before reading results."""
    lacking = missing_results(run.path, needed)
    if not lacking:
        return False
    from app.dashboard import demo_commands, fix_command
    from thinklens.runs.folders import RunEntry

    entry = RunEntry(path=run.path, kind=run.kind, run_id=run.run_id, status="done", config=_config_or_none(run))
    cut = [x.removesuffix(INCOMPLETE_MARK) for x in lacking if x.endswith(INCOMPLETE_MARK)]
    gone = [x for x in lacking if not x.endswith(INCOMPLETE_MARK)]
    what = "; ".join(([f"lacks {', '.join(f'`{x}`' for x in gone)} (removed, or never written)"] if gone else [])
                     + ([f"{', '.join(f'`{x}`' for x in cut)} cannot be read (cut off while writing)"] if cut else []))
    st.warning(f"**{'results missing' if gone else 'incomplete'}** · run `{run.kind}/{run.run_id}` says it is done but "
               f"{what}. Its headline is stale until it is finished. To finish it, run:")
    st.code(fix_command(entry, demo_commands(runs_root())), language="bash", wrap_lines=True)
    return True


def _config_or_none(run: RunFolder) -> dict | None:
    try:
        return run.config()
    except (OSError, ValueError):
        return None
