"""The steering jobs and CLI: parsing, run folders, clear errors (tiny models; zoo runs are `slow`)."""

from __future__ import annotations

import json

import pytest

from steering.jobs import ReasoningVectorJobConfig, SteerJobConfig, run_reasoning_vector_job, run_steer_job
from thinklens.runs import RunFolder


def test_steer_job_on_tiny_model(tiny_llama, trained_sae, tmp_path):
    _, _, sae_dir = trained_sae
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(f"w{i} w{i + 1} w{i + 2}" for i in range(6)))
    cfg = SteerJobConfig(model="unused", sae=str(sae_dir), prompts=str(prompts), n_prompts=4, stats_traces=6,
                         coeffs=(-1.0, 0.0, 1.0), word=tiny_llama.generate(["w1 w2 w3"], max_new_tokens=3)[0].tokens[0].strip())
    run = RunFolder.create("steer", cfg, root=tmp_path / "runs", run_id="t")
    summary = run_steer_job(tiny_llama, cfg, run, log=lambda s: None)
    res = run.read_result("steer")
    arms = {r["arm"] for r in res["rows"]}
    assert arms - {"diff_of_means"} == {"feature", "random_feature", "top_activating", "random_direction"}
    at_one = [r["added_norm"] for r in res["rows"] if r["coeff"] == 1.0]
    assert max(at_one) == pytest.approx(min(at_one), rel=1e-5)  # equal norms across arms
    base = [r for r in res["rows"] if r["coeff"] == 0.0]
    assert len({r["sample"] for r in base}) == 1  # coefficient 0 is one shared unsteered baseline
    assert "steer" in run.figures() and summary["feature"] == res["chosen"]["feature"]
    assert run.meta()["status"] == "done"


def test_steer_job_seeds_and_diff_of_means(tiny_llama, trained_sae, tmp_path):
    _, _, sae_dir = trained_sae
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(f"w{i} w{i + 1} w{i + 2}" for i in range(6)))
    word = tiny_llama.generate(["w1 w2 w3"], max_new_tokens=3, do_sample=True, seed=20_000)[0].tokens[0].strip()
    cfg = SteerJobConfig(model="unused", sae=str(sae_dir), prompts=str(prompts), n_prompts=4, stats_traces=16,
                         coeffs=(0.0, 1.0), word=word, n_seeds=2)
    run = RunFolder.create("steer", cfg, root=tmp_path / "runs", run_id="s")
    run_steer_job(tiny_llama, cfg, run, log=lambda s: None)
    res = run.read_result("steer")
    assert res["seeds"] == [0, 1] and {r["seed"] for r in res["rows_by_seed"]} == {0, 1}
    assert "diff_of_means" in {r["arm"] for r in res["rows"]}  # the word is sampled, so the direction exists
    at_one = [r["added_norm"] for r in res["rows"] if r["coeff"] == 1.0]
    assert max(at_one) == pytest.approx(min(at_one), rel=1e-5)
    for row in res["rows"]:  # aggregated rows are the mean of the per-seed rows
        per = [r[word] for r in res["rows_by_seed"] if r["arm"] == row["arm"] and r["coeff"] == row["coeff"]]
        assert row[word] == pytest.approx(sum(per) / 2) and row["n_seeds"] == 2


def test_reasoning_vector_job_norms_only(tmp_path):
    from thinklens.testing import build_tiny_model

    paths = {n: str(build_tiny_model("llama", tmp_path / n, seed=s)) for n, s in (("pre", 0), ("a", 0), ("b", 0), ("t", 0))}
    cfg = ReasoningVectorJobConfig(a=paths["a"], b=paths["b"], target=paths["t"], base=paths["pre"], n_per_steps=0,
                                   save_alpha=0.5)
    run = RunFolder.create("reasoning-vector", cfg, root=tmp_path / "runs", run_id="rv")
    summary = run_reasoning_vector_job(cfg, run, log=lambda s: None)  # identical checkpoints: no false alarm
    assert summary["norm"] == 0.0
    assert (run.path / "merged" / "config.json").is_file()
    assert json.loads((run.path / "merged" / "merge.json").read_text())["alpha"] == 0.5


def test_cli_errors_are_one_line(tmp_path, capsys):
    from thinklens.cli import main

    code = main(["run", "steer", "--sae", str(tmp_path), "--model", "tiny-think", "--runs", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--sae" in err
    code = main(["run", "reasoning-vector", "--alphas=0,inf", "--n-per-steps", "0", "--runs", str(tmp_path / "r"),
                 "--a", str(tmp_path), "--b", str(tmp_path)])
    assert code == 2
    with pytest.raises(SystemExit):
        main(["sae", "train", "tiny-think", "--architecture"])


def test_cli_parses_generated_options():
    import argparse

    from steering.cli import add_sae_parser, add_steer_jobs

    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command")
    add_sae_parser(sub)
    jobs = sub.add_parser("run").add_subparsers(dest="job")
    add_steer_jobs(jobs)
    a = p.parse_args(["run", "hybrid", "--strengths", "0.5,1", "--windows", "1", "--n-eval", "10"])
    assert a.strengths == (0.5, 1.0) and a.windows == (1,) and a.n_eval == 10
    a = p.parse_args(["run", "reasoning-vector", "--alphas=-1,0.5", "--groups", "mlp,attention", "--base", "none"])
    assert a.alphas == (-1.0, 0.5) and a.groups == ("mlp", "attention") and a.base is None
    a = p.parse_args(["sae", "train", "tiny-think", "--site", "resid_post.1", "--architecture", "standard"])
    assert a.site == "resid_post.1" and a.architecture == "standard" and a.func.__name__ == "cmd_sae_train"
    only = argparse.ArgumentParser().add_subparsers(dest="job")
    add_steer_jobs(only, "steer")
    assert set(only.choices) == {"steer"}
