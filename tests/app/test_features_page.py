"""The Features page and its data (app/features.py): histograms, contexts, logits and diffs against
independent computations; the page on the demo's own `sae` and `steer` runs (smaller sizes): it renders,
a steer run opens the SAE it steered with, the browsed feature flows into live steering, no JSON viewer,
every chart has axis titles; and the page in a real browser."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from app.features import (
    Context,
    FeatureScan,
    activation_histogram,
    check_feature_index,
    context_html,
    diff_counts,
    logit_effects,
    sae_source,
    stat_rows,
    sweep_rows,
    top_contexts,
    word_diff,
)
from thinklens.errors import ThinklensError
from thinklens.runs.folders import RunFolder

APP = Path(__file__).resolve().parents[2] / "app"

FEATURES = str(APP / "pages" / "7_Features.py")
STEERING = str(APP / "pages" / "4_Steering.py")
SMALL = {"sae": ["--d-sae", "64", "--k", "8", "--training-tokens", "20000", "--n-texts", "200", "--eval-texts", "20",
                 "--stats-traces", "8", "--n-eval-batches", "1"],
         "steer": ["--n-prompts", "4", "--stats-traces", "16", "--no-diff-of-means"]}
"""The demo's sae and steer steps at test sizes (the steer run keeps the demo's committed 1024-feature SAE)."""


# ---------------------------------------------------------------- pure functions against oracles

def test_activation_histogram_matches_numpy():
    g = torch.Generator().manual_seed(0)
    acts = torch.relu(torch.randn(500, generator=g)) * 3  # about half exactly zero
    h = activation_histogram(acts, bins=20)
    live = acts[acts > 0].numpy().astype(np.float64)
    counts, edges = np.histogram(live, bins=20, range=(0.0, float(live.max())))
    assert h.counts == counts.tolist()
    assert np.allclose(h.edges, edges)
    assert h.n_tokens == 500 and h.n_active == int((acts > 0).sum()) and h.density == pytest.approx(len(live) / 500)
    assert h.max_act == pytest.approx(float(live.max()))
    empty = activation_histogram(torch.zeros(7))
    assert (empty.counts, empty.density, empty.n_tokens) == ([], 0.0, 7)
    with pytest.raises(ThinklensError, match="histogram bins"):
        activation_histogram(acts, bins=0)


def _scan() -> FeatureScan:
    """Two traces: prompts of 3 and 2 tokens, 4 and 3 generated tokens; one row per generated token."""
    tokens = [["p0", "p1", "p2", "g0", "g1", "g2", "g3"], ["q0", "q1", "h0", "h1", "h2"]]
    rows = [(0, t) for t in range(4)] + [(1, t) for t in range(3)]
    return FeatureScan(hidden=torch.zeros(7, 2), rows=rows, tokens=tokens, n_prompt=[3, 2], separator=" ")


def test_top_contexts_mark_the_position_and_the_token_it_produced():
    scan = _scan()
    acts = torch.tensor([0.0, 0.5, 0.0, 0.0, 0.0, 2.0, 0.0])  # row 5 = trace 1, generated step 1
    [best, second] = top_contexts(scan, acts, n=5, width=2, after=1)
    # the state that produced generated token t sits at the token before it: the prompt's last token for t = 0
    assert (best.trace, best.step, best.act) == (1, 1, 2.0)
    assert (best.token, best.next_token, best.before, best.after) == ("h0", "h1", ["q0", "q1"], ["h2"])
    assert (second.trace, second.step, second.token, second.next_token) == (0, 1, "g0", "g1")
    assert top_contexts(scan, torch.zeros(7)) == []  # a feature that never fired has no contexts
    with pytest.raises(ThinklensError, match="one per scanned row"):
        top_contexts(scan, torch.zeros(3))


def test_context_html_marks_and_escapes():
    ctx = Context(act=1.5, trace=0, step=0, before=["<b>", "x"], token="<script>", next_token="&", after=["y"])
    out = context_html(ctx, " ")
    assert "<script>" not in out and "&lt;script&gt;</mark>" in out
    assert "&lt;b&gt; x <mark" in out and "<u" in out and "&amp;</u>" in out and "1.50" in out


def test_logit_effects_against_a_loop():
    g = torch.Generator().manual_seed(1)
    unembed, direction = torch.randn(9, 4, generator=g), torch.randn(4, generator=g)
    vocab = [f"t{i}" for i in range(9)]
    promoted, suppressed = logit_effects(direction, unembed, vocab, k=3)
    by_hand = sorted(((sum(float(unembed[i, j]) * float(direction[j]) for j in range(4)), vocab[i]) for i in range(9)))
    assert [t for t, _ in promoted] == [t for _, t in by_hand[::-1][:3]]
    assert [t for t, _ in suppressed] == [t for _, t in by_hand[:3]]
    assert promoted[0][1] == pytest.approx(by_hand[-1][0]) and suppressed[0][1] == pytest.approx(by_hand[0][0])
    with pytest.raises(ThinklensError, match="unembedding"):
        logit_effects(torch.ones(5), unembed, vocab)


def test_word_diff_rebuilds_both_texts():
    plain, steered = "a b c d wait e", "a x c d d wait wait e f"
    ops = word_diff(plain, steered)
    assert [w for op, w in ops if op != "added"] == plain.split()
    assert [w for op, w in ops if op != "removed"] == steered.split()
    assert diff_counts(ops) == {"same": 5, "removed": 1, "added": 4}


def test_sweep_rows_count_words_on_word_boundaries():
    rows = sweep_rows({1.0: "wait, Wait hmm awaiting", -1.0: "so so"}, ("wait", "so"))
    assert [r["coefficient"] for r in rows] == [-1.0, 1.0]
    assert (rows[1]["wait"], rows[1]["so"], rows[0]["so"], rows[1]["words"]) == (2, 0, 2, 4)


def test_stat_rows_rank_the_feature_among_all():
    from thinklens.steering.features import FeatureStats

    stats = FeatureStats(site="resid_post.0", n_traces=2, n_tokens=10, freq=[0.1, 0.5, 0.3], mean_act=[0.0] * 3,
                         max_act=[4.0, 1.0, 2.0], corr_words={"wait": [0.2, -0.1, 0.9]}, word_counts={"wait": 3},
                         corr_correct=None, accuracy=None)
    rows = {r["statistic"].split(" (")[0]: (r["value"], r["rank"]) for r in stat_rows(stats, 2)}
    assert rows == {"firing frequency": (0.3, "2 of 3"), "max activation": (2.0, "2 of 3"),
                    "correlation with the next token being 'wait'": (0.9, "1 of 3")}


def test_coefficient_sweep_steers_each_coefficient_once():
    from types import SimpleNamespace

    from app.features import coefficient_sweep

    calls = []

    class Model:
        def generate(self, prompts, max_new_tokens, interventions):
            calls.append((tuple(prompts), max_new_tokens, tuple(interventions)))
            return [SimpleNamespace(text=f"steered by {list(interventions)}")]

    out = coefficient_sweep(Model(), "p", lambda c: f"add {c}", [1, -0.5, 0], max_new_tokens=7)
    assert out == {1.0: "steered by ['add 1.0']", -0.5: "steered by ['add -0.5']", 0.0: "steered by ['add 0.0']"}
    assert calls == [(("p",), 7, ("add 1.0",)), (("p",), 7, ("add -0.5",)), (("p",), 7, ("add 0.0",))]


# ---------------------------------------------------------------- the demo's sae and steer runs

@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo's own `sae` and `steer` steps (test sizes) in a fresh runs folder."""
    from thinklens.cli import main
    from thinklens.runs.demo_plan import DEMO_STEPS
    from thinklens.zoo.registry import zoo_path

    if zoo_path("tiny-think") is None:
        pytest.skip("the zoo is not trained")
    runs = tmp_path_factory.mktemp("features") / "runs"
    runs.mkdir()
    before = os.environ.get("THINKLENS_RUNS")
    os.environ["THINKLENS_RUNS"] = str(runs)  # the demo's steps write under THINKLENS_RUNS
    try:
        for step in DEMO_STEPS:
            if step.name in SMALL:
                rc = main([a.format(runs=runs) for a in step.argv] + SMALL[step.name] + ["--threads", "1"])
                assert rc == 0, step.name
    finally:
        if before is None:
            os.environ.pop("THINKLENS_RUNS", None)
        else:
            os.environ["THINKLENS_RUNS"] = before
    return runs


