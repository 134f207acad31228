"""The steering jobs on a model that looks like a real reasoning model (tiny-r1: Qwen2, byte-level BPE, a chat
template opening <think>, boxed answers; its untrained twin until the zoo has it) and a GSM8K-format file,
through the generic path: the chat format, is_correct grading, words on decoded text, the thinking span.
Every zoo-only helper raises (``no_zoo_branch``)."""

from __future__ import annotations

import json

import pytest

from thinklens.cli import main
from thinklens.data.answers import is_correct
from thinklens.errors import ThinklensError
from thinklens.runs.folders import RunFolder

SAE_ARGS = ["--site", "resid_post.0", "--d-sae", "32", "--k", "4", "--training-tokens", "3000", "--train-batch-size-tokens",
            "256", "--store-batch-size-prompts", "4", "--n-batches-in-buffer", "4", "--n-eval-batches", "1"]


def _chat(prompt: str) -> bool:
    return prompt.startswith("<|im_start|>user\n") and prompt.endswith("<|im_start|>assistant\n<think>\n")


def test_sae_sae_eval_and_steer_on_tiny_r1_with_a_gsm8k_file(tiny_r1, gsm8k_file, tmp_path, no_zoo_branch):
    runs = str(tmp_path / "runs")
    common = ["--model", tiny_r1, "--data", str(gsm8k_file), "--prompt-format", "chat", "--runs", runs, "--no-progress"]
    assert main(["run", "sae", *common, *SAE_ARGS, "--n-texts", "6", "--eval-texts", "2", "--stats-traces", "4",
                 "--max-new-tokens", "12", "--run-id", "r1"]) == 0
    sae_run = RunFolder.open(tmp_path / "runs" / "sae" / "r1")
    stats = sae_run.read_result("feature_stats")
    assert stats["n_traces"] == 4 and stats["n_tokens"] <= 4 * 12 and stats["span"] == "think"
    assert stats["n_reasoning_tokens"] is not None and len(stats["freq_reasoning"]) == 32  # the chat format's <think> span
    assert stats["accuracy"] is not None and set(stats["corr_words"]) == {"wait", "hmm", "so", "therefore"}
    assert sae_run.read_result("metrics")["l0"] > 0

    assert main(["run", "sae-eval", *common, "--sae", str(sae_run.path), "--n-texts", "4", "--n-batches", "1",
                 "--run-id", "ev"]) == 0

    budget = 160 if tiny_r1 == "tiny-r1" else 12  # the trained organism's answers take 60-115 tokens
    steer = ["run", "steer", *common, "--sae", str(sae_run.path), "--n-prompts", "3", "--stats-traces", "2",
             "--coeffs=-1,0,1", "--max-new-tokens", str(budget), "--word", "Wait"]
    if stats["word_counts"]["wait"] == 0:  # 4 scanned traces of 12 tokens seldom say it: no feature is picked among zeros
        assert main([*steer, "--run-id", "refused"]) == 2
        steer += ["--feature", "0"]
    assert main([*steer, "--run-id", "st"]) == 0
    res = RunFolder.open(tmp_path / "runs" / "steer" / "st").read_result("steer")
    assert res["prompt_format"] == "chat" and res["data"] == str(gsm8k_file) and res["max_new_tokens"] == budget
    base = [r for r in res["rows"] if r["coeff"] == 0.0]
    assert base and all("accuracy" in r and "Wait" in r for r in res["rows"])
    if tiny_r1 == "tiny-r1":  # the trained organism answers in a box
        assert base[0]["accuracy"] > 0


def test_texts_and_prompts_of_a_problem_set_use_the_chat_format(tiny_r1, gsm8k_file, no_zoo_branch):
    from thinklens import HookedModel
    from thinklens.data.problemsets import load_problems
    from thinklens.steering.corpora import corpus
    from thinklens.steering.problems import data_format, prompt_set

    model = HookedModel.load(tiny_r1)
    texts = corpus(str(gsm8k_file), 3, seed=0, model=model, prompt_format="chat")
    rows = [json.loads(line) for line in gsm8k_file.read_text().splitlines()]
    assert [t.endswith(r["answer"]) and _chat(t[: -len(r["answer"])]) for t, r in zip(texts, rows)] == [True] * 3
    held = corpus(str(gsm8k_file), 2, seed=0, model=model, prompt_format="chat", offset=6)
    assert held[0].endswith(rows[6]["answer"])
    problems = list(load_problems(str(gsm8k_file)))
    ps = prompt_set(model, data_format(model, "chat"), problems, max_new_tokens=None, max_steps=3)
    assert all(_chat(p) for p in ps.prompts) and ps.max_new_tokens == min(1024, model.max_context - max(
        len(ids) for ids in model.tokenizer(ps.prompts)["input_ids"]))
    assert ps.golds == [r["answer"].rsplit("#### ", 1)[1] for r in rows]
    assert ps.correct([f"so \\boxed{{{g}}}. Wait, 3" for g in ps.golds]) == [True] * len(rows)


