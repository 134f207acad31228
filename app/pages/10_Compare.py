"""Compare: two runs of one job and why they differ. Their config diff (only the keys that differ), the code version
of each, the data set each read with its hash, their findings side by side, and where both graded the same problems
the accuracy difference with its paired interval (``app/run_diff.py``). Every registered job is listed (the job
registry, ``thinklens.runs.jobs.jobs_by_kind``), so a new job's runs can be compared with no edit here; below, every
finished run of the job side by side: the job's own table (``Job.compare``) or, for a job that declares none, each
run's findings and summary numbers.

Links: ``?kind=<kind>&a=<run id>&b=<run id>``.
"""

from __future__ import annotations

import streamlit as st

from app import run_diff as rd
from app.common import display_path, missing_results, runs_root
from app.compare import show_comparison
from app.dashboard import finding_tone, jobs_of_kinds
from app.exports import table
from thinklens.runs.folders import discover_runs

st.set_page_config(page_title="thinklens: compare", layout="wide")
st.title("Compare runs")
st.caption("Two runs of one job: what differs in their configs, code and data, and, on the same problems, how much "
           "their accuracy differs with a paired interval. Numbers are read from the two run folders.")

root = runs_root()
qp = st.query_params
registered = list(jobs_of_kinds())
found = {e.kind for e in discover_runs(root) if e.error is None}
kinds = [k for k in registered if k in found] + sorted(found - set(registered))
if not kinds:
    st.info(f"No runs under `{display_path(root)}` yet: `make demo` makes two of several kinds.")
    st.stop()
want_kind = qp.get("kind")
if want_kind and want_kind not in kinds:
    st.error(f"**found nothing** · no `{want_kind}` runs under `{display_path(root)}`; pick a job below.")
kind = st.selectbox("Job", kinds, index=kinds.index(want_kind) if want_kind in kinds else (None if want_kind else 0),
                    placeholder="pick a job")
if kind is None:
    st.stop()
done = [e for e in discover_runs(root, kind) if e.error is None and e.status == "done" and not missing_results(e.path)]
ids = [e.run_id for e in done]
if len(ids) < 2:
    st.info(f"{len(ids)} finished `{kind}` run(s) under `{display_path(root)}`: a comparison needs two.")
else:
    c = st.columns(2)
    picks = []
    for col, side, default in zip(c, ("a", "b"), (0, 1)):
        want = qp.get(side) if want_kind in (None, kind) else None
        if want and want not in ids:
            col.error(f"**found nothing** · no `{kind}` run `{want}` for run {side.upper()}.")
        picks.append(col.selectbox(f"Run {side.upper()}", ids, index=ids.index(want) if want in ids else
                                   (None if want else default), key=f"cmp-{side}", placeholder="pick a run"))
    if None not in picks:
        a, b = (next(e for e in done if e.run_id == i) for i in picks)
        if dict(qp) != {"kind": kind, "a": a.run_id, "b": b.run_id}:
            st.query_params.from_dict({"kind": kind, "a": a.run_id, "b": b.run_id})

        st.subheader("Config: the keys that differ")
        diff = rd.config_diff(a.config, b.config)
        if diff:
            table(diff, key="cmp-config", name=f"compare-{kind}-config")
        else:
            st.caption("The two configs are identical.")

        st.subheader("Code and data")
        rows = []
        for label, e in (("A", a), ("B", b)):
            rows.append({"run": f"{label}: {e.run_id}", **rd.code_version(e.path), **rd.dataset(e.path, e.config)})
        table(rows, key="cmp-provenance", name=f"compare-{kind}-provenance")

        st.subheader("Metric difference on the same problems")
        paired = rd.paired_difference(a.path, b.path)
        (st.markdown if paired.get("paired") else st.caption)(rd.paired_sentence(paired))

        st.subheader("Findings side by side")
        from thinklens.calibration.findings import finding_sentence

        cols = st.columns(2)
        for col, label, e in zip(cols, ("A", "B"), (a, b)):
            found_ = (e.summary or {}).get("findings") or []
            col.markdown(f"**Run {label}: `{e.run_id}`**")
            if not found_:
                col.caption("no findings (a data or training job, or a run from before findings)")
            for f in found_:
                tone = finding_tone(f)
                {"success": col.success, "error": col.error}.get(tone, col.warning)(
                    f"**{f.get('verdict')}** · {finding_sentence(f)}")

if kind in registered:
    show_comparison(kind)
