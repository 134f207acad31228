"""The hybrid job: several seeds, and a run killed between stages resumes to the same results."""

from __future__ import annotations

import json
import shutil

import pytest

from thinklens import ThinklensError
from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import get_job, run_job
from thinklens.zoo.registry import zoo_path

pytestmark = pytest.mark.skipif(zoo_path("tiny-think") is None or zoo_path("tiny-cot") is None,
                                reason="needs the committed zoo")

CONFIG = dict(n_categories=3, k=1, sae_steps=20, vector_iters=3, vector_batch=8, strengths=(0.5, 1.0), windows=(1,),
              n_train=12, n_eval=6, max_steps=3, seed=0, n_seeds=2,
              modes=("base", "thinking", "hybrid", "bias_only", "random_firing"))


def _strip(res: dict) -> str:
    return json.dumps(res, sort_keys=True)


def test_seeds_and_resume_after_a_kill(tmp_path, monkeypatch):
    from thinklens import HookedModel

    models = {"model": HookedModel.load("tiny-cot"), "thinking": HookedModel.load("tiny-think")}
    summary = run_job("hybrid", **models, **CONFIG, out=tmp_path / "a", progress=False)
    ref = RunFolder.open(tmp_path / "a")
    seeds = ref.read_result("hybrid_seeds")
    assert set(seeds) == {"0", "1"}
    assert summary["hybrid"]["accuracy"] == pytest.approx((seeds["0"]["hybrid"]["accuracy"] + seeds["1"]["hybrid"]["accuracy"]) / 2)
    # base and thinking do not depend on the seed: evaluated once, shared
    assert seeds["0"]["base"] == seeds["1"]["base"]
    items = list(ref.finished())
    assert items[:2] == ["mode:base", "mode:thinking"] and "seed1:random_firing" in items
    # the first seed's texts, one per (mode, problem), graded as its row says; kept out of the tables
    problems, first = ref.read_result("hybrid_problems"), ref.read_result("hybrid")
    for mode, row in first.items():
        assert "texts" not in row and [p["correct"] for p in problems if p["point"] == mode] == row["correct"]

    # the same run killed after seed 0's hybrid mode: its config and the first stages only
    killed = tmp_path / "b"
    killed.mkdir()
    shutil.copy(ref.path / "config.json", killed / "config.json")
    lines = (ref.path / "progress.jsonl").read_text().splitlines()
    (killed / "progress.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][: len(lines[3]) // 2])  # torn line
    import thinklens.steering.hybrid_generate as hg

    calls: list[str] = []
    real = hg.hybrid_generate

    def counting(*a, mode, **kw):
        calls.append(mode)
        return real(*a, mode=mode, **kw)

    monkeypatch.setattr(hg, "hybrid_generate", counting)
    run_job("hybrid", **models, config_file=killed / "config.json", out=killed, progress=False)  # rerun from its config.json
    assert "base" not in calls and "thinking" not in calls and calls.count("hybrid") == 1  # only seed 1's
    resumed = RunFolder.open(killed)
    for name in ("hybrid", "hybrid_seeds", "hybrid_summary"):
        assert _strip(resumed.read_result(name)) == _strip(ref.read_result(name))
    assert resumed.meta()["status"] == "done"


def test_bad_seeds():
    with pytest.raises(ThinklensError, match="n_seeds=3"):  # from Python: the keyword form
        get_job("hybrid").make_config(n_seeds=0)


def test_a_thinking_model_with_added_tokens_is_refused_before_generating(tmp_path, monkeypatch):
    """Regression (SmolLM2-135M beside its --add-tokens fine-tune: 49152 vs 49158 ids): the vocabulary check ran in
    train_hybrid_vectors, after the base and thinking modes and the thinking traces had been generated; the job now
    refuses the pair before generating anything."""
    from thinklens import HookedModel
    from thinklens.latent.segments import add_latent_tokens
    from tools.testing import build_tiny_model

    path = build_tiny_model("llama", tmp_path / "m")
    base = HookedModel.load(str(path))
    thinking = add_latent_tokens(HookedModel.load(str(path)))  # the same weights and tokenizer, six tokens added
    assert thinking.vocab_size > base.vocab_size

    def no_generation(*a, **kw):
        raise AssertionError("generated before refusing the pair")

    monkeypatch.setattr(HookedModel, "generate", no_generation)
    with pytest.raises(ThinklensError, match=r"base/thinking pair.*vocab 64/70"):
        run_job("hybrid", model=base, thinking=thinking, **{**CONFIG, "n_seeds": 1}, out=tmp_path / "r", progress=False)
