"""The latent-reasoning page renders a latent-eval run (table, figures, decoding) and a training run."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from thinklens.latent import figures
from thinklens.runs.folders import RunFolder

PAGE = Path(__file__).resolve().parents[2] / "app" / "pages" / "6_Latent_reasoning.py"

ROWS = [
    {"label": "CoT-SFT", "method": "cot", "problems": "3-4 steps", "accuracy": 0.85, "reasoning_positions": 24.5,
     "compression": 1.0, "train_s": 200.0, "n": 10},
    {"label": "CODI", "method": "codi", "problems": "3-4 steps", "accuracy": 0.8, "reasoning_positions": 6.0,
     "compression": 4.1, "train_s": 500.0, "n": 10},
]
DECODING = [{"question": "Tom has 3 apples . Tom buys 2 more . How many apples does Tom have ?", "answer": 5, "cot": "<<3+2=5>>",
             "steps": 1, "methods": {
                 "tiny-codi": {"text": "#### 5", "correct": True, "latents": [{"tokens": ["5", "=", "3", "+", "2"],
                                                                               "probs": [0.5, 0.2, 0.1, 0.1, 0.1]}]},
                 "tiny-latent-sft": {"text": "#### 4", "correct": False, "latents": [
                     {"tokens": ["<<", "3"], "probs": [0.6, 0.4], "entropy": 0.67, "exp_entropy": 1.96}]},
                 "tiny-cot": {"text": "<< 3 + 2 = 5 >> #### 5", "correct": True, "latents": []}}}]


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("THINKLENS_RUNS", str(tmp_path))
    run = RunFolder.create("latent-eval", {"n": 10}, root=tmp_path, run_id="table")
    run.write_result("table", ROWS)
    run.write_result("decoding", DECODING)
    run.write_result("seek", {"summary": {"cot_accuracy": 0.5, "seek_accuracy": 0.8, "mean_iterations": 2.0}})
    run.write_figure("accuracy", figures.figure_accuracy(ROWS))
    run.write_figure("seek_budget", figures.figure_seek_budget([0.5, 0.7, 0.8]))
    from thinklens.latent.latent_findings import table_findings

    correct = {"CoT-SFT": [True] * 9 + [False], "CODI": [True] * 8 + [False] * 2}
    run.finish({"findings": table_findings([{**r, "method": "direct" if r["method"] == "cot" else r["method"]} for r in ROWS],
                                           correct)})
    tr = RunFolder.create("latent-train", {"method": "codi"}, root=tmp_path, run_id="codi-seed0")
    tr.write_result("metrics", {"method": "codi", "steps": 2, "train_wall_s": 1.0, "processes": 1,
                                "history": [{"step": 0, "phase": "codi", "loss": 3.0}, {"step": 1, "phase": "codi", "loss": 2.0}]})
    tr.finish({})
    return tmp_path


def test_latent_page_shows_table_and_decoding(runs):
    at = AppTest.from_file(str(PAGE), default_timeout=60).run()
    assert not at.exception
    assert not at.error
    table = at.dataframe[0].value
    assert list(table["method"]) == ["CoT-SFT", "CODI"]
    # the page headline: the run's finding with its verdict, not as an effect (CoT-SFT at 9/10 leaves one problem
    # to fix: no result could be significant, so the verdict is "no headroom" (not "at ceiling": 0.9 is not the top of
    # the scale; issue 39), never "effect")
    (warning,) = [w.value for w in at.warning if "CODI beats CoT-SFT" in w.value]
    assert warning.startswith("**no headroom** · not shown (no headroom): CODI beats CoT-SFT") and "n=10" in warning
    assert not [s.value for s in at.success if "CODI beats" in s.value]
    assert len(at.get("plotly_chart")) >= 3  # accuracy, LatentSeek budget, Latent-SFT entropy
    assert any("5" in df.value.to_string() for df in at.dataframe[1:])  # a decoded latent's top tokens
    at.selectbox(key="latent-problem").set_value(0).run()
    assert not at.exception


def test_latent_page_without_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("THINKLENS_RUNS", str(tmp_path))
    at = AppTest.from_file(str(PAGE), default_timeout=60).run()
    assert not at.exception and at.info


def test_latent_page_shows_a_table_on_a_data_set(tmp_path, monkeypatch):
    """A latent-eval run of a real-format model on a JSONL (string gold answers, chat text, no latents) renders."""
    monkeypatch.setenv("THINKLENS_RUNS", str(tmp_path))
    rows = [{"label": "tiny-r1 (chat)", "method": "cot", "problems": "gsm8k.jsonl", "accuracy": 0.5,
             "reasoning_positions": 40.0, "compression": 1.0, "train_s": None, "n": 2},
            {"label": "CODI", "method": "codi", "problems": "gsm8k.jsonl", "accuracy": 0.5, "reasoning_positions": 6.0,
             "compression": 6.67, "train_s": 3.0, "n": 2}]
    decoding = [{"question": "Natalia sold clips to 48 of her friends in April...", "answer": "72",
                 "cot": "<<48/2=24>> <<48+24=72>>", "steps": 2, "methods": {
                     "tiny-r1": {"text": "Okay, 48 / 2 = 24.\n</think>\n\nThe answer is \\boxed{72}.", "correct": True,
                                 "latents": []},
                     "codi": {"text": " The answer is: 72", "correct": True,
                              "latents": [{"tokens": ["Ġ", "7", "2", "<<", "4"], "probs": [0.3, 0.2, 0.2, 0.2, 0.1]}]}}}]
    run = RunFolder.create("latent-eval", {"n": 2}, root=tmp_path, run_id="gsm8k")
    run.write_result("table", rows)
    run.write_result("decoding", decoding)
    run.write_figure("accuracy", figures.figure_accuracy(rows))
    run.finish({})
    at = AppTest.from_file(str(PAGE), default_timeout=60).run()
    assert not at.exception and not at.error
    assert list(at.dataframe[0].value["method"]) == ["tiny-r1 (chat)", "CODI"]


def test_training_runs_of_every_trainer_kind_old_and_new(runs):
    """Trainers write runs/<job>/<id> (codi/, sft/); the page picks among those kinds and the former latent-train/,
    and a Home link's ?kind= opens that trainer's run."""
    new = RunFolder.create("sft", {"method": "sft"}, root=runs, run_id="sft-new")
    new.write_result("metrics", {"method": "sft", "steps": 7, "train_wall_s": 2.0, "processes": 1,
                                 "history": [{"step": 0, "phase": "sft", "loss": 2.0}, {"step": 1, "phase": "sft", "loss": 1.5}]})
    new.finish({})
    at = AppTest.from_file(str(PAGE), default_timeout=60).run()
    assert not at.exception and not at.error
    assert at.selectbox(key="latent-train-kind").options == ["latent-train", "sft"]
    linked = AppTest.from_file(str(PAGE), default_timeout=60)
    linked.query_params["kind"] = "sft"
    linked.query_params["run"] = "sft-new"
    at = linked.run()
    assert not at.exception and at.selectbox(key="latent-train-kind").value == "sft"
    assert any("sft: 7 steps" in m.value for m in at.markdown)
