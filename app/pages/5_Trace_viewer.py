"""Trace viewer: one trace's tokens coloured by a per-token quantity (MI with the answer, entropy, LYNX probe score
per cue, an SAE feature's activation, steered vs unsteered difference); click a token for its logit lens per layer
and its top SAE features. A thought-anchors trace is shown by sentence, coloured by its importance (the interval on
hover), with the sentence-to-sentence matrix; a tuned-lens trace with the answer's lens heat map beside the curves of
the same trace in other runs (``app/trace_views.py``); an organism trace with those curves under it.

Reads run folders (``app/traces.py`` knows their formats). The logit lens, the entropy and SAE activations need the
model: it is loaded once per app process and each trace is run through it once (cached), never at page load.
Links: ``?run=<kind>/<run id>&trace=<id>&quantity=<name>[&token=<position>][&highlight=<word>]`` (``traces.trace_link``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from app import traces as tr
from app.common import display_path, error_card, nothing_found, results_missing, runs_root, show_findings
from app.exports import chart, table
from app.trace_match import same_trace_curves
from app.trace_views import Curve, Section, curves_caption, curves_figure
from thinklens.errors import ThinklensError
from thinklens.runs.folders import RunFolder, discover_runs

st.set_page_config(page_title="thinklens: trace viewer", layout="wide")
st.title("Trace viewer")
st.caption("One trace, token by token, coloured by a quantity the run measured. Click a token for what every layer "
           "predicts there (logit lens) and its most active SAE features. Position t is generated token t; its values "
           "are those of the state that produced it.")

FEATURE = "SAE feature activation"
LENS_K = 5


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


@st.cache_data(max_entries=16, show_spinner=False)
def cached_traces(root: str, run: str, mtime: float, where: str | None = None) -> list[tuple[str, str]]:
    return tr.list_traces(Path(root), run, where)


@st.cache_data(ttl=30, show_spinner=False)
def cached_trace_kinds(root: str) -> list[str]:
    return tr.trace_kinds(Path(root))


@st.cache_data(max_entries=64, show_spinner=False)
def cached_trace(root: str, run: str, trace: str, mtime: float) -> tr.TraceData:
    return tr.load_trace(Path(root), run, trace)


@st.cache_resource(show_spinner="loading the model")
def get_model(name: str):
    from thinklens import HookedModel  # lazy: import cost (torch, seconds; only for a clicked token's logit lens)

    return HookedModel.load(name)


@st.cache_resource(show_spinner="loading the SAE")
def get_sae(folder: str):
    from thinklens.steering.sae import load_sae, sae_folder  # lazy: import cost (sae-lens, seconds; only for a feature)

    return load_sae(sae_folder(folder)[0])


@st.cache_data(max_entries=32, show_spinner="running the trace through the model (logit lens)")
def cached_lens(model: str, prompt_ids: tuple[int, ...], token_ids: tuple[int, ...]) -> dict[str, Any]:
    lens = tr.logit_lens(get_model(model), list(prompt_ids), list(token_ids), k=LENS_K)
    return {"layers": lens.layers, "top": lens.top, "entropy": lens.entropy, "p_token": lens.p_token}


@st.cache_data(max_entries=32, show_spinner="running the trace through the SAE")
def cached_sae_acts(model: str, sae: str, prompt_ids: tuple[int, ...], token_ids: tuple[int, ...]) -> list[list[float]]:
    return tr.sae_activations(get_model(model), get_sae(sae), list(prompt_ids), list(token_ids)).tolist()


@st.cache_data(max_entries=32, show_spinner=False)
def cached_prompt_ids(model: str, prompt: str) -> tuple[int, ...]:
    return tuple(get_model(model).tokenize(prompt)["input_ids"][0].tolist())


def _index(options: list[str], want: str | None) -> int:
    return options.index(want) if want in options else 0


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


@st.cache_data(ttl=120, max_entries=32, show_spinner="looking for the same trace in other runs")
def cached_curves(root: str, model: str | None, text: str, tokens: tuple[str, ...], separator: str,
                  run: str) -> list[Curve]:
    return same_trace_curves(Path(root), model, text, list(tokens), separator, skip=run)


def link_columns(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The columns of a table whose values are trace-viewer links, drawn as links."""
    out = {}
    for c in rows[0] if rows else {}:
        vals = [r.get(c) for r in rows if r.get(c) is not None]
        if vals and all(isinstance(v, str) and v.startswith(tr.VIEWER_PATH) for v in vals):
            out[c] = st.column_config.LinkColumn(display_text="open")
    return out


