"""The trace viewer (app/traces.py, app/pages/5_Trace_viewer.py): links, traces, per-token quantities, the logit lens.

Oracles: the logit lens's last layer against the model's own forward logits; the peaks linked from an enrichment
word against the enrichment's own peak count; the token diff against a hand-made edit; every token link parsed back.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import torch
from streamlit.testing.v1 import AppTest

from app import traces as tr

APP = Path(__file__).resolve().parents[2] / "app"

VIEWER = APP / "pages" / "5_Trace_viewer.py"
MI_PAGE = APP / "pages" / "2_MI_peaks.py"


def _params(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def test_trace_link_round_trips_every_parameter():
    url = tr.trace_link("mi-peaks/run 1", "tiny-think/3", "feature:5@data/saes/x", token=7, highlight=" so&wait")
    assert urlsplit(url).path == "/Trace_viewer"
    assert _params(url) == {"run": "mi-peaks/run 1", "trace": "tiny-think/3", "quantity": "feature:5@data/saes/x",
                            "token": "7", "highlight": " so&wait"}
    assert "token" not in _params(tr.trace_link("lynx/a", "0", "probe"))
    assert tr.parse_feature_quantity(tr.feature_quantity(633)) == (633, None)
    with pytest.raises(tr.ThinklensError, match="feature:<index>"):
        tr.parse_feature_quantity("feature:x")


def test_run_kind_refuses_paths_that_are_not_run_folders():
    """Any kind is a run of the viewer (issue 40: a new job's traces need no edit to the app), and a validate run's
    setting runs are reached by their path; what is not a plain path under the runs root is refused."""
    assert tr.run_kind("lynx/demo") == "lynx" and tr.run_kind("probe/demo") == "probe"
    for bad in ("../etc", "mi-peaks", "mi-peaks/../x", "mi-peaks/a b"):
        with pytest.raises(tr.ThinklensError, match="run"):
            tr.run_kind(bad)


def test_token_diff_marks_exactly_the_inserted_and_replaced_tokens():
    before = "<< 3 + 4 = 7 >> #### 7".split()
    after = "<< 3 + 4 = 7 >> wait << 3 + 4 = 8 >> #### 8".split()
    changed, ops = tr.token_diff(before, after)
    # hand-made: the first 7 tokens are kept, the rest is new except what the matcher aligns with "#### 7"
    assert changed[:7] == [0.0] * 7 and changed[7] == 1.0
    kept = [a for a, c in zip(after, changed) if c == 0.0]
    assert len(kept) == sum(b.size for b in __import__("difflib").SequenceMatcher(a=before, b=after).get_matching_blocks())
    assert all(o["change"] in ("insert", "replace", "delete") for o in ops)


def test_tokens_html_links_every_token_and_marks_highlight_and_selection():
    t = tr.TraceData(run="mi-peaks/r", kind="mi-peaks", trace_id="m/2", model=None, prompt="",
                     tokens=["so", "<<", "*", "So", "#"], quantities={"mi": [0.1, None, 0.5, 0.9, 0.0]},
                     marks={"peak (top_k)": [3]}, separator=" ")
    html = tr.tokens_html(t, t.quantities["mi"], quantity="mi", selected=2, highlight="so")
    links = re.findall(r'<a href="\?([^"]+)"[^>]*data-pos="(\d+)"([^>]*)>', html)
    assert [int(p) for _, p, _ in links] == list(range(5))
    for q, p, _ in links:
        assert _params("?" + q.replace("&amp;", "&")) == {"run": "mi-peaks/r", "trace": "m/2", "quantity": "mi",
                                                          "token": p, "highlight": "so"}
    assert [p for _, p, a in links if "data-highlight" in a] == ["0", "3"]
    assert [p for _, p, a in links if "data-selected" in a] == ["2"]
    assert "&#42;" in html and "&#35;" in html and "<<" not in html  # markdown and HTML specials escaped
    assert tr.colour(None, 0, 1) == "transparent" and tr.colour(0.9, 0.1, 0.9).endswith("0.85)")


# ---------------------------------------------------------------------------------------------- the logit lens

@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from thinklens import HookedModel
    from tools.testing import build_tiny_model

    torch.manual_seed(0)
    return HookedModel.load(str(build_tiny_model("llama", tmp_path_factory.mktemp("tiny"), vocab_size=64)))


def test_logit_lens_last_layer_is_the_models_own_next_token_distribution(tiny_model):
    prompt, gen = [1, 5, 9, 12], [7, 3, 22, 40, 2]
    lens = tr.logit_lens(tiny_model, prompt, gen, k=3)
    with torch.no_grad():
        logits = tiny_model.hf(torch.tensor([prompt + gen])).logits[0].float()  # [pos, vocab], the HF forward
    probs = torch.softmax(logits, -1)
    assert lens.layers == list(range(tiny_model.n_layers)) and len(lens.top) == len(gen)
    for t in range(len(gen)):
        row = probs[len(prompt) - 1 + t]  # the state that produced generated token t
        top = row.topk(3)
        got = lens.top[t][-1]
        assert [tok for tok, _ in got] == [tiny_model.tokenizer.decode([int(i)]) for i in top.indices]
        assert [p for _, p in got] == pytest.approx(top.values.tolist(), abs=1e-5)
        assert lens.p_token[t][-1] == pytest.approx(float(row[gen[t]]), abs=1e-5)
        assert lens.entropy[t] == pytest.approx(float(-(row * row.clamp_min(1e-30).log()).sum()), abs=1e-4)
        assert all(len(layer) == 3 and sum(p for _, p in layer) <= 1 + 1e-6 for layer in lens.top[t])


def test_logit_lens_refuses_an_empty_trace(tiny_model):
    with pytest.raises(tr.ThinklensError, match="at least one generated token"):
        tr.logit_lens(tiny_model, [1, 2], [])


# ---------------------------------------------------------------------------------------------- the pages

@pytest.fixture(scope="module")
def mi_root(tmp_path_factory):
    from thinklens.analyses.mi.synthetic import build_synthetic_run

    root = tmp_path_factory.mktemp("runs")
    build_synthetic_run(root, n=24, models=("tiny-think", "tiny-cot"), run_id="syn", interventions=False)
    return root


def _enrichment(root: Path) -> dict:
    return json.loads((root / "mi-peaks" / "syn" / "results" / "enrichment.json").read_text())


def test_peak_occurrences_count_what_the_enrichment_counted(mi_root):
    enr = _enrichment(mi_root)
    checked = 0
    for key, units in enr.items():
        for unit, rules in units.items():
            for rule, block in rules.items():
                for w in block["words"][:3]:
                    occ = tr.peak_occurrences(mi_root, "mi-peaks/syn", key, rule, w["word"], unit=unit)
                    assert len(occ) == w["peak_count"], (key, unit, rule, w["word"])
                    for i, p in occ:
                        rec = tr.load_trace(mi_root, "mi-peaks/syn", f"{key}/{i}")
                        assert p in rec.marks[f"peak ({rule})"]
                        assert p in tr.highlighted(rec.tokens, w["word"], rec.separator)
                    checked += 1
    assert checked >= 4


def _viewer(root: Path, monkeypatch, **params) -> AppTest:
    monkeypatch.setenv("THINKLENS_RUNS", str(root))
    at = AppTest.from_file(str(VIEWER), default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = str(v)
    return at.run()


def _axis_titles(at: AppTest) -> list[tuple[str, str, str]]:
    """(title, x axis title, y axis title) of every plotly chart on the page; a subplot's axes (``xaxis2``, ...)
    count too: the title of an untitled one comes back as ""."""
    out = []
    for c in at.get("plotly_chart"):
        lay = json.loads(c.proto.spec).get("layout", {})
        t = lambda a: ((lay.get(a) or {}).get("title") or {}).get("text", "")  # noqa: E731
        xs = [t(k) for k in lay if re.fullmatch(r"xaxis\d*", k)] or [""]
        ys = [t(k) for k in lay if re.fullmatch(r"yaxis\d*", k)] or [""]
        out.append(((lay.get("title") or {}).get("text", ""), min(xs, key=len), min(ys, key=len)))
    return out


def test_every_chart_of_the_mi_page_has_axis_titles_and_no_json_viewer(mi_root, monkeypatch):
    monkeypatch.setenv("THINKLENS_RUNS", str(mi_root))
    at = AppTest.from_file(str(MI_PAGE), default_timeout=120).run()
    seen = 0
    for view in at.radio(key="mi-view").options:
        at.radio(key="mi-view").set_value(view).run()
        assert not at.exception and not at.get("json"), view
        for title, x, y in _axis_titles(at):
            assert x and y, f"{view}: chart {title!r} lacks an axis title"
            seen += 1
    assert seen >= 5


def test_viewer_shows_a_linked_token_highlighted_and_its_logit_lens(mi_root, monkeypatch):
    from thinklens.zoo.registry import zoo_path

    enr = _enrichment(mi_root)["tiny-think"]["words"]["top_k"]["words"]
    word = enr[0]["word"]
    i, p = tr.peak_occurrences(mi_root, "mi-peaks/syn", "tiny-think", "top_k", word)[0]
    at = _viewer(mi_root, monkeypatch, **_params(tr.trace_link("mi-peaks/syn", f"tiny-think/{i}", "mi", token=p,
                                                                  highlight=word)))
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not at.get("json")  # no JSON viewer element
    strip = next(m.value for m in at.markdown if "tl-trace" in m.value)
    assert re.search(rf'data-pos="{p}" data-highlight="1" data-selected="1"', strip)
    assert any(f"orange frame: {word!r}" in c.value for c in at.caption)
    assert at.subheader[0].value.startswith(f"Token {p}:")
    if zoo_path("tiny-think") is None:
        pytest.skip("the zoo is not trained: no model for the logit lens")
    lens = next(d.value for d in at.dataframe if "layer" in d.value.columns)
    assert lens["layer"].tolist() == [0, 1, 2, 3] and "top 1" in lens.columns
    for title, x, y in _axis_titles(at):
        assert x and y, f"chart {title!r} lacks an axis title"
    assert len(_axis_titles(at)) == 2  # the quantity per token and the lens per layer


def test_viewer_computes_entropy_and_survives_bad_links(mi_root, monkeypatch):
    from thinklens.zoo.registry import zoo_path

    at = _viewer(mi_root, monkeypatch, run="mi-peaks/syn", trace="tiny-think/0", quantity="mi", token=999)
    assert not at.exception and any("outside this trace" in w.value for w in at.warning)
    at = _viewer(mi_root, monkeypatch, run="../../etc", trace="x", quantity="nope")
    assert not at.exception  # an unknown run says it found nothing, and shows no other run in its place (issue 40)
    assert [e.value for e in at.error if "found nothing" in e.value and "../../etc" in e.value]
    assert not at.get("plotly_chart") and not any("tl-trace" in m.value for m in at.markdown)
    at = _viewer(mi_root, monkeypatch, run="mi-peaks/syn", trace="x", quantity="mi")
    assert not at.exception  # an unknown trace of a known run says so, and shows no other trace
    assert [e.value for e in at.error if "found nothing" in e.value and "`x`" in e.value]
    assert not any("tl-trace" in m.value for m in at.markdown)
    at = _viewer(mi_root, monkeypatch, run="mi-peaks/syn", trace="tiny-think/0", quantity="nope")
    assert not at.exception and not at.error  # an unknown quantity falls back to the trace's own
    assert at.query_params["run"] == "mi-peaks/syn" and at.query_params["quantity"] == "mi"
    if zoo_path("tiny-think") is None:
        pytest.skip("the zoo is not trained")
    at = _viewer(mi_root, monkeypatch, run="mi-peaks/syn", trace="tiny-think/0", quantity="entropy")
    assert not at.exception and not at.error
    values = [float(v) for v in re.findall(r"· entropy = ([0-9.e+-]+)", next(
        m.value for m in at.markdown if "tl-trace" in m.value))]
    assert values and all(0 <= v <= math.log(200) for v in values)


def test_enrichment_word_links_open_its_peaks(mi_root, monkeypatch):
    monkeypatch.setenv("THINKLENS_RUNS", str(mi_root))
    at = AppTest.from_file(str(MI_PAGE), default_timeout=120).run()
    at.radio(key="mi-view").set_value("Thinking tokens").run()
    assert not at.exception
    key = at.selectbox(key="mi-enr-model")
    words = at.selectbox(key="mi-enr-word").options
    word = words[0]
    block = _enrichment(mi_root)["tiny-think"]["words"]["top_k"]
    assert words == [w["word"] for w in block["words"]] and key.value == 0
    md = next(m.value for m in at.markdown if "tl-link" in m.value and "peak(s)" in m.value)
    hrefs = [h.replace("&amp;", "&") for h in re.findall(r'href="([^"]+)"', md)]
    want = [tr.trace_link("mi-peaks/syn", f"tiny-think/{i}", "mi", token=p, highlight=word)
            for i, p in tr.peak_occurrences(mi_root, "mi-peaks/syn", "tiny-think", "top_k", word)]
    assert hrefs == want[:60] and len(want) == block["words"][0]["peak_count"]


def test_explore_token_click_opens_its_logit_lens(tiny_model, tmp_path, monkeypatch):
    """Explore: clicking a generated token (a pill) shows, per layer, the lens's top token and p(token); the last
    layer's p(token) is the model's own probability of the token it generated (HF forward, the oracle)."""
    import time as _time

    model_dir = Path(tiny_model.hf.config._name_or_path)
    monkeypatch.setenv("THINKLENS_RUNS", str(tmp_path))
    at = AppTest.from_file(str(APP / "pages" / "9_Explore.py"), default_timeout=120).run()
    at.selectbox(key="explore-model").set_value("(local folder)").run()
    at.text_input(key="explore-model-folder").set_value(str(model_dir)).run()
    at.selectbox(key="explore-model-2").set_value("(none)").run()
    at.text_area[0].set_value("w1 w2 w3").run()
    at.slider(key="explore-max").set_value(6).run()
    at.button(key="explore-go").click().run()
    for _ in range(600):
        if at.get("plotly_chart"):
            break
        _time.sleep(0.1)
        at.run()
    assert not at.exception and not at.error
    pills = at.pills(key="explore-token-0")
    assert pills.options and pills.value is None
    pills.set_value(2).run()
    assert not at.exception
    lens = next(d.value for d in at.dataframe if "layer" in d.value.columns)
    assert lens["layer"].tolist() == list(range(tiny_model.n_layers))
    from thinklens import HookedModel

    m = HookedModel.load(str(model_dir))
    from thinklens.analyses.explore import explore

    res = explore(m, "w1 w2 w3", max_new_tokens=6)
    p_col = next(c for c in lens.columns if c.startswith("p("))
    ids = m.tokenize("w1 w2 w3")["input_ids"][0].tolist()
    gen = list(m.generate(["w1 w2 w3"], max_new_tokens=6)[0].token_ids)  # the same greedy generation, as ids
    assert lens[p_col].tolist() == pytest.approx([res.p_token[j][2] for j in range(len(res.layers))], abs=1e-6)
    with torch.no_grad():
        probs = torch.softmax(m.hf(torch.tensor([ids + gen])).logits[0].float(), -1)
    assert lens[p_col].tolist()[-1] == pytest.approx(float(probs[len(ids) - 1 + 2, gen[2]]), abs=1e-4)


@pytest.fixture
def lynx_root(tmp_path):
    """A LYNX run folder in the job's file format (``thinklens.probes.lynx_result.write_lynx_result``'s arrays and outcomes),
    written by hand: two test rollouts, three cue events, LYNX exits at two δs."""
    import numpy as np
    import safetensors.numpy

    from thinklens.runs.folders import RunFolder

    run = RunFolder.create("lynx", {"model": "tiny-think"}, root=tmp_path, run_id="hand")
    rollouts = [{"prompt": "Q ? <think>", "prompt_ids": [1, 5, 6], "tokens": ["<<", "wait", "1", "hmm", "####", "2"],
                 "token_ids": [10, 11, 12, 13, 14, 15], "text": "<< wait 1 hmm #### 2", "stop_reason": "eos"},
                {"prompt": "R ? <think>", "prompt_ids": [1, 7, 6], "tokens": ["so", "####", "3"],
                 "token_ids": [16, 14, 17], "text": "so #### 3", "stop_reason": "eos"}]
    (run.path / "cache").mkdir()
    (run.path / "cache" / "rollouts.test.0000.json").write_text(json.dumps(rollouts))
    (run.path / "arrays").mkdir()
    events = {"rollout": np.array([0, 0, 1]), "position": np.array([1, 3, 0]), "label": np.array([0, 1, 1]),
              "prob": np.array([0.2, 0.9, 0.6]), "exit_tokens": np.array([3.0, 5.0, 2.0]), "is_cue": np.array([1, 1, 1], np.int8)}
    safetensors.numpy.save_file(events, str(run.path / "arrays" / "test_events.safetensors"))
    safetensors.numpy.save_file({"length": np.array([6, 3]), "correct": np.array([1, 0]), "tokens": np.array([6.0, 3.0])},
                                str(run.path / "arrays" / "test_rollouts.safetensors"))
    outcomes = [{"policy": "lynx", "param": 0.1, "exit_event": [1, -1]}, {"policy": "lynx", "param": 0.3, "exit_event": [0, 2]},
                {"policy": "full", "param": None, "exit_event": [-1, -1]}]
    run.write_result("lynx", {"summary": {"model": "tiny-think"}, "outcomes": outcomes})
    run.finish({})
    return tmp_path


def test_lynx_trace_puts_each_probe_score_on_its_cue_and_each_exit_on_its_event(lynx_root):
    t = tr.load_trace(lynx_root, "lynx/hand", "0")
    assert t.quantities["probe"] == [None, 0.2, None, 0.9, None, None]  # events at positions 1 and 3
    assert t.marks["cue event"] == [1, 3] and t.marks["exit at δ 0.1"] == [3] and t.marks["exit at δ 0.3"] == [1]
    assert t.prompt_ids == [1, 5, 6] and t.token_ids == [10, 11, 12, 13, 14, 15] and t.separator == " "
    exits = {r["δ"]: r["exit position"] for r in t.tables["LYNX exit per δ"]}
    assert exits == {0.1: 3, 0.3: 1}
    t1 = tr.load_trace(lynx_root, "lynx/hand", "1")
    assert t1.quantities["probe"] == [0.6, None, None] and "exit at δ 0.1" not in t1.marks
    assert {r["δ"]: r["exit position"] for r in t1.tables["LYNX exit per δ"]}[0.1] == "no exit (full rollout)"
    rows = tr.lynx_rollout_rows(lynx_root / "lynx" / "hand", "lynx/hand", 0.3)
    assert [(r["exit position"], r["exit correct"], r["cue events"]) for r in rows] == [(1, False, 2), (0, True, 1)]
    assert rows[1]["trace"] == tr.trace_link("lynx/hand", "1", "probe", token=0)
    with pytest.raises(tr.ThinklensError, match="δ"):
        tr.lynx_rollout_rows(lynx_root / "lynx" / "hand", "lynx/hand", 0.2)
    with pytest.raises(tr.ThinklensError, match="trace id"):
        tr.load_trace(lynx_root, "lynx/hand", "7")


def test_viewer_opens_a_lynx_exit_with_its_tables(lynx_root, monkeypatch):
    at = _viewer(lynx_root, monkeypatch, **_params(tr.trace_link("lynx/hand", "0", "probe", token=3)))
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.multiselect[0].value == ["cue event", "exit at δ 0.1"]  # the δ whose exit the link opened
    strip = next(m.value for m in at.markdown if "tl-trace" in m.value)
    assert re.search(r'data-pos="3" data-selected="1"', strip)
    assert "rgba(31,119,180,0.77)" in strip  # 0.9 on the probability scale [0, 1]: 0.9 * 0.85
    tables = [d.value for d in at.dataframe]
    assert tables[0]["probe score"].tolist() == [0.2, 0.9]


def test_sae_activations_read_the_state_that_produced_each_token():
    """Row t is the SAE code of the HF hidden state at sequence index P - 1 + t of the SAE's block (the oracle:
    ``output_hidden_states``, whose entry L + 1 is block L's output)."""
    from thinklens.zoo.registry import zoo_path

    folder = Path(__file__).resolve().parents[2] / "data" / "saes" / "tiny-think-resid_post.2-topk32"
    if zoo_path("tiny-think") is None or not (folder / "cfg.json").is_file():
        pytest.skip("needs the zoo's tiny-think and its SAE under data/saes")
    from thinklens import HookedModel
    from thinklens.steering.sae import load_sae

    model, sae = HookedModel.load("tiny-think"), load_sae(folder)
    prompt = model.tokenize("Tom has 3 pears . How many pears does Tom have ? <think>")["input_ids"][0].tolist()
    gen = model.generate(["Tom has 3 pears . How many pears does Tom have ? <think>"], max_new_tokens=6)[0].token_ids
    acts = tr.sae_activations(model, sae, prompt, list(gen))
    with torch.no_grad():
        hidden = model.hf(torch.tensor([prompt + list(gen)]), output_hidden_states=True).hidden_states[3][0]  # block 2
        want = sae.encode(hidden[len(prompt) - 1:len(prompt) - 1 + len(gen)].float())
    assert acts.shape == (len(gen), sae.cfg.d_sae)
    torch.testing.assert_close(acts, want.float(), atol=1e-4, rtol=1e-4)
