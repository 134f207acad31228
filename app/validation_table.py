"""Whether the instrument is calibrated: the validation table as the app shows it (pure functions, no Streamlit).

Two sources, each labelled: the committed validation records (``results/records/validate-*``, read through
``results/collect.py``'s own readers: ``validation_rows`` for the zoo's settings, ``real_validation`` for the
real-weight ones) and every ``validate`` run in the runs folder (its ``results/validate.json``). Each row: method,
setting, kind (planted, null, benchmark), the statistic with its interval, the threshold it is judged against, the
verdict, whether that is what a working method gives, the organism or model, the job the setting validates (from the
job registry) and the traces behind it.

Example:
    >>> rows = [{"method": "sae", "setting": "null", "kind": "null", "statistic": "cos", "value": 0.37, "ci": [0.36, 0.38],
    ...          "target": "within 0.1", "verdict": "no-effect", "expected": "no-effect", "ok": True, "n": 256}]
    >>> display_rows(rows, "record")[0]["interval"], display_rows(rows, "record")[0]["job"], k_of_n(rows)
    ('[0.36, 0.38]', 'sae', (1, 1))
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
RECORD_LABEL = "committed record"
"""How the page labels the rows read from the repository's committed records (not from a run of this machine)."""


def _collect() -> Any:
    """results/collect.py as a module (its readers of the committed records; results/ is its own import root)."""
    name = "thinklens_results_collect"
    if name not in sys.modules:
        import importlib.util

        if str(RESULTS) not in sys.path:  # its own imports (latent_summary, lynx_summary) live beside it
            sys.path.append(str(RESULTS))
        spec = importlib.util.spec_from_file_location(name, RESULTS / "collect.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


class _Readers:
    """results/collect.py's validation readers, wherever it keeps them (itself, or a module it imports)."""

    def __init__(self) -> None:
        self.collect = _collect()

    def __getattr__(self, name: str) -> Any:
        for module in (self.collect, sys.modules.get("validation_collectors")):
            if module is not None and hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"results/collect.py has no {name}")


def record_rows() -> list[dict[str, Any]]:
    """The committed records' rows: the zoo's settings (``collect.validation_rows``) then the real-weight ones
    (``collect.real_validation``), each with its ``source`` (the record folder) and ``model``."""
    collect = _Readers()
    names = {}
    for name, methods in collect.VALIDATION_RECORDS.items():
        for m in methods.split(","):
            names.setdefault(m, name)
    rows = []
    for r in collect.validation_rows():
        record = names.get(f"{r['method']}/{r['setting']}") or names.get(r["method"]) or "validate-*"
        doc = _record_doc(record)
        got = next((x for x in (doc or {}).get("rows", []) if x["method"] == r["method"] and x["setting"] == r["setting"]), {})
        rows.append({**r, "source": f"{RECORD_LABEL} {record}", "organism": organism_of(got), "model": "zoo"})
    real = collect.real_validation()["values"]["rows"]
    by_model = {m: name for name, (m, _) in collect.REAL_VALIDATION_RECORDS.items()}
    for r in real:
        record = next((name for name, (m, methods) in collect.REAL_VALIDATION_RECORDS.items()
                       if m == r["model"] and r["method"] in methods.replace("sae-real", "sae-real").split(",")),
                      by_model.get(r["model"], "validate-real-*"))
        kind = next((x.get("kind") for x in (_record_doc(record) or {}).get("rows", [])
                     if x["method"] == r["method"] and x["setting"] == r["setting"]), None)
        rows.append({**r, "kind": kind or _kind_of(r), "source": f"{RECORD_LABEL} {record}",
                     "organism": r["model"], "model": r["model"]})
    return rows


def real_record_docs() -> dict[str, dict[str, Any]]:
    """The committed real-weight records' documents (``results/records/<name>/results/validate.json``), by record name,
    those that exist (``collect.REAL_VALIDATION_RECORDS`` names them)."""
    docs = {name: _record_doc(name) for name in _Readers().REAL_VALIDATION_RECORDS}
    return {name: doc for name, doc in docs.items() if doc}


def _record_doc(name: str) -> dict[str, Any] | None:
    try:
        return json.loads((RESULTS / "records" / name / "results" / "validate.json").read_text())
    except (OSError, ValueError):
        return None


def _kind_of(row: Mapping[str, Any]) -> str:
    from thinklens.calibration.controls import all_settings

    key = f"{row['method']}/{row['setting']}"
    return next((s.kind for s in all_settings() if s.key == key), "null" if row.get("expected") == "no-effect" else "planted")


