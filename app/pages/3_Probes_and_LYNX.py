"""Probes and LYNX: conformal early exit (validity, Pareto, exits, base rate) and probe layer sweeps.

Reads run folders written by ``thinklens run lynx`` and ``thinklens run probe``; builds figures with
the probes package's figure functions; never loads a model or registers a hook.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import streamlit as st

from app.common import error_card, read_result, rerun_command, run_picker, runs_multiselect, show_figure
from app.compare import AXES, figure_pareto_runs
from app.exports import chart, table
from app.traces import lynx_rollout_rows, traces_link
from thinklens.errors import ThinklensError
from thinklens.probes.lynx_result import load_lynx_result
from thinklens.probes.lynx_traces import exits_at, exits_where
from thinklens.probes.probe_traces import MOST_WRONG_WHERE, most_wrong_count

st.set_page_config(page_title="thinklens: probes and LYNX", layout="wide")
st.title("Probes and LYNX")

GUARANTEE = (
    "**What δ guarantees.** Per cue event, and only if calibration and test events are exchangeable: an event "
    "whose forced exit would be wrong (y = 0) gets the prediction set {1} (\"safe to exit\") with probability at "
    "most δ. It is not a per-trajectory bound: a rollout scanned over many events has many chances to exit "
    "wrongly. The validity plot measures the per-event rate on the test split, with 95% Clopper-Pearson bars; "
    "points should lie on or below the diagonal up to their bars. The bound counts as shown only when a one-sided "
    "exact binomial test at δ does not reject it and had power 0.8 to reject a rate of δ + 0.02 (else: not shown, "
    "underpowered); a rejected bound is shown red."
)


def _pct(x) -> str:
    return "-" if x is None else f"{x:.1%}"


def skipped_words(skipped: list, n_pos: object, n_neg: object) -> str:
    """Why some deltas have no result, in words (shown below the results)."""
    need = ", ".join(f"δ {d:g} needs at least {min_class_size(d)} events of each class" for d in skipped)
    return (f"**Not evaluated: δ {', '.join(f'{d:g}' for d in skipped)}.** The calibration split has {n_pos} "
            f"positive and {n_neg} negative cue events; a conformal threshold at level δ is only defined when each "
            f"class has enough events for a non-vacuous quantile ({need}). Add calibration rollouts (`--n-calibration`) to "
            "evaluate them.")


def min_class_size(delta: float) -> int:
    from thinklens.probes.conformal import min_calibration_events

    return min_calibration_events(delta)


def lynx_section() -> None:
    run = run_picker("lynx", "LYNX run", key="lynx-run")
    if run is None:
        return
    try:
        result = load_lynx_result(run)
    except (ThinklensError, OSError, ValueError) as e:
        error_card(f"LYNX run {run.run_id} cannot be shown", e, fix=rerun_command("lynx", run.path))
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
    deltas = result.lynx_deltas()
    if not deltas:
        error_card(f"LYNX run {run.run_id} has no δ with a result", "every δ of the sweep was skipped",
                   fix=shlex.join(["thinklens", "run", "lynx", "--config", str(run.path / "config.json"),
                                   "--n-calibration", "500", "--run-id", f"{run.run_id}-more"]))
        return
    delta = st.selectbox("δ for the exit histogram", deltas, index=len(deltas) // 2, key="lynx-delta")
    try:
        figs = result.figures(histogram_delta=delta)
    except (ThinklensError, ValueError, KeyError) as e:
        error_card("figures", e)
        return
    left, right = st.columns(2)
    for col, name in ((left, "validity"), (right, "pareto"), (left, "exit_histogram"), (right, "base_rate")):
        chart(figs[name], key=f"lynx-{name.replace('_', '-')}", name=f"lynx-{run.run_id}-{name}", container=col)
    st.subheader("Per δ")
    gate = s.get("exit_gate") or {}
    closed = bool(gate) and not gate.get("open", True)
    if gate.get("statement"):  # the discrimination gate in one line: AUROC, its interval, n (probes/exit_gate.py)
        (st.warning if closed else st.caption)(f"**Exit gate** · {gate['statement']}")
    rel = f"lynx/{run.run_id}"

    def exits(d: float) -> dict:
        """The rollouts LYNX exits early at ``d`` behind its exit rate and saving, and the wrong ones behind its
        accuracy change, each counted and linked; none while the gate is closed (its statement above says why)."""
        if closed:
            return {}
        try:
            taken = exits_at(run.path, d)
        except (ThinklensError, OSError, KeyError, ValueError):
            return {}
        wrong = sum(not right for _, right in taken)  # a link only to something: a count of 0 is not linked
        return {"early exits": len(taken), "exits taken": traces_link(rel, exits_where(d)) if taken else None,
                "wrong exits": wrong, "exits answering wrong": traces_link(rel, exits_where(d, correct=False)) if wrong else None}

    table([{
        "δ": r["delta"], "accuracy": r["accuracy"], "Δ accuracy vs full": r["accuracy_change"],
        "mean tokens": r["mean_tokens"], "token saving": r["saving"], "exit rate": r["exit_rate"],
        **exits(float(r["delta"])),
        "P(S={1}|y=0)": r["rate"], "95% upper": r["upper"], "margin": r["margin"],
        "bound not rejected": r["consistent"], "binomial p": r.get("p_value"),
        f"power vs δ+{r.get('violation', 0.02):g}": r.get("power"),
        "bound": r.get("validity_verdict", "not rejected" if r["consistent"] else "rejected"),
        "q_pos": r["q_pos"], "q_neg": r["q_neg"],
    } for r in result.per_delta], key="lynx-per-delta", name=f"lynx-{run.run_id}-per-delta",
          column_config={c: st.column_config.LinkColumn(c, display_text="open")
                         for c in ("exits taken", "exits answering wrong")})
    rollouts_section(run, deltas)
    skipped = list(s.get("skipped_deltas") or result.report.skipped_deltas)
    if skipped:
        st.markdown(skipped_words(skipped, cal.get("n_pos", "?"), cal.get("n_neg", "?")))
    st.subheader("All policies (test split)")
    table([{k: v for k, v in row.items() if k != "param"} for row in result.report.table()],
          key="lynx-policies", name=f"lynx-{run.run_id}-policies")


@st.cache_data(max_entries=16, show_spinner=False)
def _rollout_rows(path: str, run: str, delta: float, mtime: float) -> list[dict]:
    return lynx_rollout_rows(Path(path), run, delta)


def rollouts_section(run, deltas: list[float]) -> None:
    """The test rollouts behind one δ row: per rollout its cue events, where LYNX exits, and a link to the trace
    (coloured by the probe score per cue, the exit token opened)."""
    st.subheader("Rollouts behind a δ")
    delta = st.selectbox("δ", deltas, index=len(deltas) // 2, key="lynx-rollouts-delta")
    try:
        rows = _rollout_rows(str(run.path), f"lynx/{run.run_id}", float(delta),
                             (run.path / "results" / "lynx.json").stat().st_mtime)
    except (ThinklensError, OSError, KeyError, ValueError) as e:
        error_card(f"the test rollouts of {run.run_id}", f"{type(e).__name__}: {e}", fix=rerun_command("lynx", run.path))
        return
    n_exit = sum(r["exit position"] is not None for r in rows)
    only = st.toggle("only rollouts that exit early", value=n_exit > 0, key="lynx-rollouts-exited")
    shown = [r for r in rows if r["exit position"] is not None] if only else rows
    st.caption(f"{n_exit} of {len(rows)} test rollouts exit at δ {delta:g}; a link opens the rollout in the trace viewer "
               "with the probe score per cue and the exit token opened.")
    table(shown, key="lynx-rollouts", name=f"lynx-{run.run_id}-rollouts-{delta:g}",
          column_config={"trace": st.column_config.LinkColumn("trace", display_text="open")})


def lynx_compare_section() -> None:
    chosen = runs_multiselect("lynx", "LYNX runs on one chart", key="lynx-compare-runs", default=4)
    if not chosen:
        st.info("Pick one or more finished LYNX runs.")
        return
    x = st.radio("x axis", list(AXES), key="lynx-compare-x", horizontal=True, format_func=AXES.get)
    results, rows = {}, []
    for r in chosen:
        try:
            res = load_lynx_result(r)
        except (ThinklensError, OSError, ValueError) as e:
            error_card(f"LYNX run {r.run_id} cannot be compared", e)
            continue
        results[r.run_id] = res
        test = res.summary.get("splits", {}).get("test", {})
        rows += [{"run": r.run_id, "model": res.summary.get("model"), "δ": row["delta"], "accuracy": row["accuracy"],
                  "Δ accuracy vs full": row["accuracy_change"], "token saving": row["saving"],
                  "bound not rejected": row["consistent"],
                  "bound": row.get("validity_verdict", "not rejected" if row["consistent"] else "rejected"),
                  "test rollouts": test.get("rollouts")} for row in res.per_delta]
    if results:
        chart(figure_pareto_runs(results, x=x), key="lynx-compare", name="lynx-pareto-runs")
        table(rows, key="lynx-compare-table", name="lynx-runs-per-delta")


def most_wrong_link(run, doc: dict) -> None:
    """The examples a correctness probe gets most wrong (largest |p - y|, held out), linked in the trace viewer."""
    if doc.get("target") != "correct":  # a value probe reads teacher-forced text: no generated answers behind it
        return
    n = most_wrong_count(run.path)
    if n is None:
        st.caption("This run predates per-problem traces: re-run it for the answers behind its score.")
        return
    st.markdown(f"[The {n} examples the probe gets most wrong →]({traces_link(f'probe/{run.run_id}', MOST_WRONG_WHERE)}) "
                "(largest |p − y|: its held-out probability that the answer is right against whether it is)")


def probe_section() -> None:
    run = run_picker("probe", "Probe run", key="probe-run")
    if run is None:
        return
    doc = read_result(run, "sweep")
    if doc is None:
        return
    try:
        other = doc.get("findings_site") if doc.get("findings_site") not in (None, doc["best_site"]) else None
        if doc.get("degenerate"):  # a sweep at chance: no best site, no probe saved
            st.warning(f"target: **{doc['target']}**: {doc['degenerate']['reason']}; no probe saved")
        else:
            st.caption(f"target: **{doc['target']}**, best site: **{doc['best_site']}** (saved probe)"
                       + (f", findings' site: **{other}** (chosen on held-out problems)" if other else "")
                       + f", rows: {doc.get('n_rows')}, "
                       f"problems: {doc.get('n_problems')}; probe saved in `{run.path / 'probe'}`")
        if doc.get("steps_only_auroc") is not None:
            st.caption(f"control: AUROC from the number of steps alone = {doc['steps_only_auroc']:.3f}; model "
                       f"accuracy {doc.get('model_accuracy', float('nan')):.3f}")
        show_figure(run, "layer_sweep", key="probe-sweep")
        rows = []
        for name, sw in doc["sweeps"].items():
            rows += [{"score": name, "site": site, "mean": m, "std": sd}
                     for site, m, sd in zip(sw["sites"], sw["mean"], sw["std"])]
        table(rows, key="probe-table", name=f"probe-{run.run_id}-sweep")
        most_wrong_link(run, doc)
    except (KeyError, TypeError, ValueError) as e:
        error_card(f"probe run {run.run_id} has unexpected results", f"{type(e).__name__}: {e}")
        return
    if (run.path / "results" / "intention.json").is_file():
        intention = read_result(run, "intention")
        if intention:
            st.subheader("Intention metrics (last prompt token)")
            table([{
                "style": style, "accuracy": m.get("accuracy"), "entropy (bits, top-100)": m.get("entropy_bits_mean"),
                "effective dim (90%)": ", ".join(f"{k}={v}" for k, v in m.get("effective_dim", {}).items()),
                "recoverability AUROC": m.get("recoverability", {}).get("auroc"),
                "95% CI": "-" if "ci_low" not in m.get("recoverability", {}) else
                f"[{m['recoverability']['ci_low']:.3f}, {m['recoverability']['ci_high']:.3f}]",
            } for style, m in intention.get("styles", {}).items()], key="probe-intention", name=f"probe-{run.run_id}-intention")


tab_lynx, tab_compare, tab_probe = st.tabs(["LYNX early exit", "Compare LYNX runs", "Probe layer sweep"])
with tab_lynx:
    lynx_section()
with tab_compare:
    lynx_compare_section()
with tab_probe:
    probe_section()
