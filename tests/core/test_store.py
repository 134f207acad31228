import json
import subprocess
import sys

import pytest
import torch

from thinklens import Site, ThinklensError
from thinklens.engine.activation_store import ActivationStore

S0, S1 = Site("resid_post", 0), Site("final_norm")


def _write(path, wid, n, seed):
    g = torch.Generator().manual_seed(seed)
    store = ActivationStore(path)
    with store.writer(wid, shard_mb=0.01) as w:
        for i in range(n):
            w.add({S0: torch.randn(5, 8, generator=g), S1: torch.full((5, 8), float(seed))},
                  meta=[{"writer": wid, "i": i, "r": r} for r in range(5)])


def test_roundtrip_and_stream(tmp_path):
    g = torch.Generator().manual_seed(0)
    data = torch.randn(103, 8, generator=g)
    store = ActivationStore(tmp_path)
    with store.writer("w", shard_mb=0.001) as w:  # many small shards
        for i in range(0, 103, 10):
            w.add({S0: data[i:i + 10], S1: -data[i:i + 10]}, meta=[{"row": j} for j in range(i, min(i + 10, 103))])
    assert len(store) == 103 and len(store.shards()) > 3
    batches = list(store.iter_batches(16, with_meta=True))
    assert [b[S0].shape[0] for b in batches] == [16] * 6 + [7]
    assert torch.equal(torch.cat([b[S0] for b in batches]), data)
    assert [m["row"] for b in batches for m in b["meta"]] == list(range(103))
    assert json.loads((tmp_path / "index.json").read_text() if store.consolidate() else "{}")["rows"] == 103


WRITER = """
import sys, torch
from thinklens.engine.sites import Site
from thinklens.engine.activation_store import ActivationStore
path, wid, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
g = torch.Generator().manual_seed(seed)
with ActivationStore(path).writer(wid, shard_mb=0.01) as w:
    for i in range(n):
        w.add({Site("resid_post", 0): torch.randn(5, 8, generator=g), Site("final_norm"): torch.full((5, 8), float(seed))},
              meta=[{"writer": wid, "i": i, "r": r} for r in range(5)])
"""


def test_multiprocess_append(tmp_path):
    """Three OS processes append to one store at the same time, without locks."""
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), f"p{k}", "7", str(k)], stderr=subprocess.PIPE, text=True)
             for k in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    store = ActivationStore(tmp_path)
    assert len(store) == 3 * 7 * 5
    rows = [m for b in store.iter_batches(32, with_meta=True) for m in b["meta"]]
    assert sorted({(m["writer"], m["i"]) for m in rows}) == sorted((f"p{k}", i) for k in range(3) for i in range(7))


def test_torn_shard_ignored(tmp_path):
    _write(tmp_path, "a", 2, 0)
    (tmp_path / "shard-zz-00000.safetensors").write_bytes(b"partial")  # no sidecar: a killed writer
    assert len(ActivationStore(tmp_path)) == 10


def test_errors(tmp_path):
    store = ActivationStore(tmp_path)
    with pytest.raises(ThinklensError, match="shard"):
        next(store.iter_batches(4))
    with store.writer() as w:
        with pytest.raises(ThinklensError, match="rows"):
            w.add({S0: torch.ones(3, 8), S1: torch.ones(2, 8)})
        w.add({S0: torch.ones(3, 8)})
    with pytest.raises(ThinklensError, match="sites stored"):
        next(store.iter_batches(4, sites=["resid_post.5"]))


def test_traces_to_store(tiny_models, tmp_path):
    m = tiny_models["llama"]
    traces = m.generate(["w1 w2", "w3"], max_new_tokens=4, capture=["resid_post.1"])
    store = ActivationStore(tmp_path)
    with store.writer() as w:
        w.add_traces(traces)
    got = next(store.iter_batches(100, with_meta=True))
    assert torch.equal(got[Site("resid_post", 1)], torch.cat([t.hidden[Site("resid_post", 1)] for t in traces]))


def test_peak_memory_bounded(tmp_path):
    """Writing 400 MB keeps the process's peak RSS growth far below the data size (bench/store.py does 2 GB)."""
    code = f"""
import resource, torch
from thinklens.engine.activation_store import ActivationStore
from thinklens.engine.sites import Site
torch.set_num_threads(1)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
store = ActivationStore({str(tmp_path)!r})
chunk = torch.randn(4096, 1024)  # 16 MB
with store.writer(shard_mb=64) as w:
    for _ in range(25):
        w.add({{Site("resid_post", 0): chunk}})
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    grown_mb = float(out.stdout.strip().splitlines()[-1])
    assert len(ActivationStore(tmp_path)) == 25 * 4096
    assert grown_mb < 250, grown_mb
