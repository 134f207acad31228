"""Run-folder format, problem rendering, run figures, word choice, presets and the module doctests."""

from __future__ import annotations

import doctest
import importlib
import json

import numpy as np
import pytest

from thinklens.analyses.jobs.mi_peaks import JOB, PRESETS, MIPeaksJobConfig
from thinklens.analyses.mi.config import DEFAULT_ESTIMATOR
from thinklens.analyses.mi.figures import mean_curve
from thinklens.analyses.mi.figures_runs import (
    controls_table,
    figure_controls,
    figure_overlay,
    figure_rr_sweep,
    figure_sites,
    figure_trajectory,
    models_table,
)
from thinklens.analyses.mi.inputs import gold_text
from thinklens.analyses.mi.pipeline import choose_thinking_words
from thinklens.analyses.mi.run_format import TrajectoryRecord, model_key, read_index, read_trajectory, write_index, write_trajectory
from thinklens.analyses.mi.synthetic import build_synthetic_run, synthetic_record
from thinklens.data.problemsets import ProblemSet
from thinklens.errors import ThinklensError

MODULES = ["thinklens.analyses.mi.inputs", "thinklens.analyses.mi.run_format", "thinklens.analyses.mi.figures",
    "thinklens.analyses.mi.figures_runs",
           "thinklens.analyses.jobs.mi_peaks", "thinklens.analyses.mi.thinking_tokens", "thinklens.analyses.mi.peaks",
           "thinklens.analyses.mi.pipeline", "thinklens.analyses.mi.per_model", "thinklens.analyses.mi.ttts",
           "thinklens.analyses.mi.small_scale",
           "thinklens.analyses.mi.synthetic", "thinklens.analyses.mi.suppression", "thinklens.analyses.evaluation",
           "thinklens.analyses.jobs.eval"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name) -> None:
    res = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0


def _record(**changes) -> TrajectoryRecord:
    rec = synthetic_record(0, "m", "think", 4, MIPeaksJobConfig(k=2, sites=("resid_post.3", "resid_post.1")),
                           np.random.default_rng(0))
    return TrajectoryRecord(**{**rec.to_json(), **changes})


def test_record_round_trip_and_validation(tmp_path) -> None:
    rec = _record()
    write_trajectory(tmp_path, rec)
    back = read_trajectory(tmp_path, "m", 0)
    assert back == rec and back.peaks_of("top_k").indices == tuple(rec.peaks["top_k"])
    assert json.loads((tmp_path / "trajectories" / "m" / "00000.json").read_text())["tokens"] == list(rec.tokens)
    with pytest.raises(ThinklensError, match="trajectory file"):
        read_trajectory(tmp_path, "m", 1)
    bad = rec.to_json()
    bad["mi"] = {"resid_post.3": [0.1]}
    with pytest.raises(ThinklensError, match="one per token"):
        TrajectoryRecord.from_json(bad)
    with pytest.raises(ThinklensError, match="missing fields"):
        TrajectoryRecord.from_json({"index": 0})
    with pytest.raises(ThinklensError, match="peak rule"):
        rec.peaks_of("mad")


def test_index_round_trip_and_errors(tmp_path) -> None:
    with pytest.raises(ThinklensError, match="mi-peaks index"):
        read_index(tmp_path)
    write_index(tmp_path, [{"key": "m", "site": "resid_post.3", "index": []}], peak_rule="top_k")
    assert read_index(tmp_path)["peak_rule"] == "top_k"
    write_index(tmp_path, [{"key": "m"}])
    with pytest.raises(ThinklensError, match="models"):
        read_index(tmp_path)
    assert model_key("a/b/") == "b" and model_key("x y") == "x-y" and model_key("b", {"b", "b-2"}) == "b-3"


