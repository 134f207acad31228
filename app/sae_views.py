"""What the Features page shows of thinklens's SAE against SAELens's on the same activations (the ``sae-real`` settings
of ``thinklens run validate --model M``, :mod:`thinklens.steering.sae_real_validation`): explained variance, CE loss
recovered, L0 and dead features of the two SAEs side by side, each with its interval where the run stores one, the
random-decoder control beside them, and one feature's top-activating held-out contexts from each SAE.

Pure functions of a validate document (``results/validate.json`` of a run, or a committed record's; no Streamlit here).
What the document keeps: every number of the table above (dead features and L0 without an interval), and the top
contexts of a few of thinklens's features only. What it does not keep: dense features and SAELens's contexts. A
validate run's folder keeps both SAEs (``settings/sae-real-planted/{thinklens,saelens}-sae``), so the page can pair a
feature with SAELens's nearest one by decoder direction (:func:`nearest_feature`) and, on request, regenerate the
held-out texts from the run's seed to find both features' contexts and every feature's firing density
(:func:`recompute`), its contexts checked against the stored ones. A committed record keeps no SAE: the page says so.

Example:
    >>> doc = {"rows": [{"method": "sae-real", "setting": "planted", "details": {"thinklens": {}, "saelens": {}}}]}
    >>> has_comparison(doc), has_comparison({"rows": []})
    (True, False)
    >>> parse_contexts(["feature 7 (12 active): the[ cat] | a[ dog]"])[0]
    {'feature': 7, 'active': 12, 'contexts': [('the', ' cat'), ('a', ' dog')]}
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from app.validation_table import real_record_docs
from thinklens.runs.folders import discover_runs
from thinklens.steering.corpora import special_ids
from thinklens.steering.sae import load_sae
from thinklens.steering.sae_real_validation import N_TOP, WIDTH, Plan, capture_rows, corpus

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel

METHOD = "sae-real"
"""The validate method whose settings hold the comparison."""
ARMS: tuple[tuple[str, str], ...] = (("thinklens", "thinklens"), ("saelens", "SAELens"))
"""(key in the setting's details and in the run's SAE folder names, label)."""
COLOURS = {"thinklens": "#1f77b4", "saelens": "#ff7f0e", "random": "#7f7f7f"}
DENSE = 0.1
"""A feature is dense when it fires on more than this fraction of the held-out tokens (dead: on none)."""
NOT_STORED = "not stored"


@dataclass(frozen=True)
class Comparison:
    """One validate document that holds the comparison, and where it came from."""

    label: str
    """How the picker names it."""
    doc: dict[str, Any]
    """The validate document (``results/validate.json``)."""
    run_id: str | None = None
    """The validate run's id (None: a committed record)."""
    path: Path | None = None
    """The validate run's folder, which keeps both SAEs (None: a committed record, which keeps none)."""
    record: str | None = None
    """The committed record's name (``results/records/<name>``)."""


def comparisons(root: Path, records: Mapping[str, Mapping[str, Any]] | None = None) -> list[Comparison]:
    """Every finished validate run under ``root`` that compared the SAEs, newest first, then the committed records
    that did (``records``: name -> document, by default :func:`app.validation_table.real_record_docs`)."""
    out = []
    for e in discover_runs(root, "validate"):
        if e.error is not None or e.status != "done":
            continue
        try:
            doc = json.loads((e.path / "results" / "validate.json").read_text())
        except (OSError, ValueError):
            continue
        if has_comparison(doc):
            out.append(Comparison(f"run validate/{e.run_id} ({doc.get('model') or '?'})", doc, e.run_id, e.path))
    if records is None:
        records = real_record_docs()
    for name, doc in records.items():
        if has_comparison(doc):
            out.append(Comparison(f"committed record {name} ({doc.get('model') or '?'})", dict(doc), record=name))
    return out


