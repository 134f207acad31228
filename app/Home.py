"""thinklens app: the home dashboard (every run with its headline numbers, the zoo's models).

Start with `thinklens app` or `make app`: they serve it with the checkout's root on PYTHONPATH, as the pages
import `app.<module>` (`python -m streamlit run app/Home.py` from the root works too).
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from app.common import display_path, missing_results, runs_root
from app.dashboard import (
    age,
    data_of,
    demo_commands,
    fix_command,
    jobs_of_kinds,
    model_of,
    page_title,
    run_order,
    run_rows,
    run_state,
    status_badge,
    zoo_accuracy_rows,
    zoo_table_rows,
)
from app.evidence import links, links_html
from app.exports import chart, table
from app.validation_table import home_counts
from thinklens.runs.folders import discover_runs
from thinklens.zoo.registry import ZOO_DESCRIPTIONS, ZOO_NAMES, zoo_dir

st.set_page_config(page_title="thinklens", layout="wide")
st.title("thinklens")
st.caption("See how language models reason from the inside, and act on it.")


root = runs_root()
runs = discover_runs(root)
job_errors: list[str] = []
jobs = jobs_of_kinds(job_errors)  # run kind -> its job: page, headline words and pipeline order (Job.page, .order)
runs.sort(key=lambda r: run_order(r.kind, jobs))  # models and data first, then analyses, probes, steering, latent
good = [r for r in runs if r.error is None]
broken = [r for r in runs if r.error is not None]
lacking = {f"{r.kind}/{r.run_id}": missing_results(r.path) for r in good}
lacking = {k: v for k, v in lacking.items() if v}  # half-written: meta.json says done, results/ is gone or empty

def validation_line() -> None:
    """K/N of the committed validation record and of the newest validate run, red where a setting failed."""
    parts = []
    for label, k, n, failed in home_counts(root):
        colour = "green" if k == n and n else "red"
        parts.append(f":{colour}-badge[{k}/{n}] {label}" + (f" (failed: {', '.join(failed)})" if failed else ""))
    if parts:
        st.markdown("**Validation** · " + " · ".join(parts))
        st.page_link("pages/8_Validation.py", label="every setting, its interval, threshold and traces",
                     icon=":material/arrow_forward:")


validation_line()
st.header("Runs")
if not runs:
    st.info(f"No runs under `{display_path(root)}` yet: `make demo` makes one of each kind (about 8 minutes on a "
            "laptop CPU), or run a job, e.g. `thinklens run mi-peaks --preset demo`.")
else:
    kinds = sorted({r.kind for r in good})
    st.caption(f"{len(good)} run(s) of {len(kinds)} kind(s) under `{display_path(root)}`"
               + (f"; {len(broken)} cannot be read (below)" if broken else "")
               + (f"; {len(lacking)} say done but have no readable results (flagged :red-badge[results missing] or "
                  ":red-badge[incomplete])" if lacking else "")
               + ". Each card links to the page that shows it.")

if job_errors:  # a job module that fails to import: its runs show with plain words, and the reason is here
    st.warning("Some jobs cannot be loaded (their runs show without their own headline or page):\n\n"
               + "\n".join(f"- {e}" for e in job_errors))
demo_argv = demo_commands(root) if broken or lacking else {}
for r in broken:
    st.error(f"**run {r.kind}/{r.run_id} cannot be read**\n\n{r.error}\n\nTo fix it, run:")
    st.code(fix_command(r, demo_argv), language="bash", wrap_lines=True)

def card_links(r) -> str:
    """The traces behind the card's numbers (``evidence.links``), as a line of links."""
    try:
        return links_html(links(root, f"{r.kind}/{r.run_id}"))
    except Exception:  # noqa: BLE001 - a run whose texts cannot be listed still gets its card
        return ""


COLS = 3
for i in range(0, len(good), COLS):
    cols = st.columns(COLS)
    for col, r in zip(cols, good[i:i + COLS]):
        with col.container(border=True, key=f"run-card-{r.kind}-{r.run_id}"):
            status, line = run_state(r, lacking.get(f"{r.kind}/{r.run_id}"))
            st.markdown(f"**{r.kind}** · `{r.run_id}` {status_badge(status)}")
            st.caption(f"model {model_of(r)} · data {data_of(r)} · {age(r.created)}")
            st.write(line)
            if status not in ("results missing", "incomplete"):
                evidence = card_links(r)
                if evidence:
                    st.markdown(evidence, unsafe_allow_html=True)
            if status in ("results missing", "incomplete"):
                st.caption("To finish it, run:")
                st.code(fix_command(r, demo_argv), language="bash", wrap_lines=True)
            page = getattr(jobs.get(r.kind), "page", None)
            if page:
                st.page_link(page, label=f"open in {page_title(page)}", icon=":material/arrow_forward:",
                             query_params={"run": r.run_id, "kind": r.kind})
            else:
                st.caption("shown here (no page of its own)")

if good:
    with st.expander("All runs as a table"):
        table(run_rows(good, lacking), key="home-runs", name="runs",
              # fits the page (about 880 px at a 1400 px window): model and data are on the cards and in the CSV
              column_config={"kind": st.column_config.TextColumn(width=115), "id": st.column_config.TextColumn(width=95),
                             "status": st.column_config.TextColumn(width=105), "model": None, "data": None,
                             "age": st.column_config.TextColumn(width=70),
                             "headline": st.column_config.TextColumn(width=480, help="the card above has the whole line")})

st.header("Models")
try:

    rows, step_cols = zoo_accuracy_rows(list(ZOO_NAMES), zoo_dir(), ZOO_DESCRIPTIONS)
    config = {c: st.column_config.TextColumn(c.split()[0], width=46, help=f"held-out accuracy at {c} ('–': not evaluated)")
              for c in step_cols}
    config |= {"model": st.column_config.TextColumn(width=125), "size": st.column_config.TextColumn(width=80),
               "description": st.column_config.TextColumn(width=max(200, 660 - 46 * len(step_cols)),
                                                          help="the whole text is in the CSV")}
    st.caption("The embedded zoo: held-out accuracy per number of arithmetic steps (columns 1, 2, ...), from each "
               "model's own evaluation; '–' where a model was not evaluated at that step count.")
    table(zoo_table_rows(rows, step_cols), key="home-models", name="zoo-models", column_config=config)
    curves = [r for r in rows if any(c in r for c in step_cols)]
    if curves:
        fig = go.Figure()
        for r in curves:
            xs = [int(c.split()[0]) for c in step_cols if c in r]
            fig.add_trace(go.Scatter(x=xs, y=[r[f"{x} steps"] for x in xs], mode="lines+markers", name=r["model"]))
        fig.update_layout(title="Zoo accuracy by step count", xaxis_title="arithmetic steps", yaxis_title="accuracy (%)",
                          template="plotly_white", height=360, margin={"t": 50})
        chart(fig, key="home-zoo-accuracy", name="zoo-accuracy")
except Exception as e:  # noqa: BLE001 - the home page must render even when the zoo is broken
    st.error(f"**zoo**\n\n{type(e).__name__}: {e}")
st.caption("Any local Hugging Face model folder works too: `thinklens info PATH`.")
