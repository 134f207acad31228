"""tiny-r1 looks like a real reasoning model from the outside: Qwen2, a byte-level BPE tokenizer that
splits digits, a chat template whose generation prompt opens <think>, reasoning then a \\boxed{} answer,
all through the generic path (HookedModel.load, apply_chat_template, the chat format, model.generate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from thinklens.data.answers import is_correct
from thinklens.data.formats import SPANS, format_for
from thinklens.tasks.protocol import HELD_OUT, problems_by_steps
from thinklens.zoo.registry import zoo_path
from tools.testing import assert_same_weights, dies_after


@pytest.fixture(scope="module")
def r1():
    from thinklens.engine.model import HookedModel

    return HookedModel.load("tiny-r1", dtype=torch.float32)


def test_tiny_r1_is_a_small_qwen2_folder_with_its_own_tokenizer(r1):
    folder = zoo_path("tiny-r1")
    assert r1.hf.config.model_type == "qwen2" and type(r1.hf).__name__ == "Qwen2ForCausalLM"
    assert type(r1.tokenizer).__name__ == "Qwen2Tokenizer"  # what AutoTokenizer gives a qwen2 folder
    assert sum(p.stat().st_size for p in folder.iterdir()) <= 10 * 2**20
    meta = json.loads((folder / "zoo.json").read_text())
    assert meta["init"] is None and meta["prompt_format"] == "chat" and meta["retrain"].startswith("thinklens run zoo-train")
    acc = meta["eval"]["accuracy"]
    # its own eval (25 a step) within 5 points of the README's (results/zoo_tiny_r1.json, 100 a step) at every step
    readme = json.loads((Path(__file__).resolve().parents[2] / "results" / "zoo_tiny_r1.json").read_text())["values"]["accuracy"]
    assert all(abs(acc[s] - readme[s]) <= 0.05 for s in readme), (acc, readme)
    assert min(acc[str(s)] for s in (2, 3, 4)) >= min(readme[str(s)] for s in (2, 3, 4)) - 0.05


def test_the_recipe_builds_the_committed_shape(small_tokenizer):
    """tiny-r1's recipe (its model shape, grouped-query attention included) builds a model of the committed
    model's config; the shape and the text mix refuse what cannot be built or drawn."""
    from thinklens.errors import ThinklensError
    from thinklens.zoo.modeling import ZooModelConfig
    from thinklens.zoo.r1_train import build_r1_model
    from thinklens.zoo.recipes import RECIPES, R1TextMix

    committed = json.loads((zoo_path("tiny-r1") / "config.json").read_text())
    built = build_r1_model(RECIPES["tiny-r1"], small_tokenizer, seed=0).config
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "max_position_embeddings", "tie_word_embeddings"):
        assert getattr(built, key) == committed[key], key
    assert committed["num_key_value_heads"] == 2 < committed["num_attention_heads"]
    assert ZooModelConfig().hf_config(10).num_key_value_heads == ZooModelConfig().n_heads  # the Llama zoo: MHA
    with pytest.raises(ThinklensError, match="n_kv_heads"):
        ZooModelConfig(n_heads=4, n_kv_heads=3)
    with pytest.raises(ThinklensError, match="plain_rate"):
        R1TextMix(plain_rate=1.5)


def test_tokenizer_splits_digits_and_ends_turns_with_im_end(r1):
    tok = r1.tokenizer
    assert tok.tokenize("12345") == ["1", "2", "3", "4", "5"]
    assert [t for t in tok.tokenize("Tom has 47 apples.") if any(c.isdigit() for c in t)] == ["4", "7"]
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert len(tok.tokenize("<think>")) == 1 and len(tok.tokenize("</think>")) == 1


def test_chat_template_opens_the_thinking_span(r1):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(zoo_path("tiny-r1")))
    prompt = tok.apply_chat_template([{"role": "user", "content": "Tom has 7 apples."}], add_generation_prompt=True,
                                     tokenize=False)
    assert prompt == "<|im_start|>user\nTom has 7 apples.<|im_end|>\n<|im_start|>assistant\n<think>\n"
    fmt = format_for(r1)
    assert fmt.name == "chat" and fmt.span == SPANS["think"] and fmt.opens_span(prompt)


