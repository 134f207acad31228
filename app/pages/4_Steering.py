"""Steering: an SAE's features and live steering with the browsed feature (with a small coefficient sweep),
a steer run's equal-norm comparison, reasoning-vector sweeps, hybrid steering, and every kind compared
across runs.

The SAE is an ``sae`` run's own or the one a ``steer`` run steered with, so a steer run's feature indexes
the SAE shown. The feature browsed on the Features page (or named by ``?kind=&run=&feature=``) is the one
steered here. The page reads run folders and calls steering functions (``trace_prompt``, ``add_feature``,
``clamp_feature``); it never registers hooks itself.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from pathlib import Path

import streamlit as st

from app import background
from app.common import error_card, missing_results, read_result, run_picker, runs_root, show_figure
from app.compare import compared_kinds, show_comparison
from app.contrast_section import contrast_section
from app.exports import chart, table
from app.feature_views import (
    feature_input,
    figure_sweep,
    load_hooked_model,
    load_sae_cached,
    metrics_row,
    page_link,
    sae_picker,
)
from app.features import coefficient_sweep, diff_counts, diff_html, stored_contexts, sweep_rows, word_diff
from app.traces import steer_trace_id, trace_link, traces_link
from thinklens.calibration.stats import wilson
from thinklens.data.formats import format_for
from thinklens.data.problemsets import ProblemSet
from thinklens.runs.run_views import changed_counts, changed_where
from thinklens.steering.feature_steering import add_feature, clamp_feature
from thinklens.steering.features import FeatureStats, trace_prompt
from thinklens.steering.figures import figure_feature_trace
from thinklens.steering.reasoning_vectors import alpha_point
from thinklens.steering.steer_traces import broken_counts, broken_where
from thinklens.tasks.protocol import zoo_meta

st.set_page_config(page_title="thinklens · steering", layout="wide")
st.title("Steering")
st.caption("SAE features (sae-lens), feature steering with equal-norm baselines, reasoning vectors, hybrid steering.")

WORDS = ("wait", "hmm", "so", "therefore")


def default_prompt(model_name: str) -> str:
    """A synthetic problem in a zoo model's own format (its zoo style, or tiny-r1's chat template); "" otherwise."""
    if not zoo_meta(str(model_name)):
        return ""
    model = load_hooked_model(model_name)
    fmt = format_for(model, "auto")
    return fmt.render_problems(ProblemSet.synthetic(1, seed=7, min_steps=3, max_steps=3), model.tokenizer)[0]


def optional_result(run, name: str):
    """``results/<name>.json`` when the run has it (an error card only if it exists but is unreadable)."""
    return read_result(run, name) if (run.path / "results" / f"{name}.json").is_file() else None


@st.cache_resource(show_spinner=False)
def load_stats(path: str):
    return FeatureStats.from_json(json.loads(Path(path).read_text()))


def stats_of(run, source):
    """The SAE's stored feature statistics, or None with the true reason they are absent."""
    if source.stats_file is not None:
        try:
            return load_stats(str(source.stats_file))
        except (OSError, ValueError, TypeError) as e:
            error_card(f"feature statistics of {source.label}", f"{type(e).__name__}: {e}")
            return None
    if source.kind == "sae":
        n = run.config().get("stats_traces")
        why = ("it was trained with --stats-traces 0" if n == 0 else
               f"its config asks for {n} traces but results/feature_stats.json is not there (rerun it to write them)")
    else:
        why = (f"the SAE it steered with (`{source.sae_dir}`) is an sae-lens folder, not an `sae` run; the run picked "
               f"feature {source.feature} from its own scan")
    st.info(f"No stored feature statistics: {why}. The Features page scans any SAE for its histogram and contexts.")
    return None


