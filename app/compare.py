"""Several runs side by side (the app's comparison views): LYNX Pareto curves of several runs, and for every job one
table per model and data set (:func:`comparison_rows`) with a chart of their headline numbers
(:func:`figure_comparison`). What a job's rows and chart hold is the job's own declaration (``Job.compare``: SAE, steer,
reasoning-vector, hybrid and latent-eval runs have theirs); any other job's runs are compared by their findings and
summary numbers, so a new job is compared with no edit here.

The row and figure functions are pure (run entries and result files in, rows and plotly figures out);
:func:`show_comparison` is the page section that renders them.

Example:
    >>> figure_pareto_runs({}).layout.title.text
    'Early exit across runs: accuracy vs tokens'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go
from plotly.colors import qualitative

from thinklens.errors import ThinklensError
from thinklens.runs.run_views import Comparison, rounded

if TYPE_CHECKING:
    from thinklens.runs.folders import RunEntry

AXES = {"tokens": "mean tokens per rollout", "saving": "token saving vs the full rollout"}


def figure_pareto_runs(results: Mapping[str, Any], x: str = "tokens") -> go.Figure:
    """LYNX's δ sweep of every run as one line (δ at each point), with each run's full rollout and
    first-cue exit as reference markers in the same colour.

    Args:
        results: run id -> ``thinklens.probes.lynx_result.LynxResult``.
        x: ``"tokens"`` (mean tokens per rollout) or ``"saving"`` (fraction of tokens saved).
    """
    fig = go.Figure()
    colours = qualitative.Plotly
    for i, (run_id, res) in enumerate(results.items()):
        colour = colours[i % len(colours)]
        outs = res.report.outcomes

        def xs(group: list) -> list[float]:
            return [o.mean_tokens if x == "tokens" else o.saving for o in group]

        lynx = sorted([o for o in outs if o.policy == "lynx"], key=lambda o: o.param)
        fig.add_trace(go.Scatter(
            x=xs(lynx), y=[o.accuracy for o in lynx], mode="lines+markers+text", name=f"{run_id}: LYNX",
            text=[f"δ {o.param:g}" for o in lynx], textposition="top center", line={"color": colour},
            customdata=[[o.param, o.saving, o.exit_rate] for o in lynx],
            hovertemplate="δ %{customdata[0]}: accuracy %{y:.3f}, saving %{customdata[1]:.1%}, exit rate "
                          "%{customdata[2]:.1%}<extra>" + run_id + "</extra>"))
        for policy, symbol in (("full", "x"), ("first_cue", "triangle-up")):
            ref = [o for o in outs if o.policy == policy]
            if ref:
                fig.add_trace(go.Scatter(x=xs(ref), y=[o.accuracy for o in ref], mode="markers",
                                         name=f"{run_id}: {policy.replace('_', ' ')}",
                                         marker={"color": colour, "symbol": symbol, "size": 11}))
    fig.update_layout(title="Early exit across runs: accuracy vs tokens", xaxis_title=AXES.get(x, x),
                      yaxis_title="accuracy", template="plotly_white", legend={"groupclick": "toggleitem"})
    if x == "saving":
        fig.update_xaxes(tickformat=".0%")
    return fig


# ---------------------------------------------------------------- every kind side by side


def comparison_of(kind: str) -> Any:
    """The side-by-side view of ``kind``'s runs: its job's own (``Job.compare``, a
    :class:`~thinklens.runs.run_views.Comparison`), else each run's findings and summary numbers (:data:`GENERIC`); a
    ThinklensError for a kind no registered job writes."""
    from thinklens.runs.jobs import jobs_by_kind

    kinds = jobs_by_kind()
    if kind not in kinds:
        raise ThinklensError.of("run kind to compare", kind, f"one of {', '.join(kinds)}", "pick one of those kinds")
    return kinds[kind].declared("compare") or GENERIC


def __getattr__(name: str) -> Any:
    if name == "COMPARED":  # read from the registry each time (a job registered since is in it)
        from thinklens.runs.jobs import jobs_by_kind

        return tuple(k for k, job in jobs_by_kind().items() if job.compare)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def compared_kinds(capability: str, root: Any = None) -> list[str]:
    """The run kinds a capability's page puts side by side, in pipeline order: its jobs' (``Job.capability``) that
    declare a comparison of their own, and any other of its jobs' with finished runs under ``root``."""
    from thinklens.runs.folders import discover_runs
    from thinklens.runs.jobs import pipeline_jobs

    out = []
    for job in pipeline_jobs():
        if job.capability != capability or job.run_kind in out:
            continue
        if job.compare or (root is not None and any(e.error is None and e.status == "done"
                                                    for e in discover_runs(root, job.run_kind))):
            out.append(job.run_kind)
    return out


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def generic_rows(entry: "RunEntry", s: Mapping[str, Any], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Any job's run as one row: each finding's estimate with its interval and verdict, then the numbers at the top
    of its summary (a job that declares no comparison of its own is still compared, with what every summary holds).

    Example:
        >>> from pathlib import Path
        >>> from thinklens.runs.folders import RunEntry
        >>> e = RunEntry(path=Path("/nonexistent"), kind="x", run_id="a", status="done")
        >>> generic_rows(e, {"n": 4, "norm": 1.23456, "findings": [{"claim": "c", "value": 0.5, "ci": [0.25, 0.75],
        ...              "verdict": "effect"}]}, {})
        [{'c': '0.5 [0.25, 0.75] effect', 'n': 4, 'norm': 1.235}]
    """
    row: dict[str, Any] = {}
    for f in s.get("findings") or []:
        ci = f.get("ci") or [None, None]
        interval = f" [{ci[0]:.3g}, {ci[1]:.3g}]" if len(ci) == 2 and all(map(_number, ci)) else ""
        value = f"{f['value']:.3g}" if _number(f.get("value")) else "-"
        row[str(f.get("claim"))] = f"{value}{interval} {f.get('verdict')}"
    row.update({k: rounded(v) for k, v in s.items() if _number(v)})
    return [row]


def generic_figure(rows: Sequence[Mapping[str, Any]], findings: Mapping[str, Sequence[Mapping[str, Any]]] | None = None
                   ) -> go.Figure:
    """Each run's findings as points with their intervals, one colour per run (``findings``: run id -> its findings);
    without findings, the runs' first summary number."""
    fig = go.Figure()
    for i, (run, found) in enumerate((findings or {}).items()):
        est = [f for f in found if _number(f.get("value"))]
        ci = [f.get("ci") if isinstance(f.get("ci"), (list, tuple)) and len(f["ci"]) == 2 else [f["value"]] * 2 for f in est]
        fig.add_trace(go.Scatter(
            x=[str(f.get("claim"))[:60] for f in est], y=[f["value"] for f in est], mode="markers", name=run,
            marker={"size": 10, "color": qualitative.Plotly[i % len(qualitative.Plotly)]},
            error_y={"type": "data", "symmetric": False, "array": [c[1] - f["value"] for c, f in zip(ci, est)],
                     "arrayminus": [f["value"] - c[0] for c, f in zip(ci, est)]},
            text=[f.get("verdict") for f in est], hovertemplate="%{x}: %{y:.4g} (%{text})<extra>" + run + "</extra>"))
    if not fig.data:
        key = next((k for r in rows for k, v in r.items() if k not in ("model", "data", "run") and _number(v)), None)
        if key is not None:
            fig.add_trace(go.Bar(x=[r["run"] for r in rows], y=[r.get(key) for r in rows], name=key))
        return fig.update_layout(title=f"Runs side by side: {key or 'no numbers'}", xaxis_title="run", yaxis_title=key or "-")
    return fig.update_layout(title="Findings across runs (95% intervals)", xaxis_title="finding", yaxis_title="estimate")


GENERIC = Comparison(generic_rows)
"""The comparison of a job that declares none: its runs' findings and summary numbers."""


def comparison_rows(kind: str, entries: Sequence["RunEntry"]) -> list[dict[str, Any]]:
    """One row per run of ``kind`` (per run and method for latent-eval), with ``model`` and ``data`` first, sorted
    so the runs of one model and data set sit together (the table the pages group by those two columns).

    Example:
        >>> from pathlib import Path
        >>> from thinklens.runs.folders import RunEntry
        >>> e = RunEntry(path=Path("/nonexistent"), kind="sae", run_id="a", status="done",
        ...              summary={"explained_variance": 0.9, "l0": 32.0}, config={"model": "m", "data": "zoo:think"})
        >>> r = comparison_rows("sae", [e])[0]
        >>> (r["model"], r["data"], r["run"], r["explained variance"], r["L0"])
        ('m', 'zoo:think', 'a', 0.9, 32.0)
    """
    from app.dashboard import data_of, model_of

    compare = comparison_of(kind)
    out = []
    for e in entries:
        cfg, s = e.config or {}, e.summary or {}
        for row in compare.rows(e, s, cfg):
            model = row.pop("model", None) or model_of(e)
            data = row.pop("data", None) or data_of(e)
            out.append({"model": model, "data": data, "run": e.run_id, **row})
    return sorted(out, key=lambda r: (str(r["model"]), str(r["data"])))


def groups(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    """Rows by ``(model, data)``, in the rows' order."""
    out: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        out.setdefault((str(r["model"]), str(r["data"])), []).append(r)
    return out


def figure_comparison(kind: str, rows: Sequence[Mapping[str, Any]],
                      findings: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> go.Figure:
    """The comparison table's headline numbers as one chart: the job's own (``Comparison.figure``: accuracy per method
    for latent-eval, per mode for hybrid, the best reasoning-vector accuracy against alpha 0, an SAE's explained
    variance against L0, a steer run's word rate with the feature and the random control), else the runs' findings
    with their intervals (``findings``: run id -> its findings)."""
    compare = comparison_of(kind)
    fig = compare.figure(rows) if compare.figure is not None else generic_figure(rows, findings)
    fig.update_layout(template="plotly_white", barmode="group")
    return fig


def show_comparison(kind: str, default: int = 6) -> None:
    """A page section: the finished runs of ``kind`` side by side, one table per model and data set, and a chart.
    Any page calls it (Streamlit is imported here only)."""
    import streamlit as st

    from app.common import missing_results, runs_root
    from app.exports import chart, table
    from thinklens.runs.folders import discover_runs

    st.subheader(f"`{kind}` runs side by side")
    done = [e for e in discover_runs(runs_root(), kind) if e.error is None and e.status == "done"
            and not missing_results(e.path)]
    if not done:
        st.caption(f"No finished `{kind}` runs to compare yet.")
        return
    ids = [e.run_id for e in done]
    chosen = st.multiselect(f"{kind} runs", ids, default=ids[:default], key=f"compare-{kind}")
    rows = comparison_rows(kind, [e for e in done if e.run_id in chosen])
    if not rows:
        return
    for (model, data), sel in groups(rows).items():
        st.markdown(f"**{model}** · {data}")
        table([{k: v for k, v in r.items() if k not in ("model", "data")} for r in sel],
              key=f"compare-{kind}-{model}-{data}", name=f"compare-{kind}-{model}-{data}")
    findings = {e.run_id: (e.summary or {}).get("findings") or [] for e in done if e.run_id in chosen}
    chart(figure_comparison(kind, rows, findings), key=f"compare-{kind}-fig", name=f"compare-{kind}")