def test_synthetic_run_has_the_job_format(tmp_path) -> None:
    run = build_synthetic_run(tmp_path, n=6, models=("tiny-think", "tiny-cot"))
    models = read_index(run.path)["models"]
    assert [m["n"] for m in models] == [6, 6] and models[1]["style"] == "cot"
    rows = models_table(models)
    assert rows[0]["model"] == "tiny-think" and 0 <= rows[0]["accuracy"] <= 1
    assert {r["estimator"] for r in controls_table(models)} == {"reference", "median_sigma", "l2"}
    assert len(figure_controls(models).data) == 6  # own + shuffled per estimator panel
    overlay = figure_overlay(models, x="step", shuffled=True)
    assert sum(1 for t in overlay.data if "shuffled" in t.name and "band" not in t.name) == 2
    assert len(figure_sites(models[0]).data) == 4  # band + line per site
    rec = read_trajectory(run.path, "tiny-think", 2)
    fig = figure_trajectory(rec, site="resid_post.1", rule="iqr")
    assert fig.data[0].name == f"{DEFAULT_ESTIMATOR} @ resid_post.1"  # the other site: no stored shuffled curve for it
    assert "token" in fig.data[0].hovertext[0]
    assert len(figure_trajectory(rec, variants=True, shuffled=False).layout.annotations) == 3  # a panel each
    assert json.loads((run.path / "meta.json").read_text())["status"] == "done"


def test_rr_sweep_figure() -> None:
    rows = [{"layer": 2, "accuracy_plain": 0.5, "accuracy_rr": 0.6, "mean_recycled_steps": 1.0},
            {"layer": 0, "accuracy_plain": 0.5, "accuracy_rr": 0.4, "mean_recycled_steps": 1.0}]
    assert list(figure_rr_sweep(rows).data[0].x) == [0, 2]
    with pytest.raises(ThinklensError):
        figure_rr_sweep([])


def test_problem_rendering(tmp_path) -> None:
    from thinklens.data.formats import PromptFormat
    from thinklens.data.problemsets import load_problems

    (p,) = ProblemSet.synthetic(1, seed=3, min_steps=2, max_steps=2)
    assert PromptFormat("direct").render_problems([p])[0].endswith("answer :")
    assert PromptFormat("plain").render_problems([p]) == [p.question]
    assert gold_text(p, PromptFormat("think"), "think").startswith(("hmm", "<<"))
    assert gold_text(p, PromptFormat("plain"), "cot") == f"{p.solution} #### {p.answer}" and p.solution.startswith("<<")
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps({"question": "Q?", "cot": "<<1+1=2>>", "answer": 2}) + "\n")
    (q,) = load_problems(f)
    assert gold_text(q, PromptFormat("plain"), "cot") == "<<1+1=2>> #### 2" and q.answer == "2"
    assert gold_text(q, PromptFormat("cot"), "cot") == "<< 1 + 1 = 2 >> #### 2"  # the zoo's spaced form
    f.write_text(json.dumps({"question": "Q?", "answer": "1+1 is 2.\n#### 2"}) + "\n")
    assert gold_text(load_problems(f)[0], PromptFormat("plain"), "cot") == "1+1 is 2.\n#### 2"  # GSM8K: the answer text


def test_thinking_word_choice() -> None:
    rows = [{"word": "so", "peak_count": 5}, {"word": "wait", "peak_count": 0}]
    assert choose_thinking_words(rows, (), 3) == (["so"], "enrichment")
    assert choose_thinking_words(rows, ("hmm",), 3) == (["hmm"], "explicit")
    words, source = choose_thinking_words([], (), 3, ["Tom", "wait", "so", "x"])
    assert words == ["so", "wait"] and source.startswith("paper words")
    assert choose_thinking_words([], (), 3, ["Tom"])[0] == []


def test_presets() -> None:
    assert set(PRESETS) == {"default", "demo", "paper"}
    demo = PRESETS["demo"]
    assert demo.suppression and demo.recycling and demo.ttts and demo.rr_probability == 0.5
    assert JOB.make_config(preset="demo", compare=()).models == ("tiny-think",)
    with pytest.raises(ThinklensError, match="preset"):
        JOB.make_config(preset="fast")
    assert mean_curve([[1.0, 2.0, 3.0]], "fraction", grid=3)["mean"] == [1.0, 2.0, 3.0]


def test_ttts_word_check_on_the_zoo_tokenizer() -> None:
    from thinklens.analyses.mi.ttts import check_words
    from thinklens.zoo.tokenizer import build_zoo_tokenizer

    class M:
        tokenizer = build_zoo_tokenizer()

    check_words(M(), ["wait", "so"])
    with pytest.raises(ThinklensError, match="lowercase"):
        check_words(M(), ["Wait"])
