"""Every latent method on every model family the core loads (Llama, Qwen2, GPT-2, Gemma), not only the zoo's.

The families differ where latent code breaks: GPT-2 has learned absolute positions and tied embeddings, Gemma
scales its input embeddings by sqrt(d), Qwen2 has attention biases. Oracles: batch 1 == batch 16 (padding and
position ids), the latent model reloaded from its folder == the trained module, LatentSeek with R = 0 == the
core's greedy chain.
"""

import math

import pytest
import torch

from thinklens.latent.codi import CODI
from thinklens.latent.config import CoconutConfig, CODIConfig, LatentSeekConfig, LatentSFTConfig
from thinklens.latent.latent_model import load_latent_model
from thinklens.latent.latentseek import greedy_with_states, latent_seek
from thinklens.latent.segments import example_from_problem, latent_tokens
from thinklens.runs.jobs import run_job
from thinklens.tasks import generate_problems, render_prompt
from tools.testing import FAMILIES, build_tiny_model


@pytest.fixture(scope="module")
def family_dirs(tmp_path_factory):
    from thinklens.zoo.tokenizer import build_zoo_tokenizer

    root = tmp_path_factory.mktemp("families")
    tok = build_zoo_tokenizer()
    return {f: build_tiny_model(f, root / f, d_model=32, n_heads=4, n_ctx=256, tokenizer=tok) for f in FAMILIES}


@pytest.fixture(scope="module")
def problems():
    return generate_problems(16, seed=5, n_steps=3)


def _load(path):
    from thinklens import HookedModel

    return HookedModel.load(str(path))


@pytest.mark.parametrize("family", FAMILIES)
def test_codi_batch_invariance(family_dirs, problems, family):
    model = _load(family_dirs[family])
    examples = [example_from_problem(p, model.tokenizer) for p in problems]
    assert len({len(ex.prompt) for ex in examples}) > 1  # rows really are padded
    codi = CODI(model, latent_tokens(model.tokenizer), n_latents=3).eval()
    together = codi.student_outputs(examples)
    for r in (0, 9, 15):
        alone = codi.student_outputs([examples[r]])
        assert torch.allclose(together[r, : alone.shape[1]], alone[0], atol=1e-4), family


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("method", ["codi", "coconut", "latent-sft"])
def test_train_save_reload_infer(family_dirs, problems, tmp_path, family, method):
    path = str(family_dirs[family])
    cfg = {
        "codi": lambda: CODIConfig(model=path, train_steps=2, batch_size=4, n_eval=1, n_latents=2),
        "coconut": lambda: CoconutConfig(model=path, max_stage=1, stage_steps=1, final_stage_steps=1, batch_size=4,
                                         n_eval=1),
        "latent-sft": lambda: LatentSFTConfig(model=path, encoder_steps=1, decoder_steps=1, joint_steps=1,
                                              stage2_steps=1, batch_size=2, n_eval=1, max_latent_steps=3),
    }[method]()
    metrics = run_job(method, config=cfg, publish=str(tmp_path / "m"), runs=tmp_path, run_id="r", progress=False)
    assert metrics["history"] and all(math.isfinite(h["loss"]) for h in metrics["history"])
    assert {str(k) for k in metrics["eval"]["accuracy"]} == {"3", "4"}
    lm = load_latent_model(str(tmp_path / "m"))
    assert lm.method == method
    examples = [example_from_problem(p, lm.model.tokenizer) for p in problems[:2]]
    first, again = lm.infer(examples), lm.infer(examples)
    assert [r["text"] for r in first] == [r["text"] for r in again]  # deterministic
    assert all(1 <= r["latent_steps"] <= (3 if method == "latent-sft" else 2) for r in first)
    assert all(len(step["tokens"]) == 5 for r in first for step in r["latents"])  # top-5 decoding


@pytest.mark.parametrize("family", FAMILIES)
def test_latentseek_zero_reward_keeps_the_greedy_chain(family_dirs, problems, family):
    model = _load(family_dirs[family])
    prompt = model.tokenizer(render_prompt(problems[0], "cot"))["input_ids"]
    cfg = LatentSeekConfig(rho=0.5, max_iters=2, threshold=1.0, max_new_tokens=8)
    res = latent_seek(model, prompt, problems[0].answer, cfg, reward=lambda text, ans: 0.0)
    assert res.final_text == res.original_text and all(it.flipped == 0 for it in res.iterations)
    ids, _ = greedy_with_states(model, prompt, max_new_tokens=8, stop_id=model.tokenizer.eos_token_id)
    core = model.generate([render_prompt(problems[0], "cot")], max_new_tokens=8)[0]
    assert ids == core.token_ids[: len(ids)] and ids  # LatentSeek's chain is the core's greedy chain
