"""Explore: type a prompt, watch the embedded model generate, with per-token entropy and a logit-lens heatmap."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import error_card  # noqa: E402

from analyses.explore import explore, figure_entropy, figure_logit_lens  # noqa: E402
from thinklens.errors import ThinklensError  # noqa: E402

st.set_page_config(page_title="thinklens: explore", layout="wide")
st.title("Explore")


@st.cache_resource(show_spinner="loading model")
def get_model(name: str):
    from thinklens import HookedModel

    return HookedModel.load(name)


try:
    from thinklens.zoo.registry import LATENT_ZOO_NAMES, ZOO_NAMES
    choices = [n for n in ZOO_NAMES if n != "tiny-pre" and n not in LATENT_ZOO_NAMES]
except ImportError:
    choices = []

def default_prompt(name: str) -> str:
    """A held-out synthetic problem in the chosen model's own prompt format (zoo style or chat template)."""
    try:
        from thinklens.formats import format_for
        from thinklens.tasks import TaskConfig, generate_problems

        p = generate_problems(1, seed=123, config=TaskConfig(min_steps=3, max_steps=3))[0]
        fmt = format_for(name)  # a zoo model's own format, read from its folder without loading it
        return fmt.render(p, get_model(name).tokenizer if fmt.kind == "chat" else None)
    except Exception:  # noqa: BLE001 - a default is a convenience only
        return ""


model_name = st.selectbox("Model", choices + ["(local folder)"], key="explore-model")
if model_name == "(local folder)":
    model_name = st.text_input("Model folder", key="explore-folder")
prompt = st.text_area("Prompt", value=default_prompt(model_name), key=f"explore-prompt-{model_name}")
max_new = st.slider("Max new tokens", 4, 128, 48, key="explore-max")
if st.button("Generate", key="explore-go") and model_name and prompt.strip():
    try:
        res = explore(get_model(model_name), prompt, max_new_tokens=max_new)
    except ThinklensError as e:
        error_card("cannot run", e)
    else:
        st.markdown("**Generated:** " + "".join(res.tokens))
        st.plotly_chart(figure_entropy(res), use_container_width=True)
        st.plotly_chart(figure_logit_lens(res), use_container_width=True)
