"""The app shell: Home, Explore, run discovery with path validation and error cards."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from thinklens.errors import ThinklensError
from thinklens.runs import RunFolder

APP = Path(__file__).resolve().parents[2] / "app"


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("THINKLENS_RUNS", str(tmp_path))
    return tmp_path


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


def test_safe_run_path_refuses_traversal(runs):
    import sys

    sys.path.insert(0, str(APP))
    from common import safe_run_path

    with pytest.raises(ThinklensError):
        safe_run_path("demo", "../../etc")
    with pytest.raises(ThinklensError):
        safe_run_path("..", "x")
    assert safe_run_path("demo", "ok").parent.parent == runs.resolve()


def test_explore_page_generates(runs, tiny_dirs):
    at = AppTest.from_file(str(APP / "pages" / "9_Explore.py"), default_timeout=120).run()
    assert not at.exception
    at.selectbox(key="explore-model").set_value("(local folder)").run()
    at.text_input(key="explore-folder").set_value(str(tiny_dirs["llama"])).run()
    at.text_area[0].set_value("w1 w2 w3").run()
    at.button(key="explore-go").click().run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 2