def feature_table(stats, source) -> None:
    """The run's top 15 features by the chosen score, each linked to its top-activating contexts (the Features page)."""
    orders = [f"correlation with next {w!r}" for w in stats.corr_words] + ["correlation with correctness", "firing frequency"]
    order = st.selectbox("order features by", orders, key="order")
    if order.startswith("correlation with next"):
        score = stats.corr_words[order.split("'")[1]]
    elif order == "correlation with correctness" and stats.corr_correct is not None:
        score = stats.corr_correct
    else:
        score = stats.freq
    ranked = sorted(range(len(score)), key=lambda i: -score[i])
    table([{"feature": i, "score": round(score[i], 4), "firing frequency": round(stats.freq[i], 4),
            "max activation": round(stats.max_act[i], 3), "top contexts": page_link("Features", source, i)}
           for i in ranked[:15]], key="steer-features", name="sae-features",
          column_config={"top contexts": st.column_config.LinkColumn("top contexts", display_text="open")})


def text_block(text: str) -> str:
    """Generated text, whole and wrapped (never cut off, no code colouring), escaped."""
    return ('<div style="font-family:monospace;white-space:pre-wrap;word-break:break-word;border:1px solid #ddd;'
            f'border-radius:6px;padding:8px">{html.escape(text) or "&nbsp;"}</div>')


def show_diff(plain: str, steered: str, label: str) -> None:
    ops = word_diff(plain, steered)
    n = diff_counts(ops)
    st.markdown(f"**steered vs unsteered** ({label}): {n['same']} words kept, "
                f":red[{n['removed']} removed], :green[{n['added']} added]")
    st.markdown(diff_html(ops), unsafe_allow_html=True)
    with st.expander("both texts in full"):
        left, right = st.columns(2)
        left.markdown("**unsteered**")
        left.markdown(text_block(plain), unsafe_allow_html=True)
        right.markdown(f"**steered** ({label})")
        right.markdown(text_block(steered), unsafe_allow_html=True)


def steer_live(model, sae, site, feature: int, mode: str, unit: float, top: float, prompt: str, coeff: float,
               sweep: list[float], max_new_tokens: int = 64) -> dict:
    """Unsteered, steered at ``coeff`` and at each sweep coefficient (greedy, same prompt)."""
    def make(c: float):
        return add_feature(site, sae, feature, c * unit, unit=True) if mode == "add" else clamp_feature(site, sae, feature, c * top)

    plain = model.generate([prompt], max_new_tokens=max_new_tokens)[0].text
    texts = coefficient_sweep(model, prompt, make, sorted({float(coeff), *map(float, sweep)}), max_new_tokens=max_new_tokens)
    return {"plain": plain, "steered": texts[float(coeff)], "sweep": texts}


def live_steering(run, source, stats, feature: int) -> None:
    st.subheader(f"Live steering with feature {feature}")
    unit = float(source.metrics.get("l2_norm_in") or 1.0)
    c1, c2, c3 = st.columns(3)
    mode = c1.radio("mode", ["add", "clamp"], horizontal=True, key="live-mode")
    coeff = float(c2.slider("coefficient", -2.0, 2.0, 0.5, 0.05, key="live-coeff"))
    sweep = c3.multiselect("sweep coefficients", [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0], default=[-1.0, 0.0, 1.0],
                           key="live-sweep", help="the same prompt steered at each; counts of thinking words beside the output")
    st.caption(f"add: x + c·{unit:.2f}·unit(W_dec[f]) (c in units of the mean activation norm); "
               "clamp: feature set to c·(its max activation), SAE error term kept")
    prompt = st.text_input("prompt", value=default_prompt(source.model), key="live-prompt")
    if st.button("steer", key="steer-btn", disabled=background.pending("steer")) and prompt:
        try:  # generation runs on a worker thread: the page (and every other page) stays responsive
            sae = load_sae_cached(str(source.sae_dir))
            top = stats.max_act[feature] if stats else 1.0
            st.session_state["steer-label"] = f"feature {feature}, {mode}, c={coeff:+.2f}"
            background.start("steer", steer_live, load_hooked_model(source.model), sae, source.site, feature, mode, unit,
                             top, prompt, coeff, sweep, lock=source.model)
        except Exception as e:  # noqa: BLE001
            error_card("steering", f"{type(e).__name__}: {e}")

    def render(out: dict) -> None:
        left, right = st.columns([3, 2])
        with left:
            show_diff(out["plain"], out["steered"], st.session_state.get("steer-label", ""))
        with right:
            rows = sweep_rows(out["sweep"], WORDS)
            chart(figure_sweep(rows, WORDS), key="steer-sweep-fig", name="live-coefficient-sweep")
            table(rows, key="steer-sweep", name="live-coefficient-sweep",
                  column_config={"text": st.column_config.TextColumn("text", width="large")})

    background.show("steer", "steering", render, on_error=lambda msg: error_card("steering", msg))


