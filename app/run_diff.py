"""Why two runs differ: their config diff (only the keys that differ), the code version of each, the data set and its
hash, and where both were graded on the same problems, the metric difference with its paired interval (McNemar's
exact interval and test, ``thinklens.calibration.stats``). Pure functions of run folders (no Streamlit).

Example:
    >>> config_diff({"model": "a", "n": 8, "seed": 0}, {"model": "b", "n": 8, "seed": 0})
    [{'key': 'model', 'run A': 'a', 'run B': 'b'}]
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.trace_records import Record, problems_hash, trace_records

MISSING = "(not set)"


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, Mapping):
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: d}


def _show(v: Any) -> str:
    return MISSING if v is _NOTHING else (json.dumps(v) if not isinstance(v, str) else v)


_NOTHING = object()


def config_diff(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """The config keys whose values differ between two runs (nested keys dotted), as rows of plain strings."""
    fa, fb = _flat(a or {}), _flat(b or {})
    keys = list(dict.fromkeys([*fa, *fb]))
    return [{"key": k, "run A": _show(fa.get(k, _NOTHING)), "run B": _show(fb.get(k, _NOTHING))}
            for k in keys if fa.get(k, _NOTHING) != fb.get(k, _NOTHING)]


def code_version(path: Path) -> dict[str, str]:
    """The code a run was written by (meta.json's ``code``): git commit (and whether the tree was dirty), the source
    hash and the thinklens version; '–' for what it does not record."""
    try:
        code = json.loads((Path(path) / "meta.json").read_text()).get("code") or {}
    except (OSError, ValueError, AttributeError):
        code = {}
    commit = str(code.get("git_commit") or "–")[:10]
    return {"git commit": commit + (" (uncommitted changes)" if code.get("git_dirty") else ""),
            "source hash": str(code.get("source_hash") or "–")[:12],
            "thinklens": str((code.get("versions") or {}).get("thinklens") or "–")}


def dataset(path: Path, config: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The data set a run read (its ``--data``/``--prompts``, else the synthetic task) and a hash: of the file when
    the config names one that exists, else of the problems its records are about (``trace_records.problems_hash``)."""
    cfg = dict(config or {})
    name = next((str(cfg[k]) for k in ("data", "prompts") if cfg.get(k)), "")
    if not name:
        steps = cfg.get("step_counts") or [cfg.get("min_steps"), cfg.get("max_steps")]
        name = "synthetic task" + (f", steps {steps}" if any(s is not None for s in steps or []) else "")
    file = Path(name)
    if file.is_file():
        digest, what = hashlib.sha256(file.read_bytes()).hexdigest()[:12], "sha256 of the file"
    else:
        records = trace_records(path)
        digest, what = (problems_hash(records), f"hash of the {len(records)} problems graded") if records else ("–", "no problems recorded")
    return {"data": name, "hash": digest, "hash of": what}


def _graded(records: list[Record]) -> dict[str, bool]:
    return {r.problem: bool(r.facts["correct"]) for r in records
            if r.problem is not None and isinstance(r.facts.get("correct"), bool)}


def paired_difference(a: Path, b: Path) -> dict[str, Any]:
    """Accuracy of run A minus run B on the problems both graded, with McNemar's exact paired interval and p value.

    Returns ``{"paired": True, "n", "accuracy A", "accuracy B", "difference", "ci", "p", "only A right",
    "only B right"}`` when the two runs graded the same problems; else ``{"paired": False, "why": ...}``.
    """
    from thinklens.calibration.stats import mcnemar, mcnemar_interval

    ga, gb = _graded(trace_records(a)), _graded(trace_records(b))
    if not ga or not gb:
        return {"paired": False, "why": "a run has no graded texts (records with a problem and a true/false 'correct')"}
    if set(ga) != set(gb):
        shared = len(set(ga) & set(gb))
        return {"paired": False, "why": f"the runs graded different problems ({len(ga)} and {len(gb)}, {shared} shared): "
                                         "a paired interval needs the same problems on both sides"}
    keys = sorted(ga)
    xa, xb = [ga[k] for k in keys], [gb[k] for k in keys]
    lo, hi = mcnemar_interval(xa, xb)
    acc_a, acc_b = sum(xa) / len(xa), sum(xb) / len(xb)
    return {"paired": True, "n": len(keys), "accuracy A": acc_a, "accuracy B": acc_b, "difference": acc_a - acc_b,
            "ci": (lo, hi), "p": mcnemar(xa, xb), "only A right": sum(x and not y for x, y in zip(xa, xb)),
            "only B right": sum(y and not x for x, y in zip(xa, xb))}


def paired_sentence(p: Mapping[str, Any]) -> str:
    """The paired difference in words.

    Example:
        >>> print(paired_sentence({"paired": True, "n": 20, "accuracy A": 0.6, "accuracy B": 0.4, "difference": 0.2,
        ...                        "ci": (0.01, 0.39), "p": 0.04, "only A right": 5, "only B right": 1}))  # doctest: +NORMALIZE_WHITESPACE
        accuracy A - B = +0.200, 95% paired interval [+0.010, +0.390] (exact McNemar, p = 0.04) on the same 20 problems:
        A 0.600, B 0.400; only A right on 5, only B right on 1
    """
    if not p.get("paired"):
        return f"no paired difference: {p.get('why')}"
    lo, hi = p["ci"]
    return (f"accuracy A - B = {p['difference']:+.3f}, 95% paired interval [{lo:+.3f}, {hi:+.3f}] (exact McNemar, "
            f"p = {p['p']:.2g}) on the same {p['n']} problems: A {p['accuracy A']:.3f}, B {p['accuracy B']:.3f}; "
            f"only A right on {p['only A right']}, only B right on {p['only B right']}")