def test_hybrid_tiny_r1_against_itself_in_plain_format(tiny_r1, gsm8k_file, gsm8k_writer, tmp_path, no_zoo_branch,
                                                       monkeypatch):
    import thinklens.steering.hybrid_generate as hg
    from thinklens.tasks.protocol import HELD_OUT

    vectors = gsm8k_writer(tmp_path / "vectors.jsonl", 3, seed=HELD_OUT["steer_train"])
    seen: dict[str, tuple] = {}
    real = hg.hybrid_generate

    def recording(base, thinking, hv, prompts, cfg, *, mode, thinking_prompts=None, **kw):
        seen[mode] = (list(prompts), list(thinking_prompts))
        return real(base, thinking, hv, prompts, cfg, mode=mode, thinking_prompts=thinking_prompts, **kw)

    monkeypatch.setattr(hg, "hybrid_generate", recording)
    argv = ["run", "hybrid", "--model", tiny_r1, "--thinking", tiny_r1, "--prompt-format", "chat", "--base-format", "plain",
            "--data", str(gsm8k_file), "--vector-data", str(vectors), "--n-eval", "3", "--n-train", "6",
            "--max-new-tokens", "12", "--site", "resid_post.0", "--n-categories", "2", "--k", "1", "--sae-steps", "5",
            "--vector-iters", "2", "--vector-batch", "4", "--strengths", "0.5,1", "--windows", "1",
            "--modes", "base,thinking,hybrid", "--out", str(tmp_path / "hy"), "--no-progress"]
    assert main(argv) == 0
    run = RunFolder.open(tmp_path / "hy")
    info = run.read_result("hybrid_info")
    assert (info["thinking_format"], info["base_format"], info["thinking_span"]) == ("chat", "plain", "think")
    assert info["chooser_at_disagreement"] == "thinking" and "THINKING model picks" in info["token_choice"]
    base_prompts, thinking_prompts = seen["hybrid"]
    assert all(_chat(p) for p in thinking_prompts) and not any("<|im_start|>" in p for p in base_prompts)
    res = run.read_result("hybrid")
    for mode in ("base", "thinking", "hybrid"):
        assert 0.0 <= res[mode]["changed_fraction"] <= res[mode]["fired_fraction"] <= 1.0
    assert res["base"]["fired_fraction"] == 0.0 and res["base_own_style"]["style"] == "chat"
    assert set(run.read_result("hybrid_summary")["hybrid"]) >= {"fired_fraction", "changed_fraction"}


def test_hybrid_refuses_tokenizers_of_another_vocabulary(tiny_r1, tmp_path):
    from thinklens.runs.jobs import run_job

    with pytest.raises(ThinklensError, match="one vocabulary"):
        run_job("hybrid", model="tiny-cot", thinking=tiny_r1, out=tmp_path / "bad", progress=False)


def test_reasoning_vector_on_tiny_r1_scores_the_gsm8k_file(tiny_r1, gsm8k_file, tmp_path, no_zoo_branch):
    import torch

    from thinklens import HookedModel

    target = HookedModel.load(tiny_r1)
    nudged = tmp_path / "a"
    with torch.no_grad():
        gen = torch.Generator().manual_seed(0)
        for p in target.hf.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 1e-3)
        target.hf.save_pretrained(str(nudged))
    target.tokenizer.save_pretrained(str(nudged))
    argv = ["run", "reasoning-vector", "--model", tiny_r1, "--a", str(nudged), "--b", tiny_r1, "--base", "none",
            "--data", str(gsm8k_file), "--prompt-format", "chat", "--alphas=-1,0,1", "--groups", "all,mlp",
            "--max-new-tokens", "12", "--save-alpha", "none", "--out", str(tmp_path / "rv"), "--no-progress"]
    assert main(argv) == 0
    run = RunFolder.open(tmp_path / "rv")
    rows = run.read_result("alpha_sweep")
    groups = ("all", "mlp", "all (random direction)", "mlp (random direction)")  # each group's control sweep comes last
    assert [(r["group"], r["alpha"]) for r in rows] == [(g, a) for g in groups for a in (-1.0, 0.0, 1.0)]
    # alpha 0 is the target itself: its accuracy is the greedy chat-format answers graded by is_correct
    fresh = HookedModel.load(tiny_r1)
    lines = [json.loads(line) for line in gsm8k_file.read_text().splitlines()]
    prompts = [fresh.tokenizer.apply_chat_template([{"role": "user", "content": f"{r['question']}\nPlease reason step by "
                                                     "step, and put your final answer within \\boxed{}."}],
                                                   add_generation_prompt=True, tokenize=False) for r in lines]
    texts = [t.text for t in fresh.generate(prompts, max_new_tokens=12)]
    expected = sum(is_correct(t, r["answer"].rsplit("#### ", 1)[1]) for t, r in zip(texts, lines)) / len(lines)
    assert next(r for r in rows if r["alpha"] == 0.0)["accuracy"] == expected and rows[1]["n"] == len(lines)
    vec = run.read_result("vector")
    assert vec["zoo_lineage"]["roots_match"] in (None, True) and vec["norms"]["all"] > 0


def test_the_zoo_stream_follows_the_models_own_format(tiny_r1):
    from thinklens import HookedModel
    from thinklens.steering.problems import data_format
    from thinklens.zoo.registry import zoo_path

    assert data_format(HookedModel.load(tiny_r1), "auto", "zoo:think").name == "chat"  # not the zoo's spaced words
    if zoo_path("tiny-think") is not None:
        think = HookedModel.load("tiny-think")
        assert data_format(think, "auto", "zoo:cot").name == "cot" and data_format(think, "plain", "zoo:cot").name == "plain"
