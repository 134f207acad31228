"""thinklens app: home page (runs and models). Start with `thinklens app` or `make app`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import error_card, runs_root  # noqa: E402

from thinklens.runs import discover_runs  # noqa: E402

st.set_page_config(page_title="thinklens", layout="wide")
st.title("thinklens")
st.caption("See how language models reason from the inside, and act on it.")

st.header("Runs")
runs = discover_runs(runs_root())
if not runs:
    st.info(f"No runs under `{runs_root()}` yet. `make demo` creates one of each kind.")
rows = []
for r in runs:
    if r.error:
        error_card(f"run {r.kind}/{r.run_id} cannot be read", r.error)
        continue
    rows.append({"kind": r.kind, "id": r.run_id, "status": r.status, "created": r.created,
                 "summary": json.dumps(r.summary or {})[:160]})
if rows:
    st.caption(f"{len(rows)} run(s) under `{runs_root()}`: " + ", ".join(f"{r['kind']}/{r['id']}" for r in rows[:20]))
    st.dataframe(rows, use_container_width=True, hide_index=True)

st.header("Models")
try:
    from thinklens.zoo.registry import ZOO_DESCRIPTIONS, ZOO_NAMES, zoo_dir

    models = []
    for name in ZOO_NAMES:
        folder = zoo_dir() / name
        meta_p = folder / "zoo.json"
        meta = json.loads(meta_p.read_text()) if meta_p.exists() else {}
        size = sum(p.stat().st_size for p in folder.glob("*.safetensors")) if folder.exists() else 0
        models.append({"name": name, "trained": (folder / "config.json").exists(), "MB": round(size / 2**20, 2),
                       "description": ZOO_DESCRIPTIONS.get(name, ""),
                       "accuracy": json.dumps(meta.get("eval", {}).get("accuracy", ""))[:120]})
    st.dataframe(models, use_container_width=True, hide_index=True)
except Exception as e:  # noqa: BLE001 - the home page must render even when the zoo is broken
    error_card("zoo", f"{type(e).__name__}: {e}")
st.caption("Any local Hugging Face model folder works too: `thinklens info PATH`.")