def organism_of(row: Mapping[str, Any]) -> str:
    """The organism or model a setting ran on, from its details (``organism``, ``organisms``, ``model``, ``pair``,
    ``lineage``); "–" when it does not say.

    Example:
        >>> organism_of({"details": {"model": "tiny-overthink"}}), organism_of({"details": {"pair": ["a", "b"]}})
        ('tiny-overthink', 'a, b')
    """
    d = row.get("details") or {}
    for k in ("organism", "organisms", "model", "pair", "lineage"):
        v = d.get(k)
        if isinstance(v, str) and v:
            return v
        if isinstance(v, (list, tuple)) and v and all(isinstance(x, str) for x in v):
            return ", ".join(v)
        if isinstance(v, Mapping) and v:
            return ", ".join(f"{a}: {b}" for a, b in v.items() if isinstance(b, str)) or "–"
    return "–"


def run_rows(path: Path) -> list[dict[str, Any]]:
    """A validate run's rows (``results/validate.json``), each with its organism and model; ``[]`` when it has none."""
    try:
        doc = json.loads((Path(path) / "results" / "validate.json").read_text())
    except (OSError, ValueError):
        return []
    model = doc.get("model") or "zoo"
    out = []
    for r in doc.get("rows") or []:
        row = dict(r)
        row.setdefault("kind", _kind_of(r))
        row["organism"] = organism_of(r) if not doc.get("model") else doc["model"]
        row["model"] = model
        out.append(row)
    return out


def k_of_n(rows: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """``(K, N)``: the settings whose verdict is the one a working method gives, of all."""
    return sum(bool(r.get("ok")) for r in rows), len(rows)


def _num(x: Any) -> str:
    return "–" if not isinstance(x, (int, float)) or isinstance(x, bool) else f"{x:.4g}"


def display_rows(rows: Sequence[Mapping[str, Any]], source: str, trace_links: Mapping[str, str] | None = None,
                 jobs: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The page's table: one row of plain values per setting (no JSON), the job the setting validates (``jobs``:
    method -> job, by default the registry's: each job declares its settings, ``Job.validations``), the traces link
    last ("" when none)."""
    if jobs is None:
        from thinklens.calibration.controls import method_jobs

        jobs = method_jobs(errors=[])
    out = []
    for r in rows:
        ci = r.get("ci") or [None, None]
        key = f"{r['method']}-{r['setting']}"
        out.append({"method": r["method"], "job": jobs.get(r["method"], "–"), "setting": r["setting"],
                    "kind": r.get("kind") or "–",
                    "statistic": r.get("statistic") or "–", "value": _num(r.get("value")),
                    "interval": f"[{_num(ci[0])}, {_num(ci[1])}]" if len(ci) == 2 else "–",
                    "threshold": r.get("target") or "–", "n": r.get("n") if isinstance(r.get("n"), int) else None,
                    "verdict": r.get("verdict") or "–", "expected": r.get("expected") or "–",
                    "as expected": "yes" if r.get("ok") else "NO",
                    "organism / model": r.get("organism") or r.get("model") or "–",
                    "source": r.get("source") or source, "traces": (trace_links or {}).get(key, "")})
    return out


def setting_trace_links(root: Path, run: str) -> dict[str, str]:
    """``'<method>-<setting>'`` -> the trace viewer on that setting's own run inside the validate run ``root/run``
    (the first of its runs that holds traces)."""
    from app.evidence import links

    out: dict[str, str] = {}
    for cfg in sorted((Path(root) / run / "settings").glob("*/*/config.json")):
        rel = cfg.parent.relative_to(root).as_posix()
        try:
            found = links(root, rel)
        except Exception:  # noqa: BLE001 - a setting's run that cannot be read has no link
            continue
        if found and cfg.parent.parent.name not in out:
            out[cfg.parent.parent.name] = found[0][1]
    return out


def failed_style(row: Mapping[str, Any]) -> str:
    """The CSS of a row: red where the setting did not come out as expected (the verdict alone decides)."""
    return "background-color: #fde2e1" if row.get("as expected") == "NO" else ""


def home_counts(root: Path) -> list[tuple[str, int, int, list[str]]]:
    """Home's validation line: ``(label, K, N, failed)`` of the committed record's summaries (results/validation.json
    and results/real_validation.json, which results/collect.py writes from the records) and of the newest finished
    validate run under ``root``.

    Example:
        >>> [label for label, *_ in home_counts(Path("/nonexistent"))]
        ['committed record, zoo organisms', 'committed record, real weights']
    """
    out = []
    for name, label in (("validation", "committed record, zoo organisms"), ("real_validation", "committed record, real weights")):
        try:
            v = json.loads((RESULTS / f"{name}.json").read_text())["values"]
            out.append((label, int(v["validated"]), int(v["n_settings"]), [str(x) for x in v.get("failed") or []]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    from thinklens.runs.folders import discover_runs

    for e in discover_runs(root, "validate"):
        s = e.summary or {}
        if e.error is None and e.status == "done" and isinstance(s.get("validated"), int):
            out.append((f"newest run validate/{e.run_id}", s["validated"], int(s.get("n_settings") or 0),
                        [str(x) for x in s.get("failed") or []]))
            break
    return out

