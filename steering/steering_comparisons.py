"""What the app puts side by side for several runs of the steering jobs (``Job.compare``): SAE runs (reconstruction
against sparsity), steer runs (the word rate with the feature and with the equal-norm random feature), reasoning-vector
runs (the best group and alpha against alpha 0) and hybrid runs (base, thinking and hybrid accuracy, the best ablation).

Each row function reads one finished run (its summary, config and result files) and each figure function draws the
rows' headline numbers with a title and axis titles.

Example:
    >>> from thinklens.runs.folders import RunEntry
    >>> e = RunEntry(path=Path("/nonexistent"), kind="sae", run_id="a", status="done", summary={}, config={})
    >>> SAE.rows(e, {"explained_variance": 0.9, "l0": 32.0}, {"site": "resid_post.2"})[0]["L0"]
    32.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from thinklens.runs.run_views import Comparison, json_or_none, rounded, verdicts_text

if TYPE_CHECKING:
    from thinklens.runs.folders import RunEntry

HYBRID_ABLATIONS = ("bias_only", "random_category", "random_firing", "random_vectors")


def sae_rows(entry: "RunEntry", s: Mapping[str, Any], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    m = json_or_none(entry.path / "results" / "metrics.json") or {}
    return [{"site": cfg.get("site"), "architecture": cfg.get("architecture"), "features": m.get("d_sae", cfg.get("d_sae")),
             "k": cfg.get("k"), "training tokens": cfg.get("training_tokens"),
             "explained variance": rounded(s.get("explained_variance", m.get("explained_variance"))),
             "L0": rounded(s.get("l0", m.get("l0")), 1), "dead features": s.get("dead_features", m.get("dead_features")),
             "CE loss recovered": rounded(s.get("ce_loss_recovered", m.get("ce_loss_recovered"))),
             "KL score": rounded(s.get("kl_div_score", m.get("kl_div_score")))}]


def sae_figure(rows: Sequence[Mapping[str, Any]]) -> Any:
    fig = go.Figure(go.Scatter(x=[r.get("L0") for r in rows], y=[r.get("explained variance") for r in rows],
                               mode="markers+text", text=[f"{r['run']} ({r['model']}, {r['site']})" for r in rows],
                               textposition="top center", marker={"size": 11}, name="SAE runs"))
    return fig.update_layout(title="SAEs across runs: sparsity against reconstruction",
                             xaxis_title="L0 (active features per token)", yaxis_title="explained variance")


def steer_rows(entry: "RunEntry", s: Mapping[str, Any], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    rates = s.get("rates") or {}

    def rate(arm: str, c: str) -> str:
        k_n = (rates.get(arm) or {}).get(c)
        return f"{k_n[0]}/{k_n[1]}" if k_n else "-"

    top = max((c for c in (rates.get("feature") or {}) if c not in ("0", "0.0")), key=lambda c: float(c), default=None)
    return [{"SAE": Path(str(cfg.get("sae") or "-")).name, "site": s.get("site"), "word": cfg.get("word"),
             "feature": s.get("feature"), "correlation with the word": rounded(s.get("corr")),
             "unsteered: traces with the word": rate("feature", "0"),
             "feature at largest c": rate("feature", top) if top else "-",
             "random feature at largest c": rate("random_feature", top) if top else "-",
             "largest c": top, "findings": verdicts_text(s)}]


def steer_figure(rows: Sequence[Mapping[str, Any]]) -> Any:
    def frac(s: Any) -> float | None:
        try:
            k, n = str(s).split("/")
            return int(k) / int(n)
        except ValueError:
            return None

    fig = go.Figure()
    labels = [f"{r['run']} (feature {r['feature']})" for r in rows]
    for key, name in (("unsteered: traces with the word", "unsteered"), ("feature at largest c", "feature"),
                      ("random feature at largest c", "random feature (equal norm)")):
        fig.add_trace(go.Bar(x=labels, y=[frac(r.get(key)) for r in rows], name=name))
    return fig.update_layout(title="Feature steering across runs (largest coefficient)", xaxis_title="run (feature)",
                             yaxis_title="share of traces saying the word")


def _sweep_accuracy(entry: "RunEntry", group: Any, alpha: Any) -> float | None:
    """Accuracy of one (group, alpha) of a reasoning-vector sweep over all its problems (``results/alpha_sweep.json``),
    the split ``alpha0_accuracy`` is measured on."""
    rows = json_or_none(entry.path / "results" / "alpha_sweep.json") or []
    for r in rows if isinstance(rows, list) else []:
        if r.get("group") == group and isinstance(alpha, (int, float)) and float(r.get("alpha", "nan")) == float(alpha):
            got = r.get("correct")
            return rounded(sum(map(bool, got)) / len(got)) if got else rounded(r.get("accuracy"))
    return None


def vector_rows(entry: "RunEntry", s: Mapping[str, Any], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    best = s.get("best") or {}
    return [{"vector": f"{cfg.get('a')} - {cfg.get('b')}", "added to": cfg.get("model"),
             "accuracy at alpha 0": rounded(s.get("alpha0_accuracy")), "best group": best.get("group"),
             "best alpha": best.get("alpha"), "accuracy there (reporting split)": rounded(best.get("accuracy")),
             "problems (reporting split)": best.get("n_report"),
             "accuracy there (all problems)": _sweep_accuracy(entry, best.get("group"), best.get("alpha")),
             "vector norm": rounded(s.get("norm")),
             "a and b related": s.get("related"), "findings": verdicts_text(s)}]


def vector_figure(rows: Sequence[Mapping[str, Any]]) -> Any:
    # one split per chart: alpha 0 is measured on all problems, so the chosen alpha is drawn on all problems too
    # (its reporting-split accuracy, on half of them, is in the table)
    fig = go.Figure()
    labels = [f"{r['run']} ({r['model']})" for r in rows]
    fig.add_trace(go.Bar(x=labels, y=[r.get("accuracy at alpha 0") for r in rows], name="alpha 0 (target alone)"))
    fig.add_trace(go.Bar(x=labels, y=[r.get("accuracy there (all problems)") for r in rows], name="chosen group and alpha"))
    return fig.update_layout(title="Reasoning vectors across runs (all problems)", xaxis_title="run (model)",
                             yaxis_title="accuracy on all problems")


def hybrid_rows(entry: "RunEntry", s: Mapping[str, Any], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    def acc(mode: str) -> Any:
        return rounded((s.get(mode) or {}).get("accuracy"))

    ablations = {m: acc(m) for m in HYBRID_ABLATIONS if isinstance(acc(m), (int, float))}
    best = max(ablations, key=ablations.get) if ablations else None
    hy = s.get("hybrid") or {}
    return [{"base model": cfg.get("model"), "thinking model": cfg.get("thinking"), "problems": cfg.get("n_eval"),
             "base accuracy": acc("base"), "thinking accuracy": acc("thinking"), "hybrid accuracy": acc("hybrid"),
             "best ablation": f"{best} ({ablations[best]})" if best else "-",
             "gap recovered": rounded(hy.get("gap_recovered")), "steering fired (fraction)": rounded(hy.get("fired_fraction")),
             "tokens changed (fraction)": rounded(hy.get("changed_fraction")), "findings": verdicts_text(s)}]


def hybrid_figure(rows: Sequence[Mapping[str, Any]]) -> Any:
    fig = go.Figure()
    modes = [("base accuracy", "base"), ("thinking accuracy", "thinking"), ("hybrid accuracy", "hybrid")]
    for r in rows:
        fig.add_trace(go.Bar(x=[m for _, m in modes], y=[r.get(k) for k, _ in modes], name=f"{r['run']} ({r['model']})"))
    return fig.update_layout(title="Hybrid steering across runs", xaxis_title="mode", yaxis_title="accuracy")


SAE = Comparison(sae_rows, sae_figure)
STEER = Comparison(steer_rows, steer_figure)
REASONING_VECTOR = Comparison(vector_rows, vector_figure)
HYBRID = Comparison(hybrid_rows, hybrid_figure)
