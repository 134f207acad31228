"""Two CPU processes (gloo, Accelerate) running the `codi` job follow the 1-process loss curve at the same global
batch, in one run folder."""

import json
import os
import socket

import pytest


def _worker(rank, world, port, model_dir, root):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world), RANK=str(rank),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
    from thinklens.runs.jobs import run_job

    m = run_job("codi", model=model_dir, train_steps=4, batch_size=8, n_eval=0, n_latents=2, runs=root, run_id="r",
                threads=1, progress=False)
    if rank == 0:
        with open(os.path.join(root, "curve.json"), "w") as f:
            json.dump({"loss": [h["loss"] for h in m["history"]], "processes": m["processes"]}, f)


@pytest.mark.slow
def test_two_processes_match_one(zoo_like_dir, tmp_path):
    import torch.multiprocessing as mp

    from thinklens.runs.jobs import run_job

    one = run_job("codi", model=str(zoo_like_dir), train_steps=4, batch_size=8, n_eval=0, n_latents=2, runs=tmp_path / "one",
                  run_id="r", threads=1, progress=False)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    root = tmp_path / "two"
    root.mkdir()
    mp.start_processes(_worker, args=(2, port, str(zoo_like_dir), str(root)), nprocs=2, start_method="spawn")
    two = json.loads((root / "curve.json").read_text())
    assert two["processes"] == 2
    assert two["loss"] == pytest.approx([h["loss"] for h in one["history"]], abs=1e-4)
    assert one["history"][0]["loss"] > one["history"][-1]["loss"]  # it trains at all
    assert sorted(p.name for p in (root / "codi").iterdir()) == ["r"]  # every process in the same folder
    assert json.loads((root / "codi" / "r" / "meta.json").read_text())["status"] == "done"
