"""bench/long_traces.py through the device script (``bench/gpu/run.sh --long-traces --tiny``), on the CPU with a tiny
random model: every ``name=value`` line the issue names is printed, thinklens' greedy tokens equal HF's, continuous
batching gives batch after batch's tokens, and the headline ``capture_vs_plain_max`` comes last."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_long_traces_bench_tiny_prints_its_lines_headline_last(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(["bash", str(ROOT / "bench" / "gpu" / "run.sh"), "--long-traces", "--tiny", "--device", "cpu"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = [ln for ln in proc.stdout.splitlines() if "=" in ln and not ln.startswith(" ")]
    values = dict(ln.split("=", 1) for ln in lines)
    for n in (8, 16):
        for k in ("plain_ms_per_token", "ours_ms_per_token", "capture_ms_per_token", "capture_vs_plain", "plain_spread"):
            assert float(values[f"{k}_{n}"]) > 0, k
    assert float(values["vs_static_16"]) > 0 and float(values["continuous_batching_speedup"]) > 0
    assert values["tokens_equal_hf"] == "1" and values["batching_tokens_equal"] == "1"
    assert values["model"] == "tiny-random-llama" and "rss_growth_mb" not in values
    assert lines[-2] == "capture_vs_plain_max_target=1.05" and lines[-1].startswith("capture_vs_plain_max=")
    assert (tmp_path / "long_traces.txt").read_text().strip().splitlines()[-1] == lines[-1]
