"""The zoo calls the prompt format ``prompt_format``, as the rest of thinklens does (it was ``style`` in the zoo's
evaluation results and ``eval_style`` / ``styles`` in its recipes); what was saved under the old names still reads:
committed zoo-eval records, the ``eval`` and ``recipe`` of committed zoo.json files, and a checkpoint's identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thinklens.errors import ThinklensError
from thinklens.zoo.eval_result import ZooEvalResult
from thinklens.zoo.jobs import zoo_train
from thinklens.zoo.recipes import RECIPES, upgrade_recipe_json
from thinklens.zoo.registry import zoo_path
from thinklens.zoo.smol_r1 import REAL_RECIPES
from tools.testing import dies_after

ROOT = Path(__file__).resolve().parents[2]
#: A zoo-eval record committed before the rename (its rows say ``style``).
RECORD = ROOT / "results" / "records" / "zoo-eval-readme-zoo-50" / "results" / "zoo_eval.json"


def test_a_committed_zoo_eval_record_reads_under_the_new_name():
    rows = json.loads(RECORD.read_text())
    assert all("style" in row and "prompt_format" not in row for row in rows)  # the record predates the rename
    for row in rows:
        result = ZooEvalResult.from_json(row)
        assert result.prompt_format == row["style"] and result.model == row["model"]
        saved = result.to_json()
        assert "style" not in saved and saved["prompt_format"] == row["style"]
        assert {k: v for k, v in saved.items() if k != "prompt_format"} == {
            k: v for k, v in row.items() if k != "style"}  # nothing else changed on the way


def test_a_saved_result_holding_both_names_with_different_values_is_refused():
    row = {**json.loads(RECORD.read_text())[0], "prompt_format": "think"}
    with pytest.raises(ThinklensError, match="drop 'style'"):
        ZooEvalResult.from_json(row)


@pytest.mark.parametrize("name", ["tiny-cot", "tiny-think", "tiny-grpo", "tiny-r1"])
def test_the_eval_of_a_committed_zoo_json_still_makes_findings(name):
    meta = json.loads((zoo_path(name) / "zoo.json").read_text())
    assert "style" in meta["eval"]  # written before the rename
    found = zoo_train.findings(meta)
    assert found and found[0]["extra"]["model"] == name and found[0]["verdict"] == "effect"


@pytest.mark.parametrize("name", ["tiny-cot-short", "tiny-r1-sometimes"])
def test_a_committed_recipe_reads_as_todays_recipe(name):
    """Recipes unchanged since their model was trained: the JSON saved then (``styles``, ``eval_style``) upgrades to
    today's, so a checkpoint of that time still matches its identity."""
    saved = json.loads((ROOT / "data" / f"zoo/{name}/zoo.json").read_text())["recipe"]
    assert "styles" in saved and "eval_style" in saved
    today = RECIPES[name].to_json()
    assert "styles" not in today and "eval_style" not in today and today["format_mix"] == saved["styles"]
    assert upgrade_recipe_json(saved) == today
    assert upgrade_recipe_json(today) == today


@pytest.mark.parametrize("name", ["smol-r1-base", "smol-r1", "smol-r1-once"])
def test_a_committed_real_organism_is_todays_recipe(name):
    """The committed adapter was trained by today's recipe (retrained under today's keys): its organism.json's recipe
    is the recipe's JSON, so ``zoo-train --model NAME`` would retrain the same organism."""
    saved = json.loads((ROOT / "data" / "real-organisms" / name / "organism.json").read_text())["recipe"]
    assert saved == REAL_RECIPES[name].to_json()


def test_a_checkpoint_saved_under_the_old_recipe_keys_resumes(tmp_path, monkeypatch):
    from tests.zoo.test_zoo import _tiny_recipe
    from thinklens.zoo import trainer

    kw = {"seed": 3, "max_minutes": 5, "progress": False, "recipe": _tiny_recipe(6), "eval_per_steps": 0}
    real = trainer.make_batch
    monkeypatch.setattr(trainer, "make_batch", dies_after(real, 4))
    with pytest.raises(KeyboardInterrupt):
        trainer.train_zoo_model("tiny-pre", out_dir=tmp_path / "m", ckpt_dir=tmp_path / "ck", ckpt_every_s=0.0, **kw)
    state_file = tmp_path / "ck" / "state.json"
    state = json.loads(state_file.read_text())
    recipe = state["identity"]["recipe"]
    recipe["styles"], recipe["eval_style"] = recipe.pop("format_mix"), recipe.pop("prompt_format")  # as saved before
    state_file.write_text(json.dumps(state))
    batches = []
    monkeypatch.setattr(trainer, "make_batch", lambda *a, **k: batches.append(1) or real(*a, **k))
    resumed = trainer.train_zoo_model("tiny-pre", out_dir=tmp_path / "m", ckpt_dir=tmp_path / "ck", **kw)
    assert resumed["steps"] == 6 and len(batches) == 2  # steps 5 and 6: resumed at step 4, not restarted


def test_a_recipe_answers_in_a_format_its_kind_of_model_has():
    from thinklens.zoo.trainer import with_overrides

    assert RECIPES["tiny-think"].prompt_format == "think" and RECIPES["tiny-r1"].prompt_format == "chat"
    with pytest.raises(ThinklensError, match="prompt_format"):
        with_overrides(RECIPES["tiny-cot"], prompt_format="chat")  # a word-level model has no chat template
    with pytest.raises(ThinklensError, match="prompt_format"):
        with_overrides(RECIPES["tiny-r1"], prompt_format="think")  # tiny-r1 is prompted through its chat template
    with pytest.raises(ThinklensError, match="format_mix"):
        with_overrides(RECIPES["tiny-pre"], format_mix=(("cot", 0.5), ("chain", 0.5)))