def test_sae_source_of_each_run(demo):
    sae = sae_source(RunFolder(demo / "sae" / "demo"))
    steer = sae_source(RunFolder(demo / "steer" / "demo"))
    steer_cfg = json.loads((demo / "steer" / "demo" / "config.json").read_text())
    meta = json.loads((demo / "steer" / "demo" / "meta.json").read_text())
    assert sae.sae_dir == demo / "sae" / "demo" / "sae" and sae.d_sae == 64 and sae.stats_file is not None
    assert Path(steer_cfg["sae"]).name == steer.sae_dir.name  # the SAE the steer run steered with, not the sae run's
    assert steer.d_sae == json.loads((steer.sae_dir / "cfg.json").read_text())["d_sae"] == 1024
    assert steer.feature == meta["summary"]["feature"] and steer.site == "resid_post.2"
    assert check_feature_index(steer, 1023) == 1023
    with pytest.raises(ThinklensError, match="0..63"):
        check_feature_index(sae, 64)
    # a steer run given an `sae` run folder browses that run's SAE and statistics
    other = RunFolder.create("steer", {"model": "tiny-think", "sae": str(demo / "sae" / "demo")},
                             root=demo.parent / "other-runs", run_id="on-run")
    other.finish({"feature": 7, "site": "resid_post.2"})
    on_run = sae_source(other)
    assert (on_run.sae_dir, on_run.stats_file, on_run.d_sae, on_run.feature) == (sae.sae_dir, sae.stats_file, 64, 7)
    with pytest.raises(ThinklensError, match="run kind"):
        sae_source(RunFolder.create("hybrid", {}, root=demo.parent / "other-runs", run_id="h"))


