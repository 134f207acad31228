"""The home page's words about runs: model, data, age, two or three headline numbers, the page that shows
a run, the command that repairs a broken one, and the zoo's accuracy per step count.

Pure functions of ``thinklens.runs.RunEntry`` values and small result files (no Streamlit here), so
they are tested directly.

Example:
    >>> from pathlib import Path
    >>> from thinklens.runs import RunEntry
    >>> e = RunEntry(path=Path("runs/probe/a"), kind="probe", run_id="a", status="done",
    ...              summary={"target": "intermediate", "best_site": "resid_post.2", "best_score": 0.34, "scoring": "r2"},
    ...              config={"model": "tiny-think", "data": ""})
    >>> headline(e)
    'intermediate value read best at resid_post.2 (r2 0.34)'
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from thinklens.runs import RunEntry

PAGES: dict[str, tuple[str, str]] = {
    "mi-peaks": ("pages/2_MI_peaks.py", "MI peaks"),
    "lynx": ("pages/3_Probes_and_LYNX.py", "Probes and LYNX"),
    "probe": ("pages/3_Probes_and_LYNX.py", "Probes and LYNX"),
    "sae": ("pages/7_Features.py", "Features"),
    "steer": ("pages/4_Steering.py", "Steering"),
    "reasoning-vector": ("pages/4_Steering.py", "Steering"),
    "hybrid": ("pages/4_Steering.py", "Steering"),
    "latent-eval": ("pages/6_Latent_reasoning.py", "Latent reasoning"),
    "latent-train": ("pages/6_Latent_reasoning.py", "Latent reasoning"),
}
"""Run kind -> (page file, page title) of the page that shows its runs."""


def _pct(x: Any) -> str:
    return "?" if not isinstance(x, (int, float)) else f"{100 * x:.0f}%"


def _num(x: Any, digits: int = 2) -> str:
    return "?" if not isinstance(x, (int, float)) else f"{x:.{digits}f}"


def age(created: str, now: dt.datetime | None = None) -> str:
    """``'2026-11-30T11:31:23'`` -> ``'5 min ago'`` (``'?'`` when unknown).

    Example:
        >>> age("2026-11-30T10:00:00", now=dt.datetime(2026, 11, 30, 12, 30))
        '2 h ago'
    """
    try:
        then = dt.datetime.fromisoformat(created)
    except (TypeError, ValueError):
        return "?"
    s = ((now or dt.datetime.now()) - then).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{int(s // size)} {unit} ago"
    return "just now"


def model_of(entry: RunEntry) -> str:
    """The model(s) of a run: its config's model fields."""
    cfg = entry.config or {}
    names = [cfg.get("model")] + [cfg.get(k) for k in ("thinking", "compare", "models") if cfg.get(k)]
    out: list[str] = []
    for n in names:
        for part in (n if isinstance(n, list) else str(n or "").split(",")):
            part = str(part).strip()
            if part and part not in out:
                out.append(part)
    if entry.kind == "steer" and not out and cfg.get("sae"):
        out.append(Path(str(cfg["sae"])).name)
    return ", ".join(out) or "-"


def data_of(entry: RunEntry) -> str:
    """What the run read: its --data, prompts or the synthetic task with its step range."""
    cfg = entry.config or {}
    for k in ("data", "prompts"):
        if cfg.get(k):
            return Path(str(cfg[k])).name
    if "steps" in cfg and isinstance(cfg["steps"], list):
        return f"synthetic, {min(cfg['steps'])}-{max(cfg['steps'])} steps"
    if "min_steps" in cfg and "max_steps" in cfg:
        return f"synthetic, {cfg['min_steps']}-{cfg['max_steps']} steps"
    if cfg.get("n_problems") or cfg.get("n"):
        return "synthetic task"
    return "-"