def feature_section() -> None:
    picked = sae_picker("steer-sae-run")
    if picked is None:
        return
    run, source = picked
    metrics_row(source)
    st.caption(f"model `{source.model}`, site `{source.site}`, SAE folder `{source.sae_dir}` (sae-lens format)")
    stats = stats_of(run, source)
    if stats is not None:
        feature_table(stats, source)
    feature = feature_input(source, "feature", "feature", stats)
    st.markdown(f"[Open feature {feature} on the Features page (histogram, contexts, logits) →]"
                f"({page_link('Features', source, feature)})")
    st.subheader(f"Top contexts of feature {feature}")
    rows = (stats.top_contexts.get(feature, []) if stats is not None else []) or (
        steer_chosen(run).get("top_contexts", []) if source.kind == "steer" and feature == source.feature else [])
    if rows:
        table(stored_contexts(rows), key="steer-contexts", name=f"feature-{feature}-contexts")
    else:
        st.write("No stored contexts for this feature: the Features page scans traces for them.")
    if source.kind == "sae" and "feature_correlation" in run.figures():
        show_figure(run, "feature_correlation")
    trace_section(source, feature)
    live_steering(run, source, stats, feature)
    if source.kind == "steer":
        steer_results(run, source)


def trace_section(source, feature: int) -> None:
    st.subheader("Activation along a trace")
    prompt = st.text_input("prompt", value=default_prompt(source.model), key="trace-prompt")
    if st.button("generate and trace", key="trace-btn", disabled=background.pending("trace")) and prompt:
        try:  # generation runs on a worker thread: the page (and every other page) stays responsive
            background.start("trace", trace_prompt, load_hooked_model(source.model), load_sae_cached(str(source.sae_dir)),
                             prompt, [feature], site=source.site, max_new_tokens=64, lock=source.model)
        except Exception as e:  # noqa: BLE001 - show the error, keep the page alive
            error_card("trace", f"{type(e).__name__}: {e}")

    def render_trace(ft) -> None:
        st.markdown(text_block(ft.text), unsafe_allow_html=True)
        chart(figure_feature_trace(ft), key="steer-trace", name="feature-trace")

    background.show("trace", "generating and tracing", render_trace, on_error=lambda msg: error_card("trace", msg))


def steer_chosen(run) -> dict:
    res = optional_result(run, "steer") or {}
    return res.get("chosen") or {}


CHOSEN_FIELDS = (
    ("feature", "steered feature"), ("word", "thinking word"), ("corr", "correlation with the next word"),
    ("top_activating", "control: most active other feature"), ("random_feature", "control: random live feature"),
    ("unit_norm", "added norm at c = 1 (mean activation norm)"),
    ("diff_of_means_cos_feature", "cosine of the diff-of-means direction with the feature"),
)