def test_feature_logits_are_the_decoder_row_through_the_lm_head(demo):
    from app.features import feature_logits
    from thinklens.engine.model import HookedModel
    from thinklens.steering.sae import load_sae

    source = sae_source(RunFolder(demo / "steer" / "demo"))
    model, sae = HookedModel.load(source.model), load_sae(source.sae_dir)
    head = model.hf.get_output_embeddings().weight.detach().double()  # [vocab, d]
    logits = head @ sae.W_dec[source.feature].detach().double()  # [vocab]
    promoted, suppressed = feature_logits(model, sae, source.feature, k=5)
    assert [v for _, v in promoted] == pytest.approx(logits.topk(5).values.tolist(), rel=1e-4)
    assert [v for _, v in suppressed] == pytest.approx((-logits).topk(5).values.neg().tolist(), rel=1e-4)
    assert [t for t, _ in promoted] == [model.tokenizer.decode([i]) for i in logits.topk(5).indices.tolist()]


def _spec(el) -> dict:
    return json.loads(el.proto.spec)


def untitled_axes(spec: dict) -> list[str]:
    """Axes of a plotly figure spec that carry data but no title."""
    layout, out = spec.get("layout", {}), []
    used = {(t.get("xaxis", "x"), t.get("yaxis", "y")) for t in spec.get("data", [])}
    for xa, ya in used:
        for ref in (xa, ya):
            name = ref[0] + "axis" + ref[1:]
            if not ((layout.get(name) or {}).get("title") or {}).get("text"):
                out.append(f"{(layout.get('title') or {}).get('text')}: {name}")
    return out


def _page(path: str, runs: Path, monkeypatch, **query):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("THINKLENS_RUNS", str(runs))
    at = AppTest.from_file(path, default_timeout=300)
    at.query_params.update(query)
    return at


