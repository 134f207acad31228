"""The Validation page's pictures of a ``validate --model`` run's positive controls (the sentiment readout by layer,
induction's head map and ablation): drawn from :mod:`app.control_views`; the map of every head is recomputed with the
model on a worker thread when asked (the record keeps only the top heads' scores)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from app import background
from app import control_views as cv
from app.common import error_card
from app.exports import chart, table


@st.cache_data(max_entries=8, show_spinner=False)
def _head_map(model: str, seed: int, quick: bool) -> dict[str, Any]:
    return cv.prefix_matching_map(model, seed=seed, quick=quick)


def show_controls(doc: Mapping[str, Any], key: str) -> None:
    """The readout and induction pictures of one validate document (a run's or a committed record's), if it has them."""
    methods = cv.has_controls(doc)
    if not methods:
        return
    model = doc.get("model") or "?"
    st.markdown(f"**The positive controls on {model}, as pictures**")
    if "readout" in methods:
        st.caption("Sentiment readout: " + cv.readout_line(doc))
        chart(cv.figure_readout(doc), key=f"ctl-readout-{key}", name=f"{key}-readout-by-layer")
        table(cv.readout_rows(doc), key=f"ctl-readout-table-{key}", name=f"{key}-readout-by-layer", height=240)
    if "induction" in methods:
        x = cv.induction_numbers(doc)
        st.caption(f"Induction: the top {x['k']} prefix-matching heads "
                   f"({', '.join(f'L{layer}H{h}' for layer, h in x['top_heads'])}) mean-ablated raise the repeated half's loss "
                   f"by {x['top_rise'] or float('nan'):.3f} nats, {x['k']} random heads by {x['random_rise'] or float('nan'):.3f}; "
                   f"excess {x['excess'] or float('nan'):.3f} {cv.interval_text(x['excess_ci'])} (n={x['n']}), verdict {x['verdict']}")
        left, right = st.columns(2)
        chart(cv.figure_ablation(doc), key=f"ctl-ablation-{key}", name=f"{key}-induction-ablation", container=left)
        chart(cv.figure_top_heads(doc), key=f"ctl-top-heads-{key}", name=f"{key}-induction-top-heads", container=right)
        table(cv.ablation_rows(doc), key=f"ctl-ablation-table-{key}", name=f"{key}-induction-ablation")
        head_map(doc, key, x)


def head_map(doc: Mapping[str, Any], key: str, x: Mapping[str, Any]) -> None:
    """The layer x head map, recomputed with the model on the setting's own sequences on request (worker thread), its
    top heads checked against the record's."""
    model, seed, quick = doc.get("model"), int(doc.get("seed") or 0), bool(doc.get("quick"))
    if not model:
        return
    task = f"head-map-{key}"
    if st.button(f"Map every head (loads {model}, recomputes the scores on the setting's "
                 f"{'quick' if quick else 'full'}-size selection sequences)", key=f"btn-{task}",
                 disabled=background.pending(task)):
        background.start(task, _head_map, model, seed, quick, lock=model)

    def render(result: dict[str, Any]) -> None:
        top = [tuple(p) for p in result["top"]]
        same = top == list(x["top_heads"])
        chart(cv.figure_head_map(result["scores"], top, f"Prefix-matching score of every head of {model} (top heads ringed)"),
              key=f"ctl-map-{key}", name=f"{key}-induction-head-map")
        (st.caption if same else st.warning)(
            f"Recomputed top {len(top)} heads {'match' if same else 'differ from'} the record's "
            f"({', '.join(f'L{a}H{b}' for a, b in top)}" + ("" if same else
                                                            f" against {', '.join(f'L{a}H{b}' for a, b in x['top_heads'])}") + ").")

    background.show(task, f"scoring every head of {model}", render,
                    on_error=lambda msg: error_card(f"the head map of {model}", msg))
