"""Every latent job on a model that looks like a real reasoning model (tiny-r1's untrained twin: Qwen2, byte-level
BPE splitting digits, a chat template opening <think>) with a GSM8k-Aug JSONL, through the generic path.

The zoo-only helpers (the zoo's word prompts, spaced equations, protocol budgets) are patched to raise: a job
that takes a zoo branch for this model fails the test.
"""

import json

import pytest
import torch

from thinklens.data.formats import R1_INSTRUCTION, format_for
from thinklens.data.problemsets import load_problems
from thinklens.errors import ThinklensError
from thinklens.latent.codi import CODI, kd_positions, teacher_chain
from thinklens.latent.examples import GENERIC_MARKER, ExampleBuilder
from thinklens.latent.latent_model import load_latent_model
from thinklens.latent.segments import add_latent_tokens, latent_tokens
from thinklens.latent.self_reward import VERDICT_MARKER, VERIFIER_WEIGHTS, SelfReward, verifier_prompt
from thinklens.runs.jobs import run_job


def _zoo_only(*args, **kwargs):
    raise AssertionError("a zoo-only helper was called for a model outside the zoo's formats")


@pytest.fixture()
def no_zoo_paths(monkeypatch):
    import thinklens.latent.examples
    import thinklens.latent.segments
    import thinklens.tasks.protocol
    import thinklens.tasks.render

    for module, name in [(thinklens.latent.examples, "zoo_example"), (thinklens.latent.examples, "spaced"),
        (thinklens.latent.segments, "render_prompt"),
                         (thinklens.latent.segments, "spaced"), (thinklens.tasks.render, "render_prompt"),
                         (thinklens.tasks.protocol, "token_budget"), (thinklens.tasks.protocol, "model_style")]:
        monkeypatch.setattr(module, name, _zoo_only)


@pytest.fixture()
def r1(r1_twin):
    from thinklens import HookedModel

    return add_latent_tokens(HookedModel.load(str(r1_twin)))


def test_the_patches_catch_a_zoo_branch(r1, gsm8k_aug, no_zoo_paths):
    from thinklens.data.formats import PromptFormat

    problem = load_problems(str(gsm8k_aug))[1]
    with pytest.raises(AssertionError, match="zoo-only"):
        ExampleBuilder(r1.tokenizer, PromptFormat("cot")).build(problem)


def test_examples_are_in_the_models_own_format_and_tokens(r1, gsm8k_aug, no_zoo_paths):
    tok = r1.tokenizer
    fmt = format_for(r1)
    assert fmt.name == "chat"
    builder = ExampleBuilder(tok, fmt)
    problem = load_problems(str(gsm8k_aug))[0]  # Natalia: 72, chain <<48/2=24>> <<48+24=72>>
    ex = builder.build(problem)
    chat = tok.apply_chat_template([{"role": "user", "content": f"{problem.question}\n{R1_INSTRUCTION}"}],
                                   add_generation_prompt=True, tokenize=False)
    assert list(ex.prompt) == tok(chat)["input_ids"] and chat.endswith("<think>\n")
    assert [tok.decode(list(s)) for s in ex.steps] == [" <<48/2=24>>", " <<48+24=72>>"]
    assert tok.decode(list(ex.answer)) == f" {GENERIC_MARKER} 72" and ex.gold == "72"
    digits = [tok.decode([t]) for t in ex.answer[ex.marker_len:]]
    assert digits == ["7", "2"]  # the number is two tokens: nothing assumes one token per number
    # CODI's distillation position: the token just before the number's first digit, in teacher and student rows
    tokens = latent_tokens(tok)
    codi = CODI(r1, tokens, n_latents=2)
    batch = codi.collate([ex])
    for ids_key, pos_key in (("teacher", "kd_teacher"), ("suffix", "kd_student")):
        row = batch[ids_key][0][0].tolist()
        p = int(batch[pos_key][0])
        assert tok.decode([row[p + 1]]) == "7" and tok.decode(row[p + 1:p + 3]) == "72"
    teacher = list(ex.prompt) + teacher_chain(ex) + list(ex.answer)
    assert kd_positions([ex], [teacher]) == [len(teacher) - 3]


def test_special_tokens_are_added_and_the_chat_roles_stay_special(r1_twin):
    from thinklens import HookedModel

    plain = HookedModel.load(str(r1_twin))
    with pytest.raises(ThinklensError, match="add_latent_tokens"):
        latent_tokens(plain.tokenizer)
    model = add_latent_tokens(plain)
    tokens = latent_tokens(model.tokenizer)
    assert model.embedding_weight.shape[0] >= len(model.tokenizer) > tokens.bot
    ids = model.tokenizer("<|im_start|>user\nhi<|im_end|>")["input_ids"]
    assert model.tokenizer.decode(ids, skip_special_tokens=True) == "user\nhi"


