"""Pictures of the positive controls a ``validate --model`` run measures on real weights (pure functions, no Streamlit):

- the sentiment readout (``thinklens.probes.readout_validation``): accuracy by layer of the linear probe and of the same
  probe on shuffled labels (the ``null`` setting), each with its 95% Wilson interval over the selection sentences, the
  chosen layer marked, and at that layer the report accuracy on held-out adjectives against the shuffled-label control,
  each with its bootstrap interval over adjectives;
- induction (``thinklens.analyses.induction_validation``): the prefix-matching score of every head as a layer x head
  map with the top heads marked, and the rise of the repeated half's loss when the top heads are mean-ablated against
  as many random heads.

The readout's per-layer accuracies and the induction heads' top scores are stored in the settings' details; the full
layer x head map is not, so :func:`prefix_matching_map` recomputes it with the model on the setting's own selection
sequences and the page checks its top heads against the record's.

Example:
    >>> doc = {"rows": [{"method": "readout", "setting": "planted", "n": 90}]}
    >>> sorted(settings_of(doc, "readout")), layer_of("resid_post.12")
    (['planted'], 12)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from thinklens.analyses.induction import ordinary_tokens, prefix_id, prefix_matching_scores, repeated_tokens, top_heads
from thinklens.analyses.induction_validation import FULL, QUICK, K
from thinklens.calibration.stats import wilson
from thinklens.engine.model import HookedModel

CONTROLS: tuple[str, ...] = ("readout", "induction")
"""The methods this module draws."""


def settings_of(doc: Mapping[str, Any] | None, method: str) -> dict[str, dict[str, Any]]:
    """Setting -> row of one method in a validate document (``results/validate.json``)."""
    return {r["setting"]: r for r in (doc or {}).get("rows") or [] if r.get("method") == method}


def has_controls(doc: Mapping[str, Any] | None) -> list[str]:
    """The methods of :data:`CONTROLS` the document has pictures for (their settings hold the details drawn)."""
    out = []
    if (settings_of(doc, "readout").get("planted") or {}).get("details", {}).get("selection_accuracy"):
        out.append("readout")
    if (settings_of(doc, "induction").get("planted-heads") or {}).get("details", {}).get("top_heads"):
        out.append("induction")
    return out


def layer_of(site: str) -> int:
    """``'resid_post.12'`` -> 12."""
    return int(str(site).rsplit(".", 1)[1])


def interval_text(ci: Sequence[float] | None) -> str:
    """``[lo, hi]`` to three decimals; "–" when there is none."""
    return "–" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


# ---------------------------------------------------------------------------------------------------- the readout

def readout_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per layer: the probe's selection accuracy and the shuffled-label probe's (the ``null`` setting), each with its
    95% Wilson interval over the selection sentences (as many as the report's: the splits hold 6 adjectives per polarity
    each; sentences of one adjective are not independent, so these intervals are narrower than the report's bootstrap
    over adjectives), and whether the run chose that layer."""
    s = settings_of(doc, "readout")
    planted, null = s.get("planted") or {}, s.get("null") or {}
    acc = (planted.get("details") or {}).get("selection_accuracy") or {}
    shuffled = (null.get("details") or {}).get("selection_accuracy") or {}
    n, n_null = int(planted.get("n") or 0), int(null.get("n") or 0)
    best = (planted.get("details") or {}).get("best_site")
    rows = []
    for site in sorted(set(acc) | set(shuffled), key=layer_of):
        a, b = acc.get(site), shuffled.get(site)
        rows.append({"layer": layer_of(site), "site": site, "probe accuracy": a,
                     "probe 95% (Wilson)": interval_text(wilson(round(a * n), n)) if a is not None and n else "–",
                     "shuffled-label accuracy": b,
                     "shuffled 95% (Wilson)": interval_text(wilson(round(b * n_null), n_null)) if b is not None and n_null else "–",
                     "chosen": site == best})
    return rows


