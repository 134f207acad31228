"""The Features page's view of thinklens's SAE against SAELens's on the same activations (a ``validate --model`` run's
``sae-real`` settings, or a committed record's): drawn from :mod:`app.sae_views`; the contexts of SAELens's matching
feature and every feature's firing density are recomputed with the model on a worker thread when asked (the run keeps
neither)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from app import background
from app import sae_views as sv
from app.common import display_path, error_card, runs_root
from app.exports import chart, table
from app.feature_views import load_hooked_model, load_sae_cached
from app.validation_table import real_record_docs


@st.cache_data(ttl=600, show_spinner=False)
def _records() -> dict[str, dict]:
    return real_record_docs()


def _wanted(found: list[sv.Comparison]) -> int:
    """The comparison named by ``?run=ID`` (a validate run) or ``?record=NAME``, else the first."""
    qp = st.query_params
    for i, c in enumerate(found):
        if (c.run_id is not None and c.run_id == qp.get("run") and qp.get("kind") in (None, "validate")) or (
                c.record is not None and c.record == qp.get("record")):
            return i
    return 0


def saelens_section() -> None:
    """Pick a comparison; its numbers side by side with their intervals, the verdict, and one feature's contexts."""
    try:
        found = sv.comparisons(runs_root(), _records())
    except Exception as e:  # noqa: BLE001 - the feature browser on the other tab stands without this
        error_card("the SAE comparisons cannot be listed", f"{type(e).__name__}: {e}")
        return
    if not found:
        st.info(f"No validate run under `{display_path(runs_root())}` compared the SAEs, and no committed record "
                f"does: `thinklens run validate --model smollm2-135m --methods {sv.METHOD} --quick` trains both on the "
                "same activations.")
        return
    choice = st.selectbox("comparison (a validate run, or a committed record)", range(len(found)), index=_wanted(found),
                          format_func=lambda i: found[i].label, key="saelens-source")
    c = found[choice]
    doc = c.doc
    d = sv.details_of(doc)
    plan = d.get("plan") or {}
    st.caption(f"Both SAEs are topk with the same config (site `{d.get('site', '?')}`, {plan.get('training_tokens', '?')} "
               f"training activations), trained on the same {d.get('train_texts', '?')} texts of {d.get('model', '?')}'s "
               f"own completions: thinklens's by capturing the rows itself and feeding sae-lens's trainer, SAELens's by its "
               f"own training runner and activation store. Scored on {d.get('held_out_texts', '?')} held-out texts. "
               + ("Read from the repository's committed record (its SAEs are not kept)." if c.path is None else
                  f"From run `validate/{c.run_id}`."))
    ok = all((r or {}).get("ok") for r in sv.settings_of(doc).values())
    (st.success if ok else st.error)(sv.gap_line(doc))
    chart(sv.figure_fidelity(doc), key=f"fig-saelens-{choice}", name=f"{_stem(c)}-sae-vs-saelens")
    table(sv.metric_rows(doc), key=f"saelens-metrics-{choice}", name=f"{_stem(c)}-sae-vs-saelens",
          column_config={"metric": st.column_config.TextColumn(width=230),
                         "measured over": st.column_config.TextColumn(width="large")})
    st.caption("Dense features: the run keeps no firing density per feature, so the table has no number for them; the "
               "dead fractions have no interval. " + ("Recompute below to count both SAEs' dense features on the "
                                                     "held-out texts." if c.path is not None else ""))
    contexts(c, choice)


def _stem(c: sv.Comparison) -> str:
    return f"validate-{c.run_id}" if c.run_id else str(c.record)


def contexts(c: sv.Comparison, choice: int) -> None:
    """One stored feature of thinklens's SAE with its top contexts, beside SAELens's nearest feature (by decoder
    direction) when the run keeps both SAEs; both recomputed on request."""
    st.subheader("One feature's top contexts from each SAE")
    stored = sv.stored_features(c.doc)
    if not stored:
        st.info("The run stores no top contexts (it predates them, or no feature of thinklens's SAE was live).")
        return
    i = st.selectbox("feature of thinklens's SAE (the run stored the contexts of these, drawn at random among the live "
                     "ones)", range(len(stored)), key=f"saelens-feature-{choice}",
                     format_func=lambda k: f"feature {stored[k]['feature']} ({stored[k]['active']} active tokens)")
    f = stored[i]
    folders = sv.sae_folders(c.path)
    left, right = st.columns(2)
    left.markdown(f"**thinklens** · feature {f['feature']} · active on {f['active']} held-out generated tokens")
    left.markdown(sv.contexts_html(f["contexts"]), unsafe_allow_html=True)
    left.caption("as the run stored them (the activating token marked, escapes as stored)")
    if len(folders) < len(sv.ARMS):
        right.markdown("**SAELens**")
        right.info("The run stores no contexts of SAELens's SAE"
                   + (", and a committed record keeps neither SAE, so its matching feature cannot be found here. A "
                      f"validate run in the runs folder keeps both (`settings/{sv.METHOD}-planted/`)." if c.path is None
                      else f", and its folder lacks the saved SAEs ({', '.join(sorted(folders)) or 'none found'})."))
        return
    try:
        w = {arm: load_sae_cached(str(folder)).W_dec.detach() for arm, folder in folders.items()}
        g, cos = sv.nearest_feature(w["thinklens"], w["saelens"], f["feature"])
    except Exception as e:  # noqa: BLE001 - the stored numbers above stand without it
        error_card(f"the saved SAEs of validate/{c.run_id}", f"{type(e).__name__}: {e}")
        return
    right.markdown(f"**SAELens** · feature {g} · the nearest to thinklens's by decoder direction (cosine {cos:.3f})")
    right.caption("The run stores no contexts of SAELens's SAE: recompute them below.")
    model = c.doc.get("model") or "?"
    task = f"saelens-contexts-{c.run_id}-{f['feature']}"
    if st.button(f"Recompute both features' contexts and every feature's density (loads {model}, regenerates the "
                 f"run's {sv.details_of(c.doc).get('held_out_texts', '?')} held-out texts from its seed)",
                 key=f"btn-{task}", disabled=background.pending(task)):
        try:
            background.start(task, sv.recompute, load_hooked_model(model), c.doc, c.path, f["feature"], lock=model)
        except Exception as e:  # noqa: BLE001 - a model that cannot load: its error, the page alive
            error_card(f"loading {model}", f"{type(e).__name__}: {e}")

    def render(got: dict[str, Any]) -> None:
        a, b = st.columns(2)
        for col, (arm, label) in zip((a, b), sv.ARMS):
            col.markdown(f"**{label}** · feature {got['pair'][arm]} · active on {got['active'][arm]} of "
                         f"{got['rows']['generated']} generated tokens (recomputed)")
            col.markdown(sv.contexts_html(got["contexts"][arm]), unsafe_allow_html=True)
        same = sv.contexts_match(f, got["contexts"]["thinklens"]) and got["active"]["thinklens"] == f["active"]
        (st.caption if same else st.warning)(
            f"Recomputed contexts of thinklens's feature {f['feature']} {'match' if same else 'differ from'} the run's "
            + ("(same texts, same activation count)." if same else
               "(another device or library version samples other texts; the numbers above are the run's)."))
        chart(sv.figure_density(got), key=f"fig-{task}", name=f"{_stem(c)}-feature-density")
        table(sv.density_rows(got, c.doc), key=f"table-{task}", name=f"{_stem(c)}-dead-and-dense")

    background.show(task, f"recomputing on {model}", render,
                    on_error=lambda msg: error_card("recomputing the contexts", msg))