def settings_of(doc: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Setting -> row of the ``sae-real`` method in a validate document."""
    return {r["setting"]: r for r in (doc or {}).get("rows") or [] if r.get("method") == METHOD}


def details_of(doc: Mapping[str, Any] | None) -> dict[str, Any]:
    """The planted setting's details: every number of the comparison ({} when the document has none)."""
    return dict((settings_of(doc).get("planted") or {}).get("details") or {})


def has_comparison(doc: Mapping[str, Any] | None) -> bool:
    """Whether the document holds both SAEs' numbers (a planted ``sae-real`` setting that got as far as scoring)."""
    d = details_of(doc)
    return all(isinstance(d.get(arm), Mapping) for arm, _ in ARMS)


def interval_text(ci: Sequence[float] | None, spec: str = ".3f") -> str:
    """``[lo, hi]``; :data:`NOT_STORED` when the run keeps no interval."""
    return NOT_STORED if not ci else f"[{format(ci[0], spec)}, {format(ci[1], spec)}]"


def metric_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per metric: thinklens's value and interval, SAELens's value and interval, and what it is measured over
    (an interval only where the run stores one; a metric the run does not keep says so instead of a number)."""
    d = details_of(doc)
    a, b = d.get("thinklens") or {}, d.get("saelens") or {}
    n_texts, gen_rows, all_rows = d.get("held_out_texts", "?"), d.get("held_out_generated_rows", "?"), d.get("held_out_rows", "?")
    over_gen = f"{gen_rows} generated-token states of {n_texts} held-out texts; 95% bootstrap over texts"
    over_all = f"all {all_rows} held-out states (generated tokens and the prompt scaffold)"

    def row(metric: str, va: Any, ca: Any, vb: Any, cb: Any, over: str, spec: str = ".3f") -> dict[str, Any]:
        return {"metric": metric, "thinklens": va, "thinklens 95%": interval_text(ca, spec), "SAELens": vb,
                "SAELens 95%": interval_text(cb, spec), "measured over": over}

    ce_over = f"{a.get('ce_tokens', '?')} generated tokens of the held-out texts"
    ce_loss = (f"{ce_over} (clean {_num(a.get('ce_clean'))}, zero-ablated {_num(a.get('ce_zero_ablation'))} nats; the "
               "run stores no interval for the loss itself)")
    return [
        row("explained variance", d.get("ev_thinklens"), d.get("ev_thinklens_ci"), d.get("ev_saelens"),
            d.get("ev_saelens_ci"), over_gen),
        row("explained variance, all positions", a.get("ev_all_positions"), None, b.get("ev_all_positions"), None, over_all),
        row("CE loss recovered", a.get("ce_loss_recovered"), a.get("ce_loss_recovered_ci"), b.get("ce_loss_recovered"),
            b.get("ce_loss_recovered_ci"), ce_over + "; 95% bootstrap over texts"),
        row("CE loss with the SAE spliced in (nats)", a.get("ce_with_sae"), None, b.get("ce_with_sae"), None, ce_loss),
        row("L0 (active latents per token)", a.get("l0"), None, b.get("l0"), None, over_all + "; topk: fixed at k"),
        row("dead features (fraction of latents)", a.get("dead_fraction"), None, b.get("dead_fraction"), None,
            over_all + "; never active there"),
        row(f"dense features (fire on > {DENSE:.0%} of tokens)", NOT_STORED, None, NOT_STORED, None,
            "the run does not keep each feature's firing density"),
    ]


def _num(x: Any) -> str:
    return f"{x:.3f}" if isinstance(x, (int, float)) and not isinstance(x, bool) else "?"


def gap_line(doc: Mapping[str, Any]) -> str:
    """The planted verdict in words: the paired EV gap with its interval against its margin, and the control."""
    s = settings_of(doc)
    planted, null = s.get("planted") or {}, s.get("null-random-decoder") or {}
    d = details_of(doc)
    line = (f"EV(thinklens) − EV(SAELens) = {planted.get('value', float('nan')):.4f} {interval_text(planted.get('ci'), '.4f')} "
            f"(paired over "
            f"{planted.get('n', '?')} held-out texts), judged against −{d.get('margin', '?')} with EV(thinklens) ≥ "
            f"{d.get('min_ev', '?')}: **{planted.get('verdict', '?')}**")
    if null:
        line += (f" · control: the same SAE with random decoder directions explains {_num(null.get('value'))} "
                 f"{interval_text(null.get('ci'))}: **{null.get('verdict', '?')}**")
    return line


def figure_fidelity(doc: Mapping[str, Any]) -> go.Figure:
    """Three panels side by side: held-out explained variance of thinklens's SAE, SAELens's and the random-decoder
    control (95% bootstrap over texts) with the floor the planted setting asks for; CE loss recovered of the two (95%
    bootstrap over texts); the fraction of dead features of the two (no interval stored, none drawn)."""
    d = details_of(doc)
    a, b = d.get("thinklens") or {}, d.get("saelens") or {}
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.08,
                        subplot_titles=("explained variance (95% bootstrap)", "CE loss recovered (95% bootstrap)",
                                        "dead features (no interval stored)"))

    def bars(col: int, names: list[str], keys: list[str], ys: list[Any], cis: list[Any]) -> None:
        hi = [c[1] - y if c and y is not None else 0.0 for y, c in zip(ys, cis)]
        lo = [y - c[0] if c and y is not None else 0.0 for y, c in zip(ys, cis)]
        fig.add_trace(go.Bar(x=names, y=ys, marker_color=[COLOURS[k] for k in keys], showlegend=False,
                             error_y={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo,
                                      "visible": any(bool(c) for c in cis)},  # no interval stored: none drawn
                             hovertemplate="%{x}: %{y:.4f}<extra></extra>"), row=1, col=col)

    bars(1, ["thinklens", "SAELens", "random decoder"], ["thinklens", "saelens", "random"],
         [d.get("ev_thinklens"), d.get("ev_saelens"), d.get("ev_random_decoder")],
         [d.get("ev_thinklens_ci"), d.get("ev_saelens_ci"), d.get("ev_random_decoder_ci")])
    if d.get("min_ev") is not None:
        fig.add_hline(y=float(d["min_ev"]), line_dash="dash", line_color="#d62728", row=1, col=1,
                      annotation_text=f"floor {d['min_ev']:g}", annotation_position="top left")
    bars(2, ["thinklens", "SAELens"], ["thinklens", "saelens"], [a.get("ce_loss_recovered"), b.get("ce_loss_recovered")],
         [a.get("ce_loss_recovered_ci"), b.get("ce_loss_recovered_ci")])
    bars(3, ["thinklens", "SAELens"], ["thinklens", "saelens"], [a.get("dead_fraction"), b.get("dead_fraction")], [None, None])
    for col in (1, 2, 3):
        fig.update_xaxes(title_text="SAE" if col > 1 else "SAE (and the control)", row=1, col=col)
    fig.update_yaxes(title_text="fraction of variance", row=1, col=1)
    fig.update_yaxes(title_text="fraction of the zero-ablation loss", row=1, col=2)
    fig.update_yaxes(title_text="fraction of latents", row=1, col=3)
    fig.update_layout(title=f"thinklens's SAE against SAELens's on the same activations ({d.get('model') or doc.get('model') or '?'}, "
                            f"{d.get('site', '?')}; held-out generated tokens)",
                      template="plotly_white", height=420, margin={"t": 90})
    return fig


_CONTEXT_LINE = re.compile(r"^feature (\d+) \((\d+) active\): (.*)$", re.S)
_CONTEXT = re.compile(r"^(.*)\[(.*)\]$", re.S)


def parse_contexts(lines: Sequence[str]) -> list[dict[str, Any]]:
    """The stored top contexts (``feature F (n active): before[token] | ...``, as
    :func:`thinklens.steering.sae_real_validation.top_contexts` writes them) as ``{"feature", "active", "contexts":
    [(before, token), ...]}``; a line of another shape is skipped. The texts keep the stored escapes (``\\n``)."""
    out = []
    for line in lines:
        m = _CONTEXT_LINE.match(str(line))
        if m is None:
            continue
        ctxs = []
        for part in m.group(3).split(" | "):
            c = _CONTEXT.match(part)
            ctxs.append((c.group(1), c.group(2)) if c else (part, ""))
        out.append({"feature": int(m.group(1)), "active": int(m.group(2)), "contexts": ctxs})
    return out


def stored_features(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The features of thinklens's SAE whose top contexts the run stored (drawn at random among the live ones)."""
    return parse_contexts(details_of(doc).get("contexts_thinklens") or [])


def sae_folders(run_path: Path | str | None) -> dict[str, Path]:
    """Arm -> the run's saved SAE folder (sae-lens format), those that hold weights; {} for a record (none kept)."""
    if run_path is None:
        return {}
    base = Path(run_path) / "settings" / f"{METHOD}-planted"
    return {arm: base / f"{arm}-sae" for arm, _ in ARMS if (base / f"{arm}-sae" / "sae_weights.safetensors").is_file()}


def nearest_feature(w_a: Any, w_b: Any, feature: int) -> tuple[int, float]:
    """SAELens's feature whose decoder row points closest to thinklens's ``feature`` (the two SAEs index their features
    independently), with the cosine.

    Args:
        w_a: thinklens's decoder ``[feature, d_model]``.
        w_b: SAELens's decoder ``[feature, d_model]``.
    """
    a = torch.as_tensor(w_a, dtype=torch.float32)[int(feature)]  # [d_model]
    b = torch.as_tensor(w_b, dtype=torch.float32)  # [feature, d_model]
    cos = (b @ a) / (b.norm(dim=1) * a.norm()).clamp_min(1e-12)  # [feature]
    g = int(cos.argmax())
    return g, float(cos[g])


def context_text(before: str, token: str) -> str:
    """One context as the run stores it: ``before[token]``, escaped as a Python literal (``\\n`` for a newline)."""
    return repr(f"{before}[{token}]")[1:-1]


def recompute(model: "HookedModel", doc: Mapping[str, Any], run_path: Path | str, feature: int) -> dict[str, Any]:
    """Regenerate the run's held-out texts from its seed and plan, capture them at the SAEs' site and encode them with
    both saved SAEs: thinklens's ``feature`` and SAELens's nearest one (by decoder direction), each with its top
    contexts on the generated tokens (as the run picks them) and its activation count; every feature's firing density
    on all held-out states (as the run counts dead features), with the dead and dense features of each SAE.

    Returns ``{"pair": {arm: feature}, "cosine", "contexts": {arm: [(before, token, activation)]}, "active": {arm: n},
    "density": {arm: [fraction per feature]}, "dead": {arm: n}, "dense": {arm: n}, "d_sae": {arm: n}, "rows":
    {"all": n, "generated": n}}``.
    """
    d = details_of(doc)
    folders = sae_folders(run_path)
    if set(folders) != {arm for arm, _ in ARMS}:
        raise FileNotFoundError(f"{Path(run_path) / 'settings' / f'{METHOD}-planted'} does not hold both SAEs "
                                f"(found: {sorted(folders) or 'none'}); rerun `thinklens run validate --methods {METHOD}`")
    saes = {arm: load_sae(str(folder)) for arm, folder in folders.items()}
    site = d["site"]
    _, held = corpus(model, Plan(**d["plan"]), int(doc.get("seed") or 0))
    texts = [p + g for p, g in held]
    rows = capture_rows(model, site, texts, special_ids(model.tokenizer))
    generated = rows.pos >= torch.tensor([len(p) for p, _ in held])[rows.text]  # [rows]
    g, cos = nearest_feature(saes["thinklens"].W_dec.detach(), saes["saelens"].W_dec.detach(), feature)
    pair = {"thinklens": int(feature), "saelens": g}
    out: dict[str, Any] = {"pair": pair, "cosine": cos, "contexts": {}, "active": {}, "density": {}, "dead": {},
                           "dense": {}, "d_sae": {}, "rows": {"all": int(len(rows.acts)), "generated": int(generated.sum())}}
    with torch.no_grad():
        for arm, sae in saes.items():
            z = sae.encode(rows.acts.float())  # [rows, feature]
            density = (z > 0).float().mean(0)  # [feature]
            out["density"][arm] = density.tolist()
            out["dead"][arm] = int((density == 0).sum())
            out["dense"][arm] = int((density > DENSE).sum())
            out["d_sae"][arm] = int(z.shape[1])
            col = z[generated][:, pair[arm]]  # [generated rows]
            at = torch.nonzero(generated).ravel()  # [generated rows]: their index in ``rows``
            out["active"][arm] = int((col > 0).sum())
            ctxs = []
            for r in torch.topk(col, min(N_TOP, len(col))).indices.tolist():
                t, p = int(rows.text[at[r]]), int(rows.pos[at[r]])
                before = model.tokenizer.decode(list(texts[t][max(0, p - WIDTH + 1): p]))
                ctxs.append((before, model.tokenizer.decode([texts[t][p]]), float(col[r])))
            out["contexts"][arm] = ctxs
    return out


def contexts_match(stored: Mapping[str, Any] | None, got: Sequence[Sequence[Any]]) -> bool:
    """Whether recomputed contexts are the stored ones (same texts, same order; the stored ones are already escaped)."""
    if not stored:
        return False
    return [f"{b}[{t}]" for b, t in stored["contexts"]] == [context_text(b, t) for b, t, *_ in got]


def contexts_html(contexts: Sequence[Sequence[Any]]) -> str:
    """Contexts (``(before, token[, activation])``) as HTML lines, the activating token marked, every piece escaped
    (tokens are model output).

    >>> contexts_html([("a <b>", " c", 1.5)])
    '<div class="tl-sae-ctx"><code>1.50</code> a &lt;b&gt;<mark style="background:#fdba74;padding:0 2px;border-radius:3px"> c</mark></div>'
    """
    out = []
    for c in contexts:
        act = f"<code>{c[2]:.2f}</code> " if len(c) > 2 else ""
        out.append(f'<div class="tl-sae-ctx">{act}{html.escape(c[0])}<mark style="background:#fdba74;padding:0 2px;'
                   f'border-radius:3px">{html.escape(c[1])}</mark></div>')
    return "".join(out)


def density_rows(got: Mapping[str, Any], doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per SAE: latents, dead and dense features counted on the recomputed held-out states, beside the run's own dead
    fraction (the recomputation's check)."""
    d = details_of(doc)
    out = []
    for arm, label in ARMS:
        n = got["d_sae"][arm]
        out.append({"SAE": label, "latents": n, "dead": got["dead"][arm], "dead fraction": got["dead"][arm] / n,
                    "dead fraction (run)": (d.get(arm) or {}).get("dead_fraction"),
                    f"dense (> {DENSE:.0%} of tokens)": got["dense"][arm], "held-out states": got["rows"]["all"]})
    return out


def figure_density(got: Mapping[str, Any]) -> go.Figure:
    """Each SAE's features by firing density on the held-out states (log10 of the fraction of tokens; dead features,
    which never fire, are counted in the legend, not drawn), with the dense threshold marked."""
    fig = go.Figure()
    for arm, label in ARMS:
        live = [math.log10(x) for x in got["density"][arm] if x > 0]
        fig.add_trace(go.Histogram(x=live, name=f"{label} ({got['dead'][arm]} dead, {got['dense'][arm]} dense)",
                                   marker_color=COLOURS[arm], opacity=0.6, nbinsx=40))
    fig.add_vline(x=math.log10(DENSE), line_dash="dash", line_color="#d62728", annotation_text=f"dense: > {DENSE:.0%}",
                  annotation_position="top right")
    fig.update_layout(title=f"Feature firing density on {got['rows']['all']} held-out states (recomputed)",
                      xaxis_title="log10 fraction of tokens the feature fires on", yaxis_title="features",
                      barmode="overlay", template="plotly_white", height=380, legend={"orientation": "h", "y": -0.25})
    return fig
