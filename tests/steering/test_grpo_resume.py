"""GRPO checkpoints: a run killed mid-way and resumed ends with the weights and reward curve of a straight run."""

from __future__ import annotations

import json

import pytest

from tools.testing import assert_same_weights, dies_after


def test_killed_and_resumed_grpo_equals_a_straight_run(tmp_path, monkeypatch):
    from thinklens.zoo import grpo
    from thinklens.zoo.grpo_config import GRPOConfig
    from thinklens.zoo.registry import zoo_path

    if zoo_path("tiny-cot") is None:
        pytest.skip("tiny-cot not trained")
    cfg = GRPOConfig(train_steps=2, prompts_per_step=2, group_size=2, n_eval=0)
    straight = grpo.train_grpo(cfg, out_dir=tmp_path / "a", progress=False, ckpt_dir=tmp_path / "ca", ckpt_every_s=0.0)

    real = grpo.group_advantages
    monkeypatch.setattr(grpo, "group_advantages", dies_after(real, 1))
    with pytest.raises(KeyboardInterrupt):
        grpo.train_grpo(cfg, out_dir=tmp_path / "b", progress=False, ckpt_dir=tmp_path / "cb", ckpt_every_s=0.0)
    assert not (tmp_path / "b").exists()
    assert json.loads((tmp_path / "cb" / "state.json").read_text())["step"] == 1  # saved before the kill
    monkeypatch.setattr(grpo, "group_advantages", real)
    resumed = grpo.train_grpo(cfg, out_dir=tmp_path / "b", progress=False, ckpt_dir=tmp_path / "cb", ckpt_every_s=0.0)
    assert resumed["reward_curve"] == straight["reward_curve"] and resumed["steps"] == 2
    assert not (tmp_path / "cb").exists() and not (tmp_path / "ca").exists()  # removed once published
    assert_same_weights(tmp_path / "a", tmp_path / "b")
