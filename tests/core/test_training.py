"""The shared training toolkit: schedule, AdamW groups, checkpoint + resume, one run folder for all ranks."""

import json
import os
import socket
import time
from dataclasses import dataclass

import pytest
import torch

from thinklens.engine.training import (
    adamw,
    checkpoint_state,
    load_checkpoint,
    save_checkpoint,
    set_lr,
    warmup_cosine_lr,
)
from thinklens.errors import ThinklensError


def test_schedule_warms_up_then_decays_to_the_floor():
    lrs = [warmup_cosine_lr(s, peak=2.0, warmup_steps=3, decay_steps=5, floor_ratio=0.05) for s in range(10)]
    assert lrs[:3] == [0.5, 1.0, 1.5] and lrs[3] == 2.0
    assert all(a > b for a, b in zip(lrs[3:8], lrs[4:9]))  # strictly decreasing during the decay
    assert lrs[8] == lrs[9] == pytest.approx(0.1)  # held at peak * floor_ratio
    # decay_steps < 1 (a phase as short as its warmup) does not divide by zero
    assert warmup_cosine_lr(1, peak=1.0, warmup_steps=1, decay_steps=0, floor_ratio=0.1) == 1.0


def test_adamw_decays_matrices_only():
    net = torch.nn.Sequential(torch.nn.Embedding(5, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 3))
    opt = adamw(net.named_parameters(), lr=0.1, weight_decay=0.3, betas=(0.9, 0.98))
    decay, rest = opt.param_groups
    assert [p.shape for p in decay["params"]] == [(5, 4), (3, 4)] and decay["weight_decay"] == 0.3
    assert [p.shape for p in rest["params"]] == [(4,), (4,), (3,)] and rest["weight_decay"] == 0.0
    assert decay["betas"] == (0.9, 0.98)
    set_lr(opt, 0.01)
    assert [g["lr"] for g in opt.param_groups] == [0.01, 0.01]


def _make(seed=0):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    return net, adamw(net.named_parameters(), lr=0.05, weight_decay=0.1)


def _step(net, opt, k):
    g = torch.Generator().manual_seed(k)  # batch k depends on k only: resumable without RNG state
    x = torch.randn(4, 3, generator=g)
    set_lr(opt, warmup_cosine_lr(k, peak=0.05, warmup_steps=2, decay_steps=6, floor_ratio=0.1))
    loss = net(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def test_checkpoint_resume_equals_a_straight_run(tmp_path):
    net, opt = _make()
    straight = [_step(net, opt, k) for k in range(8)]

    net2, opt2 = _make()
    first = [_step(net2, opt2, k) for k in range(3)]
    save_checkpoint(tmp_path / "ckpt", net2, opt2, {"step": 3, "losses": first})
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["model.safetensors", "optimizer.safetensors", "state.json"]
    del net2, opt2
    net3, opt3 = _make(seed=1)  # other initial weights: all of them come from the checkpoint
    state = load_checkpoint(tmp_path / "ckpt", net3, opt3)
    resumed = state["losses"] + [_step(net3, opt3, k) for k in range(state["step"], 8)]
    assert resumed == straight
    assert all(torch.equal(a, b) for a, b in zip(net.state_dict().values(), net3.state_dict().values()))


def test_checkpoint_state_and_missing_checkpoint(tmp_path):
    assert checkpoint_state(tmp_path / "none") is None
    net, _ = _make()
    with pytest.raises(ThinklensError, match="checkpoint"):
        load_checkpoint(tmp_path / "none", net)


# ---------------------------------------------------------------- two processes, one run folder


@dataclass(frozen=True)
class EchoConfig:
    model: str = ""
    """Unused."""
    seed: int = 0
    """Unused."""


def _where(config, ctx):
    return str(ctx.run.path)


def _worker(rank, world, port, runs_env, cwd_root):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world), RANK=str(rank),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world), THINKLENS_RUNS=runs_env)
    cwd = os.path.join(cwd_root, f"rank{rank}")  # each rank elsewhere: a relative root would differ
    os.makedirs(cwd)
    os.chdir(cwd)
    if rank == 1:
        time.sleep(1.1)  # a later clock: a timestamp run id of its own would differ
    from thinklens.runs.jobs import Job, run_job

    path = run_job(Job("echo", EchoConfig, _where, help="where", models=()), progress=False).value
    with open(os.path.join(cwd_root, f"path{rank}.json"), "w") as f:
        json.dump(path, f)


def test_two_ranks_share_one_run_folder_under_thinklens_runs(tmp_path):
    import torch.multiprocessing as mp

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    runs_env = str(tmp_path / "env-runs")
    mp.start_processes(_worker, args=(2, port, runs_env, str(tmp_path)), nprocs=2, start_method="spawn")
    paths = [json.loads((tmp_path / f"path{r}.json").read_text()) for r in range(2)]
    assert paths[0] == paths[1]
    assert os.path.dirname(os.path.dirname(paths[0])) == runs_env
    assert [p.name for p in (tmp_path / "env-runs" / "echo").iterdir()] == [os.path.basename(paths[0])]
