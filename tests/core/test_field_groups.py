"""The field groups job configs share (step range, optimiser, sampling, reading, tallies) are checked once, in
the group, and every job config that has the fields refuses the same bad values."""

from __future__ import annotations

import dataclasses

import pytest

from thinklens.data.answers import Tally
from thinklens.data.problemsets import SamplingOptions
from thinklens.engine.training import OptimOptions
from thinklens.errors import ThinklensError
from thinklens.runs.jobs import all_jobs
from thinklens.tasks import MAX_STEPS, StepRange


def _configs_with(*names: str) -> list:
    found = []
    for job in all_jobs():
        fields = {f.name for f in dataclasses.fields(job.config)}
        if set(names) <= fields:
            found.append(pytest.param(job.config, id=job.name))
    return found


def _minimal(config: type) -> dict:
    """Keyword arguments a config needs besides its defaults (eval refuses an empty --data)."""
    return {"data": "synthetic:1-2"} if config.__name__ == "EvalJobConfig" else {}


STEP_CONFIGS = _configs_with("min_steps", "max_steps")


def test_every_step_range_config_is_a_step_range():
    assert len(STEP_CONFIGS) >= 8  # probe, lynx, steer, hybrid, mi-peaks, grpo and the latent trainers, seek, eval
    for p in STEP_CONFIGS:
        assert issubclass(p.values[0], StepRange)


@pytest.mark.parametrize("config", STEP_CONFIGS)
@pytest.mark.parametrize("steps", [(0, 2), (5, 4), (1, MAX_STEPS + 1)])
def test_every_step_range_config_refuses_a_bad_range(config, steps):
    with pytest.raises(ThinklensError, match="steps range"):
        config(**_minimal(config), min_steps=steps[0], max_steps=steps[1])
    config(**_minimal(config), min_steps=2, max_steps=3)


@pytest.mark.parametrize("config", _configs_with("lr", "weight_decay", "grad_clip"))
@pytest.mark.parametrize("bad", [{"lr": 0.0}, {"lr": float("nan")}, {"weight_decay": -0.1}, {"grad_clip": float("inf")}])
def test_every_optimiser_config_refuses_bad_values(config, bad):
    assert issubclass(config, OptimOptions)
    with pytest.raises(ThinklensError, match=next(iter(bad))):
        config(**bad)


def test_grpo_keeps_its_optimiser():
    """The committed tiny-grpo was trained without weight decay and with a clip at 1 (then hard-coded)."""
    from thinklens.zoo.grpo_config import GRPOConfig

    cfg = GRPOConfig()
    assert (cfg.lr, cfg.weight_decay, cfg.grad_clip) == (1e-4, 0.0, 1.0)


@pytest.mark.parametrize("config", _configs_with("temperature", "top_p"))
def test_every_sampling_config_refuses_bad_values_and_decodes_greedy_at_zero(config):
    assert issubclass(config, SamplingOptions)
    for bad in ({"temperature": -0.5}, {"temperature": float("inf")}, {"top_p": 0.0}, {"top_p": 1.5}):
        with pytest.raises(ThinklensError, match="temperature / top_p"):
            config(**_minimal(config), **bad)
    greedy = config(**_minimal(config), temperature=0.0)
    assert greedy.decoding() == {"do_sample": False, "temperature": 1.0, "top_p": greedy.top_p}
    assert config(**_minimal(config), temperature=0.7, top_p=0.9).decoding() == {"do_sample": True, "temperature": 0.7,
                                                                                  "top_p": 0.9}


@pytest.mark.parametrize("config", _configs_with("sites", "batch_size", "positions") + _configs_with("sites", "top_k"))
def test_reading_configs_refuse_no_sites_and_bad_batches(config):
    for bad in ({"sites": ()}, {"batch_size": 0}, {"batch_size": True}):
        with pytest.raises(ThinklensError, match=next(iter(bad))):
            config(**bad)


def test_a_tally_derives_its_accuracy():
    from thinklens.analyses.mi.suppression import SuppressionRow
    from thinklens.analyses.mi.ttts import TTTSRow

    assert Tally(n_correct=0, n=0).accuracy == 0.0
    row = SuppressionRow("thinking", 4, n_correct=3, n=8)
    assert row.accuracy == 0.375 and dataclasses.asdict(row)["accuracy"] == 0.375
    assert TTTSRow("plain", 16, 2.5, n_correct=1, n=4).accuracy == 0.25
    with pytest.raises(TypeError):
        SuppressionRow("none", 0, n_correct=1, n=2, accuracy=0.9)  # derived, never given
