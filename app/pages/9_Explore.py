"""Explore: one prompt through one or two models side by side, with per-token entropy and a logit-lens heatmap.

Generation runs on a worker thread (``background``): the page shows a spinner until both results
are in and never blocks other pages.
"""

from __future__ import annotations

import streamlit as st

from app import background
from app.common import error_card
from app.exports import chart, table
from thinklens.analyses.explore import explore, figure_entropy, figure_logit_lens

st.set_page_config(page_title="thinklens: explore", layout="wide")
st.title("Explore")
st.caption("Type a prompt and watch a model generate it: the entropy of each next-token distribution, and what "
           "every layer would predict (logit lens). Pick a second model to see the same prompt side by side.")

LOCAL = "(local folder)"
NONE = "(none)"


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
        from thinklens.data.formats import format_for
        from thinklens.tasks import TaskConfig, generate_problems

        p = generate_problems(1, seed=123, config=TaskConfig(min_steps=3, max_steps=3))[0]
        fmt = format_for(name)  # a zoo model's own format, read from its folder without loading it
        return fmt.render(p, get_model(name).tokenizer if fmt.name == "chat" else None)
    except Exception:  # noqa: BLE001 - a default is a convenience only
        return ""


def prompt_for(name: str, prompt: str, default: str) -> str:
    """What model ``name`` reads: the default problem in its own format while the prompt is unedited (a zoo
    CoT model is not fed a chat model's ``<think>`` prompt), else exactly the text typed."""
    if prompt != default:
        return prompt
    return default_prompt(name) or prompt


def pick_model(label: str, key: str, options: list[str], index: int = 0) -> str:
    name = st.selectbox(label, options, index=min(index, len(options) - 1), key=key)
    if name == LOCAL:
        name = st.text_input(f"{label}: folder", key=f"{key}-folder")
    return "" if name == NONE else name


c = st.columns(2)
with c[0]:
    model_name = pick_model("Model", "explore-model", choices + [LOCAL],
                            index=choices.index("tiny-think") if "tiny-think" in choices else 0)
with c[1]:
    second = pick_model("Side by side with", "explore-model-2", [NONE] + choices + [LOCAL],
                        index=1 + choices.index("tiny-cot") if "tiny-cot" in choices else 0)
default = default_prompt(model_name)
prompt = st.text_area("Prompt", value=default, key=f"explore-prompt-{model_name}",
                      help="Unedited, each model reads the problem in its own prompt format; edited, both read this text.")
max_new = st.slider("Max new tokens", 4, 128, 48, key="explore-max")
names = [n for n in (model_name, second) if n]

busy = any(background.pending(f"explore-{i}") for i in range(2))
if st.button("Generate", key="explore-go", disabled=busy) and model_name and prompt.strip():
    for i in range(2):
        background.forget(f"explore-{i}")
    st.session_state["explore-names"] = names
    for i, name in enumerate(names):
        try:
            model = get_model(name)
        except Exception as e:  # noqa: BLE001 - a bad folder or hub id: say so, keep the page
            error_card(f"cannot load {name}", f"{type(e).__name__}: {e}")
            continue
        text = prompt_for(name, prompt, default)
        background.start(f"explore-{i}", explore, model, text, max_new_tokens=max_new, lock=name)

def token_detail(res, pos: int, i: int, name: str) -> None:
    """One generated token: its entropy and, per layer, the logit lens's top token and the probability it gives the
    token finally generated (the columns of the heatmap below, as numbers)."""
    tok = res.tokens[pos]
    st.markdown(f"**Token {pos}:** `{tok}` · next-token entropy {res.entropy[pos]:.3f} nats")
    table([{"layer": layer, "layer's top token": res.top_token[j][pos], f"p({tok!r})": res.p_token[j][pos]}
           for j, layer in enumerate(res.layers)], key=f"explore-token-lens-{i}", name=f"explore-{name}-token-{pos}")


shown = st.session_state.get("explore-names", [])
cols = st.columns(len(shown)) if len(shown) > 1 else [st.container()]
for i, (col, name) in enumerate(zip(cols, shown)):
    with col:
        st.subheader(name)

        def render(res, i=i, name=name) -> None:
            if res.prompt.strip() != prompt.strip():
                st.caption("Read the problem in its own prompt format:")
                st.code(res.prompt, language=None, wrap_lines=True)
            st.markdown("**Generated:** " + "".join(res.tokens))
            if res.truncated:
                st.warning(f"cut at the limit of {len(res.tokens)} new tokens: the text is unfinished "
                           "(raise 'Max new tokens')", icon="✂️")
            pos = st.pills("Click a token for what every layer predicts there", list(range(len(res.tokens))),
                           format_func=lambda t: (res.tokens[t].replace("\n", "↵") or "␣"), key=f"explore-token-{i}")
            if pos is not None:
                token_detail(res, pos, i, name)
            chart(figure_entropy(res), key=f"explore-entropy-{i}", name=f"explore-entropy-{name}")
            chart(figure_logit_lens(res), key=f"explore-lens-{i}", name=f"explore-logit-lens-{name}")

        background.show(f"explore-{i}", f"generating with {name}", render,
                        on_error=lambda msg, name=name: error_card(f"{name} cannot run this prompt", msg))