def test_an_sae_run_opens_on_its_wait_feature(demo, monkeypatch):
    stats = json.loads((demo / "sae" / "demo" / "results" / "feature_stats.json").read_text())
    corr = stats["corr_words"]["wait"]
    for path, key in ((FEATURES, "features-feature::sae/demo"), (STEERING, "feature::sae/demo")):
        at = _page(path, demo, monkeypatch, kind="sae", run="demo").run()
        assert not at.exception
        assert at.number_input(key=key).value == max(range(len(corr)), key=corr.__getitem__), path


def test_feature_page_renders_the_demo_sae(demo, monkeypatch):
    at = _page(FEATURES, demo, monkeypatch, kind="sae", run="demo", feature="3").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.number_input(key="features-feature::sae/demo").value == 3
    assert at.number_input(key="features-feature::sae/demo").max == 63
    assert [s.value for s in at.subheader] == ["Feature 3 in the run's statistics", "Top contexts of feature 3"]
    stats = json.loads((demo / "sae" / "demo" / "results" / "feature_stats.json").read_text())
    shown = next(df.value for df in at.dataframe if "statistic" in df.value.columns)
    assert shown["value"].tolist()[0] == round(stats["freq"][3], 4)
    # density against the SAE's own encoder on the page's (cached) scan
    from app.feature_views import load_sae_cached, scan

    source = sae_source(RunFolder(demo / "sae" / "demo"))
    sc = scan(source, 32)
    acts = load_sae_cached(str(source.sae_dir)).encode(sc.hidden)[:, 3]
    density = next(m.value for m in at.metric if m.label == "density")
    assert density == f"{float((acts > 0).float().mean()):.2%}"
    l0 = source.metrics.get("l0")  # a top-k SAE's L0 is k: shown as 32, not 32.0 or 32.000
    assert l0 is None or next(m.value for m in at.metric if m.label == "L0") == f"{l0:.4g}" != f"{l0:.1f}"
    charts = at.get("plotly_chart")
    titles = [_spec(c)["layout"]["title"]["text"] for c in charts]
    assert len(charts) == 2 if (acts > 0).any() else 1
    assert titles[-1].startswith("Logits feature 3")
    assert not [a for c in charts for a in untitled_axes(_spec(c))]
    assert not at.get("json")
    if (acts > 0).any():
        assert any("<mark" in md.value for md in at.markdown)  # contexts with the activating token marked
    assert any(md.value.startswith("[Steer with feature 3 →](/Steering?kind=sae&run=demo&feature=3)") for md in at.markdown)


def test_a_steer_run_opens_its_own_sae(demo, monkeypatch):
    feature = json.loads((demo / "steer" / "demo" / "meta.json").read_text())["summary"]["feature"]
    for path, key in ((FEATURES, "features-feature::steer/demo"), (STEERING, "feature::steer/demo")):
        at = _page(path, demo, monkeypatch, kind="steer", run="demo").run()
        assert not at.exception and not at.error, (path, [e.value for e in at.error])
        box = at.number_input(key=key)
        assert (box.max, box.value) == (1023, feature), path  # the steer run's 1024-feature SAE, at its feature
        assert any("tiny-think-resid_post.2-topk32" in c.value for c in at.caption)
        assert any(s.value == f"Top contexts of feature {feature}" for s in at.subheader)
        assert not at.get("json")
        assert not [a for c in at.get("plotly_chart") for a in untitled_axes(_spec(c))]
    # the steer run's own section: its rows as a table, each linked to the trace viewer
    rows = next(df.value for df in at.dataframe if "trace viewer" in df.value.columns)
    assert rows["trace viewer"].str.startswith("/Trace_viewer?run=steer/demo&trace=").all()