def steer_results(run, source) -> None:
    """The steer run's sweep: its figure, what it chose, each arm and coefficient, and each sample as a diff
    against the unsteered sample (with a link to the trace viewer)."""
    st.subheader(f"Steer run {run.run_id}: feature {source.feature} against equal-norm controls")
    res = optional_result(run, "steer") or {}
    chosen = res.get("chosen") or {}
    try:  # the stored figure names its panels in subplot titles: the y axes get their titles here
        fig = run.read_figure("steer")
        fig.update_layout(yaxis_title=f"{chosen.get('word', 'wait')} per trace")
        if "yaxis2" in fig.layout:
            fig.update_layout(yaxis2_title="accuracy")
        chart(fig, key=f"fig-steer-{run.run_id}", name=f"steer-{run.run_id}-steer")
    except (OSError, ValueError):  # an error card with the command that repairs it
        show_figure(run, "steer")
    table([{"what": label, "value": str(round(chosen[k], 4) if isinstance(chosen[k], float) else chosen[k])}
           for k, label in CHOSEN_FIELDS if k in chosen], key="steer-chosen", name=f"steer-{run.run_id}-chosen")
    rows = res.get("rows") or []
    if not rows:
        return
    word = chosen.get("word", "wait")
    rel = f"steer/{run.run_id}"
    broken = broken_counts(run.path)  # None: the run predates per-problem traces

    def broke(r: dict) -> dict:
        if broken is None or float(r["coeff"]) == 0.0 or steer_trace_id(r) not in broken:
            return {}
        n = broken[steer_trace_id(r)]  # a link only to something: a row that broke nothing says 0
        return {"problems it broke": n, "broken problems": traces_link(rel, broken_where(steer_trace_id(r))) if n else None}

    table([{"arm": r["arm"], "feature": "-" if r.get("feature") is None else str(r["feature"]), "coefficient": r["coeff"],
            "added norm": None if r.get("added_norm") is None else round(r["added_norm"], 2),
            f"{word} per trace": round(r.get(word, 0.0), 3), f"traces saying {word}": r.get("traces_with_word"),
            "traces": r.get("n_traces"), "accuracy": r.get("accuracy"), **broke(r),
            "mean tokens": round(r.get("mean_tokens", 0), 1),
            "trace viewer": trace_link(rel, steer_trace_id(r), "diff")} for r in rows],
          key="steer-rows", name=f"steer-{run.run_id}-rows",
          column_config={"trace viewer": st.column_config.LinkColumn("trace viewer", display_text="open"),
                         "broken problems": st.column_config.LinkColumn("broken problems", display_text="open")})
    st.caption("Problems it broke: right unsteered and wrong at this coefficient (same seed and prompt), summed over "
               "seeds; the link opens exactly those texts." if broken is not None else
               "This run predates per-problem traces: only each row's first sample is stored (re-run it for the texts "
               "behind each accuracy).")
    base = next((r for r in rows if float(r["coeff"]) == 0.0), None)
    pick = st.selectbox("sample", range(len(rows)), key="steer-sample",
                        index=next((i for i, r in enumerate(rows) if r["arm"] == "feature" and r["coeff"] > 0), 0),
                        format_func=lambda i: f"{rows[i]['arm']}" + (f" (feature {rows[i]['feature']})" if rows[i].get(
                            "feature") is not None else "") + f", c={rows[i]['coeff']:+g}")
    r = rows[pick]
    if base is not None and r.get("sample") is not None:
        show_diff(base.get("sample", ""), r["sample"], f"{r['arm']}, c={r['coeff']:+g}, first prompt")
        st.markdown(f"[Open this sample in the trace viewer →]({trace_link(f'steer/{run.run_id}', steer_trace_id(r), 'diff')})")


CHANGED_COLUMNS = {c: st.column_config.LinkColumn(c, display_text="open") for c in ("broken problems", "fixed problems")}


def changed_links(run, kind: str, result: str, point: str) -> dict:
    """The problems ``point`` broke and fixed against the run's baseline, counted and linked in the trace viewer
    (``results/<result>.json``, :func:`thinklens.runs.run_views.paired_records`); {} for a run without it."""
    counts = _changed_counts(str(run.path / "results" / f"{result}.json"))
    if counts is None or point not in counts:
        return {}
    rel = f"{kind}/{run.run_id}"
    broke, fixed = counts[point]["broken"], counts[point]["fixed"]  # a link only to something: 0 says so, unlinked
    return {"broke": broke, "broken problems": traces_link(rel, changed_where(point, "broken")) if broke else None,
            "fixed": fixed, "fixed problems": traces_link(rel, changed_where(point, "fixed")) if fixed else None}


def after(row: dict, key: str, extra: dict) -> dict:
    """``row`` with ``extra``'s columns right after ``key`` (a wide table's links stay in view without scrolling).

    >>> list(after({"a": 1, "b": 2, "c": 3}, "b", {"x": 0}))
    ['a', 'b', 'x', 'c']
    """
    keys = list(row)
    at = keys.index(key) + 1 if key in keys else len(keys)
    return {**{k: row[k] for k in keys[:at]}, **extra, **{k: row[k] for k in keys[at:]}}


