"""The traces behind a run's numbers: the links a page puts under its headline (and Home under each card), so that
every number that summarises generated text leads to the texts it was computed on, filtered to the ones that count.

Pure functions of a run folder (no Streamlit): ``links(root, run)`` -> ``[(label, url)]``.

* a run whose job declares a trace reader of its own (``Job.traces``: MI trajectories, LYNX test rollouts, steered
  samples, latent problems) links its viewer;
* the numbers Home headlines (a run's first findings) link the traces each counts (:data:`HEADLINE_LINKS`): a steer
  coefficient's steered texts and the problems it broke, the rollouts LYNX exits early at a δ and the exits that answer
  wrong, the examples a correctness probe gets most wrong;
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

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dashboard import HEADLINED
from trace_records import outcome_fields, trace_records
from traces import link_html, reader, run_kind, trace_link, traces_link

from thinklens.probes.lynx_traces import exits_at, exits_where
from thinklens.probes.probe_traces import MOST_WRONG_WHERE
from thinklens.probes.probe_traces import PROBLEMS as PROBE_PROBLEMS
from thinklens.runs.run_views import read_result_json
from thinklens.steering.steer_traces import PROBLEMS as STEER_PROBLEMS
from thinklens.steering.steer_traces import broken_where, steer_trace_id

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
    headline = HEADLINE_LINKS.get(kind)
    if reader(kind) is not None:
        out.append((f"its {kind} traces", traces_link(run)))
        return out + (headline(path, run) if headline else [])
    records = trace_records(path)
    if not records:
        return out
    out.append((f"all {len(records)} traces", traces_link(run)))
    if headline:
        out += headline(path, run)
    points = paired_points(records)
    if points:  # a number per setting (a model, a mode, an α): its wrong answers, and what it broke and fixed
        for point, (wrong, broken, fixed, baseline) in points.items():
            if wrong:  # a link only to something: a setting with no wrong answer says so in its number
                out.append((f"{point}: {wrong} wrong", traces_link(run, f"point={point};correct=false")))
            if point != baseline:
                out += [(f"{point}: {n} {change} against {baseline}", traces_link(run, f"point={point};{change}=true"))
                        for change, n in (("broken", broken), ("fixed", fixed)) if n]
        return out
    for name, counts in outcome_fields(records).items():
        if kind == "probe" and name == "most_wrong":  # its headline link says what they are
            continue
        for value in ("true", "false"):
            if counts[value]:
                out.append((f"{name}: {counts[value]} {value}", traces_link(run, f"{name}={value}")))
    return out


def headline_findings(path: Path) -> list[dict[str, Any]]:
    """The findings Home's card states for the run at ``path`` (the first ``dashboard.HEADLINED`` of meta.json's)."""
    try:
        meta = read_result_json(Path(path) / "meta.json")
    except ValueError:  # ThinklensError: unreadable
        return []
    found = (meta.get("summary") or {}).get("findings") or []
    return [f for f in found[:HEADLINED] if isinstance(f, dict)]


def steer_headline_links(path: Path, run: str) -> list[tuple[str, str]]:
    """Per coefficient of the headlined findings (the feature's word rate at c): the steered texts it counts and the
    problems that steering broke (``results/steer_problems.json``); a run from before that file links its one sample."""
    coeffs = list(dict.fromkeys(float(f["extra"]["coeff"]) for f in headline_findings(path)
                                if "coeff" in (f.get("extra") or {})))
    if not coeffs:
        return []
    feature = (read_result_json(Path(path) / "meta.json").get("summary") or {}).get("feature")
    points = {c: steer_trace_id({"arm": "feature", "feature": feature, "coeff": c}) for c in coeffs}
    file = Path(path) / "results" / f"{STEER_PROBLEMS}.json"
    if not file.is_file():
        return [(f"c={c:g}: its first sample", trace_link(run, point, "diff")) for c, point in points.items()]
    records = read_result_json(file)
    out = []
    for c, point in points.items():
        mine = [r for r in records if r.get("point") == point]
        if not mine:
            continue
        out.append((f"c={c:g}: the {len(mine)} steered texts", traces_link(run, f"point={point}")))
        broken = sum(bool(r.get("broken")) for r in mine)
        if broken:
            out.append((f"c={c:g}: {broken} problems it broke", traces_link(run, broken_where(point))))
    return out


def lynx_headline_links(path: Path, run: str) -> list[tuple[str, str]]:
    """Per δ of the headlined findings (its saving and accuracy change): the test rollouts LYNX exits early at δ and
    those whose exit answers wrong."""
    out = []
    for d in dict.fromkeys(float(f["extra"]["delta"]) for f in headline_findings(path) if "delta" in (f.get("extra") or {})):
        try:
            taken = exits_at(path, d)
        except (OSError, KeyError, ValueError):  # a run whose arrays are gone: its card says so
            continue
        if not taken:
            continue
        out.append((f"δ {d:g}: {len(taken)} early exits", traces_link(run, exits_where(d))))
        wrong = sum(not right for _, right in taken)
        if wrong:
            out.append((f"δ {d:g}: {wrong} exits answering wrong", traces_link(run, exits_where(d, correct=False))))
    return out


def probe_headline_links(path: Path, run: str) -> list[tuple[str, str]]:
    """A correctness probe's score: the examples it gets most wrong (largest held-out |p - y|,
    ``results/probe_problems.json``); nothing for a value probe (it reads teacher-forced text, no generated answer)."""
    file = Path(path) / "results" / f"{PROBE_PROBLEMS}.json"
    if not file.is_file():
        return []
    n = sum(bool(r.get("most_wrong")) for r in read_result_json(file))
    score = next((f for f in headline_findings(path) if isinstance(f.get("value"), (int, float))), None)
    what = f"{score.get('statistic', 'score')} {score['value']:.3f}: " if score else ""
    return [(f"{what}the {n} examples it gets most wrong", traces_link(run, MOST_WRONG_WHERE))] if n else []


HEADLINE_LINKS: dict[str, Callable[[Path, str], list[tuple[str, str]]]] = {
    "steer": steer_headline_links, "lynx": lynx_headline_links, "probe": probe_headline_links}
"""Run kind -> the links of the numbers its card headlines, after the link to all its traces (a kind not here links
its traces and their true/false fields)."""


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
