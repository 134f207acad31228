"""MI peaks: per-trajectory MI curves with peaks, thinking-token enrichment, reasoning vs
non-reasoning overlay, estimator variants and controls, suppression / RR / TTTS.

Reads run folders written by ``thinklens run mi-peaks`` (format: ``thinklens.analyses.mi.run_format``). Only the
run index and the ONE selected trajectory are loaded, so a run with thousands of trajectories opens
as fast as a small one. Never loads a model or registers a hook.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas  # noqa: F401 - imported up front: a lazy import racing another session's (home page) can fail
import streamlit as st

from app.common import error_card, read_result, run_picker, runs_multiselect, show_figure
from app.exports import chart, table
from app.traces import link_html, peak_occurrences, trace_link
from thinklens.analyses.mi.figures_runs import (
    CURVE_CHOICES,
    controls_table,
    figure_controls,
    figure_overlay,
    figure_sites,
    figure_trajectory,
    model_label,
    models_table,
)
from thinklens.analyses.mi.run_format import INDEX, TrajectoryRecord, read_index, read_trajectory
from thinklens.errors import ThinklensError

st.set_page_config(page_title="thinklens: MI peaks", layout="wide")
st.title("MI peaks and thinking tokens")
st.caption("Qian et al. 2025: mutual information between each reasoning step's hidden state and the answer "
           "(nHSIC), its peaks, and the tokens emitted from them.")


@st.cache_data(max_entries=8, show_spinner=False)
def load_index(path: str, mtime: float) -> dict[str, Any]:
    return read_index(path)


@st.cache_data(max_entries=256, show_spinner=False)
def load_record(path: str, key: str, i: int, mtime: float) -> dict[str, Any]:
    return read_trajectory(path, key, i).to_json()


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _tokens_html(rec: TrajectoryRecord, peaks: set[int]) -> str:
    """The generated text with peak tokens highlighted (escaped: tokens are model output)."""
    parts = []
    for t, tok in enumerate(rec.tokens):
        text = html.escape(tok)
        parts.append(f"<mark title='step {t}'><b>{text}</b></mark>" if t in peaks else text)
    return " ".join(parts)


def trajectory_section(run_path: Path, models: list[dict[str, Any]]) -> None:
    c = st.columns([2, 3, 2, 2])
    mi = c[0].selectbox("Model", range(len(models)), format_func=lambda j: model_label(models[j]), key="mi-model")
    entry = models[mi]
    rows = entry["index"]
    if not rows:
        st.info(f"{entry['name']} has no trajectories in this run.")
        return

    def label(j: int) -> str:
        r = rows[j]
        return f"#{r['i']} {'right' if r['correct'] else 'wrong'}, {r['n_tokens']} tokens, max MI {r['max_mi']:.3g}"

    j = c[1].selectbox(f"Trajectory ({len(rows)})", range(len(rows)), format_func=label, key="mi-traj")
    site = c[2].selectbox("Site", entry["sites"], key="mi-site")
    rule = c[3].radio("Peaks", entry["peak_rules"], key="mi-rule", horizontal=True)
    extra = st.multiselect("Also show", CURVE_CHOICES, default=[CURVE_CHOICES[1]], key="mi-curves")
    try:
        rec = TrajectoryRecord.from_json(load_record(str(run_path), entry["key"], rows[j]["i"],
                                                     _mtime(run_path / "results" / f"{INDEX}.json")))
        fig = figure_trajectory(rec, site=site if site in rec.mi else None, rule=rule,
                                variants=CURVE_CHOICES[0] in extra, shuffled=CURVE_CHOICES[1] in extra)
    except ThinklensError as e:
        error_card(f"trajectory #{rows[j]['i']} of {entry['name']} cannot be shown", e)
        return
    chart(fig, key="mi-curve", name=f"mi-{entry['name']}-{rows[j]['i']}")
    peaks = set(rec.peaks_of(rule).indices) if site == rec.site else set()
    if site != rec.site:
        st.caption(f"Peaks, estimator variants and the shuffled-answer control are computed at the main site "
                   f"{rec.site} only; pick it to see them.")
    st.markdown("**Prompt:**")
    st.code(rec.prompt, language=None, wrap_lines=True)
    st.markdown("**Generated** (peaks highlighted): " + _tokens_html(rec, peaks), unsafe_allow_html=True)
    st.markdown(link_html("Open this trajectory in the trace viewer (logit lens per token)",
                          trace_link(f"mi-peaks/{run_path.name}", f"{entry['key']}/{rows[j]['i']}", "mi")),
                unsafe_allow_html=True)


def enrichment_section(run, models: list[dict[str, Any]]) -> None:
    res = read_result(run, "enrichment") if (run.path / "results" / "enrichment.json").exists() else None
    if res is None:
        st.info("The enrichment stage has not finished yet.")
        return
    c = st.columns(3)
    mi = c[0].selectbox("Model", range(len(models)), format_func=lambda j: model_label(models[j]), key="mi-enr-model")
    key = models[mi]["key"]
    rule = c[1].radio("Peaks", models[mi]["peak_rules"], key="mi-enr-rule", horizontal=True)
    unit = c[2].radio("Count", ["words", "all"], key="mi-enr-unit", horizontal=True,
                      format_func=lambda u: "alphabetic words (paper)" if u == "words" else "all tokens")
    try:
        block = res[key][unit][rule]
    except (KeyError, TypeError):
        error_card(f"enrichment of {key}", f"no {unit}/{rule} entry in results/enrichment.json")
        return
    st.caption(f"{block['n_peak_tokens']} peak positions among {block['n_tokens']} generated tokens of "
               f"{block['n_trajectories']} trajectories; ratio = frequency at peaks / frequency overall, "
               f"{100 * block['level']:.0f}% {block['ci']} CI.")
    if not block["words"]:
        st.info("No token of this kind was emitted from a peak state.")
        return
    show_figure(run, f"enrichment-{key}-{rule}-{unit}", key="mi-enr-fig")
    table([{"token": w["word"], "at peaks": w["peak_count"], "anywhere": w["total_count"],
            "trajectories": w.get("n_units"),  # the units of the interval (one looping trajectory is one)
            "ratio": w["ratio"], "CI low": w["ci_low"], "CI high": w["ci_high"]} for w in block["words"]],
          key="mi-enr-table", name=f"enrichment-{key}-{rule}-{unit}")
    peak_links(run, key, rule, unit, [w["word"] for w in block["words"]])


@st.cache_data(max_entries=64, show_spinner="finding the peaks")
def _occurrences(root: str, run: str, key: str, rule: str, word: str, unit: str, lowercase: bool,
                 mtime: float) -> list[tuple[int, int]]:
    return peak_occurrences(Path(root), run, key, rule, word, unit=unit, lowercase=lowercase)


def peak_links(run, key: str, rule: str, unit: str, words: list[str]) -> None:
    """Links to the trajectories where a token of the table sits at a peak, that token opened and highlighted."""
    word = st.selectbox("Trajectories where this token sits at a peak", words, key="mi-enr-word")
    rel = f"mi-peaks/{run.run_id}"
    try:
        occ = _occurrences(str(run.path.parent.parent), rel, key, rule, word, unit, bool(run.config().get("lowercase")),
                           _mtime(run.path / "results" / f"{INDEX}.json"))
    except (ThinklensError, KeyError, StopIteration) as e:
        error_card(f"the peaks of {word!r} cannot be listed", f"{type(e).__name__}: {e}")
        return
    shown = occ[:60]
    st.markdown(f"{len(occ)} peak(s) in {len({i for i, _ in occ})} trajectories"
                + (f" (the first {len(shown)} linked)" if len(occ) > len(shown) else "") + ": "
                + " · ".join(link_html(f"#{i} token {p}", trace_link(rel, f"{key}/{i}", "mi", token=p, highlight=word))
                             for i, p in shown), unsafe_allow_html=True)


def interventions_section(run) -> None:
    tabs = st.tabs(["Suppression", "Representation Recycling", "Test-time scaling"])
    for tab, stage, flag in zip(tabs, ("suppression", "recycling", "ttts"), ("--suppression", "--recycling", "--ttts")):
        with tab:
            if not (run.path / "results" / f"{stage}.json").exists():
                st.info(f"Not run: add `{flag}` to the job.")
                continue
            res = read_result(run, stage)
            if res is None:
                continue
            if res.get("skipped"):
                st.info(f"Skipped: {res['skipped']}")
                continue
            st.caption(f"thinking words: {', '.join(res.get('words', []))} (from {res.get('word_source', '?')})")
            show_figure(run, stage, key=f"mi-{stage}-fig")
            table(res.get("rows", []), key=f"mi-{stage}-table", name=stage)


def compare_section() -> None:
    """Mean MI curves of several runs on one chart (two models, two data sets, two sizes...)."""
    chosen = runs_multiselect("mi-peaks", "Runs to overlay", key="mi-compare-runs", default=3)
    if not chosen:
        st.info("Pick one or more mi-peaks runs.")
        return
    c = st.columns(2)
    x = c[0].radio("x axis", ["fraction", "step"], key="mi-compare-x", horizontal=True,
                   format_func=lambda v: "relative position" if v == "fraction" else "generated token")
    entries, rows = [], []
    for r in chosen:
        try:
            idx = load_index(str(r.path), _mtime(r.path / "results" / f"{INDEX}.json"))
        except ThinklensError as e:
            error_card(f"mi-peaks run {r.run_id} cannot be compared", e)
            continue
        data = r.config().get("data") or f"synthetic {r.config().get('min_steps', '?')}-{r.config().get('max_steps', '?')} steps"
        for m in idx["models"]:
            entries.append({**m, "name": f"{r.run_id}: {m['name']}"})
            rows.append({"run": r.run_id, "data": data, **models_table([m])[0]})
    names = [model_label(e) for e in entries]
    keep = c[1].multiselect("Models", names, default=names, key="mi-compare-models")
    picked = [e for e, n in zip(entries, names) if n in keep]
    if not picked:
        st.info("Pick at least one model.")
        return
    try:
        chart(figure_overlay(picked, x=x), key="mi-compare", name="mi-compare-runs")
    except (ThinklensError, KeyError, TypeError, ValueError) as e:
        error_card("run comparison", f"{type(e).__name__}: {e}")
        return
    st.caption("Each curve is one model of one run at its main site, averaged over its trajectories.")
    table([row for row, n in zip(rows, names) if n in keep], key="mi-compare-table", name="mi-compare-runs")


run = run_picker("mi-peaks", key="mi-run")
if run is None:
    st.stop()
try:
    index = load_index(str(run.path), _mtime(run.path / "results" / f"{INDEX}.json"))
except ThinklensError as e:
    error_card(f"mi-peaks run {run.run_id} cannot be shown", e)
    st.stop()
models = index["models"]

VIEWS = ("Trajectory", "Thinking tokens", "Models", "Controls", "Interventions", "Compare runs")
# One view at a time: each run of the page draws one or two charts, so the MI curve is on screen fast
# even on a busy machine (every plotly chart costs the browser a layout pass).
view = st.radio("View", VIEWS, key="mi-view", horizontal=True, label_visibility="collapsed")

if view == "Trajectory":
    trajectory_section(run.path, models)
elif view == "Thinking tokens":
    enrichment_section(run, models)
elif view == "Models":
    c = st.columns(2)
    x = c[0].radio("x axis", ["fraction", "step"], key="mi-overlay-x", horizontal=True,
                   format_func=lambda v: "relative position" if v == "fraction" else "generated token")
    mi = c[1].selectbox("Sites of", range(len(models)), format_func=lambda j: model_label(models[j]),
                        key="mi-sites-model")
    try:
        chart(figure_overlay(models, x=x, shuffled=True), key="mi-overlay", name=f"mi-overlay-{run.run_id}")
        table(models_table(models), key="mi-models-table", name=f"mi-models-{run.run_id}")
        chart(figure_sites(models[mi], x=x), key="mi-sites", name=f"mi-sites-{models[mi]['name']}")
    except (ThinklensError, KeyError, TypeError, ValueError) as e:
        error_card("model comparison", f"{type(e).__name__}: {e}")
elif view == "Controls":
    st.caption("median_sigma (the default): the kernel scaled to each vector's spread, the same MI at any activation "
               "scale; reference: fixed sigma = 50 (the paper's, set for 8B models: saturated on a model whose states "
               "are far wider); l2: states rescaled to the answer's norm. Shuffled answer: h_gt of another problem. "
               "Peaks that survive a shuffled "
               "answer (peak Jaccard), or that track the state norm (corr with norm), are not about the answer.")
    try:
        table(controls_table(models), key="mi-controls-table", name=f"mi-controls-{run.run_id}")
        chart(figure_controls(models), key="mi-controls", name=f"mi-controls-{run.run_id}")
    except (ThinklensError, KeyError, TypeError, ValueError) as e:
        error_card("controls", f"{type(e).__name__}: {e}")
elif view == "Interventions":
    interventions_section(run)
else:
    compare_section()
