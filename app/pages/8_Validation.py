"""Validation: is the instrument calibrated? Every method on its planted, benchmark and null settings, with the
statistic and its interval, the threshold, the verdict, the organism or model and the traces behind it: the
repository's committed records (labelled as such) and every ``thinklens run validate`` run in the runs folder.

Rows come from ``app/validation_table.py`` (which reads the records through results/collect.py's readers); a setting that
did not come out as a working method's would is red, whatever its numbers.
"""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from app import validation_table as va
from app.common import display_path, error_card, results_missing, runs_root
from app.control_section import show_controls
from app.control_views import has_controls
from app.exports import table_csv
from app.sae_views import has_comparison
from thinklens.runs.folders import RunFolder, discover_runs

st.set_page_config(page_title="thinklens: validation", layout="wide")
st.title("Validation")
st.caption("A method is trusted when it recovers an effect planted where it is known to be and reports nothing where "
           "there is nothing (shared/specs/controls.md). K/N: the settings whose verdict is the one a working method "
           "gives. Red: a setting that did not, whatever its numbers.")

COLUMNS = {"traces": st.column_config.LinkColumn("traces", display_text="open traces", width=95,
                                                 help="the trace viewer on the setting's own run"),
           "threshold": st.column_config.TextColumn(width=260, help="what the statistic is judged against"),
           "method": st.column_config.TextColumn(width=110), "setting": st.column_config.TextColumn(width=150),
           "job": st.column_config.TextColumn(width=110, help="the job whose planted and null settings these are"),
           "source": None}


@st.cache_data(ttl=600, show_spinner="reading the committed validation records")
def cached_record_rows() -> list[dict]:
    return va.record_rows()


@st.cache_data(ttl=600, show_spinner=False)
def cached_real_docs() -> dict[str, dict]:
    return va.real_record_docs()


def show_table(rows: list[dict], key: str) -> None:
    """The rows as a table, failures in red, with a CSV download (no JSON anywhere)."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    styled = frame.style.apply(lambda r: [va.failed_style(r)] * len(r), axis=1)
    st.dataframe(styled, hide_index=True, width="stretch", key=key, column_config=COLUMNS)
    st.download_button("CSV", data=lambda: table_csv(frame), file_name=f"{key}.csv", mime="text/csv", key=f"csv-{key}",
                       on_click="ignore", type="tertiary", icon=":material/download:", help="this table as CSV")


def saelens_link(doc: dict | None, query: dict[str, str]) -> None:
    """A link to the Features page's pictures of thinklens's SAE against SAELens's, where the document compared them."""
    if has_comparison(doc):
        model = (doc or {}).get("model") or "?"
        st.markdown(f"[thinklens's SAE against SAELens's on {model}, as pictures (Features page) →]"
                    f"(/Features?{urlencode(query)})")


def headline(label: str, rows: list[dict]) -> None:
    k, n = va.k_of_n(rows)
    failed = [f"{r['method']}/{r['setting']}" + (f" ({r['model']})" if r.get("model") not in (None, "zoo") else "")
              for r in rows if not r.get("ok")]
    text = f"**{label}: validated {k}/{n}**" + (f" · failed: {', '.join(failed)}" if failed else " · every setting as expected")
    (st.success if k == n and n else st.error)(text)


# ------------------------------------------------------------------------------------------------ the records
st.header("The committed record")
try:
    records = cached_record_rows()
except Exception as e:  # noqa: BLE001 - a broken record must not hide the runs below
    error_card("the committed validation records cannot be read", f"{type(e).__name__}: {e}",
               fix="python results/collect.py --check")
    records = []
if records:
    zoo = [r for r in records if r.get("model") == "zoo"]
    real = [r for r in records if r.get("model") != "zoo"]
    st.caption("Read from the repository's committed records (results/records/validate-*, full size), not from a run "
               "of this machine; their traces are not kept in the record (rerun the record's command to see them).")
    headline("Zoo organisms (committed record)", zoo)
    show_table(va.display_rows(zoo, va.RECORD_LABEL), key="validation-record-zoo")
    if real:
        headline("Real weights (committed record)", real)
        show_table(va.display_rows(real, va.RECORD_LABEL), key="validation-record-real")
        try:
            real_docs = cached_real_docs()
        except Exception as e:  # noqa: BLE001 - the table above stands without its pictures
            error_card("the committed real-weight records cannot be drawn", f"{type(e).__name__}: {e}")
            real_docs = {}
        for name, doc in real_docs.items():
            saelens_link(doc, {"record": name})
            if has_controls(doc):
                with st.expander(f"{name} ({va.RECORD_LABEL}): the readout and induction as pictures", expanded=False):
                    show_controls(doc, key=f"record-{name}")

# ------------------------------------------------------------------------------------------------ the runs
st.header("Validate runs in this runs folder")
root = runs_root()
entries = discover_runs(root, "validate")
if not entries:
    st.info(f"No `validate` runs under `{display_path(root)}` yet: `thinklens run validate --quick` checks every method "
            "in minutes.")
want = st.query_params.get("run")
if want and not any(e.run_id == want for e in entries):
    st.error(f"**found nothing** · no `validate` run `{want}` under `{display_path(root)}`; every run is listed below.")
for e in entries:
    title = f"`validate/{e.run_id}` · {e.created or '?'}"
    if e.error is not None:
        error_card(f"run validate/{e.run_id} cannot be read", e.error)
        continue
    if e.status == "failed":
        st.error(f"{title} · **failed** before any verdict: {e.failure or 'no error recorded'}")
        continue
    if e.status != "done":
        st.warning(f"{title} · {e.status}: no verdict yet (rerun the same command to finish it)")
        continue
    run = RunFolder(e.path)
    if results_missing(run, ("validate",)):
        continue
    rows = va.run_rows(e.path)
    cfg = e.config or {}
    label = (f"{title} · {'quick' if cfg.get('quick') else 'full'} · "
             f"{'model ' + cfg['model'] if cfg.get('model') else 'zoo organisms'}")
    with st.expander(label, expanded=(want == e.run_id) or len(entries) == 1):
        headline(f"validate/{e.run_id}", rows)
        links = va.setting_trace_links(root, f"validate/{e.run_id}")
        show_table(va.display_rows(rows, f"run validate/{e.run_id}", links), key=f"validation-run-{e.run_id}")
        doc = run.read_result("validate")
        show_controls(doc, key=f"run-{e.run_id}")
        saelens_link(doc, {"kind": "validate", "run": e.run_id})
