"""LatentSeek: R = 0 changes nothing, rho = 0 returns the original chain, greedy = the core's greedy, logs."""

import pytest
import torch

from thinklens.errors import ThinklensError
from thinklens.latent.config import LatentSeekConfig
from thinklens.latent.latentseek import SeekIteration, SeekResult, accuracy_by_budget, greedy_with_states, latent_seek, load_reward, psrm
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
    assert load_reward("psrm") is psrm and load_reward("thinklens.latent.latentseek:psrm") is psrm
    with pytest.raises(ThinklensError):
        load_reward("nonsense")
    fixed = SeekResult(2, "#### 1", -1.0, 5, 1, "#### 2", [SeekIteration(1, -1.0, 1, 0.1, False, "#### 3"),
                                                           SeekIteration(2, 0.0, 1, 0.2, True, "#### 2")])
    right = SeekResult(2, "#### 2", 0.0, 5, 1, "#### 2")
    assert accuracy_by_budget([fixed, right], 3) == [0.5, 0.5, 1.0, 1.0]


def test_best_of_n_baseline_samples_and_its_greedy_limit(model, problems, prompt):
    from thinklens.latent.best_of_n import oracle_samples, sample_chains

    eos = model.tokenizer.eos_token_id
    ids, _ = greedy_with_states(model, prompt, max_new_tokens=10, stop_id=eos)
    greedy = model.tokenizer.decode(ids, skip_special_tokens=True)
    cold = sample_chains(model, prompt, n=3, temperature=1e-4, max_new_tokens=10, generator=torch.Generator().manual_seed(0))
    assert cold == [greedy] * 3  # a near-zero temperature samples the greedy chain
    cfg = LatentSeekConfig(max_iters=2, baseline_temperatures=(1.0, 1e-4), max_new_tokens=10)
    first = oracle_samples(model, prompt, problems[0].answer, cfg, max_new_tokens=10, seed=5)
    assert first == oracle_samples(model, prompt, problems[0].answer, cfg, max_new_tokens=10, seed=5)  # seeded
    assert {t: len(c) for t, c in first.items()} == {"1.0": 3, "0.0001": 3}  # N = 1 + max_iters
    with pytest.raises(ThinklensError, match="baseline"):
        LatentSeekConfig(baseline_temperatures=(0.0,))


def test_self_confidence_is_the_least_likely_token_of_the_chain(model, problems):
    from thinklens.latent.self_reward import SelfConfidence

    text = render_prompt(problems[0], "cot")
    prompt = model.tokenizer(text)["input_ids"]
    ids, _ = greedy_with_states(model, prompt, max_new_tokens=8, stop_id=model.tokenizer.eos_token_id)
    chain = model.tokenizer.decode(ids, skip_special_tokens=True)
    reward = SelfConfidence(model).for_prompt(text)
    logits = model.forward_with(torch.tensor([prompt + ids]))[0]
    probs = torch.softmax(logits[len(prompt) - 1: -1].float(), -1)  # [chain, vocab]
    greedy_probs = probs.max(-1).values  # greedy tokens are the argmax
    assert reward.token_probabilities(chain) == pytest.approx(greedy_probs.tolist(), abs=1e-5)
    assert reward(chain, "ignored") == pytest.approx(float(greedy_probs.min()) - 1.0, abs=1e-5)
    assert reward("", None) == -1.0
    from thinklens.data.formats import PromptFormat
    from thinklens.latent.seek_runs import bind_reward, make_reward

    by_name = make_reward("confidence", model, PromptFormat("cot"), LatentSeekConfig(reward="confidence"))
    assert bind_reward(by_name, problems[0].question, text).prompt == text  # bound to the problem's prompt
