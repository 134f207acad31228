"""The device script bench/gpu/run.sh with ``--tiny``, in a subprocess on the CPU (a default-tier test, not ``gpu``):
it runs with the repository on PYTHONPATH alone and without the packages the device image lacks (an import of
one fails, as there), and prints every ``name=value`` line, the headline last."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("qwen2.5-1.5b", "llama-3-8b")
PER_MODEL = ["params_b", "d_model", "forward_s", "capture_s", "capture_overhead", "mi_d", "mi_steps", "mi_trajectory_s"]
PER_BATCH = ["new_tokens", "hf_generate_s", "traced_generate_s", "hf_tokens_per_s", "traced_tokens_per_s", "hf_peak_gib",
             "traced_peak_gib", "greedy_rows_equal", "generate_overhead"]
DEVICE_LACKS = ("nnsight", "transformer_lens", "sae_lens", "plotly", "streamlit", "datasets", "math_verify", "beartype")
"""Packages of the project (and its dev extras) that the device image does not hold."""
BLOCKER = """import importlib.abc, sys


class _Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {names!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not on the device image)", name=name)
        return None


sys.meta_path.insert(0, _Missing())
"""
GLOBAL = ["bench_mode", "device", "codi_step_s", "cot_step_s", "codi_step_ratio", "mi_device_vs_cpu_max_abs", "elapsed_s"]


def test_tiny_run_prints_every_line_headline_last(tmp_path):
    site = tmp_path / "site"  # a sitecustomize that makes the device's missing packages unimportable
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER.format(names=set(DEVICE_LACKS)))
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path), "OMP_NUM_THREADS": "1", "PYTHONPATH": str(site)}
    proc = subprocess.run(["bash", str(ROOT / "bench" / "gpu" / "run.sh"), "--tiny", "--device", "cpu"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = [ln for ln in proc.stdout.splitlines() if "=" in ln]
    values = dict(ln.split("=", 1) for ln in lines)
    want = list(GLOBAL) + [f"{m}_{k}" for m in MODELS for k in PER_MODEL]
    want += [f"{m}_{k}_b{b}" for m in MODELS for k in PER_BATCH for b in (1, 2)]
    missing = [k for k in want if k not in values]
    assert not missing, missing
    assert values["bench_mode"] == "tiny" and "skipped" not in values.values()
    for m in MODELS:
        for b in (1, 2):
            assert values[f"{m}_greedy_rows_equal_b{b}"] == f"{b}/{b}"  # traced greedy = HF greedy
            assert int(values[f"{m}_new_tokens_b{b}"]) == 8  # no EOS: every new token generated
            assert float(values[f"{m}_generate_overhead_b{b}"]) > 0
        assert float(values[f"{m}_capture_overhead"]) > 0
    assert math.isfinite(float(values["codi_step_ratio"]))
    headline = lines[-1].split("=", 1)
    assert headline[0] == "gpu_generate_overhead" and float(headline[1]) > 0
    assert (tmp_path / "bench_gpu.txt").read_text().strip().splitlines()[-1] == lines[-1]
