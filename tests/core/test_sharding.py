"""Jobs across processes: under a 2-process launch (gloo on CPU, the environment accelerate launch and torchrun
set) mi-peaks and lynx split their batches and write one run folder equal to a 1-process run; each process
records its items in its own progress shard and a relaunch resumes per shard; device_map="auto" models run
through run_job."""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest

from thinklens.runs.folders import RunFolder, to_jsonable
from thinklens.runs.jobs import Job, Shards, run_job
from thinklens.zoo.registry import zoo_path

MI = dict(n_problems=8, batch_size=2, max_new_tokens=24, k=3, ci="wilson", sites=("resid_post.-1", "resid_post.0"))
LYNX = dict(n_train=16, n_calibration=16, n_test=16, batch_size=8, max_steps=2, hidden_layer_sizes=(16,),
            deltas=(0.2, 0.3), skip_vacuous=True)


def _launch(worker, *args, world: int = 2) -> None:
    """Run ``worker(rank, world, port, *args)`` in ``world`` fresh processes, as a launcher would."""
    import torch.multiprocessing as mp

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    mp.start_processes(worker, args=(world, port, *args), nprocs=world, start_method="spawn")


def _join(rank: int, world: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world), RANK=str(rank),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world), OMP_NUM_THREADS="1")


def _jobs_worker(rank, world, port, model, root):
    _join(rank, world, port)
    mi = run_job("mi-peaks", model=model, runs=root, run_id="two", threads=1, progress=False, **MI)
    lynx = run_job("lynx", model=model, runs=root, run_id="two", threads=1, progress=False, **LYNX)
    Path(root, f"result-{rank}.json").write_text(json.dumps(to_jsonable({"mi": mi.value, "lynx": lynx.per_delta})))


def _files(run: Path, pattern: str) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.glob(pattern))}


@pytest.mark.slow  # two fresh processes import torch and transformers: 30-80 s on 2 CPU cores
@pytest.mark.skipif(zoo_path("tiny-think") is None, reason="tiny-think is not trained")
def test_two_processes_write_the_run_of_one(tmp_path):
    one = tmp_path / "one"
    mi = run_job("mi-peaks", model="tiny-think", runs=one, run_id="one", threads=1, progress=False, **MI)
    lynx = run_job("lynx", model="tiny-think", runs=one, run_id="one", threads=1, progress=False, **LYNX)
    two = tmp_path / "two"
    two.mkdir()
    _launch(_jobs_worker, "tiny-think", str(two))
    for rank in (0, 1):  # every process returns the main process's result
        got = json.loads((two / f"result-{rank}.json").read_text())
        assert got == json.loads(json.dumps(to_jsonable({"mi": mi.value, "lynx": lynx.per_delta})))
    a, b = one / "mi-peaks" / "one", two / "mi-peaks" / "two"
    assert _files(a, "trajectories/*/*.json") == _files(b, "trajectories/*/*.json") != {}
    assert _files(a, "results/*.json") == _files(b, "results/*.json")  # the run index (mi_models) included
    a, b = one / "lynx" / "one", two / "lynx" / "two"
    assert _files(a, "results/*.json") == _files(b, "results/*.json")
    assert _files(a, "cache/*") == _files(b, "cache/*") != {}
    for rel in ("probe/probe.safetensors", "arrays/test_events.safetensors"):
        assert (a / rel).read_bytes() == (b / rel).read_bytes()
    # each process recorded its own batches in its own progress shard; one of them is the main process's file
    shard = RunFolder(b, shard=1)
    own = [json.loads(line)["item"] for line in (b / "progress.rank-1.jsonl").read_text().splitlines()]
    assert own and all(item.split(".")[-1] in ("0001",) for item in own)  # rank 1: the second batch of each split
    assert set(shard.finished()) == set(RunFolder(a).finished())


# ---------------------------------------------------------------- resume per shard, on a job without models


@dataclass(frozen=True)
class SquaresConfig:
    """Squares, one stage item each."""

    model: str = ""
    """Unused."""
    seed: int = 0
    """Added to every square."""
    n: int = 6
    """Items."""