def _read(entry: RunEntry, name: str) -> Any:
    try:
        return json.loads((entry.path / "results" / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None


def _lynx(entry: RunEntry, s: Mapping[str, Any]) -> str:
    rows = _read(entry, "per_delta") or []
    skipped = (s.get("skipped_deltas") or ((_read(entry, "lynx") or {}).get("summary") or {}).get("skipped_deltas") or [])
    valid = [r for r in rows if r.get("consistent")]
    auroc = f"probe AUROC {_num(s.get('test_auroc'))}"
    tail = f"{len(valid)}/{len(rows) + len(skipped)} δ valid" + (f" ({len(skipped)} skipped: calibration too small)" if skipped else "")
    if not valid:
        return f"no δ within its bound; {tail}; {auroc}"
    saving = [r for r in valid if (r.get("saving") or 0) > 0] or valid
    best = min(saving, key=lambda r: r["delta"])  # the most conservative valid δ that saves tokens
    change = best.get("accuracy_change")
    points = "?" if change is None else f"{100 * change:+.1f} points"
    return f"{100 * (best.get('saving') or 0):.1f}% fewer tokens at {points}, δ {best['delta']:g}, valid; {tail}; {auroc}"


def _mi(entry: RunEntry, s: Mapping[str, Any]) -> str:
    models = s.get("models") or {}
    main = next(iter(models.values()), {})
    words = ", ".join(repr(w) for w in (s.get("top_words") or [])[:2]) or "none"
    rest = [f"{k} {_pct(v.get('accuracy'))}" for k, v in list(models.items())[1:3]]
    others = f"; vs {', '.join(rest)}" if rest else ""
    return (f"{next(iter(models), '?')} {_pct(main.get('accuracy'))} right, peaks at {_pct(s.get('mean_peak_fraction'))} "
            f"of tokens, thinking words {words}{others} ({s.get('n_problems', '?')} problems)")


def _probe(entry: RunEntry, s: Mapping[str, Any]) -> str:
    return f"{s.get('target', '?')} value read best at {s.get('best_site', '?')} ({s.get('scoring', 'score')} {_num(s.get('best_score'))})"


def _steer(entry: RunEntry, s: Mapping[str, Any]) -> str:
    res = _read(entry, "steer") or {}
    word = (res.get("chosen") or {}).get("word")
    return (f"feature {s.get('feature', '?')} at {s.get('site', '?')}: correlation {_num(s.get('corr'))} with the next "
            f"{word!r}" if word else f"feature {s.get('feature', '?')} at {s.get('site', '?')}, correlation {_num(s.get('corr'))}")


def _vector(entry: RunEntry, s: Mapping[str, Any]) -> str:
    best = s.get("best") or {}
    return (f"|v| {_num(s.get('norm'), 1)}, accuracy {_pct(s.get('alpha0_accuracy'))} at α 0, best {best.get('group', '?')} "
            f"at α {best.get('alpha', '?')} ({_pct(best.get('accuracy'))})")


def _latent_eval(entry: RunEntry, s: Mapping[str, Any]) -> str:
    rows = [r for r in (s.get("rows") or []) if isinstance(r.get("accuracy"), (int, float))]
    if not rows:
        return "no methods evaluated"
    top = sorted(rows, key=lambda r: -r["accuracy"])[:3]
    return ", ".join(f"{r['label']} {_pct(r['accuracy'])}" for r in top) + f" ({len(rows)} methods)"


def _zoo_eval(entry: RunEntry, s: Mapping[str, Any]) -> str:
    acc = s.get("accuracy") or {}
    means = {m: sum(v.values()) / len(v) for m, v in acc.items() if v}
    return ", ".join(f"{m} {_pct(a)}" for m, a in sorted(means.items(), key=lambda kv: -kv[1])) + " (mean over step counts)"


def _capture(entry: RunEntry, s: Mapping[str, Any]) -> str:
    sites = s.get("sites") or []
    return f"{s.get('n_rows', '?')} rows at {len(sites)} sites from {s.get('n_prompts', '?')} prompts ({s.get('positions', '?')} positions)"


def _sae(entry: RunEntry, s: Mapping[str, Any]) -> str:
    m = {**s, **(_read(entry, "metrics") or {})}
    dead = m.get("dead_features")
    return (f"explained variance {_num(m.get('explained_variance'), 3)}, L0 {_num(m.get('l0'), 0)}, "
            f"{dead if dead is not None else '?'} dead of {m.get('d_sae', '?')} features at {m.get('site', '?')}")


def _hybrid(entry: RunEntry, s: Mapping[str, Any]) -> str:
    res = s if "hybrid" in s and isinstance(s.get("hybrid"), Mapping) else (_read(entry, "hybrid") or {})
    acc = {m: r.get("accuracy") for m, r in res.items() if isinstance(r, Mapping)}
    parts = [f"{m} {_pct(acc[m])}" for m in ("hybrid", "base", "thinking") if m in acc]
    fired = (res.get("hybrid") or {}).get("fired_fraction") if isinstance(res.get("hybrid"), Mapping) else None
    return ", ".join(parts) + (f"; steering fired on {_pct(fired)} of tokens" if fired is not None else "")


def _latent_train(entry: RunEntry, s: Mapping[str, Any]) -> str:
    m = _read(entry, "metrics") or s
    ev = (m.get("eval") or {}).get("mean_accuracy", (m.get("eval") or {}).get("accuracy"))
    held_out = ev if isinstance(ev, dict) else _pct(ev)
    return f"{m.get('method', '?')}: {m.get('steps', '?')} steps in {_num(m.get('train_wall_s'), 0)} s, held-out accuracy {held_out}"


HEADLINES: dict[str, Callable[[RunEntry, Mapping[str, Any]], str]] = {
    "lynx": _lynx, "mi-peaks": _mi, "probe": _probe, "steer": _steer, "reasoning-vector": _vector,
    "latent-eval": _latent_eval, "zoo-eval": _zoo_eval, "capture": _capture, "sae": _sae, "hybrid": _hybrid,
    "latent-train": _latent_train,
}


def _generic(summary: Mapping[str, Any]) -> str:
    parts = [f"{k} {_num(v, 3) if isinstance(v, float) else v}" for k, v in summary.items()
             if isinstance(v, (int, float, str)) and not isinstance(v, bool)][:3]
    return ", ".join(parts) or "-"


def findings_headline(findings: list[Mapping[str, Any]], limit: int = 2) -> str:
    """The run's first findings in words (thinklens.stats.finding_sentence): what the CLI's closing lines and the
    page headline say too, so a claim whose verdict is not ``effect`` is never headlined as one."""
    from thinklens.stats import finding_sentence

    return " · ".join(finding_sentence(f) for f in findings[:limit])


def headline(entry: RunEntry) -> str:
    """The run in a line: its findings when the job reports them (claim, interval, control, verdict), else two or
    three headline numbers in words (``'-'`` for a run without a summary)."""
    if entry.status == "running":
        return "still running (or stopped before it finished: rerun the same command to resume)"
    s = entry.summary or {}
    if s.get("findings"):
        return findings_headline(list(s["findings"]))
    try:
        return HEADLINES.get(entry.kind, lambda e, x: _generic(x))(entry, s) if (s or entry.kind in HEADLINES) else "-"
    except (AttributeError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return _generic(s)


NONE = "–"
"""What a table cell shows for a value a run or a model does not have (never ``None``)."""


def run_state(entry: RunEntry, lacking: list[str] | None = None) -> tuple[str, str]:
    """A run's status and headline as the home page shows them: a half-written run (``lacking``: what
    ``common.missing_results`` says its done run lacks) is ``'results missing'``, never ``'done'`` with a stale headline.

    Example:
        >>> from thinklens.runs import RunEntry
        >>> e = RunEntry(path=Path("runs/probe/a"), kind="probe", run_id="a", status="done", summary={"best_score": 0.3})
        >>> run_state(e, ["results/"])
        ('results missing', 'results missing: it says done but lacks results/ (its old headline is stale)')
    """
    if lacking:
        return "results missing", f"results missing: it says done but lacks {', '.join(lacking)} (its old headline is stale)"
    return entry.status or NONE, headline(entry) or NONE


def run_rows(entries: list[RunEntry], lacking: Mapping[str, list[str]] | None = None,
             now: dt.datetime | None = None) -> list[dict[str, str]]:
    """The home page's table of runs, one row of strings per run (``lacking``: ``'kind/run_id'`` -> what a
    half-written run lacks); an unknown value is ``'–'``, never None."""
    rows = []
    for e in entries:
        status, line = run_state(e, (lacking or {}).get(f"{e.kind}/{e.run_id}"))
        row = {"kind": e.kind, "id": e.run_id, "status": status, "model": model_of(e), "data": data_of(e),
               "age": age(e.created, now), "headline": line}
        rows.append({k: NONE if v in (None, "", "-", "?") else str(v) for k, v in row.items()})
    return rows


def zoo_table_rows(rows: list[dict], step_cols: list[str]) -> list[dict[str, str]]:
    """``zoo_accuracy_rows``'s rows for display: size (or ``'not trained'``), accuracy per step count as
    ``'92%'`` and ``'–'`` where the model was not evaluated at that step count, the description last.

    Example:
        >>> zoo_table_rows([{"model": "m", "trained": True, "MB": 2.05, "description": "d", "2 steps": 92.0}],
        ...                ["2 steps", "3 steps"])
        [{'model': 'm', 'size': '2.05 MB', '2 steps': '92%', '3 steps': '–', 'description': 'd'}]
    """
    out = []
    for r in rows:
        row = {"model": r["model"], "size": f"{r['MB']:g} MB" if r.get("trained") else "not trained"}
        for c in step_cols:
            v = r.get(c)
            row[c] = f"{v:.0f}%" if isinstance(v, (int, float)) else NONE
        row["description"] = r.get("description") or NONE
        out.append(row)
    return out


def _job_of(entry: RunEntry) -> str:
    """The job that made a run (meta.json's ``job``; the kind for older runs)."""
    try:
        return str(json.loads((entry.path / "meta.json").read_text()).get("job") or entry.kind)
    except (OSError, ValueError, AttributeError):
        return entry.kind


def rerun_command(job: str, path: Path, *extra: str) -> str:
    """``thinklens run <job> --config <path>/config.json --out <path> ...``: reruns (resumes) a run in its folder."""
    return shlex.join(["thinklens", "run", job, "--config", str(Path(path) / "config.json"), "--out", str(path), *extra])


def fix_command(entry: RunEntry, demo_argv: Mapping[str, list[str]] | None = None) -> str:
    """The command that repairs a broken run: the demo's own step for a demo run, else a rerun of its id.

    A readable config reruns into the same folder (``--config`` of its config.json resumes it); an
    unreadable one is removed first and the job run again (a demo run with the demo's own step).
    """
    job = _job_of(entry)
    demo = (demo_argv or {}).get(f"{entry.kind}/{entry.run_id}")
    remove = shlex.join(["rm", "-r", str(entry.path)])
    if demo:
        return " ".join([remove, "&&", shlex.join(["thinklens", *demo])])
    if entry.config is not None:
        return rerun_command(job, entry.path)
    return " ".join([remove, "&&", shlex.join(["thinklens", "run", job, "--run-id", entry.run_id])])


def demo_commands(runs: Path) -> dict[str, list[str]]:
    """``'kind/run_id'`` -> the demo's ``thinklens`` arguments that make that run (from ``thinklens.demo``)."""
    try:
        from thinklens.demo import DEMO_STEPS
    except ImportError:
        return {}
    out: dict[str, list[str]] = {}
    for step in DEMO_STEPS:
        args = [a.format(runs=runs) for a in step.argv]
        if args[:1] == ["run"] and len(args) > 1 and "--run-id" in args[:-1]:
            out.setdefault(f"{args[1]}/{args[args.index('--run-id') + 1]}", args)
    return out


def zoo_accuracy_rows(zoo_names: list[str], zoo_dir: Path, descriptions: Mapping[str, str]) -> tuple[list[dict], list[str]]:
    """One row per zoo model: trained, size, description and held-out accuracy per step count (as numbers).

    Returns the rows and the step-count columns (``'2 steps'``...), in order.
    """
    rows, steps = [], set()
    for name in zoo_names:
        folder = zoo_dir / name
        meta: dict[str, Any] = {}
        for fname in ("zoo.json", "latent.json"):
            try:
                meta = json.loads((folder / fname).read_text())
                break
            except (OSError, ValueError):
                continue
        acc = (meta.get("eval") or {}).get("accuracy") or {}
        acc = acc if isinstance(acc, Mapping) else {}
        size = sum(p.stat().st_size for p in folder.glob("*.safetensors")) if folder.exists() else 0
        row: dict[str, Any] = {"model": name, "trained": (folder / "config.json").exists(),
                               "MB": round(size / 2**20, 2), "description": descriptions.get(name, "")}
        for k, v in acc.items():
            if isinstance(v, (int, float)) and str(k).isdigit():
                row[f"{k} steps"] = round(100 * v, 1)
                steps.add(int(k))
        rows.append(row)
    cols = [f"{k} steps" for k in sorted(steps)]
    return rows, cols