@pytest.mark.parametrize("method", ["codi", "coconut", "latent-sft"])
def test_trainers_run_end_to_end(r1_twin, gsm8k_aug, tmp_path, no_zoo_paths, method):
    common = dict(model=str(r1_twin), data=str(gsm8k_aug), eval_data=str(gsm8k_aug), n_eval=2, add_tokens=True,
                  batch_size=2, publish=str(tmp_path / "m"), runs=tmp_path, run_id="r", progress=False)
    steps = {"codi": dict(train_steps=2, n_latents=2), "coconut": dict(max_stage=1, stage_steps=1, final_stage_steps=1),
             "latent-sft": dict(encoder_steps=1, decoder_steps=1, joint_steps=1, stage2_steps=1, max_latent_steps=3)}
    metrics = run_job(method, **common, **steps[method])
    assert len(metrics["history"]) == (4 if method == "latent-sft" else 2)
    assert set(metrics["eval"]["accuracy"]) == {"all"}
    meta = json.loads((tmp_path / "m" / "latent.json").read_text())
    assert meta["prompt_format"] == "chat" and meta["config"]["data"] == str(gsm8k_aug)
    lm = load_latent_model(str(tmp_path / "m"))
    records = lm.infer_problems(load_problems(str(gsm8k_aug), limit=2))
    assert len(records) == 2 and all(isinstance(r["correct"], bool) and r["latent_steps"] >= 1 for r in records)


def test_latent_eval_and_latent_seek_end_to_end(r1_twin, gsm8k_aug, tmp_path, no_zoo_paths):
    run_job("codi", model=str(r1_twin), data=str(gsm8k_aug), add_tokens=True, train_steps=1, batch_size=2, n_latents=2,
            n_eval=0, publish=str(tmp_path / "codi-model"), runs=tmp_path, run_id="codi", progress=False)
    table = run_job("latent-eval", model=str(r1_twin), models=(str(tmp_path / "codi-model"),), data=str(gsm8k_aug), n_eval=3,
                    max_new_tokens=6, seek_n=1, seek_reward="psrm", decode_examples=2, runs=tmp_path, run_id="t",
                    progress=False)
    rows = table["rows"]
    assert [r["method"] for r in rows] == ["cot", "codi", "cot", "latentseek", "best_of_n", "best_of_n"]
    assert rows[4]["label"] == "CoT, oracle best-of-11 sampling (T=0.5)"  # 1 + max_iters chains, on the same problems
    assert rows[0]["label"] == "tiny-r1-twin (chat)" and rows[0]["problems"] == "gsm8k_aug.jsonl"
    assert rows[1]["latent_steps"] == 2 and rows[1]["n"] == 3
    decoding = json.loads((tmp_path / "latent-eval" / "t" / "results" / "decoding.json").read_text())
    assert decoding[0]["question"].startswith("Natalia") and decoding[0]["answer"] == "72"
    seek = run_job("latent-seek", model=str(r1_twin), data=str(gsm8k_aug), n_eval=2, reward="psrm", max_iters=1,
                   max_new_tokens=6, rho=0.5, threshold=1.0, runs=tmp_path, run_id="s", progress=False)
    assert seek["n"] == 2 and len(seek["accuracy_by_budget"]) == 2
    doc = json.loads((tmp_path / "latent-seek" / "s" / "results" / "seek.json").read_text())
    assert doc["setting"] == {"reward": "psrm", "prompt_format": "chat", "max_new_tokens": 6}
    assert doc["problems"][0]["answer"] == "72"


def test_latent_seek_defaults_to_the_self_reward_for_a_chat_model(r1_twin, gsm8k_aug, tmp_path, no_zoo_paths):
    seek = run_job("latent-seek", model=str(r1_twin), data=str(gsm8k_aug), n_eval=1, max_iters=1, max_new_tokens=4,
                   verifier_max_new_tokens=3, rho=0.5, runs=tmp_path, run_id="self", progress=False)
    doc = json.loads((tmp_path / "latent-seek" / "self" / "results" / "seek.json").read_text())
    assert doc["setting"]["reward"] == "self" and seek["n"] == 1
    # an untrained model never writes a verdict: every verifier disapproves, the reward is -1
    assert doc["problems"][0]["original_reward"] == -1.0


class _Trace:
    def __init__(self, text):
        self.text = text


class _JudgeModel:
    """The model's tokenizer and context, and canned verdicts: the prompts it was asked are kept."""

    def __init__(self, tokenizer, verdicts, max_context=None):
        self.tokenizer, self.verdicts, self.max_context, self.asked = tokenizer, verdicts, max_context, []

    def generate(self, prompts, max_new_tokens):
        self.asked.append((list(prompts), max_new_tokens))
        return [_Trace(f"Checking.\n{VERDICT_MARKER} {'**True**' if ok else 'False'}") for ok in self.verdicts]


def test_self_reward_asks_four_weighted_verifiers_in_the_chat_template(r1):
    fmt = format_for(r1)
    judge = _JudgeModel(r1.tokenizer, [True, False, True, False])
    reward = SelfReward(judge, fmt, max_new_tokens=7).for_question("Tom has 7 apples. How many?")
    assert reward("So Tom has 7 apples.\n</think>\n\nThe answer is \\boxed{7}.", "8") == pytest.approx(-2 / 6)
    (prompts, budget), = judge.asked
    assert budget == 7 and len(prompts) == len(VERIFIER_WEIGHTS) == 4
    user = verifier_prompt("calculation_check", "Tom has 7 apples. How many?", "So Tom has 7 apples.\n</think>\n\n"
                           "The answer is \\boxed{7}.")
    want = r1.tokenizer.apply_chat_template([{"role": "user", "content": user}], add_generation_prompt=True, tokenize=False)
    assert prompts[0] == want and R1_INSTRUCTION not in prompts[0]
    assert SelfReward(_JudgeModel(r1.tokenizer, [True] * 4), fmt)("x") == 0.0


