"""The steering jobs under the job contract: run folders, loaded models, CLI options, clear errors (tiny models)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import get_job, run_job

STEERING_JOBS = ("sae", "sae-eval", "steer", "reasoning-vector", "hybrid", "grpo")


def test_steer_job_on_tiny_model(tiny_llama, trained_sae, tmp_path):
    _, _, sae_dir = trained_sae
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(f"w{i} w{i + 1} w{i + 2}" for i in range(6)))
    word = tiny_llama.generate(["w1 w2 w3"], max_new_tokens=3)[0].tokens[0].strip()
    summary = run_job("steer", model=tiny_llama, sae=str(sae_dir), prompts=str(prompts), n_prompts=4, stats_traces=6,
                      coeffs=(-1.0, 0.0, 1.0), mode="add", word=word, runs=tmp_path / "runs", run_id="t", progress=False)
    run = RunFolder.open(tmp_path / "runs" / "steer" / "t")
    res = run.read_result("steer")
    arms = {r["arm"] for r in res["rows"]}
    assert arms - {"diff_of_means"} == {"feature", "random_feature", "top_activating", "random_direction"}
    at_one = [r["added_norm"] for r in res["rows"] if r["coeff"] == 1.0]
    assert max(at_one) == pytest.approx(min(at_one), rel=1e-5)  # equal norms across arms
    base = [r for r in res["rows"] if r["coeff"] == 0.0]
    assert len({r["sample"] for r in base}) == 1  # coefficient 0 is one shared unsteered baseline
    assert "steer" in run.figures() and summary["feature"] == res["chosen"]["feature"]
    assert run.meta()["status"] == "done" and run.meta()["summary"] == summary


def test_steer_job_scales_the_feature_by_default(tiny_llama, trained_sae, tmp_path):
    """The job's default mode steers in units of the feature's own activation on the scale grid, with every
    arm, the difference of means included, gated by the steered feature; the summary and the report say which mode and
    coefficients ran. Mutant killed: the residual-norm grid restored as the default (mode add, -1..1)."""
    from thinklens.runs.jobs import get_job
    from thinklens.steering.jobs.steer import GRIDS, SteerJobConfig

    _, _, sae_dir = trained_sae
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(f"w{i} w{i + 1} w{i + 2}" for i in range(6)))
    word = tiny_llama.generate(["w1 w2 w3"], max_new_tokens=3, do_sample=True, seed=20_000)[0].tokens[0].strip()
    assert SteerJobConfig().mode == "scale" and SteerJobConfig().grid == GRIDS["scale"]
    assert SteerJobConfig(mode="add").grid == GRIDS["add"] and SteerJobConfig(coeffs=(0.0, 2.0)).grid == (0.0, 2.0)
    summary = run_job("steer", model=tiny_llama, sae=str(sae_dir), prompts=str(prompts), n_prompts=4, stats_traces=16,
                      coeffs=(0.0, 4.0), word=word, min_dom_states=1, runs=tmp_path / "runs", run_id="sc", progress=False)
    res = RunFolder.open(tmp_path / "runs" / "steer" / "sc").read_result("steer")
    assert summary["mode"] == res["chosen"]["mode"] == "scale" and summary["coeffs"] == [0.0, 4.0]
    assert {r["arm"] for r in res["rows"]} == {"feature", "random_feature", "top_activating", "random_direction",
                                               "diff_of_means"}
    assert all(r["added_norm"] is None for r in res["rows"])  # per token: the feature's own activation sets it
    assert "mode scale (c times the feature's own activation" in get_job("steer").report(summary)


def test_steer_job_seeds_and_diff_of_means(tiny_llama, trained_sae, tmp_path):
    _, _, sae_dir = trained_sae
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(f"w{i} w{i + 1} w{i + 2}" for i in range(6)))
    word = tiny_llama.generate(["w1 w2 w3"], max_new_tokens=3, do_sample=True, seed=20_000)[0].tokens[0].strip()
    run_job("steer", model=tiny_llama, sae=str(sae_dir), prompts=str(prompts), n_prompts=4, stats_traces=16,
            coeffs=(0.0, 1.0), mode="add", word=word, n_seeds=2, min_dom_states=1, runs=tmp_path / "runs", run_id="s",
            progress=False)
    res = RunFolder.open(tmp_path / "runs" / "steer" / "s").read_result("steer")
    assert res["seeds"] == [0, 1] and {r["seed"] for r in res["rows_by_seed"]} == {0, 1}
    assert "diff_of_means" in {r["arm"] for r in res["rows"]}  # the word is sampled, so the direction exists
    at_one = [r["added_norm"] for r in res["rows"] if r["coeff"] == 1.0]
    assert max(at_one) == pytest.approx(min(at_one), rel=1e-5)
    for row in res["rows"]:  # aggregated rows are the mean of the per-seed rows
        per = [r[word] for r in res["rows_by_seed"] if r["arm"] == row["arm"] and r["coeff"] == row["coeff"]]
        assert row[word] == pytest.approx(sum(per) / 2) and row["n_seeds"] == 2
    # every text behind a row's numbers is kept: per seed and generation, one record per prompt, the first its sample
    from thinklens.steering.steer_traces import steer_trace_id

    problems = RunFolder.open(tmp_path / "runs" / "steer" / "s").read_result("steer_problems")
    for r in res["rows_by_seed"]:
        point = "unsteered" if r["coeff"] == 0.0 else steer_trace_id(r)
        texts = [p["text"] for p in problems if p["seed"] == r["seed"] and p["point"] == point]
        assert len(texts) == r["n_traces"] == 4 and texts[0] == r["sample"]
    assert all(p["correct"] is None and p["broken"] is None for p in problems)  # a prompt file has no answers


def test_sae_eval_job(tiny_llama, trained_sae, word_texts, tmp_path):
    _, _, sae_dir = trained_sae
    data = tmp_path / "texts.txt"
    data.write_text("\n".join(word_texts[:32]))
    metrics = run_job("sae-eval", model=tiny_llama, sae=str(sae_dir), data=str(data), n_texts=32, n_batches=1,
                      out=tmp_path / "ev", progress=False)
    assert metrics["site"] == "resid_post.0" and 0 < metrics["l0"] <= 4 + 1e-6
    assert RunFolder.open(tmp_path / "ev").read_result("metrics")["l0"] == metrics["l0"]
    # CE/KL fidelity on generated tokens of held-out prompts only (a text file's lines are the prompts; 64 new tokens
    # at most each), never the 32 texts' own or padding positions
    assert metrics["fidelity_scored_on"] == "generated tokens" and 0 < metrics["fidelity_tokens"] <= 32 * 64
    assert metrics["fidelity_rows"] == 32 and metrics["ce_loss_with_sae"] > 0


def test_reasoning_vector_job_uses_its_model_as_the_target(tmp_path):
    from safetensors.torch import load_file, save_file

    from tools.testing import build_tiny_model

    paths = {n: str(build_tiny_model("llama", tmp_path / n, seed=s)) for n, s in (("pre", 0), ("a", 0), ("b", 0), ("t", 1))}
    # b: a's weights with one tensor moved by 1e-3 (identical checkpoints are refused: |v| = 0)
    (weights,) = Path(paths["b"]).glob("*.safetensors")
    w = load_file(weights)
    moved = next(k for k in w if "mlp" in k)
    w[moved] = w[moved] + 1e-3
    save_file(w, weights, metadata={"format": "pt"})
    summary = run_job("reasoning-vector", model=paths["t"], a=paths["a"], b=paths["b"], base=paths["pre"], n_eval=0,
                      save_alpha=0.5, out=tmp_path / "rv", progress=False)
    assert 0.0 < summary["norm"] < 1.0  # one tensor moved a little: a small v
    run = RunFolder.open(tmp_path / "rv")
    assert run.read_result("vector")["norms"].keys() == {"all", "attention", "mlp", "no_embeddings"}
    # the target's lineage is checked by weights too: t is another init than pre, so it is flagged
    assert summary["target_related"] is False and run.read_result("vector")["target_lineage"]["related"] is False
    merge = json.loads((run.path / "merged" / "merge.json").read_text())
    assert merge["alpha"] == 0.5 and merge["target"] == paths["t"]
    # the merged model is the target's (seed 1), not a's: the runner's model really is the target
    assert json.loads((run.path / "config.json").read_text())["model"] == paths["t"]

    from thinklens import HookedModel

    merged, target = HookedModel.load(str(run.path / "merged")), HookedModel.load(paths["t"])
    # target + 0.5 v: equal to the target but in the moved tensor, by half of a's minus b's move
    diffs = [float((p - q).abs().max()) for p, q in zip(merged.hf.parameters(), target.hf.parameters())]
    assert max(diffs) == pytest.approx(0.5e-3, rel=1e-2) and sum(d > 0 for d in diffs) == 1


def test_reasoning_vector_sweep_has_the_random_direction_control(tmp_path):
    summary = run_job("reasoning-vector", model="tiny-think", a="tiny-cot", b="tiny-pre", base="tiny-pre", alphas=(0.0, 1.0),
                      groups=("all",), n_per_steps=2, steps=(1,), save_alpha=None, out=tmp_path / "rv", progress=False)
    rows = RunFolder.open(tmp_path / "rv").read_result("alpha_sweep")
    assert [(r["group"], r["alpha"]) for r in rows] == [("all", 0.0), ("all", 1.0), ("all (random direction)", 0.0),
                                                         ("all (random direction)", 1.0)]
    assert rows[0]["accuracy"] == rows[2]["accuracy"]  # alpha 0 is the target itself in both sweeps
    assert summary["best"]["group"] == "all" and summary["target_related"] is True  # tiny-think and tiny-cot share tiny-pre
    # the texts behind each accuracy: one record per problem of each non-zero α (and of α 0), graded as the row says
    problems = RunFolder.open(tmp_path / "rv").read_result("alpha_problems")
    assert "texts" not in rows[0]  # kept beside the sweep, not in each row
    for r in rows:
        point = "α 0 (target)" if r["alpha"] == 0.0 else f"{r['group']} α {r['alpha']:g}"
        assert [p["correct"] for p in problems if p["point"] == point] == r["correct"]


def test_every_steering_job_has_the_common_options():
    from thinklens.cli import build_parser

    p = build_parser(list(STEERING_JOBS))
    a = p.parse_args(["run", "hybrid", "--strengths", "0.5,1", "--windows", "1", "--n-eval", "10", "--thinking", "tiny-think",
                      "--device", "cpu", "--dtype", "bfloat16", "--n-seeds", "3"])
    assert a.strengths == (0.5, 1.0) and a.windows == (1,) and a.n_eval == 10 and a.dtype == "bfloat16"
    assert get_job("hybrid").make_config(n_seeds=a.n_seeds, seed=2).seeds == (2, 3, 4)
    assert get_job("hybrid").models == ("model", "thinking")  # both loaded by the runner with --device/--dtype
    a = p.parse_args(["run", "reasoning-vector", "--alphas=-1,0.5", "--groups", "mlp,attention", "--base", "none"])
    assert a.alphas == (-1.0, 0.5) and a.groups == ("mlp", "attention") and a.base is None
    a = p.parse_args(["run", "sae", "--model", "tiny-think", "--site", "resid_post.1", "--architecture", "standard",
                      "--out", "x", "--no-progress"])
    assert a.site == "resid_post.1" and a.architecture == "standard" and a.out == "x" and a.progress is False
    a = p.parse_args(["run", "grpo", "--train-steps", "2", "--max-minutes", "1", "--publish", "g", "--threads", "1"])
    assert a.train_steps == 2 and a.max_minutes == 1.0 and a.publish == "g"
    for name in STEERING_JOBS:
        job = get_job(name)
        assert "model" in job.models and job.config().seed is not None


def test_cli_errors_are_one_line(tmp_path, capsys):
    from thinklens.cli import main

    code = main(["run", "steer", "--sae", str(tmp_path), "--model", "tiny-think", "--runs", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--sae" in err
    code = main(["run", "reasoning-vector", "--alphas=0,inf", "--n-eval", "0", "--runs", str(tmp_path / "r"),
                 "--a", str(tmp_path), "--b", str(tmp_path)])
    assert code == 2 and "alpha" in capsys.readouterr().err
    code = main(["run", "hybrid", "--n-seeds", "0", "--runs", str(tmp_path / "r")])
    assert code == 2 and "n-seeds" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "sae", "--architecture"])
