"""``thinklens run probe``: word alignment against a single-text forward, grouped CV, the run folder, the zoo, the CLI."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from zoo_fixtures import reasoner, zooish  # noqa: F401 - fixtures

from thinklens.cli import build_parser, main
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.probes.datasets import layer_sweep
from thinklens.probes.io import load_probe
from thinklens.probes.jobs.probe import ProbeJobConfig
from thinklens.probes.value_dataset import value_dataset
from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import run_job
from thinklens.tasks import TaskConfig, align_target, generate_problems


def test_value_dataset_rows_match_single_text_forwards(zooish):
    problems = generate_problems(5, seed=3, config=TaskConfig(min_steps=1, max_steps=3))
    ds = value_dataset(zooish, problems, "think", ["resid_post.0", "final_norm"], batch_size=3)  # mixed lengths
    n = len(ds["running"])
    assert ds["features"]["resid_post.0"].shape == (n, zooish.d_model) and len(ds["word"]) == n
    for i, p in enumerate(problems):
        rows = np.flatnonzero(ds["group"] == i)
        al = align_target(p, "think")
        kept = [j for j, w in enumerate(al.words) if w != str(al.running[j])]  # value tokens are dropped
        assert [ds["word"][r] for r in rows] == [al.words[j] for j in kept]
        assert ds["running"][rows].tolist() == [al.running[j] for j in kept]
        ids = zooish.tokenizer(ds["texts"][i])["input_ids"]
        assert [zooish.tokenizer.convert_ids_to_tokens(ids[c]) for c in ds["position"][rows]] == ds["word"][rows[0]:rows[-1] + 1]
        alone = zooish.capture([ds["texts"][i]], [Site("final_norm")]).acts[Site("final_norm")][0]  # no padding
        np.testing.assert_allclose(ds["features"]["final_norm"][rows], alone[ds["position"][rows]].numpy(), atol=1e-5)
    every = value_dataset(zooish, problems[:2], "cot", ["embed"], exclude_value_tokens=False)
    assert len(every["running"]) == sum(len(align_target(p, "cot").words) for p in problems[:2])


def test_grouped_cv_does_not_leak_across_groups():
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(40), 10)
    X = np.eye(40)[groups] + 0.01 * rng.normal(size=(400, 40))  # the group's identity, nothing else
    y = rng.normal(size=40)[groups]  # a value per group: memorisable, not generalisable
    leaky = layer_sweep({"x": X}, y, task="regression", folds=5)
    grouped = layer_sweep({"x": X}, y, task="regression", folds=5, groups=groups)
    assert leaky.mean[0] > 0.9 and grouped.mean[0] < 0.1
    with pytest.raises(ThinklensError, match="groups"):
        layer_sweep({"x": X}, y, task="regression", groups=groups[:10])


def test_intermediate_job_writes_sweep_figure_and_probe(reasoner, tmp_path):
    # a trained model: a random one reads the value nowhere (R^2 <= 0), which the job flags and saves no probe for
    zooish = reasoner
    cfg = ProbeJobConfig(model=zooish.name, n_problems=120, max_steps=2, folds=3, sites=("embed", "resid_post.*"),
                         prompt_format="think")
    doc = run_job("probe", config=cfg, model=zooish, runs=tmp_path, run_id="p", progress=False)
    run = RunFolder.open(tmp_path / "probe" / "p")
    sw = doc["sweeps"]["r2"]
    assert sw["sites"] == ["embed", *(f"resid_post.{i}" for i in range(zooish.n_layers))] and len(sw["scores"][0]) == 3
    assert doc["degenerate"] is None and max(sw["mean"]) > 0
    assert doc["best_site"] == sw["sites"][int(np.argmax(sw["mean"]))]
    assert run.read_result("sweep") == doc and run.figures() == ["layer_sweep"] and run.meta()["status"] == "done"
    probe = load_probe(run.path / "probe", expect_site=doc["best_site"], expect_d_model=zooish.d_model)
    ds = value_dataset(zooish, [p.ground_truth for p in cfg.problems()], "think", [doc["best_site"]])
    X = ds["features"][doc["best_site"]]
    from thinklens.probes.estimators import RidgeProbe

    np.testing.assert_allclose(probe.predict(X), RidgeProbe(alpha=cfg.alpha).fit(X, ds["running"].astype(float)).predict(X))
    # the findings name the site they chose on held-out problems, beside the saved probe's site
    chosen = {f["extra"]["site"] for f in doc["findings"] if "site" in f.get("extra", {})}
    assert chosen == {doc["findings_site"]} and run.meta()["summary"]["findings_site"] == doc["findings_site"]


def test_report_names_both_sites_when_they_differ():
    from thinklens.probes.jobs.probe import report

    doc = {"sweeps": {"r2": {"sites": ["a", "b"], "mean": [0.1, 0.2], "std": [0.0, 0.0]}}, "best_site": "b"}
    assert "findings report" not in report({**doc, "findings_site": "b"})
    text = report({**doc, "findings_site": "a"})
    assert "best site: b" in text and "the findings report a: chosen on half of the problems" in text


@pytest.mark.parametrize("kw,needle", [
    ({"target": "value"}, "intermediate or correct"),
    ({"sites": ("resid_pst.1",)}, "did you mean 'resid_post'"),
    ({"prompt_format": "cott"}, "did you mean 'cot'"),
    ({"intention_formats": ("thnk",)}, "did you mean 'think'"),
    ({"data_fields": "question=prompt"}, "pass data= too"),  # from Python: the keyword form
    ({"folds": 1}, "folds"),
])
def test_config_refuses_bad_input(kw, needle):
    with pytest.raises(ThinklensError, match=needle):
        ProbeJobConfig(**kw)


def test_correct_target_needs_both_outcomes(zooish, tmp_path):
    with pytest.raises(ThinklensError, match="correctness labels: received '0 correct of 12"):
        run_job("probe", model=zooish, target="correct", n_problems=12, max_steps=1, folds=3, prompt_format="direct",
                runs=tmp_path, run_id="c", progress=False)


def test_correct_target_and_intention_on_the_zoo(reasoner, tmp_path):
    doc = run_job("probe", model=reasoner, target="correct", n_problems=80, min_steps=5, max_steps=8, folds=3,
                  n_bootstrap=50, intention_formats=("direct", "think"), runs=tmp_path, run_id="c", progress=False)
    run = RunFolder.open(tmp_path / "probe" / "c")
    assert set(doc["sweeps"]) == {"auroc", "accuracy"} and 0 < doc["model_accuracy"] < 1
    assert 0 <= doc["steps_only_auroc"] <= 1
    intention = run.read_result("intention")
    assert intention["sites"][-1] == "final_norm" and len(intention["sites"]) == min(5, reasoner.n_layers)
    for style in ("direct", "think"):
        s = intention["styles"][style]
        assert 0 <= s["entropy_bits_mean"] <= np.log2(100) and 0 <= s["accuracy"] <= 1
        assert set(s["effective_dim"]) == set(intention["sites"])
        assert "auroc" in s["recoverability"] or "error" in s["recoverability"]
    # the answers behind the score, one per problem, graded as the sweep's labels (its accuracy is their mean)
    problems = run.read_result("probe_problems")
    assert len(problems) == 80 and sum(r["correct"] for r in problems) / 80 == pytest.approx(doc["model_accuracy"])
    assert all(r["error"] == pytest.approx(abs(r["p_correct"] - r["correct"])) for r in problems)
    assert sum(r["most_wrong"] for r in problems) == 20 and problems[0]["site"] in (doc["findings_site"], doc["best_site"])


# ---------------------------------------------------------------- the CLI


def test_cli_options_come_from_the_config(capsys):
    args = build_parser(["probe"]).parse_args(["run", "probe", "--sites", "embed,resid_post.*", "--target", "correct"])
    assert args.sites == ("embed", "resid_post.*") and args.target == "correct"
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "probe", "--target", "values"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "invalid choice" in err and len(err.strip().splitlines()) == 1


def test_cli_runs_and_resumes(capsys, zooish, tmp_path):
    argv = ["run", "probe", "--model", zooish.name, "--prompt-format", "think", "--n-problems", "12", "--folds", "2", "--max-steps", "1",
            "--runs", str(tmp_path), "--run-id", "r", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "r2: embed=" in out and "best site:" in out
    assert main(argv) == 0  # same config and id: the folder is reused
    assert main([*argv, "--n-problems", "13"]) == 2  # same id, other config
    err = capsys.readouterr().err
    assert "bad run folder" in err and len(err.strip().splitlines()) == 1


def test_cli_bad_site_is_one_line():
    res = subprocess.run([sys.executable, "-m", "thinklens.cli", "run", "probe", "--sites", "resid_pst.1"],
                         capture_output=True, text=True, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 2 and "did you mean 'resid_post'" in res.stderr and "Traceback" not in res.stderr
