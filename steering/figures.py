"""Plotly figures of the steering results; each takes a result (rows or a dataclass) and returns a Figure.

All figures render offline (no CDN assets): the app shows them with ``st.plotly_chart`` and run folders
store them as plotly JSON plus standalone HTML.

Example:
    >>> rows = [{"group": "all", "alpha": a, "accuracy": 0.5 + a / 10} for a in (-1.0, 0.0, 1.0)]
    >>> [t.name for t in figure_alpha_sweep(rows).data]
    ['all']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from thinklens.steering.features import FeatureStats, FeatureTrace


def _layout(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white", legend={"orientation": "h"})
    return fig


def figure_sae_metrics(metrics: dict[str, Any]) -> go.Figure:
    """sae-lens's headline metrics of one SAE as bars (explained variance, CE recovered, dead fraction)."""
    keys = [("explained_variance", "explained variance"), ("ce_loss_recovered", "CE loss recovered"),
            ("kl_div_score", "KL score"), ("dead_fraction", "dead features (fraction)")]
    shown = [(label, metrics.get(k)) for k, label in keys if isinstance(metrics.get(k), (int, float))]
    fig = go.Figure(go.Bar(x=[s[0] for s in shown], y=[s[1] for s in shown], text=[f"{s[1]:.3f}" for s in shown],
                           textposition="outside"))
    return _layout(fig, f"SAE at {metrics.get('site', '?')}: L0 {metrics.get('l0', float('nan')):.1f}, "
                        f"{metrics.get('d_sae', '?')} features", "", "value")


def figure_feature_density(stats: FeatureStats) -> go.Figure:
    """Histogram of log10 firing frequency over features (dead features counted apart)."""
    freq = [f for f in stats.freq if f > 0]
    dead = len(stats.freq) - len(freq)
    fig = go.Figure(go.Histogram(x=[math.log10(f) for f in freq], nbinsx=40, name="live features"))
    return _layout(fig, f"Feature density over {stats.n_tokens} tokens ({dead} never fired)", "log10 firing frequency",
                   "features")


def figure_feature_correlation(stats: FeatureStats, word: str = "wait") -> go.Figure:
    """Per-feature correlation with the next token being ``word`` against firing frequency."""
    corr = stats.corr_words.get(word, [])
    fig = go.Figure(go.Scatter(x=stats.freq, y=corr, mode="markers", text=[f"feature {i}" for i in range(len(corr))],
                               marker={"size": 6, "opacity": 0.7}, name=word,
                               hovertemplate="%{text}<br>freq %{x:.3f}<br>corr %{y:.3f}<extra></extra>"))
    if stats.corr_correct is not None:
        fig.add_trace(go.Scatter(x=stats.freq, y=stats.corr_correct, mode="markers", name="correctness",
                                 marker={"size": 5, "opacity": 0.5, "symbol": "x"}))
    return _layout(fig, f"Features vs thinking word {word!r} ({stats.word_counts.get(word, 0)} occurrences)",
                   "firing frequency", "correlation")


def figure_feature_trace(ft: FeatureTrace) -> go.Figure:
    """Activation of the chosen features at every generated token (x labels are the tokens)."""
    fig = go.Figure()
    x = list(range(len(ft.tokens)))
    for j, f in enumerate(ft.features):
        fig.add_trace(go.Scatter(x=x, y=[row[j] for row in ft.acts], mode="lines+markers", name=f"feature {f}",
                                 text=ft.tokens, hovertemplate="%{text}: %{y:.3f}<extra></extra>"))
    fig.update_xaxes(tickmode="array", tickvals=x, ticktext=[t.strip() or "·" for t in ft.tokens], tickangle=-60)
    return _layout(fig, "Feature activation along the trace (state producing each token)", "generated token", "activation")


def figure_steer(rows: Sequence[dict[str, Any]], metric: str = "wait") -> go.Figure:
    """``metric`` (e.g. wait per trace) and accuracy against the coefficient, one line per arm."""
    has_acc = any("accuracy" in r for r in rows)
    fig = make_subplots(rows=1, cols=2 if has_acc else 1, subplot_titles=[f"{metric} per trace"] + (["accuracy"] if has_acc else []))
    for arm in dict.fromkeys(r["arm"] for r in rows):
        sel = sorted((r for r in rows if r["arm"] == arm), key=lambda r: r["coeff"])
        x = [r["coeff"] for r in sel]
        def err(key: str) -> dict[str, Any] | None:  # std over seeds, when the rows are aggregated
            return {"type": "data", "array": [r[key] for r in sel]} if all(key in r for r in sel) else None

        fig.add_trace(go.Scatter(x=x, y=[r[metric] for r in sel], mode="lines+markers", name=arm, legendgroup=arm,
                                 error_y=err(f"{metric}_std")), 1, 1)
        if has_acc:
            fig.add_trace(go.Scatter(x=x, y=[r.get("accuracy") for r in sel], mode="lines+markers", name=arm,
                                     legendgroup=arm, showlegend=False, error_y=err("accuracy_std")), 1, 2)
    fig.update_xaxes(title_text="coefficient")
    fig.update_layout(title="Feature steering vs equal-norm baselines", template="plotly_white", legend={"orientation": "h"})
    return fig


def figure_alpha_sweep(rows: Sequence[dict[str, Any]], metric: str = "accuracy") -> go.Figure:
    """Accuracy of ``target + alpha * v`` against alpha, one line per tensor group."""
    fig = go.Figure()
    for g in dict.fromkeys(r["group"] for r in rows):
        sel = sorted((r for r in rows if r["group"] == g), key=lambda r: r["alpha"])
        fig.add_trace(go.Scatter(x=[r["alpha"] for r in sel], y=[r[metric] for r in sel], mode="lines+markers", name=g))
    fig.add_vline(x=0, line_dash="dot", line_color="#999999")
    return _layout(fig, "Reasoning vector: alpha sweep", "alpha", metric)


def figure_hybrid(results: dict[str, dict[str, Any]]) -> go.Figure:
    """Accuracy per mode (bars) with the fractions of tokens where steering fired (the models disagree) and
    where the token changed (markers, right axis)."""
    modes = list(results)
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Bar(x=modes, y=[results[m]["accuracy"] for m in modes], name="accuracy",
                         text=[f"{results[m]['accuracy']:.2f}" for m in modes], textposition="outside"), secondary_y=False)
    fig.add_trace(go.Scatter(x=modes, y=[results[m]["fired_fraction"] for m in modes], mode="markers",
                             name="steering fired (models disagree)", marker={"size": 11, "symbol": "diamond"}),
                  secondary_y=True)
    fig.add_trace(go.Scatter(x=modes, y=[results[m].get("changed_fraction") for m in modes], mode="markers",
                             name="tokens changed (thinking model picked a steered token)",
                             marker={"size": 11, "symbol": "x"}), secondary_y=True)
    fig.update_yaxes(title_text="accuracy", secondary_y=False)
    fig.update_yaxes(title_text="fraction of generated tokens", secondary_y=True)
    fig.update_layout(title="Hybrid base/thinking steering and ablations", template="plotly_white", legend={"orientation": "h"})
    return fig
