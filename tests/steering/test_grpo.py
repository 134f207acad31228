"""GRPO pieces: verifiable reward, group-relative advantages, completion masks; a zoo smoke run is `slow`."""

from __future__ import annotations

import pytest
import torch

from thinklens import ThinklensError
from thinklens.zoo.grpo import _batch, _token_logprobs, group_advantages, rewards
from thinklens.zoo.grpo_config import GRPOConfig


def test_reward_uses_the_shared_parser():
    assert rewards(["<< 2 + 3 = 5 >> #### 5", "#### 5.5", "The answer is: 5", "5"], [5] * 4).tolist() == [1.0, 0.0, 1.0, 0.0]


def test_advantages_are_group_relative():
    r = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    adv = group_advantages(r, 4)
    assert torch.allclose(adv[:4].mean(), torch.tensor(0.0), atol=1e-6) and adv[0] > 0 > adv[1]
    assert torch.equal(adv[4:], torch.zeros(4))  # a group with one reward carries no signal


def test_batch_masks_only_the_completion(tiny_llama):
    b = _batch([[3, 4, 5], [6]], [[7, 8], [9, 10, 11]], pad=0)
    assert b["input_ids"].tolist() == [[3, 4, 5, 7, 8], [6, 9, 10, 11, 0]]
    assert b["completion"].tolist() == [[False, False, False, True, True], [False, True, True, True, False]]
    lp = _token_logprobs(tiny_llama.hf, b)
    ref = torch.log_softmax(tiny_llama.hf(torch.tensor([[3, 4, 5, 7, 8]])).logits[0, 2], -1)[7]
    assert torch.allclose(lp[0, 2], ref, atol=1e-5)  # position 2 predicts the first completion token


def test_config_errors():
    with pytest.raises(ThinklensError, match="group_size"):
        GRPOConfig(group_size=1)
    with pytest.raises(ThinklensError):
        GRPOConfig(lr=float("nan"))


@pytest.mark.slow
def test_grpo_smoke_on_zoo(tmp_path):
    from thinklens.zoo.registry import zoo_path

    if zoo_path("tiny-cot") is None:
        pytest.skip("tiny-cot not trained")
    from thinklens.runs.jobs import run_job

    meta = run_job("grpo", train_steps=2, prompts_per_step=2, group_size=4, n_eval=0, publish=str(tmp_path / "g"),
                   out=tmp_path / "run", progress=False)
    assert meta["steps"] == 2 and (tmp_path / "g" / "model.safetensors").stat().st_size < 5 * 2**20
    assert meta["published_to"] == str(tmp_path / "g") and meta["init"] == "tiny-cot"