def test_the_browsed_feature_flows_into_live_steering(demo, monkeypatch):
    at = _page(FEATURES, demo, monkeypatch).run()
    at.selectbox(key="features-sae").set_value(next(i for i, o in enumerate(at.selectbox(key="features-sae").options)
                                                     if o.startswith("sae/demo"))).run()
    at.number_input(key="features-feature::sae/demo").set_value(5).run()
    assert not at.exception
    browsed = at.session_state["browsed-feature"]
    assert browsed == {"source": "sae/demo", "feature": 5}
    steer = _page(STEERING, demo, monkeypatch)
    steer.session_state["browsed-feature"] = browsed
    steer.run()
    assert not steer.exception and not steer.error, [e.value for e in steer.error]
    assert steer.number_input(key="feature::sae/demo").value == 5
    assert any(s.value == "Live steering with feature 5" for s in steer.subheader)
    # a link names the feature outright
    linked = _page(STEERING, demo, monkeypatch, kind="sae", run="demo", feature="9").run()
    assert linked.number_input(key="feature::sae/demo").value == 9


@pytest.mark.slow  # a browser test (its AppTest twin stays in the default tier)
def test_features_page_in_a_browser(demo):
    """Headless Chromium: the page draws both charts with axis titles, marks contexts, no JSON viewer, no error card."""
    import time

    from browser import ensure_chromium, make_driver, running_app, wait_for_text

    chrome, driver = ensure_chromium()
    drv = make_driver(chrome, driver)
    try:
        with running_app(demo) as url:
            drv.get(url + "/Features?kind=steer&run=demo")
            wait_for_text(drv, "Top contexts of feature", timeout=240)
            state = None
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 120:
                state = drv.execute_script("""
                    var plots = Array.from(document.querySelectorAll('.js-plotly-plot')).filter(g => g._fullLayout);
                    return [plots.length,
                            plots.map(g => [g.querySelectorAll('.xtitle').length, g.querySelectorAll('.ytitle').length]),
                            document.querySelectorAll('[data-testid="stJson"]').length,
                            document.querySelectorAll('[data-testid="stAlertContentError"]').length,
                            document.querySelectorAll('mark').length,
                            document.querySelectorAll('[data-testid="stException"]').length];""")
                if state[0] >= 2:
                    break
                time.sleep(0.5)
            plots, titles, json_viewers, errors, marks, exceptions = state
            assert plots >= 2 and all(x >= 1 and y >= 1 for x, y in titles), titles
            assert (json_viewers, errors, exceptions) == (0, 0, 0)
            # marks depend on whether the feature fires on the scanned traces; the AppTest test checks them
            _steering_legends_clear(drv, url)
    finally:
        drv.quit()


_LAYOUT = """
function box(e) { var r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }
var plots = Array.from(document.querySelectorAll('.js-plotly-plot')).filter(g => g._fullLayout && g.offsetParent !== null);
return plots.map(g => ({
  title: g._fullLayout.title && g._fullLayout.title.text,
  legend: Array.from(g.querySelectorAll('.legend')).map(box),
  axes: Array.from(g.querySelectorAll('.xtitle, .ytitle, .x2title, .y2title')).map(box),
  xtitles: g.querySelectorAll('.xtitle').length, ytitles: g.querySelectorAll('.ytitle').length}));
"""


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _steering_legends_clear(drv, url: str) -> None:
    """The Steering page on the steer run and its Compare tab: no JSON viewer, every drawn chart has x and y axis
    titles, and no legend box overlaps an axis title."""
    import time

    from browser import wait_for_text
    from selenium.webdriver.common.by import By

    drv.get(url + "/Steering?kind=steer&run=demo")
    wait_for_text(drv, "equal-norm controls", timeout=240)
    for tab in (None, "Compare runs"):
        if tab:
            drv.find_element(By.XPATH, f"//*[@role='tab'][contains(., '{tab}')]").click()
            wait_for_text(drv, "runs side by side", timeout=60)
        plots = []
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 60 and not plots:
            time.sleep(1.0)
            plots = drv.execute_script(_LAYOUT)
        assert plots, tab
        assert not drv.find_elements(By.CSS_SELECTOR, '[data-testid="stJson"]')
        for p in plots:
            assert p["xtitles"] >= 1 and p["ytitles"] >= 1, p["title"]
            assert not [(lg, ax) for lg in p["legend"] for ax in p["axes"] if _overlap(lg, ax)], p
