"""The Steering page's section for a ``steer-vector`` run (contrastive activation addition scored by VADER): its
pictures and tables come from :mod:`app.contrast_views`; this draws them with Streamlit."""

from __future__ import annotations

import html

import streamlit as st

from app import contrast_views as cv
from app.common import error_card, read_result, results_missing, run_picker, runs_root
from app.exports import chart, table
from app.traces import load_trace, trace_link
from thinklens.errors import ThinklensError


def contrast_section() -> None:
    """A ``steer-vector`` run: the dose-response of the vector and its random control, a row per arm with its verdict
    and traces, and one prompt's continuations side by side across the arms, words coloured by VADER valence."""
    run = run_picker("steer-vector", "steer-vector run", key="steer-vector-run")
    if run is None or results_missing(run, ("steer_vector",)):
        return
    doc = read_result(run, "steer_vector")
    if not doc:
        return
    vec = doc.get("vector") or {}
    st.caption(f"vector {vec.get('source', '?')} at `{doc.get('site', '?')}` (|v| {vec.get('norm', float('nan')):.1f}; c is in "
               f"units of the typical token-state norm there, {doc.get('unit_norm', float('nan')):.1f}); "
               f"{doc.get('n_prompts', '?')} prompts × {doc.get('samples', '?')} sampled continuations per arm, every arm "
               "with the same sampling seed; the random direction has the vector's norm.")
    try:
        chart(cv.figure_dose_response(doc), key=f"fig-steer-vector-{run.run_id}", name=f"steer-vector-{run.run_id}-dose-response")
        rel = f"steer-vector/{run.run_id}"
        table(cv.arm_rows(doc, lambda arm, c: trace_link(rel, f"{arm}/{c:g}/0", "words")), key="steer-vector-arms",
              name=f"steer-vector-{run.run_id}-arms",
              column_config={"continuations": st.column_config.LinkColumn("continuations", display_text="open")})
    except (KeyError, TypeError, ValueError) as e:
        error_card(f"steer-vector run {run.run_id} has unexpected results", f"{type(e).__name__}: {e}")
        return
    n = cv.n_examples(doc)
    if not n:
        return
    st.subheader("One prompt across the arms")
    i = st.selectbox("prompt", range(n), key="steer-vector-prompt", format_func=lambda k: f"prompt {k}")
    try:
        prompt = load_trace(runs_root(), f"steer-vector/{run.run_id}", f"unsteered/0/{i}").prompt
    except (ThinklensError, OSError, ValueError):
        prompt = ""
    shown = html.escape(prompt) or "(not found: the run's prompt file has moved)"
    st.markdown(f"**Prompt:** {shown} · each word on "
                "red (negative) to blue (positive) by its VADER valence (-4 to +4, before VADER's negation and booster "
                "rules); the score under a text is that continuation's compound.", unsafe_allow_html=True)
    panels = cv.example_panels(doc, i)
    by_c: dict[float, list] = {}
    for arm, c, text in panels:
        by_c.setdefault(c, []).append((arm, text))
    for c, arms in sorted(by_c.items(), key=lambda kv: (kv[0] != 0, kv[0])):
        cols = st.columns(max(len(arms), 2))
        for col, (arm, text) in zip(cols, arms):
            col.markdown(f"**{arm}** · c = {c:+g}")
            col.markdown(cv.valence_html(text), unsafe_allow_html=True)
            col.caption(f"VADER compound {cv.compound(text):+.3f} · [in the trace viewer]"
                        f"({trace_link(f'steer-vector/{run.run_id}', f'{arm}/{c:g}/{i}', 'words')})")