def show_section(s: Section, key: str) -> None:
    st.markdown(f"**{s.title}**")
    if s.note:
        st.info(s.note)
    if s.caption:
        st.caption(s.caption)
    if s.figure is not None:
        chart(s.figure, key=f"tv-{key}", name=f"trace-{trace_id}-{key}")
    if s.rows:
        table(s.rows, key=f"tv-{key}-table", name=f"trace-{trace_id}-{key}", column_config=link_columns(s.rows))


def quantity_figure(t: tr.TraceData, values: list[float | None], quantity: str, selected: int | None, unit: str = "token"):
    x = list(range(len(t.tokens)))
    y = [None if v is None else float(v) for v in values]
    colours = ["#111" if i == selected else "#1f77b4" for i in x]
    fig = go.Figure(go.Bar(x=x, y=y, marker_color=colours, hovertext=t.tokens,
                           hovertemplate="position %{x}: %{hovertext}<br>%{y:.4g}<extra></extra>"))
    fig.update_layout(title=f"{quantity} per {unit}", xaxis_title=f"position (generated {unit})", yaxis_title=quantity,
                      template="plotly_white", height=260, margin={"t": 40, "b": 40, "l": 60, "r": 20})
    return fig


def lens_figure(lens: dict[str, Any], pos: int, token: str):
    fig = go.Figure(go.Bar(x=[f"layer {li}" for li in lens["layers"]], y=lens["p_token"][pos],
                           hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
    fig.update_layout(title="Logit lens by layer", xaxis_title="layer (block output)",
                      yaxis_title=f"p({token!r})", yaxis_range=[0, 1], template="plotly_white", height=260,
                      margin={"t": 40, "b": 40, "l": 60, "r": 20})
    return fig


# ------------------------------------------------------------------------------------------------ pick the trace
root = runs_root()
qp = st.query_params
kinds = cached_trace_kinds(str(root))
# finished runs only: a failed or running run has no complete traces (the other pages' pickers say what it is)
runs = [f"{e.kind}/{e.run_id}" for kind in kinds for e in discover_runs(root, kind) if e.error is None and e.status == "done"]
linked = qp.get("run")
if linked and "/" not in linked and qp.get("kind"):  # Home's card names the run by its id and its kind
    linked = f"{qp.get('kind')}/{linked}"
if linked and linked not in runs:  # a setting's own run inside a validate run, or a link that names nothing
    try:
        tr.run_kind(linked, root)
        if (root / linked / "config.json").is_file() and (root.resolve() in (root / linked).resolve().parents):
            runs.insert(0, linked)
    except ThinklensError:
        pass
if not runs:
    st.info(f"No runs with traces under `{display_path(root)}` yet. `make demo` makes one of each kind.")
    st.stop()
if linked and linked not in runs:
    nothing_found("run with traces", linked)
c = st.columns([2, 3, 3])
run = c[0].selectbox("Run", runs, index=runs.index(linked) if linked in runs else (None if linked else 0),
                     placeholder="pick a run")
if run is None:
    st.stop()
if results_missing(RunFolder(root / run)):  # a half-written run: the card says how to finish it
    st.stop()
where = qp.get("where") if linked == run else None
try:
    listed = cached_traces(str(root), run, _mtime(root / run / "results"), where)
except ThinklensError as e:
    error_card(f"the traces of {run} cannot be listed", e)
    st.stop()
if where:
    st.caption(f"Only the traces with **{where}** ({len(listed)}), as the link that opened this view asked. "
               f"[All traces of this run]({tr.traces_link(run)})")
if not listed:
    st.info(f"{run} holds no traces" + (f" with {where}." if where else "."))
    st.stop()
ids, labels = [i for i, _ in listed], dict(listed)
same_trace = linked == run and qp.get("trace") in ids
bad_trace = not same_trace and linked == run and bool(qp.get("trace"))
if bad_trace:  # nothing else is shown in its place
    nothing_found(f"trace of {run}", str(qp.get("trace")))
trace_id = c[1].selectbox(f"Trace ({len(ids)})", ids, index=None if bad_trace else _index(ids, qp.get("trace")),
                          format_func=labels.get, placeholder="pick a trace")
if trace_id is None:
    st.stop()
try:
    t = cached_trace(str(root), run, trace_id, _mtime(root / run / "results"))
except ThinklensError as e:
    error_card(f"trace {trace_id} of {run} cannot be shown", e)
    st.stop()
view = tr.view_of(root, run)  # a thought-anchors or tuned-lens run: its sentences or steps, hover and sections
unit = view.unit if view is not None else "token"
findings = (RunFolder(root / run).meta().get("summary") or {}).get("findings") or []
if findings:  # the run's findings, in the words of its page, folded: this page is about one trace
    counts = {}
    for f_ in findings:
        counts[f_.get("verdict")] = counts.get(f_.get("verdict"), 0) + 1
    with st.expander("The run's findings: " + ", ".join(f"{n} {v}" for v, n in counts.items()), expanded=False):
        show_findings(RunFolder(root / run))

saes = tr.saes_for(root, t.model, run) if t.token_ids and t.model else []
options = list(t.quantities) + (list(tr.COMPUTED) if t.token_ids and t.model else []) + ([FEATURE] if saes else [])
want = qp.get("quantity") or t.default_quantity
parsed = tr.parse_feature_quantity(want) if want.startswith("feature:") else None
quantity = c[2].selectbox("Colour by", options, index=_index(options, FEATURE if parsed else want))
feature, sae = None, None
if quantity == FEATURE:
    f = st.columns([3, 1])
    sae_folders = [s for _, s in saes]
    if parsed and parsed[1] and parsed[1] not in sae_folders:
        saes.append((parsed[1], parsed[1]))
        sae_folders.append(parsed[1])
    sae = f[0].selectbox("SAE", sae_folders, index=_index(sae_folders, parsed[1] if parsed else None),
                         format_func=dict((s, lbl) for lbl, s in saes).get)
    feature = int(f[1].number_input("Feature", min_value=0, value=parsed[0] if parsed else 0, step=1))
    quantity_name = tr.feature_quantity(feature, None if sae == sae_folders[0] else sae)
else:
    quantity_name = quantity
highlight = st.text_input("Highlight a word", value=qp.get("highlight", ""),
                          help="Its occurrences get an orange frame (case and leading spaces ignored).").strip() or None
token = _int(qp.get("token")) if same_trace else None
if token is not None and not 0 <= token < len(t.tokens):
    st.warning(f"Position {token} is outside this trace (0..{len(t.tokens) - 1}); nothing is opened.")
    token = None
named = tr.where_marks(t.marks, where)  # a link to LYNX's exits at a δ: that δ's exit, opened
if token is None and not (same_trace and qp.get("token")) and named and t.marks[named[0]]:
    token = t.marks[named[0]][0]
new_qp = {"run": run, "trace": trace_id, "quantity": quantity_name}
if where:
    new_qp["where"] = where
if token is not None:
    new_qp["token"] = str(token)
if highlight:
    new_qp["highlight"] = highlight
if dict(qp) != new_qp:
    st.query_params.from_dict(new_qp)

# ------------------------------------------------------------------------------------------------ the facts
facts = {k: f"{v:.4g}" if isinstance(v, float) else v for k, v in t.facts.items() if v is not None and v != ""}
st.markdown(" · ".join(f"**{k}**: {v}" for k, v in facts.items()))
if t.prompt:
    with st.expander("Prompt", expanded=False):
        st.code(t.prompt, language=None, wrap_lines=True)

# ------------------------------------------------------------------------------------------------ the values
lens: dict[str, Any] | None = None
ids_ok = bool(t.token_ids and t.model and not t.no_lens)


def prompt_ids() -> tuple[int, ...]:
    return tuple(t.prompt_ids) if t.prompt_ids else cached_prompt_ids(t.model, t.prompt)


values: list[float | None]
try:
    if quantity == "entropy":
        lens = cached_lens(t.model, prompt_ids(), tuple(t.token_ids))
        values = list(lens["entropy"])
        quantity_label = "entropy (nats)"
    elif quantity == FEATURE:
        acts = cached_sae_acts(t.model, sae, prompt_ids(), tuple(t.token_ids))
        if not 0 <= feature < len(acts[0]):
            raise ThinklensError.of("feature", feature, f"0..{len(acts[0]) - 1} (this SAE's features)",
                                    "pick a feature of the SAE shown")
        values = [row[feature] for row in acts]
        quantity_label = f"feature {feature} activation"
    else:
        values = list(t.quantities[quantity])
        quantity_label = quantity
except (ThinklensError, OSError, ValueError, RuntimeError) as e:
    error_card(f"{quantity} of this trace cannot be computed", f"{type(e).__name__}: {e}")
    values, quantity_label = [None] * len(t.tokens), quantity

mark_names = list(t.marks)
default_marks = [m for m in mark_names if not m.startswith("exit") and "(iqr)" not in m]
exits = [m for m in mark_names if m.startswith("exit")]
at_token = [m for m in exits if token in t.marks[m]]  # a link that opened an exit shows the δs exiting there
default_marks += named or at_token or exits[len(exits) // 2:len(exits) // 2 + 1]
shown = st.multiselect("Marks", mark_names, default=default_marks, key=f"tv-marks-{run}") if mark_names else []
hover = view.hover(root / run, trace_id, quantity) if view is not None and quantity in t.quantities else None
st.markdown(tr.tokens_html(t, values, quantity=quantity_name, selected=token, highlight=highlight, marks=tuple(shown),
                           hover=hover), unsafe_allow_html=True)
lo, hi = tr.value_range(values, quantity_name)
if all(v is None for v in values):
    legend = [f"background: none ({quantity_label})"]
elif lo < 0 < hi:
    legend = [f"background: {quantity_label} from {lo:.3g} (red) through 0 (white) to {hi:.3g} (blue)"]
else:
    legend = [f"background: {quantity_label} from {lo:.3g} (white) to {hi:.3g} (blue)"]
if hover and any(hover):
    legend.append(f"hover a {unit} for its numbers (with the interval where the run stores one)")
LOOKS = {"peak": "green line", "cue": "purple line", "exit": "red line", "latent": "italic",
         "answer known": "teal bar on its left", "anchor": "orange dashed line", "answer token": "teal bar on its right",
         "logit lens": "brown line above", "tuned lens": "pink line under"}
legend += [f"{m}: {next((v for k, v in LOOKS.items() if m.startswith(k)), 'marked')}" for m in shown]
if highlight:
    legend.append(f"orange frame: {highlight!r} ({len(tr.highlighted(t.tokens, highlight, t.separator))} found)")
st.caption("; ".join(legend) + f". Click a {unit} to open it.")
if any(v is not None for v in values):
    chart(quantity_figure(t, values, quantity_label, token, unit), key="tv-quantity", name=f"trace-{trace_id}-{quantity}")

for name, rows in t.tables.items():
    if rows:
        st.markdown(f"**{name[0].upper() + name[1:]}**")
        table(rows, key=f"tv-table-{name}", name=f"trace-{trace_id}-{name}", column_config=link_columns(rows))

# ------------------------------------------------------------------------------------------------ beside the trace
truth = view is None and tr.FORCED in t.quantities  # an organism trace with its ground truth
curves: list[Curve] = []
if (view is not None and view.curves) or truth:
    curves = cached_curves(str(root), t.model, t.separator.join(t.tokens), tuple(t.tokens), t.separator, run)
try:
    for k, s_ in enumerate(view.sections(root / run, run, trace_id, curves) if view is not None else []):
        show_section(s_, f"section-{k}")
except (ThinklensError, OSError, ValueError, KeyError, IndexError, TypeError) as e:
    error_card(f"the {view.name} of trace {trace_id} cannot be drawn", f"{type(e).__name__}: {e}")
if truth:
    searched = "the finished runs with per-token traces (mi-peaks, lynx, ...) under the runs root"
    show_section(Section("MI, probe and LYNX curves of this trace", curves_caption(curves, searched=searched),
                         figure=curves_figure(curves, t.tokens, title="The same trace in other runs") if curves else None),
                 "truth-curves")

# ------------------------------------------------------------------------------------------------ one token
if token is None:
    st.info(view.clicked if view is not None else "Click a token above to see its logit lens per layer and its top SAE features.")
    st.stop()
st.subheader(f"{unit[0].upper() + unit[1:]} {token}: `{t.tokens[token]}`")
v = values[token]
value_line = hover[token] if hover and hover[token] else f"{quantity_label}: **{'-' if v is None else f'{v:.4g}'}**"
st.markdown(value_line + "".join(f" · {m}" for m in t.marks if token in t.marks[m]))
if view is not None:
    try:
        for k, s_ in enumerate(view.position(root / run, run, trace_id, token)):
            show_section(s_, f"position-{k}")
    except (ThinklensError, OSError, ValueError, KeyError, IndexError, TypeError) as e:
        error_card(f"{unit} {token} of trace {trace_id} cannot be opened", f"{type(e).__name__}: {e}")
if token in t.details:
    st.markdown("**Decoded latent thought** (the LM head's top tokens for this continuous state)")
    table([{"rank": r + 1, "token": tok, "probability": p} for r, (tok, p) in enumerate(t.details[token])],
          key="tv-latent-topk", name=f"trace-{trace_id}-latent-{token}")
if not ids_ok:
    st.caption(f"No logit lens for this trace: {t.no_lens or 'the trace has no token ids or no model'}.")
    st.stop()
try:
    lens = lens or cached_lens(t.model, prompt_ids(), tuple(t.token_ids))
except (ThinklensError, OSError, ValueError, RuntimeError) as e:
    error_card(f"the logit lens of {t.model} cannot run on this trace", f"{type(e).__name__}: {e}")
    st.stop()
left, right = st.columns([3, 2])
with left:
    st.markdown(f"**Logit lens** (top {LENS_K} next tokens of each block's output, read through the final norm and the "
                f"LM head; the model generated `{t.tokens[token]}` here; entropy {lens['entropy'][token]:.3f} nats)")
    table([{"layer": li, **{f"top {r + 1}": f"{tok!r} {p:.3f}" for r, (tok, p) in enumerate(lens["top"][token][j])},
            f"p({t.tokens[token]!r})": lens["p_token"][token][j]} for j, li in enumerate(lens["layers"])],
          key="tv-lens", name=f"trace-{trace_id}-lens-{token}")
with right:
    chart(lens_figure(lens, token, t.tokens[token]), key="tv-lens-fig", name=f"trace-{trace_id}-lens-{token}")
if saes:
    sae_use = sae or saes[0][1]
    try:
        acts = cached_sae_acts(t.model, sae_use, prompt_ids(), tuple(t.token_ids))
    except (ThinklensError, OSError, ValueError, RuntimeError) as e:
        error_card(f"the SAE {sae_use} cannot run on this trace", f"{type(e).__name__}: {e}")
        st.stop()
    row = acts[token]
    top = sorted(range(len(row)), key=lambda i: -row[i])[:10]
    st.markdown(f"**Top SAE features** at this token ({dict((s, lbl) for lbl, s in saes).get(sae_use, sae_use)}); "
                "a feature's link colours the trace by it")
    table([{"feature": i, "activation": row[i],
            "colour the trace by it": tr.trace_link(run, trace_id, tr.feature_quantity(i, None if sae_use == saes[0][1] else sae_use),
                                                    token=token, highlight=highlight)}
           for i in top if row[i] > 0], key="tv-sae", name=f"trace-{trace_id}-sae-{token}",
          column_config={"colour the trace by it": st.column_config.LinkColumn(display_text="colour by it")})