def _changed_counts(file: str) -> dict | None:
    """Point -> broken and fixed counts; None when the run has no per-problem traces (a run from before them, or one
    resumed from such a run's stages, writes an empty file)."""
    try:
        return changed_counts(json.loads(Path(file).read_text())) or None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def changed_caption(run, result: str, baseline: str) -> None:
    if _changed_counts(str(run.path / "results" / f"{result}.json")) is None:
        st.caption("This run predates per-problem traces: re-run it for the texts behind each accuracy.")
    else:
        st.caption(f"Broke: problems right at {baseline} and wrong here; fixed: the reverse. The links open exactly "
                   "those texts.")


def vector_rows(vec: dict) -> list[dict]:
    """The reasoning vector's facts as labelled rows (norms and cosines per tensor group, lineage checks)."""
    rows = [{"what": "vector", "group": "-", "value": vec.get("label")}]
    for g, v in (vec.get("norms") or {}).items():
        rows.append({"what": "norm of the vector", "group": g, "value": round(v, 4)})
    for g, v in (vec.get("cos_with_target_delta") or {}).items():
        rows.append({"what": "cosine with the target's own fine-tuning delta", "group": g, "value": round(v, 4)})
    for k, label in (("target_norm", "norm of the target's weights"), ("relative_norm", "vector norm / target norm"),
                     ("norm_delta_a", "norm of a - base"), ("norm_delta_b", "norm of b - base")):
        if k in vec:
            rows.append({"what": label, "group": "all", "value": round(vec[k], 4)})
    for name, label in (("lineage", "a and b"), ("target_lineage", "target and b")):
        lin = vec.get(name) or {}
        for k, v in lin.items():
            rows.append({"what": f"lineage of {label}: {k.replace('_', ' ')}", "group": "-",
                         "value": round(v, 4) if isinstance(v, float) else str(v)})
    chains = (vec.get("zoo_lineage") or {}).get("chains") or {}
    for k, chain in chains.items():
        rows.append({"what": f"zoo lineage of {k}", "group": "-", "value": " -> ".join(chain)})
    return [{**r, "value": str(r["value"])} for r in rows]


def hybrid_rows(res: dict) -> list[dict]:
    out = []
    for mode, r in res.items():
        correct = r.get("correct") or []
        k, n = sum(bool(c) for c in correct), len(correct)
        lo, hi = wilson(k, n) if n else (None, None)
        what = MODE_TEXT.get(mode, "") + (f" ({r['style']})" if r.get("style") else "")
        out.append({"mode": mode, "what it is": what, "accuracy": r.get("accuracy"), "n": str(n) if n else "-",
                    "95% interval (Wilson)": f"{lo:.2f}-{hi:.2f}" if n else "-",
                    "steering fired (fraction of tokens)": r.get("fired_fraction"),
                    "tokens changed (fraction)": r.get("changed_fraction"), "gap recovered": r.get("gap_recovered")})
    return out


MODE_TEXT = {
    "base": "the base model alone", "thinking": "the thinking model alone",
    "hybrid": "base model, steered where the two models disagree",
    "bias_only": "ablation: the bias vector for every category", "random_category": "ablation: a random category",
    "random_firing": "ablation: steering at random tokens at the hybrid's rate",
    "random_vectors": "ablation: random vectors of the trained norms",
    "base_own_style": "the base model in its own prompt format",
}


def category_rows(cats: dict) -> list[dict]:
    """One row per category of the hybrid's clustering SAE, labelled by its commonest example."""
    counts, norms, losses = cats.get("counts") or [], cats.get("vector_norms") or [], cats.get("losses") or {}
    examples = {int(k): v for k, v in (cats.get("examples") or {}).items()}
    out = []
    for c in range(max(len(counts), len(examples))):
        ex = examples.get(c, [])
        common = Counter(ex).most_common(1)
        loss = losses.get(f"cat{c}")
        out.append({"category": f"{c}: " + (repr(common[0][0]) if common else "empty"),
                    "training sentences": counts[c] if c < len(counts) else None,
                    "vector norm": round(norms[c], 2) if c < len(norms) else None,
                    "NLL before -> after training": f"{loss[0]:.3f} -> {loss[-1]:.3f}" if loss else "-",
                    "example sentences": " | ".join(dict.fromkeys(ex)) or "(no sentence landed here; no vector)"})
    return out


