"""Steering: SAE feature browser, live steering of a prompt, reasoning-vector sweeps, hybrid steering.

The page reads run folders (`thinklens run sae`, `thinklens run steer|reasoning-vector|hybrid`) and calls
steering functions (``trace_prompt``, ``steer_prompt`` with ``add_feature``/``clamp_feature``); it never
registers hooks itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import background  # noqa: E402
from common import error_card, read_result, run_picker, show_figure  # noqa: E402
from exports import chart, table  # noqa: E402

st.set_page_config(page_title="thinklens · steering", layout="wide")
st.title("Steering")
st.caption("SAE features (sae-lens), feature steering with equal-norm baselines, reasoning vectors, hybrid steering.")


@st.cache_resource(show_spinner="loading model")
def load_hooked_model(name: str):
    from thinklens.model import HookedModel

    return HookedModel.load(name)


@st.cache_resource(show_spinner="loading SAE")
def load_sae_cached(path: str):
    from steering.sae import load_sae

    return load_sae(path)


def default_prompt(model_name: str) -> str:
    """A synthetic problem in a zoo model's own format (its zoo style, or tiny-r1's chat template); "" otherwise."""
    from thinklens.tasks.protocol import zoo_meta

    if not zoo_meta(str(model_name)):
        return ""
    from steering.problems import zoo_stream
    from thinklens.formats import format_for

    model = load_hooked_model(model_name)
    fmt = format_for(model, "auto")
    problem = zoo_stream(1, seed=7, min_steps=3, max_steps=3)[0]
    return fmt.render(problem.ground_truth if fmt.is_zoo else problem.question, model.tokenizer)


def optional_result(run, name: str):
    """``results/<name>.json`` when the run has it (an error card only if it exists but is unreadable)."""
    return read_result(run, name) if (run.path / "results" / f"{name}.json").is_file() else None


def sae_context():
    """The chosen SAE run: (run, model name, site, metrics, stats) or None."""
    run = run_picker("sae", "SAE run", key="steer-sae-run")
    if run is None:
        return None
    cfg = run.config()
    nested = {**cfg.get("job", {}), **cfg.get("sae", {})}  # runs made before the one-config `sae` job nested them
    model_name, site = cfg.get("model", nested.get("model")), cfg.get("site", nested.get("site"))
    metrics = optional_result(run, "metrics") or {}
    stats = None
    if (run.path / "results" / "feature_stats.json").is_file():
        from steering.features import FeatureStats

        raw = read_result(run, "feature_stats")
        stats = FeatureStats.from_json(raw) if raw else None
    return run, model_name, site, metrics, stats


tab_browse, tab_live, tab_rv, tab_hybrid = st.tabs(["Feature browser", "Live steering", "Reasoning vectors", "Hybrid"])
ctx = None
with tab_browse:
    ctx = sae_context()
    if ctx is not None:
        run, model_name, site, metrics, stats = ctx
        cols = st.columns(5)
        for col, (label, key) in zip(cols, [("explained variance", "explained_variance"), ("L0", "l0"),
                                            ("dead features", "dead_features"), ("CE loss recovered", "ce_loss_recovered"),
                                            ("features", "d_sae")]):
            v = metrics.get(key)
            col.metric(label, "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v)))
        st.caption(f"model `{model_name}`, site `{site}`, SAE folder `{run.path / 'sae'}` (sae-lens format)")
        if stats is None:
            st.info("This run has no feature statistics (trained with --stats-traces 0).")
        else:
            orders = [f"correlation with next {w!r}" for w in stats.corr_words] + ["correlation with correctness", "firing frequency"]
            order = st.selectbox("order features by", orders, key="order")
            if order.startswith("correlation with next"):
                score = stats.corr_words[order.split("'")[1]]
            elif order == "correlation with correctness" and stats.corr_correct is not None:
                score = stats.corr_correct
            else:
                score = stats.freq
            ranked = sorted(range(len(score)), key=lambda i: -score[i])
            table([{"feature": i, "score": round(score[i], 4), "freq": round(stats.freq[i], 4),
                    "max act": round(stats.max_act[i], 3)} for i in ranked[:15]], key="steer-features", name="sae-features")
            feature = int(st.number_input("feature", 0, len(stats.freq) - 1, value=int(ranked[0]), key="feature"))
            st.subheader(f"Top contexts of feature {feature}")
            rows = stats.top_contexts.get(feature, [])
            if rows:
                table([{"act": r["act"], "context": r["context"], "next token": r["token"]} for r in rows],
                      key="steer-contexts", name=f"feature-{feature}-contexts")
            else:
                st.write("never active on the scanned traces")
            show_figure(run, "feature_correlation")
            st.subheader("Activation along a trace")
            prompt = st.text_input("prompt", value=default_prompt(model_name), key="trace-prompt")
            if st.button("generate and trace", key="trace-btn", disabled=background.pending("trace")) and prompt:
                try:  # generation runs on a worker thread: the page (and every other page) stays responsive
                    from steering.features import trace_prompt

                    background.start("trace", trace_prompt, load_hooked_model(model_name),
                                     load_sae_cached(str(run.path / "sae")), prompt, [feature], site=site,
                                     max_new_tokens=64, lock=model_name)
                except Exception as e:  # noqa: BLE001 - show the error, keep the page alive
                    error_card("trace", f"{type(e).__name__}: {e}")

            def render_trace(ft) -> None:
                from steering.figures import figure_feature_trace

                st.code(ft.text)
                chart(figure_feature_trace(ft), key="steer-trace", name="feature-trace")

            background.show("trace", "generating and tracing", render_trace,
                            on_error=lambda msg: error_card("trace", msg))

with tab_live:
    if ctx is None:
        st.info("Pick an SAE run in the feature browser first.")
    else:
        run, model_name, site, metrics, stats = ctx
        unit = float(metrics.get("l2_norm_in") or 1.0)
        c1, c2, c3 = st.columns(3)
        n_feat = int(metrics.get("d_sae") or (len(stats.freq) if stats else 1))
        feat = int(c1.number_input("feature", 0, max(0, n_feat - 1), value=int(st.session_state.get("feature", 0)), key="live-feature"))
        mode = c2.radio("mode", ["add", "clamp"], horizontal=True, key="live-mode")
        coeff = float(c3.slider("coefficient", -2.0, 2.0, 0.5, 0.05, key="live-coeff"))
        st.caption(f"add: x + c·{unit:.2f}·unit(W_dec[f]) (c in units of the mean activation norm); "
                   "clamp: feature set to c·(its max activation), SAE error term kept")
        prompt = st.text_input("prompt", value=default_prompt(model_name), key="live-prompt")
        if st.button("steer", key="steer-btn", disabled=background.pending("steer")) and prompt:
            try:  # generation runs on a worker thread: the page (and every other page) stays responsive
                from steering.effects import steer_prompt
                from steering.feature_steering import add_feature, clamp_feature

                sae = load_sae_cached(str(run.path / "sae"))
                if mode == "add":
                    iv = add_feature(site, sae, feat, coeff * unit, unit=True)
                else:
                    top = stats.max_act[feat] if stats else 1.0
                    iv = clamp_feature(site, sae, feat, coeff * top)
                st.session_state["steer-label"] = f"feature {feat}, {mode}, c={coeff:+.2f}"
                background.start("steer", steer_prompt, load_hooked_model(model_name), prompt, [iv], max_new_tokens=64,
                                 lock=model_name)
            except Exception as e:  # noqa: BLE001
                error_card("steering", f"{type(e).__name__}: {e}")

        def render_steered(texts) -> None:
            plain, steered = texts
            left, right = st.columns(2)
            left.markdown("**unsteered**")
            left.code(plain)
            right.markdown(f"**steered** ({st.session_state.get('steer-label', '')})")
            right.code(steered)

        background.show("steer", "steering", render_steered, on_error=lambda msg: error_card("steering", msg))
    steer_run = run_picker("steer", "steer run (equal-norm baselines)", key="steer-run")
    if steer_run is not None:
        show_figure(steer_run, "steer")
        res = optional_result(steer_run, "steer")
        if res:
            st.json(res.get("chosen", {}), expanded=False)

with tab_rv:
    rv = run_picker("reasoning-vector", "reasoning-vector run", key="rv-run")
    if rv is not None:
        if "alpha_sweep" in rv.figures():
            show_figure(rv, "alpha_sweep")
            rows = optional_result(rv, "alpha_sweep") or []
            table([{k: r[k] for k in ("group", "alpha", "accuracy")} for r in rows], key="steer-alpha-sweep",
                  name=f"reasoning-vector-{rv.run_id}-alpha-sweep")
        vec = optional_result(rv, "vector")
        if vec:
            st.json(vec, expanded=False)

with tab_hybrid:
    hy = run_picker("hybrid", "hybrid run", key="hybrid-run")
    if hy is not None:
        show_figure(hy, "hybrid")
        info = optional_result(hy, "hybrid_info")
        st.caption("fired_fraction: tokens where the two models disagree and steering is tried; changed_fraction: tokens "
                   "actually changed. " + (info["token_choice"] + f" Formats: thinking `{info['thinking_format']}`, base "
                   f"`{info['base_format']}`; data `{info['data']}`, vectors from `{info['vector_data']}`."
                   if info else "At a disagreement the thinking model picks the token among the steered base model's "
                   "candidates."))
        res = read_result(hy, "hybrid") or {}
        table([{"mode": m, **{k: r.get(k) for k in ("accuracy", "fired_fraction", "changed_fraction", "gap_recovered")}}
               for m, r in res.items()], key="steer-hybrid", name=f"hybrid-{hy.run_id}")
        cats = optional_result(hy, "categories")
        if cats:
            st.json(cats.get("examples", {}), expanded=False)
