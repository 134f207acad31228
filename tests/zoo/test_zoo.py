"""Tests of the zoo: tokenizer round trips, the registry, offline loading of the committed weights,
accuracy of tiny-cot on a fixed held-out sample, and resumable seeded training."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest
import torch

from thinklens.errors import ThinklensError
from thinklens.tasks import STYLES, TaskConfig, generate_problems, render_example
from thinklens.zoo.batches import encode_example
from thinklens.zoo.registry import ZOO_NAMES, check_zoo_name, zoo_path
from thinklens.zoo.tokenizer import SPECIAL_TOKENS, build_zoo_tokenizer
from tools.testing import assert_same_weights, dies_after

#: The committed zoo summary the README quotes (results/zoo.json): the thresholds below sit within about 5 points
#: of its values, so a test and the README cannot drift apart.
ZOO_SUMMARY = json.loads((Path(__file__).resolve().parents[2] / "results" / "zoo.json").read_text())["values"]
#: How far below the committed value a small fixed sample may fall: 5 points, plus one trace of 16 for the rates of
#: sampled (T=1) traces.
TOL, TOL_SAMPLED = 0.05, 0.05 + 1 / 16

RICH = TaskConfig(ops=("+", "-", "*", "/"), distractor_rate=0.5, correction_rate=0.5, hmm_rate=0.5)
COMMITTED = ["tiny-pre", "tiny-direct", "tiny-cot", "tiny-think", "tiny-think-carry"]


@pytest.fixture(scope="module")
def tok():
    return build_zoo_tokenizer()


def test_tokenizer_round_trip_and_one_token_per_word(tok):
    for p in generate_problems(60, seed=5, config=RICH):
        for style in STYLES:
            prompt, target = render_example(p, style)
            ids = tok(f"{prompt} {target}")["input_ids"]
            assert tok.unk_token_id not in ids
            assert tok.decode(ids, skip_special_tokens=False) == f"<bos> {prompt} {target}"
            # The fast dict encoder used in training agrees with the HF tokenizer.
            fast, n_prompt = encode_example(p, style)
            assert fast == [*ids, tok.eos_token_id]
            assert n_prompt == len(tok(prompt)["input_ids"])
    # Compact GSM8k-Aug text tokenizes the same as its spaced form.
    assert tok("<<12*3=36>>")["input_ids"] == tok("<< 12 * 3 = 36 >>")["input_ids"]


def test_tokenizer_specials_and_numbers(tok):
    assert [tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS] == list(range(len(SPECIAL_TOKENS)))
    assert tok.pad_token == "<pad>" and tok.padding_side == "left"
    ids = [tok.convert_tokens_to_ids(str(i)) for i in range(100)]
    assert ids == list(range(ids[0], ids[0] + 100))  # one token per number 0..99, in order
    for w in ("wait", "hmm", "so", "therefore", "<think>", "</think>", "<bot>", "<eot>", "<latent>", "<compress>"):
        assert tok.convert_tokens_to_ids(w) != tok.unk_token_id
    assert tok("100")["input_ids"][-1] == tok.unk_token_id


def test_registry_paths_and_did_you_mean():
    assert ZOO_NAMES[:5] == ("tiny-pre", "tiny-direct", "tiny-cot", "tiny-think", "tiny-think-carry")
    with pytest.raises(ThinklensError, match="did you mean 'tiny-think'"):
        check_zoo_name("tiny-thinkk")
    with pytest.raises(ThinklensError, match="did you mean"):
        zoo_path("tny-cot")


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_model_loads_offline_in_float32(name, monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = zoo_path(name)
    assert folder is not None, f"data/zoo/{name} missing: run `thinklens run zoo-train --model {name}`"
    meta = json.loads((folder / "zoo.json").read_text())
    assert meta["name"] == name and meta["seed"] == 0 and meta["steps"] > 0 and "eval" in meta
    model = AutoModelForCausalLM.from_pretrained(folder)
    assert next(model.parameters()).dtype == torch.float32
    assert sum(p.numel() for p in model.parameters()) <= 1_300_000
    t = AutoTokenizer.from_pretrained(folder)
    text = "Tom has 7 apples . Tom buys 5 more . How many apples does Tom have ? steps :"
    assert t.decode(t(text)["input_ids"], skip_special_tokens=True) == text
    batch = t([text, "Tom has 7 apples ."], return_tensors="pt", padding=True)
    assert batch["attention_mask"][1, 0] == 0  # left padding


def test_zoo_fits_the_size_budget():
    total = sum(os.path.getsize(zoo_path(n) / "model.safetensors") for n in COMMITTED)
    assert total <= 11_000_000  # leaves room under ~20 MB for later siblings


def test_siblings_share_the_pre_init():
    for name in ("tiny-direct", "tiny-cot", "tiny-think", "tiny-think-carry"):
        meta = json.loads((zoo_path(name) / "zoo.json").read_text())
        assert meta["init"] == "tiny-pre"


def test_tiny_cot_accuracy_on_fixed_held_out_sample():
    from thinklens.zoo.accuracy import evaluate_zoo_model

    r = evaluate_zoo_model("tiny-cot", n_per_steps=20, steps=[2, 3], seed=4242)
    assert r.prompt_format == "cot"
    committed = ZOO_SUMMARY["accuracy"]["tiny-cot"]
    assert r.mean_accuracy([2, 3]) >= (committed["2"] + committed["3"]) / 2 - TOL, r.samples  # 0.96 committed


def test_tiny_think_reflects():
    from thinklens.zoo.accuracy import evaluate_zoo_model

    r = evaluate_zoo_model("tiny-think", n_per_steps=16, steps=[3], seed=4243)
    committed = ZOO_SUMMARY["think"]["tiny-think"]  # README: reflects 100% greedy, 81.5% sampled; 88.1% right after wait
    assert r.prompt_format == "think" and r.reflection_rate >= committed["reflection_rate"] - TOL
    # sampled at T=1, most traces say hmm/wait, and the equation after "wait" is mostly right
    assert r.sampled_reflection_rate >= committed["sampled_reflection_rate"] - TOL_SAMPLED, r.samples
    assert r.sampled_corrections >= 4
    assert r.sampled_correction_right_rate >= committed["sampled_correction_right_rate"] - TOL_SAMPLED


def test_latent_siblings_are_registered_and_refused_by_zoo_eval(capsys):
    from thinklens.cli import main
    from thinklens.zoo.registry import LATENT_ZOO_NAMES

    assert set(LATENT_ZOO_NAMES) < set(ZOO_NAMES) and "tiny-grpo" in ZOO_NAMES
    for name in (*LATENT_ZOO_NAMES, "tiny-grpo"):
        assert zoo_path(name) is not None and (zoo_path(name) / "config.json").is_file()
    assert main(["run", "zoo-eval", "--model", "tiny-codi"]) == 2
    assert "thinklens run latent-eval" in capsys.readouterr().err


def test_tiny_think_carry_corrects_itself_under_greedy_decoding():
    from thinklens.zoo.accuracy import evaluate_zoo_model

    r = evaluate_zoo_model("tiny-think-carry", n_per_steps=16, steps=[3], seed=4243)
    # Greedy traces slip on carries and say "wait"; the equations after "wait" are mostly right.
    assert r.n_corrections >= 4, r.samples
    assert r.correction_right_rate >= ZOO_SUMMARY["think"]["tiny-think-carry"]["correction_right_rate"] - TOL  # 0.983


def _tiny_recipe(tmp_steps: int):
    from thinklens.zoo.modeling import ZooModelConfig
    from thinklens.zoo.recipes import RECIPES
    from thinklens.zoo.trainer import with_overrides

    return with_overrides(
        RECIPES["tiny-pre"], steps=tmp_steps, warmup_steps=2, batch_tokens=256,
        task=TaskConfig(max_steps=2), model=ZooModelConfig(d_model=16, n_layers=1, n_heads=2, d_ffn=32),
    )


def test_training_is_seeded_resumable_and_atomic(tmp_path, monkeypatch):
    from thinklens.zoo import trainer

    recipe = _tiny_recipe(6)
    kw = {"seed": 3, "max_minutes": 5, "progress": False, "recipe": recipe, "eval_per_steps": 0}
    straight = trainer.train_zoo_model("tiny-pre", out_dir=tmp_path / "a" / "tiny-pre", ckpt_dir=tmp_path / "ca", **kw)
    assert straight["steps"] == 6 and not straight["truncated"]

    # Kill the second run after 4 steps (checkpoints every step), then resume it.
    real = trainer.make_batch
    monkeypatch.setattr(trainer, "make_batch", dies_after(real, 4))
    with pytest.raises(KeyboardInterrupt):
        trainer.train_zoo_model("tiny-pre", out_dir=tmp_path / "b" / "tiny-pre", ckpt_dir=tmp_path / "cb",
                              ckpt_every_s=0.0, **kw)
    assert not (tmp_path / "b" / "tiny-pre").exists()  # nothing half-written
    assert json.loads((tmp_path / "cb" / "state.json").read_text())["step"] == 4  # saved before the kill
    monkeypatch.setattr(trainer, "make_batch", real)
    resumed = trainer.train_zoo_model("tiny-pre", out_dir=tmp_path / "b" / "tiny-pre", ckpt_dir=tmp_path / "cb", **kw)
    assert resumed["steps"] == 6 and not (tmp_path / "cb").exists()
    assert resumed["final_loss_ema"] == straight["final_loss_ema"]  # the loss average resumes too
    assert_same_weights(tmp_path / "a" / "tiny-pre", tmp_path / "b" / "tiny-pre")
    assert not any(p.suffix == ".pt" or p.suffix == ".bin" for p in (tmp_path / "b").rglob("*"))


def test_zoo_train_job_resumes_in_its_run_folder_and_publishes(tmp_path, monkeypatch):
    """The job: checkpoint in the run folder, same --run-id resumes, weights published to `publish`."""
    from thinklens.runs.jobs import run_job
    from thinklens.zoo import trainer
    from thinklens.zoo.recipes import RECIPES

    monkeypatch.setitem(RECIPES, "tiny-pre", _tiny_recipe(5))
    kw = {"model": "tiny-pre", "seed": 2, "n_eval": 0, "progress": False}
    straight = run_job("zoo-train", publish=str(tmp_path / "a" / "tiny-pre"), out=str(tmp_path / "run-a"), **kw)
    assert straight["steps"] == 5 and straight["published_to"] == str(tmp_path / "a" / "tiny-pre")
    assert json.loads((tmp_path / "run-a" / "results" / "zoo_train.json").read_text())["steps"] == 5
    assert not (tmp_path / "run-a" / "checkpoint").exists()

    real = trainer.make_batch
    monkeypatch.setattr(trainer, "train_zoo_model", functools.partial(trainer.train_zoo_model, ckpt_every_s=0.0))
    monkeypatch.setattr(trainer, "make_batch", dies_after(real, 3))
    with pytest.raises(KeyboardInterrupt):
        run_job("zoo-train", publish=str(tmp_path / "b" / "tiny-pre"), out=str(tmp_path / "run-b"), **kw)
    assert json.loads((tmp_path / "run-b" / "checkpoint" / "state.json").read_text())["step"] == 3
    monkeypatch.setattr(trainer, "make_batch", real)
    resumed = run_job("zoo-train", publish=str(tmp_path / "b" / "tiny-pre"), out=str(tmp_path / "run-b"), **kw)
    assert resumed["steps"] == 5
    assert_same_weights(tmp_path / "a" / "tiny-pre", tmp_path / "b" / "tiny-pre")


def test_zoo_eval_job_writes_its_table(tmp_path):
    from thinklens.runs.jobs import get_job, run_job

    results = run_job("zoo-eval", model="tiny-direct", n_eval=4, step_counts=(2,), out=str(tmp_path), progress=False)
    assert [r.model for r in results] == ["tiny-direct"] and results[0].prompt_format == "direct"
    saved = json.loads((tmp_path / "results" / "zoo_eval.json").read_text())
    assert saved[0]["accuracy"].keys() == {"2"} and saved[0]["prompt_format"] == "direct" and "style" not in saved[0]
    problems = json.loads((tmp_path / "results" / "zoo_problems.json").read_text())  # the answers behind the accuracy
    assert len(problems) == 4 and sum(p["correct"] for p in problems) / 4 == saved[0]["accuracy"]["2"]
    assert get_job("zoo-eval").report(results).splitlines()[0].split() == ["model", "format", "2"]
    with pytest.raises(ThinklensError):
        run_job("zoo-eval", step_counts=(0,), out=str(tmp_path / "x"))


def test_committed_zoo_json_names_no_machine_path():
    """zoo.json's parent_dir is repository-relative (thinklens.zoo.registry.repo_relative): a committed model
    records no one machine's checkout."""
    from thinklens.zoo.registry import zoo_dir

    for meta in sorted(zoo_dir().glob("*/zoo.json")):
        parent = json.loads(meta.read_text()).get("parent_dir")
        assert parent is None or not Path(parent).is_absolute(), (meta, parent)