def squares(config: SquaresConfig, ctx):
    from thinklens.runs.stages import StageCache

    cache = StageCache(ctx.run)
    crash = os.environ.get("SQUARES_CRASH_AT")
    computed = []
    for k in ctx.shards.shard(range(config.n)):
        def compute(k=k):
            if crash is not None and k == int(crash):
                raise RuntimeError("killed")
            computed.append(k)
            return {"v": k * k + config.seed}
        cache.json(f"item.{k:03d}", compute)
    Path(ctx.run.path, f"computed-{ctx.shards.rank}-{os.environ.get('SQUARES_LAUNCH', '0')}.json").write_text(json.dumps(computed))
    ctx.shards.merge()
    cache.refresh()
    values = [cache.json(f"item.{k:03d}", lambda: {"v": None})["v"] for k in range(config.n)]
    return ctx.shards.share({"values": values} if ctx.shards.is_main else None)


SQUARES = Job("squares", SquaresConfig, squares, help="squares", models=())


def _squares_worker(rank, world, port, root, launch, crash_at):
    _join(rank, world, port)
    os.environ["SQUARES_LAUNCH"] = str(launch)
    if crash_at is not None:
        os.environ["SQUARES_CRASH_AT"] = str(crash_at)
    try:
        out = run_job(SQUARES, n=6, seed=1, runs=root, run_id="r", progress=False).value
    except RuntimeError as e:  # the launcher reports whichever process ends first: the killed one or a peer
        if "killed" in str(e):
            Path(root, f"killed-{rank}-{launch}").touch()
        raise
    Path(root, f"out-{rank}-{launch}.json").write_text(json.dumps(out))


def test_a_relaunch_resumes_each_shard(tmp_path):
    from torch.multiprocessing.spawn import ProcessException

    with pytest.raises(ProcessException):  # the peer of a killed process may be the one reported (connection reset)
        _launch(_squares_worker, str(tmp_path), 1, 5)  # rank 1 (items 1, 3, 5) dies at item 5
    assert [p.name for p in tmp_path.glob("killed-*")] == ["killed-1-1"]
    run = tmp_path / "squares" / "r"
    before = set(RunFolder(run).finished())
    assert {"item.001", "item.003"} <= before and "item.005" not in before
    _launch(_squares_worker, str(tmp_path), 2, None)
    again = {r: json.loads((run / f"computed-{r}-2.json").read_text()) for r in (0, 1)}
    assert again[1] == [5] and set(again[0]) == {0, 2, 4} - {int(i[-3:]) for i in before}  # only what was missing
    want = {"values": [k * k + 1 for k in range(6)]}
    assert [json.loads((tmp_path / f"out-{r}-2.json").read_text()) for r in (0, 1)] == [want, want]
    assert run_job(SQUARES, n=6, seed=1, runs=tmp_path, run_id="r", progress=False) == want  # one process reads all shards


def test_one_process_shards_are_everything_and_progress_shards_are_read_together(tmp_path):
    assert Shards().shard(range(3)) == [0, 1, 2] and Shards(2, 3).shard(range(7)) == [2, 5]
    main = RunFolder.create("demo", {"n": 1}, root=tmp_path, run_id="r")
    other = RunFolder(main.path, shard=2)
    main.mark_done("a")
    other.mark_done("b", {"x": 1})
    assert (main.path / "progress.rank-2.jsonl").is_file()
    assert RunFolder.open(main.path).finished() == {"a": None, "b": {"x": 1}}
    assert list(main.pending(["a", "b", "c"])) == ["c"]


def test_device_map_auto_models_run_in_jobs(tiny_dirs, tmp_path):
    from thinklens import HookedModel

    small = dict(n_problems=2, max_new_tokens=4, k=2, ci="wilson", progress=False, threads=1)
    cpu = run_job("mi-peaks", model=str(tiny_dirs["llama"]), runs=tmp_path, run_id="cpu", **small)
    auto = run_job("mi-peaks", model=str(tiny_dirs["llama"]), device="auto", runs=tmp_path, run_id="auto", **small)
    given = run_job("mi-peaks", model=HookedModel.load(str(tiny_dirs["llama"]), device_map="auto"), runs=tmp_path,
                    run_id="given", **small)
    assert cpu.value == auto.value == given.value  # the run folders differ
    meta = json.loads((tmp_path / "mi-peaks" / "auto" / "meta.json").read_text())
    assert meta["options"]["device"] == "auto" and meta["status"] == "done"