def figure_readout(doc: Mapping[str, Any]) -> Any:
    """Accuracy by layer of the probe and of its shuffled-label control (95% Wilson bars), the chosen layer marked with
    the report accuracy on held-out adjectives and the shuffled-label control there (95% bootstrap over adjectives)."""
    s = settings_of(doc, "readout")
    planted = s.get("planted") or {}
    d = planted.get("details") or {}
    n, n_null = int(planted.get("n") or 0), int((s.get("null") or {}).get("n") or 0)
    rows = readout_rows(doc)
    fig = go.Figure()
    for key, size, name, colour in (("probe accuracy", n, "linear probe (selection adjectives)", "#1f77b4"),
                                    ("shuffled-label accuracy", n_null, "shuffled labels (null setting)", "#7f7f7f")):
        pts = [(r["layer"], r[key]) for r in rows if r[key] is not None]
        if not pts:
            continue
        cis = [wilson(round(y * size), size) if size else (y, y) for _, y in pts]
        fig.add_trace(go.Scatter(x=[x for x, _ in pts], y=[y for _, y in pts], mode="lines+markers", name=name,
                                 line={"color": colour, "dash": None if key == "probe accuracy" else "dot"},
                                 error_y={"type": "data", "symmetric": False, "array": [c[1] - y for c, (_, y) in zip(cis, pts)],
                                          "arrayminus": [y - c[0] for c, (_, y) in zip(cis, pts)]}))
    best = d.get("best_site")
    if best:
        x = layer_of(best)
        fig.add_vline(x=x, line_dash="dash", line_color="#2ca02c",
                      annotation_text=f"chosen: {best}", annotation_position="top left")
        ci = planted.get("ci") or [planted.get("value"), planted.get("value")]
        fig.add_trace(go.Scatter(x=[x], y=[planted.get("value")], mode="markers", name="report accuracy (held-out adjectives)",
                                 marker={"symbol": "star", "size": 14, "color": "#2ca02c"},
                                 error_y={"type": "data", "symmetric": False, "array": [ci[1] - planted["value"]],
                                          "arrayminus": [planted["value"] - ci[0]]}))
        if d.get("shuffled_accuracy") is not None:
            sc = d.get("shuffled_ci") or [d["shuffled_accuracy"]] * 2
            fig.add_trace(go.Scatter(x=[x], y=[d["shuffled_accuracy"]], mode="markers",
                                     name="report accuracy, shuffled train labels (control)",
                                     marker={"symbol": "x", "size": 12, "color": "#d62728"},
                                     error_y={"type": "data", "symmetric": False, "array": [sc[1] - d["shuffled_accuracy"]],
                                              "arrayminus": [d["shuffled_accuracy"] - sc[0]]}))
    fig.add_hline(y=0.5, line_dash="dot", line_color="#999", annotation_text="chance", annotation_position="bottom right")
    fig.update_layout(title=f"Sentiment readout by layer ({doc.get('model') or d.get('model') or '?'}): n={n} selection "
                            f"sentences per layer, {d.get('n_adjectives', '?')} report adjectives",
                      xaxis_title="layer (resid_post, last token)", yaxis_title="accuracy", yaxis_range=[0, 1.05],
                      template="plotly_white", height=420, legend={"orientation": "h", "y": -0.25})
    return fig


def readout_line(doc: Mapping[str, Any]) -> str:
    """The readout in one line: the chosen layer, its report accuracy against the shuffled-label control, n."""
    planted = settings_of(doc, "readout").get("planted") or {}
    d = planted.get("details") or {}
    return (f"chosen layer {d.get('best_site', '?')} (depth {d.get('depth', '?')}, best selection accuracy): report "
            f"accuracy {planted.get('value', float('nan')):.3f} {interval_text(planted.get('ci'))} on {d.get('n_adjectives', '?')} "
            f"held-out adjectives (n={planted.get('n', '?')} sentences) against {d.get('shuffled_accuracy', float('nan')):.3f} "
            f"{interval_text(d.get('shuffled_ci'))} with shuffled train labels; verdict {planted.get('verdict', '?')}")


# ---------------------------------------------------------------------------------------------------- induction

