"""The hybrid job: several seeds, and a run killed between stages resumes to the same results."""

from __future__ import annotations

import json
import shutil

import pytest

from steering.hybrid import HybridConfig
from steering.jobs import HybridJobConfig, run_hybrid_job
from thinklens import ThinklensError
from thinklens.runs import RunFolder
from thinklens.zoo.registry import zoo_path

pytestmark = pytest.mark.skipif(zoo_path("tiny-think") is None or zoo_path("tiny-cot") is None,
                                reason="needs the committed zoo")

HCFG = HybridConfig(n_categories=3, k=1, sae_steps=20, vector_iters=3, vector_batch=8, strengths=(0.5, 1.0), windows=(1,))
JOB = HybridJobConfig(n_train=12, n_eval=6, max_steps=3, seeds=(0, 1),
                      modes=("base", "thinking", "hybrid", "bias_only", "random_firing"))


def _strip(res: dict) -> str:
    return json.dumps(res, sort_keys=True)


def test_seeds_and_resume_after_a_kill(tmp_path, monkeypatch):
    ref = RunFolder.create("hybrid", {"job": JOB, "hybrid": HCFG}, root=tmp_path / "a", run_id="r")
    summary = run_hybrid_job(JOB, HCFG, ref, log=lambda s: None)
    seeds = ref.read_result("hybrid_seeds")
    assert set(seeds) == {"0", "1"} and summary["hybrid"]["accuracy"] is not None
    # base and thinking do not depend on the seed: evaluated once, shared
    assert seeds["0"]["base"] == seeds["1"]["base"]
    items = list(ref.finished())
    assert items[:2] == ["mode:base", "mode:thinking"] and "seed1:random_firing" in items

    # the same run killed after seed 0's hybrid mode: copy its config and the first stages only
    run = RunFolder.create("hybrid", {"job": JOB, "hybrid": HCFG}, root=tmp_path / "b", run_id="r")
    lines = (ref.path / "progress.jsonl").read_text().splitlines()
    (run.path / "progress.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][: len(lines[3]) // 2])  # torn line
    import steering.hybrid_generate as hg

    calls: list[str] = []
    real = hg.hybrid_generate

    def counting(*a, mode, **kw):
        calls.append(mode)
        return real(*a, mode=mode, **kw)

    monkeypatch.setattr(hg, "hybrid_generate", counting)
    resumed = RunFolder.create("hybrid", {"job": JOB, "hybrid": HCFG}, root=tmp_path / "b", run_id="r")
    run_hybrid_job(JOB, HCFG, resumed, log=lambda s: None)
    assert "base" not in calls and "thinking" not in calls and calls.count("hybrid") == 1  # only seed 1's
    for name in ("hybrid", "hybrid_seeds", "hybrid_summary"):
        assert _strip(resumed.read_result(name)) == _strip(ref.read_result(name))
    shutil.rmtree(tmp_path / "b")


def test_bad_seeds():
    with pytest.raises(ThinklensError, match="seeds"):
        HybridJobConfig(seeds=(1, 1))
