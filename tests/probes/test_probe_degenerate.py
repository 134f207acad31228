"""A probe sweep whose best site scores at chance (AUROC 0.500 at ``embed``, whose last prompt token
is the same token in every prompt) is flagged, not saved and not reported as the best site."""

from __future__ import annotations

import numpy as np
import pytest

from thinklens.probes.datasets import LayerSweep
from thinklens.probes.jobs.probe import headline, report


def test_at_chance_flags_a_best_score_at_or_below_chance_and_only_that():
    from thinklens.probes.jobs.probe import at_chance

    rng = np.random.default_rng(0)
    feats = {"embed": np.ones((6, 3)), "resid_post.0": rng.normal(size=(6, 3))}
    null = LayerSweep(("embed", "resid_post.0"), np.array([[0.5, 0.5, 0.5], [0.3, 0.5, 0.45]]), "roc_auc")
    flag = at_chance(null, feats)
    assert flag["site"] == "embed" and flag["score"] == 0.5 and flag["chance"] == 0.5
    assert "(its features are the same in every row)" in flag["reason"]
    planted = LayerSweep(("embed", "resid_post.0"), np.array([[0.5, 0.5, 0.5], [0.7, 0.6, 0.65]]), "roc_auc")
    assert at_chance(planted, feats) is None
    r2 = LayerSweep(("embed", "resid_post.0"), np.array([[-0.1, 0.0], [-0.2, -0.01]]), "r2")
    assert at_chance(r2, feats)["chance"] == 0.0 and "(its features" not in at_chance(r2, {"embed": np.eye(3)})["reason"]
    assert at_chance(LayerSweep(("x",), np.array([[0.01, 0.02]]), "r2"), {"x": np.eye(2)}) is None


def test_report_and_headline_of_a_flagged_run():
    doc = {"sweeps": {"auroc": {"sites": ["embed"], "mean": [0.5], "std": [0.0]}}, "best_site": None,
           "findings_site": "embed", "degenerate": {"reason": "no site reads the target above chance: ..."}}
    text = report(doc)
    assert "no best site: no site reads the target above chance" in text and "no probe saved" in text
    assert "best site: embed" not in text and "the findings report" not in text
    assert "read best at" not in headline({"target": "correct", "degenerate": "no site reads ..."}, None)


@pytest.fixture(scope="module")
def direct():
    from thinklens import HookedModel
    from thinklens.zoo.registry import zoo_path

    if zoo_path("tiny-direct") is None:
        pytest.skip("tiny-direct is not trained")
    return HookedModel.load("tiny-direct")


def test_the_job_flags_a_sweep_at_chance_and_saves_no_probe(direct, tmp_path, capsys):
    from thinklens.cli import main
    from thinklens.runs.folders import RunFolder
    from thinklens.runs.jobs import run_job

    kw = dict(target="correct", sites=("embed",), n_problems=12, max_steps=1, folds=3, prompt_format="direct")
    doc = run_job("probe", model=direct, runs=tmp_path, run_id="d", progress=False, **kw)
    assert 0 < doc["model_accuracy"] < 1  # both outcomes: the sweep ran
    assert doc["best_site"] is None and doc["degenerate"]["site"] == "embed" and doc["degenerate"]["score"] == 0.5
    run = RunFolder.open(tmp_path / "probe" / "d")
    assert not (run.path / "probe").exists()
    assert run.meta()["summary"]["best_site"] is None and "above chance" in run.meta()["summary"]["degenerate"]
    capsys.readouterr()
    argv = ["run", "probe", "--model", "tiny-direct", "--target", "correct", "--sites", "embed", "--n-problems", "12",
            "--max-steps", "1", "--folds", "3", "--prompt-format", "direct", "--runs", str(tmp_path), "--run-id", "cli",
            "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "no best site: no site reads the target above chance: the best, embed, scores roc_auc 0.500" in out
    assert "best site: embed" not in out