def induction_numbers(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The ablation's numbers: the top heads with their scores, their rise and the random heads' rise (with the
    null-random-heads setting's interval), and the excess with its interval."""
    s = settings_of(doc, "induction")
    heads, null = s.get("planted-heads") or {}, s.get("null-random-heads") or {}
    d = heads.get("details") or {}
    return {"top_heads": [tuple(p) for p in d.get("top_heads") or []], "top_scores": list(d.get("top_scores") or []),
            "k": d.get("k"), "top_rise": d.get("top_heads_rise"), "random_rise": d.get("random_heads_rise"),
            "random_ci": null.get("ci"), "random_target": null.get("target"), "excess": heads.get("value"),
            "excess_ci": heads.get("ci"), "n": heads.get("n"), "verdict": heads.get("verdict"),
            "clean": d.get("clean_second_copy_loss"), "ablation": d.get("ablation", "mean")}


def figure_ablation(doc: Mapping[str, Any]) -> Any:
    """The rise of the repeated half's loss (nats) when the top ``k`` prefix-matching heads are mean-ablated, against
    ``k`` random heads, and the paired excess with its 95% bootstrap interval."""
    x = induction_numbers(doc)
    k = x["k"] or "?"
    labels = [f"{k} random heads", f"top {k} prefix-matching heads", "excess: top minus random (paired)"]
    ys = [x["random_rise"], x["top_rise"], x["excess"]]
    cis = [x["random_ci"], None, x["excess_ci"]]
    fig = go.Figure(go.Bar(
        x=labels, y=ys, marker_color=["#7f7f7f", "#1f77b4", "#2ca02c"],
        error_y={"type": "data", "symmetric": False, "array": [(c[1] - y) if c and y is not None else 0 for c, y in zip(cis, ys)],
                 "arrayminus": [(y - c[0]) if c and y is not None else 0 for c, y in zip(cis, ys)]},
        hovertemplate="%{x}: %{y:.3f} nats<extra></extra>"))
    fig.update_layout(title=f"Loss rise on the repeated half when heads are {x['ablation']}-ablated (n={x['n']} sequences; "
                            f"clean loss {x['clean'] or float('nan'):.2f} nats)",
                      xaxis_title="heads ablated", yaxis_title="rise of the second copy's loss (nats)",
                      template="plotly_white", height=380)
    return fig


def ablation_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ablation's numbers as rows, each with its interval and what the interval is."""
    x = induction_numbers(doc)
    return [{"what": f"{x['k']} random heads, mean-ablated", "rise (nats)": x["random_rise"],
             "interval": interval_text(x["random_ci"]), "interval is": "90% (TOST, the null-random-heads setting)"},
            {"what": f"top {x['k']} prefix-matching heads, mean-ablated", "rise (nats)": x["top_rise"], "interval": "–",
             "interval is": "not stored (the excess below has one)"},
            {"what": "excess of the top heads over random ones (paired per sequence)", "rise (nats)": x["excess"],
             "interval": interval_text(x["excess_ci"]), "interval is": f"95% bootstrap; verdict {x['verdict']}"}]


def figure_head_map(scores: Sequence[Sequence[float]], top: Sequence[Sequence[int]], title: str = "") -> Any:
    """The prefix-matching score of every head (layer x head), the top heads ringed."""
    n_layers, n_heads = len(scores), len(scores[0]) if scores else 0
    fig = go.Figure(go.Heatmap(z=[list(r) for r in scores], x=list(range(n_heads)), y=list(range(n_layers)),
                               colorscale="Blues", zmin=0, zmax=1, colorbar={"title": "score"},
                               hovertemplate="layer %{y}, head %{x}: %{z:.3f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[h for _, h in top], y=[layer for layer, _ in top], mode="markers+text",
                             text=[f"#{i + 1}" for i in range(len(top))], textposition="middle right",
                             marker={"symbol": "circle-open", "size": 16, "line": {"width": 3}, "color": "#d62728"},
                             name="top heads", hovertemplate="top head: layer %{y}, head %{x}<extra></extra>"))
    fig.update_xaxes(tickmode="linear", dtick=1)  # heads and layers are whole numbers
    fig.update_yaxes(tickmode="linear", dtick=1 if n_layers <= 20 else 2)
    fig.update_layout(title=title or "Prefix-matching score of every head", xaxis_title="head", yaxis_title="layer",
                      template="plotly_white", height=max(320, 18 * n_layers + 120), showlegend=False)
    return fig


def figure_top_heads(doc: Mapping[str, Any]) -> Any:
    """The top heads' prefix-matching scores as stored in the record (the map of every head needs the model)."""
    x = induction_numbers(doc)
    names = [f"L{layer}H{h}" for layer, h in x["top_heads"]]
    fig = go.Figure(go.Bar(x=names, y=x["top_scores"], marker_color="#1f77b4",
                           hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
    fig.update_layout(title="The top heads' prefix-matching scores (as recorded)", xaxis_title="head (layer L, head H)",
                      yaxis_title="score", yaxis_range=[0, 1],
                      template="plotly_white", height=320)
    return fig


def prefix_matching_map(model: str, *, seed: int, quick: bool, device: str = "cpu") -> dict[str, Any]:
    """Every head's prefix-matching score on the planted-heads setting's own selection sequences (its plan and seed:
    ``thinklens.analyses.induction_validation``), recomputed with the model: ``{"scores": [layer][head], "top": [[layer,
    head], ...]}``."""
    m = HookedModel.load(model, device=device)
    plan = QUICK if quick else FULL
    select = repeated_tokens(ordinary_tokens(m), n_seqs=plan.n_select, length=plan.length, prefix_id=prefix_id(m),
                             seed=20_000 + seed)  # the planted-heads setting's selection sequences
    scores = prefix_matching_scores(m, select)  # [layer, head]
    return {"scores": scores.tolist(), "top": [list(p) for p in top_heads(scores, K).pairs]}
