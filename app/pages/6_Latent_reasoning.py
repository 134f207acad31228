"""Latent reasoning: the comparison table (No-CoT, CoT, Coconut, CODI, Latent-SFT, LatentSeek) and the
decoding of each latent of a chosen problem. Reads `latent-eval` and `latent-train` run folders only."""

from __future__ import annotations

import streamlit as st

from app.common import error_card, read_result, run_picker, runs_root, show_figure
from app.compare import show_comparison
from app.exports import chart, table
from app.traces import link_html, trace_link
from thinklens.errors import ThinklensError
from thinklens.runs.folders import discover_runs
from thinklens.runs.jobs import jobs_by_kind

st.set_page_config(page_title="thinklens: latent reasoning", layout="wide")
st.title("Latent reasoning")
st.caption("Create the table with `thinklens run latent-eval`; train models with `thinklens run codi` "
           "(or `coconut`, `latent-sft`).")



def figure_history(hist: list[dict], title: str):
    """Training curves (every logged number per step) of a latent-train run."""
    import plotly.graph_objects as go

    keys = [k for k in hist[0] if k not in ("step", "phase")]
    fig = go.Figure([go.Scatter(x=[h.get("step", i) for i, h in enumerate(hist)], y=[h.get(k) for h in hist], name=k,
                                mode="lines") for k in keys])
    fig.update_layout(title=title, xaxis_title="optimizer step", yaxis_title="value (loss, accuracy, ...)",
                      template="plotly_white", height=360)
    return fig


def embedded_latent_rows() -> list[dict]:
    """One row per embedded latent model: method, steps, training time and held-out accuracy per step count."""
    import json

    from thinklens.zoo.registry import LATENT_ZOO_NAMES, zoo_dir

    rows = []
    for name in LATENT_ZOO_NAMES:
        try:
            meta = json.loads((zoo_dir() / name / "latent.json").read_text())
        except (OSError, ValueError):
            rows.append({"model": name, "method": "-", "note": "not trained (no latent.json)"})
            continue
        acc = (meta.get("eval") or {}).get("accuracy") or {}
        rows.append({"model": name, "method": meta.get("method"), "steps": meta.get("total_steps", meta.get("steps")),
                     "train s (own)": round(float(meta.get("total_train_wall_s") or meta.get("train_wall_s") or 0)),
                     **{f"{k} steps %": round(100 * v, 1) for k, v in acc.items() if isinstance(v, (int, float))}})
    return rows