def hybrid_figure(run):
    """The stored hybrid figure with a sane right axis (percent, from 0) and an x axis title."""
    fig = run.read_figure("hybrid")
    fig.update_layout(yaxis2={"tickmode": "auto", "tickformat": ".0%", "rangemode": "tozero", "showgrid": False},
                      xaxis_title="mode (the table below says what each is)")
    return fig


TABS = ("Features and live steering", "Contrast vectors", "Reasoning vectors", "Hybrid", "Compare runs")
_OPENS = {"steer-vector": "Contrast vectors", "reasoning-vector": "Reasoning vectors", "hybrid": "Hybrid"}
tab_feat, tab_contrast, tab_rv, tab_hybrid, tab_compare = st.tabs(
    TABS, default=_OPENS.get(st.query_params.get("kind"), TABS[0]))  # a Home card's link opens its run's tab
with tab_feat:
    feature_section()

with tab_contrast:
    contrast_section()

with tab_rv:
    rv = run_picker("reasoning-vector", "reasoning-vector run", key="rv-run")
    if rv is not None and not missing_results(rv.path):
        if "alpha_sweep" in rv.figures():
            show_figure(rv, "alpha_sweep")
            rows = optional_result(rv, "alpha_sweep") or []
            table([{**{k: r[k] for k in ("group", "alpha", "accuracy")}, **changed_links(rv, "reasoning-vector",
                    "alpha_problems", alpha_point(r["group"], r["alpha"]))} for r in rows], key="steer-alpha-sweep",
                  name=f"reasoning-vector-{rv.run_id}-alpha-sweep", column_config=CHANGED_COLUMNS)
            changed_caption(rv, "alpha_problems", "α 0 (the target itself)")
        vec = optional_result(rv, "vector")
        if vec:
            st.subheader("The vector")
            table(vector_rows(vec), key="steer-rv-vector", name=f"reasoning-vector-{rv.run_id}-vector")

with tab_hybrid:
    hy = run_picker("hybrid", "hybrid run", key="hybrid-run")
    if hy is not None and not missing_results(hy.path):
        try:
            chart(hybrid_figure(hy), key=f"fig-hybrid-{hy.run_id}", name=f"hybrid-{hy.run_id}-hybrid")
        except (OSError, ValueError):  # an error card with the command that repairs it
            show_figure(hy, "hybrid")
        info = optional_result(hy, "hybrid_info")
        st.caption("fired_fraction: tokens where the two models disagree and steering is tried; changed_fraction: tokens "
                   "actually changed. " + (info["token_choice"] + f" Formats: thinking `{info['thinking_format']}`, base "
                   f"`{info['base_format']}`; data `{info['data']}`, vectors from `{info['vector_data']}`."
                   if info else "At a disagreement the thinking model picks the token among the steered base model's "
                   "candidates."))
        res = read_result(hy, "hybrid") or {}
        rows = hybrid_rows(res)
        links = [changed_links(hy, "hybrid", "hybrid_problems", row["mode"]) if row["mode"] != "base" else {}
                 for row in rows]
        shown = list(dict.fromkeys(k for extra in links for k in extra))  # the base row's cells stay empty
        table([after(row, "95% interval (Wilson)", {k: extra.get(k) for k in shown}) for row, extra in zip(rows, links)],
              key="steer-hybrid", name=f"hybrid-{hy.run_id}",
              column_config={**CHANGED_COLUMNS, "what it is": st.column_config.TextColumn(width="medium")})
        changed_caption(hy, "hybrid_problems", "the base model alone")
        cats = optional_result(hy, "categories")
        if cats:
            st.subheader("Categories of the thinking model's sentences")
            table(category_rows(cats), key="steer-hybrid-categories", name=f"hybrid-{hy.run_id}-categories")

with tab_compare:  # every steering job's (Job.capability), each with its own table or its findings and numbers
    for kind in compared_kinds("Steering", runs_root()):
        show_comparison(kind)
