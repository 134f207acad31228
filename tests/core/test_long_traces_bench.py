"""bench/long_traces.py through the device script (``bench/gpu/run.sh --long-traces --tiny``), on the CPU with a tiny
random model: every ``name=value`` line of the targets is printed, thinklens' greedy tokens equal HF's, continuous
batching gives batch after batch's tokens, and the headline ``capture_vs_plain_max`` comes last; and the bench's
per-step estimator against hand-made step times."""

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
    assert int(values["repeats_8"]) == 8 and int(values["repeats_16"]) == 8  # short runs get more repeats


def _bench():
    from bench import long_traces

    return long_traces


def test_per_step_time_drops_a_stall_and_keeps_a_cost_every_repeat_pays():
    """Oracle: hand-made intervals. A stall in one repeat (step 1 of the first) drops out; a cost at step 3 that every
    repeat pays stays in. Killed mutants: the best whole run (when every repeat stalls once, at different steps: 3, not
    1), the mean over repeats (2.25, not 1.75), a step dropped at either end (the cost at step 3, or 2/3 not 1)."""
    clock = _bench().StepClock
    runs = [[1.0, 9.0, 1.0, 4.0], [1.0, 1.0, 1.0, 4.0], [2.0, 1.0, 1.0, 4.0]]
    assert clock.per_token(runs) == 7.0 / 4
    assert clock.per_token([[1.0, 5.0], [5.0, 1.0]]) == 1.0  # each repeat stalled once, at different steps


def test_short_lengths_get_more_repeats_up_to_eight():
    at = _bench().repeats_at
    assert [at(n, 2) for n in (512, 1024, 2048, 4096, 8192)] == [8, 4, 2, 2, 2]
    assert at(512, 10) == 10 and at(64, 1) == 8


def test_rss_measures_growth_to_a_longer_length_only():
    """Peak RSS is measured at the shortest length and at longer ones only: a run of 512 and 8,192 tokens measures
    8,192 (not 512 twice, a growth of 0 that measured nothing), the 512-4,096 span keeps its own ``rss_growth_mb``,
    and one length measures no growth."""
    rss_lengths = _bench().rss_lengths
    assert rss_lengths([512, 2048, 4096]) == (512, [4096])
    assert rss_lengths([512, 2048, 4096, 8192]) == (512, [4096, 8192])
    assert rss_lengths([512, 8192]) == (512, [8192])
    assert rss_lengths([8192, 512]) == (512, [8192])
    assert rss_lengths([512]) == (512, [])
    assert rss_lengths([64, 256], span=4096) == (64, [256])