run = run_picker("latent-eval", key="latent-eval-run")
if run is not None:
    rows = read_result(run, "table")
    if rows:
        st.subheader("Comparison")
        order = list(dict.fromkeys(r.get("problems") for r in rows))  # grouped by problem set
        table([{"problems": r.get("problems"), "method": r.get("label"), "accuracy %": round(100 * r.get("accuracy", 0), 1),
                "95% CI %": (f"{100 * r['ci'][0]:.1f}-{100 * r['ci'][1]:.1f}" if r.get("ci") else "-"),
                "n": r.get("n"), "reasoning positions": round(r.get("reasoning_positions", 0), 1),
                "compression vs CoT": r.get("compression"), "train s (own)": r.get("own_train_s"),
                "train s (with parents)": r.get("train_s")}
               for r in sorted(rows, key=lambda r: order.index(r.get("problems")))], key="latent-table",
              name=f"latent-eval-{run.run_id}")
        try:
            fig = run.read_figure("accuracy")
            if not fig.layout.xaxis.title.text:  # runs written before the figure named its x axis
                fig.update_xaxes(title_text="method")
            chart(fig, key="latent-accuracy", name=f"latent-eval-{run.run_id}-accuracy")
        except (OSError, ValueError, ThinklensError):
            show_figure(run, "accuracy", key="latent-accuracy")  # its error card and the repairing command
    if "seek_budget" in run.figures():
        st.subheader("LatentSeek")
        show_figure(run, "seek_budget", key="latent-seek")
        seek = read_result(run, "seek")
        if seek:
            s = seek.get("summary", {})
            st.write(f"CoT {100 * s.get('cot_accuracy', 0):.1f}% -> LatentSeek {100 * s.get('seek_accuracy', 0):.1f}%; "
                     f"mean iterations {s.get('mean_iterations', 0):.2f}, tokens flipped per iteration "
                     f"{s.get('mean_flipped', 0):.2f}, ||z'-z|| {s.get('mean_delta_norm', 0):.3f}")
            for t, b in (s.get("baseline") or {}).items():
                if b:
                    st.write(f"Oracle best-of-{b['samples']} sampling at T={t} (the baseline a gold-answer reward "
                             f"implies): {100 * b['best_of_n']:.1f}%")
    decoding = read_result(run, "decoding")
    if decoding:
        st.subheader("Latent decoding")
        pick = st.selectbox("Problem", range(len(decoding)), key="latent-problem",
                            format_func=lambda i: f"{i}: {decoding[i].get('question', '')[:90]}")
        prob = decoding[pick]
        st.write(f"**Question:** {prob.get('question')}  \n**CoT:** `{prob.get('cot')}`  \n**Answer:** {prob.get('answer')}")
        for name, res in prob.get("methods", {}).items():
            mark = "right" if res.get("correct") else "wrong"
            with st.expander(f"{name}: `{res.get('text', '')}` ({mark})", expanded=bool(res.get("latents"))):
                latents = res.get("latents") or []
                if not latents:
                    st.caption("no latents (explicit tokens only)")
                    continue
                st.markdown(link_html("Open these latents in the trace viewer", trace_link(
                    f"latent-eval/{run.run_id}", f"{pick}/{name}", "latent top-1 probability", token=0)),
                    unsafe_allow_html=True)
                table([{"latent": j + 1,
                        **{f"top {r + 1}": f"{tok} ({p:.2f})" for r, (tok, p) in
                           enumerate(zip(lat.get("tokens", []), lat.get("probs", [])))},
                        **({"entropy": lat["entropy"], "exp(entropy)": lat["exp_entropy"]} if "entropy" in lat else {})}
                       for j, lat in enumerate(latents)], key=f"latents-{name}-{pick}", name=f"latents-{name}-{pick}")
                if "entropy" in latents[0]:
                    try:
                        from thinklens.latent.figures import figure_entropy

                        chart(figure_entropy(latents, f"{name}: per-step entropy"), key=f"entropy-{name}-{pick}")
                    except (KeyError, TypeError, ValueError) as e:
                        error_card(f"entropy of {name}", e)

st.header("Compare latent-eval runs")
show_comparison("latent-eval")

st.header("Training runs")
# every trainer's runs (runs/<job>/<id>; older ones under runs/latent-train/): the kinds whose job trains a method
trainer_of = jobs_by_kind()
train_kinds = sorted({r.kind for r in discover_runs(runs_root())
                      if r.kind == "latent-train" or "latent-train" in getattr(trainer_of.get(r.kind), "former_kinds", ())})
train_runs = bool(train_kinds)
if train_runs:
    wanted = st.query_params.get("kind")
    train_kind = st.selectbox("Trainer", train_kinds, index=train_kinds.index(wanted) if wanted in train_kinds else 0,
                              key="latent-train-kind") if len(train_kinds) > 1 else train_kinds[0]
    train = run_picker(train_kind, key="latent-train-run")
    if train is not None:
        metrics = read_result(train, "metrics")
        if metrics:
            hist = metrics.get("history", [])
            st.write(f"{metrics.get('method')}: {metrics.get('steps')} steps in {metrics.get('train_wall_s')} s on "
                     f"{metrics.get('processes')} process(es); held-out: {metrics.get('eval', {}).get('accuracy')}")
            if hist:
                chart(figure_history(hist, f"{metrics.get('method')} training ({train.run_id})"), key="latent-history",
                      name=f"latent-train-{train.run_id}")
st.caption("The embedded latent models (trained with `thinklens run codi`, `thinklens run coconut` and "
           "`thinklens run latent-sft` from tiny-cot; their own records):")
table(embedded_latent_rows(), key="latent-embedded", name="embedded-latent-models")
