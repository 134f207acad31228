"""LatentSeek: R = 0 changes nothing, rho = 0 returns the original chain, greedy = the core's greedy, logs."""

import pytest
import torch

from latent.config import LatentSeekConfig
from latent.latentseek import SeekIteration, SeekResult, accuracy_by_budget, greedy_with_states, latent_seek, load_reward, psrm
from thinklens.errors import ThinklensError
from thinklens.tasks import render_prompt


@pytest.fixture()
def prompt(model, problems):
    return model.tokenizer(render_prompt(problems[0], "cot"))["input_ids"]


def test_original_chain_is_the_core_greedy_chain(model, problems, prompt):
    ids, states = greedy_with_states(model, prompt, max_new_tokens=10, stop_id=model.tokenizer.eos_token_id)
    tr = model.generate([render_prompt(problems[0], "cot")], max_new_tokens=10, capture=["final_norm"])[0]
    n = len(ids)
    assert ids == tr.token_ids[:n]
    assert torch.allclose(states, tr.hidden[model.resolve_site("final_norm")][:n], atol=1e-5)


def test_zero_reward_changes_nothing(model, problems, prompt):
    cfg = LatentSeekConfig(rho=0.5, max_iters=3, threshold=1.0, max_new_tokens=10)  # never stops early
    res = latent_seek(model, prompt, problems[0].answer, cfg, reward=lambda text, ans: 0.0)
    assert len(res.iterations) == 3 and res.n_optimised == 5
    assert all(it.flipped == 0 and it.delta_norm == 0.0 for it in res.iterations)
    assert res.final_text == res.original_text


def test_rho_zero_returns_the_original_chain(model, problems, prompt):
    res = latent_seek(model, prompt, problems[0].answer, LatentSeekConfig(rho=0.0, max_new_tokens=10),
                      reward=lambda text, ans: -1.0)
    assert res.n_optimised == 0 and res.iterations == [] and res.final_text == res.original_text


@pytest.mark.parametrize("variant", ["argmax", "sample"])
def test_negative_reward_moves_the_latents_and_logs(model, problems, prompt, variant):
    cfg = LatentSeekConfig(rho=0.5, max_iters=3, lr=0.5, max_new_tokens=10, variant=variant)
    res = latent_seek(model, prompt, problems[0].answer, cfg, reward=lambda text, ans: -1.0,
                      generator=torch.Generator().manual_seed(0))
    assert len(res.iterations) == 3
    assert res.iterations[-1].delta_norm > 0 and any(it.flipped > 0 for it in res.iterations)


def test_psrm_budget_accuracy_and_reward_loading():
    assert psrm("<< 1 + 1 = 2 >> #### 2", 2) == 0.0 and psrm("#### 3", 2) == -1.0
    assert load_reward("psrm") is psrm and load_reward("latent.latentseek:psrm") is psrm
    with pytest.raises(ThinklensError):
        load_reward("nonsense")
    fixed = SeekResult(2, "#### 1", -1.0, 5, 1, "#### 2", [SeekIteration(1, -1.0, 1, 0.1, False, "#### 3"),
                                                           SeekIteration(2, 0.0, 1, 0.2, True, "#### 2")])
    right = SeekResult(2, "#### 2", 0.0, 5, 1, "#### 2")
    assert accuracy_by_budget([fixed, right], 3) == [0.5, 0.5, 1.0, 1.0]
