"""The traces behind a run's numbers: the links a page puts under its headline (and Home under each card), so that
every number that summarises generated text leads to the texts it was computed on, filtered to the ones that count.

Pure functions of a run folder (no Streamlit): ``links(root, run)`` -> ``[(label, url)]``.

* a run whose job declares a trace reader of its own (``Job.traces``: MI trajectories, LYNX test rollouts, steered
  samples, latent problems) links its viewer;
* the numbers Home headlines (a run's first findings) link the traces each counts, as the run's job declares them
  (``Job.headline_traces``, read from the job registry, so a new job needs no edit here): a steer coefficient's steered
  texts and the problems it broke, the rollouts LYNX exits early at a δ and the exits that answer wrong, the examples
  a correctness probe gets most wrong;
* any other run whose folder holds generated texts (``trace_records``) links all of them and, for each true/false
  field of its records (``correct``, ``closed``), the ones on each side (``correct=false``: what its accuracy counts
  as wrong); records paired against a baseline (``run_views.paired_records``: zoo-eval's models, hybrid's modes,
  reasoning-vector's αs) link per setting its wrong answers and the problems it broke and fixed;
* an SAE run links its features' top-activating contexts (the Features page);
* a validate run links each setting's own run that holds traces.

Example:
    >>> import json, tempfile
    >>> root = Path(tempfile.mkdtemp()); run = root / "eval" / "a"; (run / "completions").mkdir(parents=True)
    >>> _ = (run / "completions" / "batch-00000.json").write_text(json.dumps(
    ...     [{"id": "p0", "text": "4", "correct": True}, {"id": "p1", "text": "7", "correct": False}]))
    >>> [label for label, _ in links(root, "eval/a")]
    ['all 2 traces', 'correct: 1 true', 'correct: 1 false']
    >>> links(root, "eval/a")[2][1]
    '/Trace_viewer?run=eval/a&where=correct%3Dfalse'
"""

from __future__ import annotations

from pathlib import Path

from app.trace_records import outcome_fields, trace_records
from app.traces import link_html, reader, run_kind, trace_link, traces_link
from thinklens.runs.jobs import jobs_by_kind
from thinklens.runs.run_views import HeadlineTraces

FEATURES_PAGE = "/Features"


def links(root: Path, run: str) -> list[tuple[str, str]]:
    """``(label, url)`` of the traces behind the numbers of ``root/run`` (``run``: ``<kind>/<id>`` or a setting's
    run inside a validate run); empty when the run holds no generated text."""
    root = Path(root)
    kind = run_kind(run, root)
    path = root / run
    out: list[tuple[str, str]] = []
    if kind == "sae":
        out.append(("top-activating contexts of its features", f"{FEATURES_PAGE}?run={Path(run).name}&kind=sae"))
    if kind == "validate":
        for sub in sorted((path / "settings").glob("*/*/config.json")):
            rel = sub.parent.relative_to(root).as_posix()
            inner = links(root, rel)
            if inner:
                out.append((f"{sub.parent.parent.name}: {inner[0][0]}", inner[0][1]))
        return out
    if reader(kind) is not None:
        out.append((f"its {kind} traces", traces_link(run)))
        return out + [(h.label, headline_link(run, h)) for h in headline_traces(kind, path)]
    records = trace_records(path)
    if not records:
        return out
    out.append((f"all {len(records)} traces", traces_link(run)))
    headlined = headline_traces(kind, path)
    out += [(h.label, headline_link(run, h)) for h in headlined]
    points = paired_points(records)
    if points:  # a number per setting (a model, a mode, an α): its wrong answers, and what it broke and fixed
        for point, (wrong, broken, fixed, baseline) in points.items():
            if wrong:  # a link only to something: a setting with no wrong answer says so in its number
                out.append((f"{point}: {wrong} wrong", traces_link(run, f"point={point};correct=false")))
            if point != baseline:
                out += [(f"{point}: {n} {change} against {baseline}", traces_link(run, f"point={point};{change}=true"))
                        for change, n in (("broken", broken), ("fixed", fixed)) if n]
        return out
    said = {h.where.split("=", 1)[0] for h in headlined if h.where and ";" not in h.where}
    for name, counts in outcome_fields(records).items():
        if name in said:  # a headline's link to one side of it says what they are (a probe's most wrong examples)
            continue
        for value in ("true", "false"):
            if counts[value]:
                out.append((f"{name}: {counts[value]} {value}", traces_link(run, f"{name}={value}")))
    return out


def headline_traces(kind: str, path: Path) -> list[HeadlineTraces]:
    """The traces behind each number the headline of the run at ``path`` states, as the job that writes ``kind``
    declares them (``Job.headline_traces``); [] when it declares none or no registered job writes ``kind``."""
    job = jobs_by_kind().get(kind)
    made = None if job is None else job.declared("headline_traces")
    return [] if made is None else list(made(Path(path)))


def headline_link(run: str, h: HeadlineTraces) -> str:
    """The trace viewer's URL of one headline number's traces: its one trace, else those its filter keeps.

    Example:
        >>> headline_link("eval/a", HeadlineTraces("accuracy 0.5: 2 wrong", where="correct=false"))
        '/Trace_viewer?run=eval/a&where=correct%3Dfalse'
        >>> headline_link("eval/a", HeadlineTraces("its one sample", trace="samples/0", quantity="words"))
        '/Trace_viewer?run=eval/a&trace=samples/0&quantity=words'
    """
    return trace_link(run, h.trace, h.quantity) if h.trace is not None else traces_link(run, h.where)


def paired_points(records: list) -> dict[str, tuple[int, int, int, str]]:
    """Point -> ``(wrong, broken, fixed, baseline)`` of records paired against a baseline, the first point
    (:func:`thinklens.runs.run_views.paired_records`), in their order; {} for records that are not."""
    counts: dict[str, list[int]] = {}
    for r in records:
        f = r.facts
        if "point" in f and "baseline_correct" in f:
            c = counts.setdefault(str(f["point"]), [0, 0, 0])
            c[0] += f.get("correct") is False
            c[1] += bool(f.get("broken"))
            c[2] += bool(f.get("fixed"))
    baseline = next(iter(counts), "")
    return {p: (c[0], c[1], c[2], baseline) for p, c in counts.items()}


def links_html(found: list[tuple[str, str]]) -> str:
    """The links as one line of HTML that opens them in the same tab (``st.markdown(..., unsafe_allow_html=True)``);
    "" for none.

    Example:
        >>> links_html([("all 2 traces", "/Trace_viewer?run=eval/a")])
        'Traces behind these numbers: <a href="/Trace_viewer?run=eval/a" target="_self" class="tl-link">all 2 traces</a>'
    """
    if not found:
        return ""
    return "Traces behind these numbers: " + " · ".join(link_html(label, url) for label, url in found)
