"""The app shell: Home, Explore, run discovery with path validation and error cards."""

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from thinklens.errors import ThinklensError
from thinklens.runs.folders import RunFolder
from thinklens.zoo.registry import zoo_path

APP = Path(__file__).resolve().parents[2] / "app"


def test_home_lists_runs_and_shows_error_card_for_broken(runs):
    good = RunFolder.create("demo", {"x": 1}, root=runs, run_id="good")
    good.finish({"acc": 0.9})
    broken = runs / "demo" / "broken"
    broken.mkdir(parents=True)
    (broken / "config.json").write_text("{half-written")
    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=60).run()
    assert not at.exception
    assert any("broken" in e.value for e in at.error)
    assert at.dataframe and "good" in at.dataframe[0].value["id"].tolist()
    assert any("thinklens run demo" in c.value for c in at.code)  # the card's fixing command


def test_safe_run_path_refuses_traversal(runs):

    from app.common import safe_run_path

    with pytest.raises(ThinklensError):
        safe_run_path("demo", "../../etc")
    with pytest.raises(ThinklensError):
        safe_run_path("..", "x")
    assert safe_run_path("demo", "ok").parent.parent == runs.resolve()


def test_explore_page_generates(runs, tiny_dirs):
    at = AppTest.from_file(str(APP / "pages" / "9_Explore.py"), default_timeout=120).run()
    assert not at.exception
    at.selectbox(key="explore-model").set_value("(local folder)").run()
    at.text_input(key="explore-model-folder").set_value(str(tiny_dirs["llama"])).run()
    at.selectbox(key="explore-model-2").set_value("(local folder)").run()
    at.text_input(key="explore-model-2-folder").set_value(str(tiny_dirs["llama"])).run()
    at.text_area[0].set_value("w1 w2 w3").run()
    at.button(key="explore-go").click().run()
    assert not at.exception and not at.error
    # generation runs on worker threads: the click returns at once with a spinner, the charts come later
    for _ in range(600):
        if len(at.get("plotly_chart")) == 4:
            break
        time.sleep(0.1)
        at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 4  # entropy + logit lens of each of the two models, side by side
    assert [s.value for s in at.subheader] == [str(tiny_dirs["llama"])] * 2
    # a random tiny model runs to the limit: both generations are flagged as cut there
    assert sum("cut at the limit of 48 new tokens" in w.value for w in at.warning) == 2


@pytest.mark.skipif(zoo_path("tiny-cot") is None or zoo_path("tiny-think") is None, reason="needs the zoo")
def test_explore_gives_each_model_its_own_format(runs):
    """Unedited, the default problem reaches each model in its own format (tiny-cot is not fed tiny-think's
    '<think>'); edited, both read exactly the text typed."""
    at = AppTest.from_file(str(APP / "pages" / "9_Explore.py"), default_timeout=120).run()
    at.selectbox(key="explore-model").set_value("tiny-think").run()
    at.selectbox(key="explore-model-2").set_value("tiny-cot").run()
    assert at.text_area[0].value.endswith("<think>")
    at.slider(key="explore-max").set_value(8).run()
    at.button(key="explore-go").click().run()
    for _ in range(600):
        if len(at.get("plotly_chart")) == 4:
            break
        time.sleep(0.1)
        at.run()
    assert not at.exception and not at.error
    shown = [c.value for c in at.code]  # only a model reading another text than the box shows it
    assert len(shown) == 1 and shown[0].endswith("steps :") and "<think>" not in shown[0]


def test_explore_click_returns_before_generation_ends(runs, tiny_dirs, monkeypatch):
    """The page script only submits the generation: a slow model never holds the page (or another page)."""
    import threading

    import thinklens.analyses.explore as explore_mod

    gate = threading.Event()
    real = explore_mod.explore

    def slow(*args, **kwargs):
        gate.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(explore_mod, "explore", slow)
    at = AppTest.from_file(str(APP / "pages" / "9_Explore.py"), default_timeout=60).run()
    at.selectbox(key="explore-model").set_value("(local folder)").run()
    at.text_input(key="explore-model-folder").set_value(str(tiny_dirs["llama"])).run()
    at.selectbox(key="explore-model-2").set_value("(none)").run()
    at.text_area[0].set_value("w1 w2").run()
    t0 = time.perf_counter()
    at.button(key="explore-go").click().run()
    assert time.perf_counter() - t0 < 10 and not at.exception
    at.run()  # the poller's rerun: still running, so no result and the button is disabled
    assert not at.get("plotly_chart") and at.button(key="explore-go").disabled
    assert any("generating with" in s.label for s in at.status)  # the spinner (st.status)
    home = AppTest.from_file(str(APP / "Home.py"), default_timeout=60).run()  # another page meanwhile
    assert not home.exception and home.dataframe
    gate.set()
    for _ in range(600):
        at.run()
        if at.get("plotly_chart"):
            break
        time.sleep(0.1)
    assert len(at.get("plotly_chart")) == 2 and not at.button(key="explore-go").disabled
