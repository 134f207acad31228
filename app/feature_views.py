"""Streamlit pieces shared by the Features and Steering pages: the SAE picker (``sae`` and ``steer`` runs,
each browsing its own SAE), the browsed feature, cached models, SAEs and scans, and the figures of a
feature. The data behind them is :mod:`features` (no Streamlit there).
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from app.common import _broken_card, display_path, results_missing, runs_root, safe_run_path, show_findings
from app.features import SAE_KINDS, Histogram, SaeSource, sae_source
from thinklens.errors import ThinklensError
from thinklens.runs.folders import RunFolder, discover_runs

BROWSED = "browsed-feature"
"""Session key of the feature last browsed: ``{"source": "kind/run_id", "feature": int}`` (read by live steering)."""


@st.cache_resource(show_spinner="loading model")
def load_hooked_model(name: str):
    from thinklens.engine.model import HookedModel

    return HookedModel.load(name)


@st.cache_resource(show_spinner="loading SAE")
def load_sae_cached(path: str):
    from thinklens.steering.sae import load_sae

    return load_sae(path)


def scan(source: SaeSource, n: int):
    """Held-out prompts of the SAE's data (as the ``sae`` job scans them), generated and captured at its site."""
    return _scan(source.model, source.site or "", str(source.sae_dir), source.data, source.prompt_format,
                 source.min_steps, source.max_steps, n)


@st.cache_resource(show_spinner="scanning traces for the feature's activations")
def _scan(model_name: str, site: str, sae_dir: str, data: str, prompt_format: str, min_steps: int, max_steps: int, n: int):
    from app.features import scan_traces
    from thinklens.steering.problems import held_out_prompts
    from thinklens.steering.sae import sae_site

    model = load_hooked_model(model_name)
    ps = held_out_prompts(model, data, n, prompt_format=prompt_format, min_steps=min_steps, max_steps=max_steps)
    site = site or str(sae_site(load_sae_cached(sae_dir), model))
    return scan_traces(model, site, ps.prompts[:n], max_new_tokens=ps.max_new_tokens)


def _wanted(labels: list[str]) -> int:
    """The source named by ``?kind=K&run=ID`` (a link from the Home, Steering or Features page), else the last
    browsed one, else the first."""
    qp = st.query_params
    want = f"{qp.get('kind')}/{qp.get('run')}"
    if want in labels:
        return labels.index(want)
    browsed = (st.session_state.get(BROWSED) or {}).get("source")
    return labels.index(browsed) if browsed in labels else 0


def sae_picker(key: str) -> tuple[RunFolder, SaeSource] | None:
    """A select box of the ``sae`` and ``steer`` runs (a steer run browses the SAE it steered with); error cards
    for broken runs; None when there is none (or the chosen one cannot be read)."""
    entries = [e for k in SAE_KINDS for e in discover_runs(runs_root(), k)]
    for e in entries:
        if e.error is not None:
            _broken_card(e)
    good = [e for e in entries if e.error is None]
    if not good:
        st.info(f"No `sae` or `steer` runs under `{display_path(runs_root())}`. Train an SAE with `thinklens run sae` "
                "(or `make demo`).")
        return None
    labels = [f"{e.kind}/{e.run_id}" for e in good]

    def fmt(i: int) -> str:
        e = good[i]
        if e.kind == "steer":
            return f"{labels[i]} ({e.status}; its SAE {(e.config or {}).get('sae', '?')})"
        return f"{labels[i]} ({e.status})"

    choice = st.selectbox("SAE (an sae run, or the SAE a steer run steered with)", range(len(good)),
                          index=_wanted(labels), format_func=fmt, key=key)
    e = good[choice]
    run = RunFolder(safe_run_path(e.kind, e.run_id))
    if results_missing(run):
        return None
    show_findings(run)
    try:
        return run, sae_source(run)
    except (OSError, ValueError, ThinklensError) as err:
        from app.common import error_card, rerun_command

        error_card(f"the SAE of {labels[choice]}", f"{type(err).__name__}: {err}",
                   fix=rerun_command(run.meta().get("job", run.kind), run.path))
        return None