def test_self_reward_refuses_a_model_whose_context_is_too_short(r1):
    short = _JudgeModel(r1.tokenizer, [True] * 4, max_context=512)
    with pytest.raises(ThinklensError, match="reward='psrm'"):
        SelfReward(short, format_for(r1)).for_question("q")("solution")


def test_a_generic_example_batch_trains_codi_on_gpu_shapes(r1, gsm8k_aug):
    # batch invariance on the BPE model: rows of different prompt lengths agree with themselves alone
    builder = ExampleBuilder(r1.tokenizer, format_for(r1))
    examples = builder.build_all(list(load_problems(str(gsm8k_aug)))[:4])
    assert len({len(ex.prompt) for ex in examples}) > 1
    codi = CODI(r1, latent_tokens(r1.tokenizer), n_latents=2).eval()
    together = codi.student_outputs(examples)
    alone = codi.student_outputs(examples[2:3])
    assert torch.allclose(together[2, : alone.shape[1]], alone[0], atol=1e-4)


def test_the_papers_settings_are_flags(r1_twin, gsm8k_aug, tmp_path, no_zoo_paths, capsys):
    """The README's real-model commands, on the twin: CODI's reference setting (plain prompts, LoRA r=128 alpha=32
    scaled down here, distillation weight 20, projection width, LayerNorm gain 1) and LatentSeek's (chat, self-reward,
    rho 0.1, lr 0.03)."""
    from thinklens.cli import main

    common = ["--runs", str(tmp_path), "--no-progress"]
    argv = ["run", "codi", "--model", str(r1_twin), "--data", str(gsm8k_aug), "--prompt-format", "plain", "--add-tokens",
            "--lora-r", "4", "--lora-alpha", "32", "--w-kd", "20", "--prj-dim", "64", "--no-prj-match-scale", "--n-latents",
            "6", "--lr", "8e-5", "--weight-decay", "0.1", "--warmup-frac", "0.03", "--grad-clip", "2", "--batch-size", "2",
            "--train-steps", "1", "--eval-data", str(gsm8k_aug), "--n-eval", "1", "--publish", str(tmp_path / "codi-model"),
            "--run-id", "codi", *common]
    assert main(argv) == 0
    meta = json.loads((tmp_path / "codi-model" / "latent.json").read_text())
    assert meta["prompt_format"] == "plain" and meta["config"]["w_kd"] == 20 and meta["config"]["lora_r"] == 4
    argv = ["run", "latent-seek", "--model", str(r1_twin), "--data", str(gsm8k_aug), "--n-eval", "1", "--prompt-format",
            "chat", "--reward", "self", "--rho", "0.1", "--lr", "0.03", "--max-new-tokens", "4",
            "--verifier-max-new-tokens", "2", "--run-id", "seek", *common]
    assert main(argv) == 0
    assert "CoT 0.000 -> LatentSeek 0.000 on 1 problems" in capsys.readouterr().out


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_codi_in_plain_format_on_other_families_with_a_bpe_tokenizer(r1_twin, gsm8k_aug, tmp_path, no_zoo_paths, family):
    """CODI's reference setting (GPT-2 / Llama, the bare question, no chat template) with a BPE tokenizer: trains,
    saves, reloads, and a batch of different prompt lengths agrees with each row alone (GPT-2's learned positions)."""
    from transformers import AutoTokenizer

    from thinklens import HookedModel
    from tools.testing import build_tiny_model

    path = build_tiny_model(family, tmp_path / family, n_ctx=512, tokenizer=AutoTokenizer.from_pretrained(str(r1_twin)))
    run_job("codi", model=str(path), data=str(gsm8k_aug), prompt_format="plain", add_tokens=True, train_steps=1, batch_size=2,
            n_latents=3, n_eval=0, publish=str(tmp_path / "m"), runs=tmp_path, run_id=family, progress=False)
    lm = load_latent_model(str(tmp_path / "m"))
    assert lm.builder.format.name == "plain"
    problems = list(load_problems(str(gsm8k_aug)))[:4]
    examples = lm.builder.build_all(problems)
    assert list(examples[0].prompt) == lm.model.tokenizer(problems[0].question)["input_ids"]
    together = lm.module.student_outputs(examples)
    alone = lm.module.student_outputs(examples[1:2])
    assert torch.allclose(together[1, : alone.shape[1]], alone[0], atol=1e-4)
    assert [r["latent_steps"] for r in lm.infer(examples)] == [3] * 4
    assert isinstance(HookedModel.load(str(tmp_path / "m")).tokenizer.chat_template, str)  # the tokenizer is saved whole
