"""Features: one SAE feature in the manner of Neuronpedia: its activation histogram and density, its top
contexts with the activating token marked, the logits its decoder row promotes and suppresses, and a link
that steers with it on the Steering page; and, on its second tab, thinklens's SAE against SAELens's on the same
activations (a ``validate --model`` run's ``sae-real`` settings or a committed record's, :mod:`app.sae_section`;
``?kind=validate&run=ID`` or ``?record=NAME`` opens it).

The SAE is an ``sae`` run's own or the one a ``steer`` run steered with (``?kind=steer&run=ID&feature=N``
opens that run's SAE at that feature). Activations come from held-out traces of the SAE's data, generated
once per SAE and cached; the page never registers hooks itself.
"""

from __future__ import annotations

import json

import streamlit as st

from app.common import error_card
from app.exports import chart, table
from app.feature_views import (
    feature_input,
    figure_histogram,
    figure_logits,
    load_hooked_model,
    load_sae_cached,
    metrics_row,
    page_link,
    sae_picker,
    scan,
)
from app.features import (
    activation_histogram,
    context_html,
    feature_activations,
    feature_logits,
    stat_rows,
    top_contexts,
)
from app.sae_section import saelens_section
from thinklens.steering.features import FeatureStats

st.set_page_config(page_title="thinklens · features", layout="wide")
st.title("Features")
st.caption("One SAE feature: how often and how strongly it fires, where, and what its decoder row writes to the "
           "logits. Pick the feature, then steer with it. Beside it, thinklens's SAE against SAELens's on the same "
           "activations.")


def feature_browser() -> None:
    """One feature of an ``sae`` run's SAE (or the one a ``steer`` run steered with)."""
    picked = sae_picker("features-sae")
    if picked is None:
        return
    run, source = picked
    metrics_row(source)
    st.caption(f"model `{source.model}`, site `{source.site}`, SAE folder `{source.sae_dir}` (sae-lens format), "
               f"{source.d_sae} features" + (f"; the run steered feature {source.feature}" if source.feature is not None
                                             else ""))
    stats = None
    if source.stats_file is not None:
        try:
            stats = FeatureStats.from_json(json.loads(source.stats_file.read_text()))
        except (OSError, ValueError, TypeError) as e:
            error_card(f"feature statistics of {source.label}", f"{type(e).__name__}: {e}")
    c1, c2 = st.columns([1, 1])
    feature = feature_input(source, "feature", "features-feature", stats, container=c1)
    n_traces = int(c2.number_input("held-out traces to scan", 4, 256, 32, step=4, key="features-n-traces",
                                   help="generated once per SAE and cached; the histogram and contexts come from them"))
    st.markdown(f"[Steer with feature {feature} →]({page_link('Steering', source, feature)})")
    try:
        sae = load_sae_cached(str(source.sae_dir))
        model = load_hooked_model(source.model)
        sc = scan(source, n_traces)
        acts = feature_activations(sae, sc.hidden, feature)
        promoted, suppressed = feature_logits(model, sae, feature, k=10)
    except Exception as e:  # noqa: BLE001 - show the error, keep the page alive
        error_card(f"scanning {source.label}'s SAE", f"{type(e).__name__}: {e}")
    else:
        hist = activation_histogram(acts)
        m = st.columns(4)
        m[0].metric("density", f"{hist.density:.2%}", help="fraction of scanned tokens where the feature is > 0")
        m[1].metric("active tokens", f"{hist.n_active} / {hist.n_tokens}")
        m[2].metric("max activation", f"{hist.max_act:.3f}")
        m[3].metric("traces scanned", str(len(sc.tokens)))
        left, right = st.columns(2)
        with left:
            if hist.n_active:
                chart(figure_histogram(hist, feature), key="features-hist", name=f"{source.label}-feature-{feature}-histogram")
            else:
                st.info(f"Feature {feature} never fired on the {hist.n_tokens} scanned tokens (a dead or rare feature).")
        with right:
            chart(figure_logits(promoted, suppressed, feature), key="features-logits",
                  name=f"{source.label}-feature-{feature}-logits")
        if stats is not None:
            st.subheader(f"Feature {feature} in the run's statistics")
            table(stat_rows(stats, feature), key="features-stats", name=f"{source.label}-feature-{feature}-stats")
        st.subheader(f"Top contexts of feature {feature}")
        st.caption("The marked token is the position where the feature fires; the underlined one is the token that "
                   "position produced next (the state at a position predicts the next token).")
        ctxs = top_contexts(sc, acts, n=12)
        if ctxs:
            st.markdown("<br>".join(context_html(c, sc.separator) for c in ctxs), unsafe_allow_html=True)
            table([{"activation": round(c.act, 3), "trace": c.trace, "step": c.step, "token": c.token,
                    "produced next": c.next_token, "context": sc.separator.join(c.before)} for c in ctxs],
                  key="features-contexts", name=f"{source.label}-feature-{feature}-contexts")
        else:
            st.write("never active on the scanned traces")


TABS = ("One feature", "Against SAELens")
tab_feature, tab_saelens = st.tabs(  # lazy: only the open tab runs (the feature browser scans traces with a model)
    TABS, default=TABS[1] if st.query_params.get("kind") == "validate" or st.query_params.get("record") else TABS[0],
    key="features-tab", on_change="rerun")  # a validate run's link (Validation page) or a record's opens the comparison
if tab_feature.open:
    with tab_feature:
        feature_browser()
if tab_saelens.open:
    with tab_saelens:
        saelens_section()