def default_feature(source: SaeSource, stats: Any = None) -> int:
    """The feature a page opens on: ``?feature=N`` when it indexes this SAE, else the feature last browsed on
    this SAE, else the run's own feature (a steer run's), else the most frequent one of the statistics, else 0."""
    n = max(1, source.d_sae)
    try:
        want = int(st.query_params.get("feature", ""))
    except ValueError:
        want = None
    named = st.query_params.get("run")
    if want is not None and 0 <= want < n and (named is None or f"{st.query_params.get('kind')}/{named}" == source.label):
        return want
    browsed = st.session_state.get(BROWSED) or {}
    if browsed.get("source") == source.label and 0 <= int(browsed.get("feature", -1)) < n:
        return int(browsed["feature"])
    if source.feature is not None and 0 <= source.feature < n:
        return source.feature
    if stats is not None and stats.freq:  # the top row of the feature table: most correlated with the first word
        score = next(iter(stats.corr_words.values()), None) or stats.freq
        return max(range(len(score)), key=lambda i: score[i])
    return 0


def feature_input(source: SaeSource, label: str, key: str, stats: Any = None, container: Any = None) -> int:
    """A number input over this SAE's features (its key carries the SAE, so switching SAEs never keeps an index
    of the other one); remembers the choice as the browsed feature."""
    where = container if container is not None else st
    n = max(1, source.d_sae)
    f = int(where.number_input(f"{label} (0-{n - 1})", 0, n - 1, value=default_feature(source, stats),
                               key=f"{key}::{source.label}"))
    st.session_state[BROWSED] = {"source": source.label, "feature": f}
    return f


def page_link(page: str, source: SaeSource, feature: int) -> str:
    """A link to another page that opens this SAE and feature (``/Features`` or ``/Steering``)."""
    return f"/{page}?kind={source.kind}&run={source.run_id}&feature={feature}"


def metrics_row(source: SaeSource) -> None:
    cols = st.columns(5)
    m = source.metrics
    for col, (label, key) in zip(cols, [("explained variance", "explained_variance"), ("L0", "l0"),
                                        ("dead features", "dead_features"), ("CE loss recovered", "ce_loss_recovered"),
                                        ("features", "d_sae")]):
        v = m.get(key, source.d_sae if key == "d_sae" else None)
        text = f"{v:.4g}" if key == "l0" and isinstance(v, (int, float)) else (f"{v:.3f}" if isinstance(v, float) else str(v))
        col.metric(label, "-" if v is None else text)


def figure_histogram(h: Histogram, feature: int) -> go.Figure:
    """The feature's nonzero activations as bars, titled with its density."""
    mids = [(a + b) / 2 for a, b in zip(h.edges, h.edges[1:])]
    fig = go.Figure(go.Bar(x=mids, y=h.counts, width=[b - a for a, b in zip(h.edges, h.edges[1:])], name="tokens",
                           marker_color="#f97316", hovertemplate="activation %{x:.2f}: %{y} tokens<extra></extra>"))
    fig.update_layout(title=f"Feature {feature}: active on {h.density:.2%} of {h.n_tokens} tokens (max {h.max_act:.2f})",
                      xaxis_title="activation (tokens where it is > 0)", yaxis_title="tokens", template="plotly_white",
                      height=340, bargap=0.05, showlegend=False)
    return fig


def figure_logits(promoted: list[tuple[str, float]], suppressed: list[tuple[str, float]], feature: int) -> go.Figure:
    """Top promoted (right) and suppressed (left) tokens of the decoder row, as horizontal bars."""
    rows = sorted(promoted + suppressed, key=lambda r: r[1])
    fig = go.Figure(go.Bar(x=[v for _, v in rows], y=[repr(t)[1:-1] or "·" for t, _ in rows], orientation="h",
                           marker_color=["#dc2626" if v < 0 else "#2563eb" for _, v in rows], showlegend=False,
                           hovertemplate="%{y}: %{x:+.3f}<extra></extra>"))
    fig.update_layout(title=f"Logits feature {feature}'s decoder row raises and lowers", template="plotly_white",
                      xaxis_title="logit change per unit of W_dec[f] (through the LM head, no final norm)",
                      yaxis_title="token", height=max(340, 22 * len(rows) + 120))
    fig.update_yaxes(type="category")
    return fig


def figure_sweep(rows: list[dict[str, Any]], words: tuple[str, ...]) -> go.Figure:
    """Thinking-word counts against the coefficient of a live sweep."""
    xs = [r["coefficient"] for r in rows]
    fig = go.Figure([go.Scatter(x=xs, y=[r[w] for r in rows], mode="lines+markers", name=w) for w in words])
    fig.update_layout(title="Coefficient sweep on this prompt", xaxis_title="coefficient",
                      yaxis_title="times the word is generated", template="plotly_white", height=320)
    return fig
