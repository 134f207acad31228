"""ActivationStore: write 2 GB of activations and measure the writer's peak memory, then stream it back.

Prints name=value lines; last: store_peak_mb= (must stay under 500 while writing 2 GB).
"""

from __future__ import annotations

import resource
import shutil
import tempfile
import time

import torch

from bench._targets import print_target
from thinklens.engine.activation_store import ActivationStore
from thinklens.engine.sites import Site


def rss_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def main(total_gb: float = 2.0) -> None:
    torch.set_num_threads(1)
    d = 1024
    chunk = torch.randn(8192, d)  # 32 MB per add, like one batch of captured tokens
    n_chunks = int(total_gb * 2**30 / (chunk.numel() * 4))
    root = tempfile.mkdtemp(prefix="bench-store-")
    base = rss_peak_mb()
    try:
        store = ActivationStore(root)
        t = time.perf_counter()
        with store.writer(shard_mb=64) as w:
            for k in range(n_chunks):
                w.add({Site("resid_post", 0): chunk + k})
        write_s = time.perf_counter() - t
        written_gb = len(store) * d * 4 / 2**30
        peak_write = rss_peak_mb()
        t = time.perf_counter()
        rows = 0
        for b in store.iter_batches(4096):
            rows += b[Site("resid_post", 0)].shape[0]
        read_s = time.perf_counter() - t
        print(f"store_written_gb={written_gb:.2f}")
        print(f"store_shards={len(store.shards())}")
        print(f"store_write_gb_per_s={written_gb / write_s:.2f}")
        print(f"store_read_gb_per_s={written_gb / read_s:.2f}")
        print(f"store_rows_streamed={rows}")
        print(f"store_baseline_rss_mb={base:.0f}")
        print_target("store_peak_mb")
        print(f"store_peak_mb={peak_write:.0f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