def test_greedy_answers_reason_in_the_span_then_box_the_answer(r1):
    problems = problems_by_steps(2, 2, 3, seed=HELD_OUT["eval"])
    fmt = format_for(r1)
    prompts = fmt.render_all(problems, r1.tokenizer)
    traces = r1.generate(prompts, max_new_tokens=120)
    right = 0
    for trace, p in zip(traces, problems):
        assert trace.stop_reason == "eos", trace.text
        split = fmt.split_trace(trace)
        reasoning, answer = ("".join(part) for part in split.parts(trace.tokens))
        assert split.closed and reasoning.startswith("Okay,") and "=" in reasoning
        assert "\\boxed{" in answer and "</think>" not in answer
        right += is_correct(trace.text, p.answer)
    assert right >= len(problems) - 1


# ---------------------------------------------------------------- the trainer (a tiny recipe, a few steps)


@pytest.fixture(scope="module")
def small_tokenizer():
    from thinklens.tasks import TaskConfig
    from thinklens.zoo.r1 import build_r1_tokenizer

    return build_r1_tokenizer(300, task=TaskConfig(max_steps=2), n_problems=150)


def _small_recipe(steps: int, more_steps: int = 0):
    from thinklens.tasks import TaskConfig
    from thinklens.zoo.modeling import ZooModelConfig
    from thinklens.zoo.recipes import RECIPES
    from thinklens.zoo.trainer import with_overrides

    return with_overrides(RECIPES["tiny-r1"], steps=steps, warmup_steps=1, batch_tokens=384, more_steps=more_steps,
                          task=TaskConfig(max_steps=2), vocab_size=300,
                          model=ZooModelConfig(d_model=16, n_layers=1, n_heads=2, d_ffn=32, max_positions=512))


def test_training_resumes_exactly_and_a_continuation_phase_trains_on(tmp_path, monkeypatch, small_tokenizer):
    from thinklens.zoo import r1
    from thinklens.zoo.trainer import train_zoo_model

    kw = {"seed": 1, "max_minutes": 5, "progress": False, "eval_per_steps": 0, "tokenizer": small_tokenizer}
    straight = train_zoo_model("tiny-r1", recipe=_small_recipe(4, more_steps=2), out_dir=tmp_path / "a", ckpt_dir=tmp_path / "ca", **kw)
    assert straight["steps"] == 6 and straight["init"] is None and straight["vocab_size"] == len(small_tokenizer)

    # Killed after 3 steps (checkpoints every step), resumed to the end of the first phase ...
    real = r1.R1Encoder.batch
    monkeypatch.setattr(r1.R1Encoder, "batch", dies_after(real, 3))
    with pytest.raises(KeyboardInterrupt):
        train_zoo_model("tiny-r1", recipe=_small_recipe(4), out_dir=tmp_path / "b", ckpt_dir=tmp_path / "cb", ckpt_every_s=0.0, **kw)
    assert not (tmp_path / "b").exists()
    monkeypatch.setattr(r1.R1Encoder, "batch", real)
    first = train_zoo_model("tiny-r1", recipe=_small_recipe(4), out_dir=tmp_path / "b", ckpt_dir=tmp_path / "cb", **kw)
    assert first["steps"] == 4 and json.loads((tmp_path / "cb" / "state.json").read_text())["step"] == 4
    # ... then the recipe gains a continuation phase: it trains on from the kept checkpoint, and ends where
    # the straight run of the longer recipe ends.
    more = train_zoo_model("tiny-r1", recipe=_small_recipe(4, more_steps=2), out_dir=tmp_path / "b", ckpt_dir=tmp_path / "cb", **kw)
    assert more["steps"] == 6 and more["final_loss_ema"] == straight["final_loss_ema"]
    assert_same_weights(tmp_path / "a", tmp_path / "b")
    assert (tmp_path / "b" / "tokenizer_config.json").is_file()
    assert "chat_template" in json.loads((tmp_path / "b" / "tokenizer_config.json").read_text())


def test_zoo_eval_prompts_tiny_r1_through_its_chat_template():
    from thinklens.zoo.accuracy import evaluate_zoo_model

    r = evaluate_zoo_model("tiny-r1", n_per_steps=3, steps=[2])
    assert r.prompt_format == "chat" and r.accuracy[2] >= 2 / 3
    assert r.samples[2][0].startswith("Okay,") and "</think>" in r.samples[2][0]
