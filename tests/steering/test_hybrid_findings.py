"""Hybrid steering's findings: the gap recovered with its bootstrap interval over problems, and the hybrid
paired against the base model and every ablation on the same problems."""

from __future__ import annotations

import numpy as np
import pytest

from thinklens.steering.hybrid_generate import CONTROL_WORDS, _gap_codes, gap_recovered_of, hybrid_findings


def _rows(**correct: list[int]) -> dict[str, dict]:
    return {m: {"correct": [bool(x) for x in c], "accuracy": float(np.mean(c))} for m, c in correct.items()}


def test_gap_recovered_is_the_plain_formula_and_resamples_problems_together():
    rng = np.random.default_rng(0)
    m, b, t = (rng.random((3, 50)) < [[0.6], [0.3], [0.8]])
    codes = _gap_codes(m, b, t)
    assert float(gap_recovered_of(codes)) == pytest.approx((m.mean() - b.mean()) / (t.mean() - b.mean()))
    idx = rng.integers(0, 50, size=(4, 50))  # [4, 50]: rows of resampled problems
    expect = [(m[i].mean() - b[i].mean()) / (t[i].mean() - b[i].mean()) for i in idx]  # each problem's three outcomes together
    assert gap_recovered_of(codes[idx], axis=1) == pytest.approx(expect)
    assert float(gap_recovered_of(_gap_codes([1, 1], [1, 1], [1, 1]))) == 0.0  # no gap: 0, never a division by 0


def test_random_vectors_doing_as_well_is_said_so():
    base = [0] * 60 + [1] * 60
    thinking = [1] * 100 + [0] * 20
    hybrid = [1] * 40 + [0] * 20 + [1] * 60  # fixes 40 of the base's 60 misses
    rows = _rows(base=base, thinking=thinking, hybrid=hybrid, random_vectors=hybrid, bias_only=base)
    fs = {f.claim: f for f in hybrid_findings(rows, seed=0)}
    gap = fs["the hybrid recovers part of the base-to-thinking gap"]
    # hybrid 100/120 and thinking 100/120 against base 60/120: the whole gap
    assert gap.verdict == "effect" and gap.ci[0] > 0 and gap.value == pytest.approx(1.0)
    assert fs["the hybrid raises accuracy over the base model"].verdict == "effect"
    rv = fs["the hybrid beats its ablation random_vectors"]
    assert rv.verdict == "no effect" and rv.extra["otherwise"] == CONTROL_WORDS["random_vectors"] == "random vectors do as well"
    assert rv.extra["control_gap_recovered"] == rv.extra["gap_recovered"]
    assert fs["the hybrid beats its ablation bias_only"].verdict == "effect"


def test_no_gap_no_claim_and_resumed_rows_without_outcomes():
    same = [1, 0] * 30
    fs = hybrid_findings(_rows(base=same, thinking=same, hybrid=same), seed=0)
    assert [f.verdict for f in fs] == ["no effect"] * 3
    assert hybrid_findings({"base": {"accuracy": 0.5}, "thinking": {"accuracy": 0.7}}) == []  # an old run: no outcomes


def test_report_headlines_the_gap_and_the_ablations_not_beaten():
    from thinklens.calibration.stats import findings_doc
    from thinklens.steering.jobs.hybrid import report

    n = 120
    base, thinking = [0] * 60 + [1] * 60, [1] * 100 + [0] * 20
    hybrid = [1] * 40 + [0] * 20 + [1] * 60
    rows = _rows(base=base, thinking=thinking, hybrid=hybrid, random_vectors=hybrid)
    summary = {m: {"accuracy": r["accuracy"], "accuracy_std": 0.0, "fired_fraction": 0.1, "changed_fraction": 0.05,
                   "gap_recovered": None} for m, r in rows.items()}
    summary["findings"] = findings_doc(hybrid_findings(rows))
    text = report(summary)
    assert "the hybrid recovers 1.000" in text and "not every ablation is beaten: random_vectors" in text
    assert len(summary["findings"]) == 4 and n == len(base)


@pytest.mark.skipif(__import__("thinklens.zoo.registry", fromlist=["zoo_path"]).zoo_path("tiny-cot") is None,
                    reason="needs the committed zoo")
def test_the_job_summary_has_findings(tmp_path):
    from thinklens import HookedModel
    from thinklens.runs.folders import RunFolder
    from thinklens.runs.jobs import get_job, run_job

    assert get_job("hybrid").make_config().n_eval >= 100
    models = {"model": HookedModel.load("tiny-cot"), "thinking": HookedModel.load("tiny-think")}
    summary = run_job("hybrid", **models, n_categories=3, k=1, sae_steps=20, vector_iters=3, vector_batch=8,
                      strengths=(0.5, 1.0), windows=(1,), n_train=12, n_eval=12, max_steps=3,
                      modes=("base", "thinking", "hybrid", "random_vectors"), out=tmp_path / "h", progress=False)
    claims = [f["claim"] for f in summary["findings"]]
    assert claims[:3] == ["the thinking model beats the base model (there is a gap to recover)",
                          "the hybrid raises accuracy over the base model",
                          "the hybrid recovers part of the base-to-thinking gap"]
    assert claims[3] == "the hybrid beats its ablation random_vectors" and all(f["n"] == 12 for f in summary["findings"])
    assert RunFolder.open(tmp_path / "h").read_result("findings")["findings"] == summary["findings"]
