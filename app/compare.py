"""Several runs side by side (the app's comparison views): LYNX Pareto curves of several runs, and for
latent-eval, hybrid, reasoning-vector, SAE and steer runs one table per model and data set
(:func:`comparison_rows`) with a chart of their headline numbers (:func:`figure_comparison`).

The row and figure functions are pure (run entries and result files in, rows and plotly figures out);
:func:`show_comparison` is the page section that renders them.

Example:
    >>> figure_pareto_runs({}).layout.title.text
    'Early exit across runs: accuracy vs tokens'
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go
from plotly.colors import qualitative

from thinklens.errors import ThinklensError

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

COMPARED: tuple[str, ...] = ("latent-eval", "hybrid", "reasoning-vector", "sae", "steer")
"""Kinds with a side-by-side table (MI and LYNX have their own overlays on their pages)."""

HYBRID_ABLATIONS = ("bias_only", "random_category", "random_firing", "random_vectors")


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _r(x: Any, digits: int = 3) -> Any:
    return round(x, digits) if isinstance(x, float) else x


def _interval(ci: Any) -> str:
    return f"{ci[0]:.3f}-{ci[1]:.3f}" if isinstance(ci, (list, tuple)) and len(ci) == 2 else "-"


def _verdicts(summary: Mapping[str, Any]) -> str:
    found = summary.get("findings") or []
    return "; ".join(f"{f.get('verdict')}: {f.get('claim')}" for f in found) or "-"


def _sae_row(entry: "RunEntry", s: Mapping[str, Any], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    m = _json(entry.path / "results" / "metrics.json") or {}
    return [{"site": cfg.get("site"), "architecture": cfg.get("architecture"), "features": m.get("d_sae", cfg.get("d_sae")),
             "k": cfg.get("k"), "training tokens": cfg.get("training_tokens"),
             "explained variance": _r(s.get("explained_variance", m.get("explained_variance"))),
             "L0": _r(s.get("l0", m.get("l0")), 1), "dead features": s.get("dead_features", m.get("dead_features")),
             "CE loss recovered": _r(s.get("ce_loss_recovered", m.get("ce_loss_recovered"))),
             "KL score": _r(s.get("kl_div_score", m.get("kl_div_score")))}]


def _steer_row(entry: "RunEntry", s: Mapping[str, Any], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    rates = s.get("rates") or {}

    def rate(arm: str, c: str) -> str:
        k_n = (rates.get(arm) or {}).get(c)
        return f"{k_n[0]}/{k_n[1]}" if k_n else "-"

    top = max((c for c in (rates.get("feature") or {}) if c not in ("0", "0.0")), key=lambda c: float(c), default=None)
    return [{"SAE": Path(str(cfg.get("sae") or "-")).name, "site": s.get("site"), "word": cfg.get("word"),
             "feature": s.get("feature"), "correlation with the word": _r(s.get("corr")),
             "unsteered: traces with the word": rate("feature", "0"),
             "feature at largest c": rate("feature", top) if top else "-",
             "random feature at largest c": rate("random_feature", top) if top else "-",
             "largest c": top, "findings": _verdicts(s)}]


def _sweep_accuracy(entry: "RunEntry", group: Any, alpha: Any) -> float | None:
    """Accuracy of one (group, alpha) of a reasoning-vector sweep over all its problems (``results/alpha_sweep.json``),
    the split ``alpha0_accuracy`` is measured on."""
    rows = _json(entry.path / "results" / "alpha_sweep.json") or []
    for r in rows if isinstance(rows, list) else []:
        if r.get("group") == group and isinstance(alpha, (int, float)) and float(r.get("alpha", "nan")) == float(alpha):
            got = r.get("correct")
            return _r(sum(map(bool, got)) / len(got)) if got else _r(r.get("accuracy"))
    return None


def _vector_row(entry: "RunEntry", s: Mapping[str, Any], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    best = s.get("best") or {}
    return [{"vector": f"{cfg.get('a')} - {cfg.get('b')}", "added to": cfg.get("model"),
             "accuracy at alpha 0": _r(s.get("alpha0_accuracy")), "best group": best.get("group"),
             "best alpha": best.get("alpha"), "accuracy there (reporting split)": _r(best.get("accuracy")),
             "problems (reporting split)": best.get("n_report"),
             "accuracy there (all problems)": _sweep_accuracy(entry, best.get("group"), best.get("alpha")),
             "vector norm": _r(s.get("norm")),
             "a and b related": s.get("related"), "findings": _verdicts(s)}]


def _hybrid_row(entry: "RunEntry", s: Mapping[str, Any], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    def acc(mode: str) -> Any:
        return _r((s.get(mode) or {}).get("accuracy"))

    ablations = {m: acc(m) for m in HYBRID_ABLATIONS if isinstance(acc(m), (int, float))}
    best = max(ablations, key=ablations.get) if ablations else None
    hy = s.get("hybrid") or {}
    return [{"base model": cfg.get("model"), "thinking model": cfg.get("thinking"), "problems": cfg.get("n_eval"),
             "base accuracy": acc("base"), "thinking accuracy": acc("thinking"), "hybrid accuracy": acc("hybrid"),
             "best ablation": f"{best} ({ablations[best]})" if best else "-",
             "gap recovered": _r(hy.get("gap_recovered")), "steering fired (fraction)": _r(hy.get("fired_fraction")),
             "tokens changed (fraction)": _r(hy.get("changed_fraction")), "findings": _verdicts(s)}]


def _latent_rows(entry: "RunEntry", s: Mapping[str, Any], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    table = _json(entry.path / "results" / "table.json") or s.get("rows") or []
    return [{"model": r.get("model") or r.get("label"), "data": r.get("problems") or "-", "method": r.get("label"),
             "accuracy": _r(r.get("accuracy")), "95% interval": _interval(r.get("ci")), "n": r.get("n"),
             "reasoning positions": _r(r.get("reasoning_positions"), 1)} for r in table]


_ROWS = {"sae": _sae_row, "steer": _steer_row, "reasoning-vector": _vector_row, "hybrid": _hybrid_row,
         "latent-eval": _latent_rows}


def comparison_rows(kind: str, entries: Sequence["RunEntry"]) -> list[dict[str, Any]]:
    """One row per run of ``kind`` (per run and method for latent-eval), with ``model`` and ``data`` first, sorted
    so the runs of one model and data set sit together (the table the pages group by those two columns).

    Example:
        >>> from thinklens.runs.folders import RunEntry
        >>> e = RunEntry(path=Path("/nonexistent"), kind="sae", run_id="a", status="done",
        ...              summary={"explained_variance": 0.9, "l0": 32.0}, config={"model": "m", "data": "zoo:think"})
        >>> r = comparison_rows("sae", [e])[0]
        >>> (r["model"], r["data"], r["run"], r["explained variance"], r["L0"])
        ('m', 'zoo:think', 'a', 0.9, 32.0)
    """
    from dashboard import data_of, model_of

    if kind not in _ROWS:
        raise ThinklensError.of("run kind to compare", kind, f"one of {', '.join(_ROWS)}", "pick one of those kinds")
    out = []
    for e in entries:
        cfg, s = e.config or {}, e.summary or {}
        for row in _ROWS[kind](e, s, cfg):
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


def figure_comparison(kind: str, rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """The comparison table's headline numbers as one chart: accuracy per method (latent-eval) or per mode
    (hybrid) with one bar per run, the best reasoning-vector accuracy against alpha 0, an SAE's explained
    variance against L0, a steer run's word rate with the feature and the random control."""
    fig = go.Figure()
    title, x, y = "", "", ""
    if kind == "latent-eval":
        for run in dict.fromkeys(r["run"] for r in rows):
            sel = [r for r in rows if r["run"] == run]
            fig.add_trace(go.Bar(x=[f"{r['method']} ({r['data']})" for r in sel], y=[r["accuracy"] for r in sel], name=run))
        title, x, y = "Latent reasoning across runs", "method (problems)", "accuracy"
    elif kind == "hybrid":
        modes = [("base accuracy", "base"), ("thinking accuracy", "thinking"), ("hybrid accuracy", "hybrid")]
        for r in rows:
            fig.add_trace(go.Bar(x=[m for _, m in modes], y=[r.get(k) for k, _ in modes], name=f"{r['run']} ({r['model']})"))
        title, x, y = "Hybrid steering across runs", "mode", "accuracy"
    elif kind == "reasoning-vector":
        # one split per chart: alpha 0 is measured on all problems, so the chosen alpha is drawn on all problems too
        # (its reporting-split accuracy, on half of them, is in the table)
        labels = [f"{r['run']} ({r['model']})" for r in rows]
        fig.add_trace(go.Bar(x=labels, y=[r.get("accuracy at alpha 0") for r in rows], name="alpha 0 (target alone)"))
        fig.add_trace(go.Bar(x=labels, y=[r.get("accuracy there (all problems)") for r in rows],
                             name="chosen group and alpha"))
        title, x, y = "Reasoning vectors across runs (all problems)", "run (model)", "accuracy on all problems"
    elif kind == "sae":
        fig.add_trace(go.Scatter(x=[r.get("L0") for r in rows], y=[r.get("explained variance") for r in rows],
                                 mode="markers+text", text=[f"{r['run']} ({r['model']}, {r['site']})" for r in rows],
                                 textposition="top center", marker={"size": 11}, name="SAE runs"))
        title, x, y = "SAEs across runs: sparsity against reconstruction", "L0 (active features per token)", "explained variance"
    elif kind == "steer":
        def frac(s: Any) -> float | None:
            try:
                k, n = str(s).split("/")
                return int(k) / int(n)
            except ValueError:
                return None

        labels = [f"{r['run']} (feature {r['feature']})" for r in rows]
        for key, name in (("unsteered: traces with the word", "unsteered"), ("feature at largest c", "feature"),
                          ("random feature at largest c", "random feature (equal norm)")):
            fig.add_trace(go.Bar(x=labels, y=[frac(r.get(key)) for r in rows], name=name))
        title, x, y = "Feature steering across runs (largest coefficient)", "run (feature)", "share of traces saying the word"
    else:
        raise ThinklensError.of("run kind to compare", kind, f"one of {', '.join(_ROWS)}", "pick one of those kinds")
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white", barmode="group")
    return fig


def show_comparison(kind: str, default: int = 6) -> None:
    """A page section: the finished runs of ``kind`` side by side, one table per model and data set, and a chart.
    Any page calls it (Streamlit is imported here only)."""
    import streamlit as st
    from common import missing_results, runs_root
    from exports import chart, table

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
    chart(figure_comparison(kind, rows), key=f"compare-{kind}-fig", name=f"compare-{kind}")
