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
    # hybrid 100/120 and thinking 100/120 against base 60/120: the whole gap, but random vectors do as well, so the
    # gap is not shown to be the hybrid's (an effect must beat every control the job ran)
    assert gap.verdict == "no effect" and gap.ci[0] > 0 and gap.value == pytest.approx(1.0)
    assert gap.extra["verdict_before_controls"] == "effect" and gap.extra["controls_not_beaten"] == ["random_vectors"]
    assert gap.extra["otherwise"].startswith("not shown: the hybrid (0.8333) does not beat every control it ran: "
                                             "random_vectors 0.8333 (no effect)")
    assert fs["the hybrid raises accuracy over the base model"].verdict == "no effect"
    rv = fs["the hybrid beats its ablation random_vectors"]
    assert rv.verdict == "no effect" and rv.extra["otherwise"] == CONTROL_WORDS["random_vectors"] == "random vectors do as well"
    assert rv.extra["control_gap_recovered"] == rv.extra["gap_recovered"]
    assert fs["the hybrid beats its ablation bias_only"].verdict == "effect"


def test_an_effect_must_beat_every_control_the_job_ran():
    """Seen after `make demo`: hybrid "effect" at 0.76 while random vectors scored 0.77 and the base in its own style
    0.96. The hybrid's claims are effects only when it beats every ablation and the base in its own prompt format."""
    n = 100
    base = [1] * 40 + [0] * 60
    thinking = [1] * 90 + [0] * 10
    hybrid = [1] * 76 + [0] * 24
    random = [1] * 77 + [0] * 23
    own = {"accuracy": 0.96, "correct": [True] * 96 + [False] * 4}
    fs = {f.claim: f for f in hybrid_findings(_rows(base=base, thinking=thinking, hybrid=hybrid, random_vectors=random),
                                              own_style=own)}
    gap, over = fs["the hybrid recovers part of the base-to-thinking gap"], fs["the hybrid raises accuracy over the base model"]
    assert gap.extra["verdict_before_controls"] == over.extra["verdict_before_controls"] == "effect"
    assert gap.verdict == over.verdict == "no effect"
    assert gap.extra["controls_not_beaten"] == ["random_vectors", "base model in its own prompt format"]
    own_f = fs["the hybrid beats the base model in its own prompt format"]
    assert own_f.verdict == "no effect" and own_f.extra["control_wins"] and own_f.extra["test"] == "mcnemar"
    # the same hybrid beating both controls keeps its effect
    weak = {"accuracy": 0.4, "correct": [True] * 40 + [False] * 60}
    fs = {f.claim: f for f in hybrid_findings(_rows(base=base, thinking=thinking, hybrid=hybrid, random_vectors=base),
                                              own_style=weak)}
    assert fs["the hybrid recovers part of the base-to-thinking gap"].verdict == "effect"
    # an old run's own-style row without outcomes: an unpaired comparison, still a control
    fs = {f.claim: f for f in hybrid_findings(_rows(base=base, thinking=thinking, hybrid=hybrid), own_style={"accuracy": 0.96})}
    assert fs["the hybrid recovers part of the base-to-thinking gap"].verdict == "no effect" and n == len(hybrid)


def test_no_gap_no_claim_and_resumed_rows_without_outcomes():
    same = [1, 0] * 30
    fs = hybrid_findings(_rows(base=same, thinking=same, hybrid=same), seed=0)
    assert [f.verdict for f in fs] == ["no effect"] * 3
    assert hybrid_findings({"base": {"accuracy": 0.5}, "thinking": {"accuracy": 0.7}}) == []  # an old run: no outcomes


def test_report_headlines_the_gap_and_the_ablations_not_beaten():
    from thinklens.calibration.findings import findings_doc
    from thinklens.steering.jobs.hybrid import report

    n = 120
    base, thinking = [0] * 60 + [1] * 60, [1] * 100 + [0] * 20
    hybrid = [1] * 40 + [0] * 20 + [1] * 60
    rows = _rows(base=base, thinking=thinking, hybrid=hybrid, random_vectors=hybrid)
    summary = {m: {"accuracy": r["accuracy"], "accuracy_std": 0.0, "fired_fraction": 0.1, "changed_fraction": 0.05,
                   "gap_recovered": None} for m, r in rows.items()}
    summary["findings"] = findings_doc(hybrid_findings(rows))
    text = report(summary)
    assert "the hybrid recovers 1.000" not in text and "not every ablation is beaten: random_vectors" in text
    assert "not shown: the hybrid (0.8333) does not beat every control it ran: random_vectors" in text
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
