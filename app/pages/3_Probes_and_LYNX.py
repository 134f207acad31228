"""Probes and LYNX: conformal early exit (validity, Pareto, exits, base rate) and probe layer sweeps.

Reads run folders written by ``thinklens run lynx`` and ``thinklens run probe``; builds figures with
the probes package's figure functions; never loads a model or registers a hook.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import error_card, read_result, run_picker, show_figure  # noqa: E402

from probes.lynx_result import load_lynx_result  # noqa: E402
from thinklens.errors import ThinklensError  # noqa: E402

st.set_page_config(page_title="thinklens: probes and LYNX", layout="wide")
st.title("Probes and LYNX")

GUARANTEE = (
    "**What δ guarantees.** Per cue event, and only if calibration and test events are exchangeable: an event "
    "whose forced exit would be wrong (y = 0) gets the prediction set {1} (\"safe to exit\") with probability at "
    "most δ. It is not a per-trajectory bound: a rollout scanned over many events has many chances to exit "
    "wrongly. The validity plot measures the per-event rate on the test split, with 95% Clopper-Pearson bars; "
    "points should lie on or below the diagonal up to their bars."
)


def _pct(x) -> str:
    return "-" if x is None else f"{x:.1%}"


def lynx_section() -> None:
    run = run_picker("lynx", "LYNX run", key="lynx-run")
    if run is None:
        return
    try:
        result = load_lynx_result(run)
    except (ThinklensError, OSError, ValueError) as e:
        error_card(f"LYNX run {run.run_id} cannot be shown", e)
        return
    s = result.summary
    test = s.get("splits", {}).get("test", {})
    cal = s.get("calibration", {})
    c = st.columns(5)
    c[0].metric("model", str(s.get("model", "?")))
    c[1].metric("label base rate (test)", _pct(test.get("label_base_rate")))
    c[2].metric("probe AUROC (test)", "-" if s.get("test_auroc") is None else f"{s['test_auroc']:.3f}")
    c[3].metric("full-rollout accuracy", _pct(test.get("full_accuracy")))
    c[4].metric("calibration events", f"{cal.get('n_pos', '?')} pos / {cal.get('n_neg', '?')} neg")
    st.markdown(GUARANTEE)
    if s.get("skipped_deltas"):
        st.warning(f"deltas skipped (calibration classes too small): {s['skipped_deltas']}")
    deltas = result.lynx_deltas()
    delta = st.selectbox("δ for the exit histogram", deltas, index=len(deltas) // 2, key="lynx-delta")
    try:
        figs = result.figures(histogram_delta=delta)
    except (ThinklensError, ValueError, KeyError) as e:
        error_card("figures", e)
        return
    left, right = st.columns(2)
    left.plotly_chart(figs["validity"], width="stretch", key="lynx-validity")
    right.plotly_chart(figs["pareto"], width="stretch", key="lynx-pareto")
    left.plotly_chart(figs["exit_histogram"], width="stretch", key="lynx-exits")
    right.plotly_chart(figs["base_rate"], width="stretch", key="lynx-base-rate")
    st.subheader("Per δ")
    st.dataframe([{
        "δ": r["delta"], "accuracy": r["accuracy"], "Δ accuracy vs full": r["accuracy_change"],
        "mean tokens": r["mean_tokens"], "token saving": r["saving"], "exit rate": r["exit_rate"],
        "P(S={1}|y=0)": r["rate"], "95% upper": r["upper"], "margin": r["margin"],
        "within bound": r["consistent"], "q_pos": r["q_pos"], "q_neg": r["q_neg"],
    } for r in result.per_delta], width="stretch", hide_index=True, key="lynx-per-delta")
    st.subheader("All policies (test split)")
    st.dataframe([{k: v for k, v in row.items() if k != "param"} for row in result.report.table()],
                 width="stretch", hide_index=True, key="lynx-policies")


def probe_section() -> None:
    run = run_picker("probe", "Probe run", key="probe-run")
    if run is None:
        return
    doc = read_result(run, "sweep")
    if doc is None:
        return
    try:
        st.caption(f"target: **{doc['target']}**, best site: **{doc['best_site']}**, rows: {doc.get('n_rows')}, "
                   f"problems: {doc.get('n_problems')}; probe saved in `{run.path / 'probe'}`")
        if doc.get("steps_only_auroc") is not None:
            st.caption(f"control: AUROC from the number of steps alone = {doc['steps_only_auroc']:.3f}; model "
                       f"accuracy {doc.get('model_accuracy', float('nan')):.3f}")
        show_figure(run, "layer_sweep", key="probe-sweep")
        rows = []
        for name, sw in doc["sweeps"].items():
            rows += [{"score": name, "site": site, "mean": m, "std": sd}
                     for site, m, sd in zip(sw["sites"], sw["mean"], sw["std"])]
        st.dataframe(rows, width="stretch", hide_index=True, key="probe-table")
    except (KeyError, TypeError, ValueError) as e:
        error_card(f"probe run {run.run_id} has unexpected results", f"{type(e).__name__}: {e}")
        return
    if (run.path / "results" / "intention.json").is_file():
        intention = read_result(run, "intention")
        if intention:
            st.subheader("Intention metrics (last prompt token)")
            st.dataframe([{
                "style": style, "accuracy": m.get("accuracy"), "entropy (bits, top-100)": m.get("entropy_bits_mean"),
                "effective dim (90%)": ", ".join(f"{k}={v}" for k, v in m.get("effective_dim", {}).items()),
                "recoverability AUROC": m.get("recoverability", {}).get("auroc"),
                "95% CI": "-" if "ci_low" not in m.get("recoverability", {}) else
                f"[{m['recoverability']['ci_low']:.3f}, {m['recoverability']['ci_high']:.3f}]",
            } for style, m in intention.get("styles", {}).items()], width="stretch", hide_index=True,
                key="probe-intention")


tab_lynx, tab_probe = st.tabs(["LYNX early exit", "Probe layer sweep"])
with tab_lynx:
    lynx_section()
with tab_probe:
    probe_section()
