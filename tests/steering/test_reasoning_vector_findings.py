"""Reasoning-vector findings: alpha chosen on one split and reported on the other, paired against alpha 0 and
the norm-matched random control; the mutants these tests kill are named in each test."""

from __future__ import annotations

import numpy as np
import pytest

from thinklens import ThinklensError
from thinklens.calibration.stats import split_indices
from thinklens.steering import reasoning_vectors as rv
from thinklens.steering.reasoning_vectors import choose_alpha, sweep_findings


def _sweep_good_on(idx_good: np.ndarray, n: int) -> dict[float, list[bool]]:
    """alpha 0: half right; alpha 1: right exactly on ``idx_good`` and wrong elsewhere; alpha 2: alpha 0's outcomes."""
    base = [i % 2 == 0 for i in range(n)]
    good = np.zeros(n, dtype=bool)
    good[idx_good] = True
    return {0.0: base, 1.0: good.tolist(), 2.0: list(base)}


def test_alpha_is_chosen_on_the_selection_split_and_reported_on_the_other():
    # Mutant killed: "alpha chosen on the reporting split". alpha 1 is perfect on the reporting split and wrong
    # everywhere on the selection split: a sweep that chooses where it reports picks it and claims an effect.
    n = 80
    select, report = split_indices(n, seed=3)
    sweep = _sweep_good_on(report, n)
    findings, choice = sweep_findings(sweep, seed=3)
    assert choice["alpha"] == 0.0 and set(choice["select"]) == set(select.tolist())
    assert not set(choice["select"]) & set(choice["report"])
    assert findings[0].verdict == "no effect" and findings[0].n == len(report)


def test_the_choice_ignores_the_reporting_split(monkeypatch):
    # the same mutant, written as the code would be: split_indices returning the reporting problems for both
    n = 80
    _, report = split_indices(n, seed=3)
    sweep = _sweep_good_on(report, n)
    monkeypatch.setattr("thinklens.calibration.stats.split_indices", lambda n, fraction=0.5, seed=0: (report, report))
    mutant, _ = sweep_findings(sweep, seed=3)
    assert mutant[0].verdict == "effect"  # what the mutant claims; the real code (above) says no effect
    monkeypatch.undo()
    # changing only the reporting split's outcomes never changes the chosen alpha
    flipped = {a: [(not c) if i in set(report.tolist()) else c for i, c in enumerate(v)] for a, v in sweep.items()}
    assert sweep_findings(flipped, seed=3)[1]["alpha"] == sweep_findings(sweep, seed=3)[1]["alpha"]


def test_a_real_gain_is_an_effect_and_a_control_equal_to_v_is_not_beaten():
    # Mutant killed: "control equal to v itself": v can never beat it, so the control finding says no effect.
    rng = np.random.default_rng(0)
    n = 300
    base = rng.random(n) < 0.4
    lifted = base | (rng.random(n) < 0.4)  # +~24 points, only ever fixing problems
    sweep = {0.0: base.tolist(), 1.0: lifted.tolist()}
    random_ctrl = {0.0: base.tolist(), 1.0: (base & (rng.random(n) < 0.9)).tolist()}
    findings, choice = sweep_findings(sweep, {"norm-matched random direction": random_ctrl}, seed=0, min_gain=0.05)
    assert choice["alpha"] == 1.0 and [f.verdict for f in findings] == ["effect", "effect"]
    assert findings[1].extra["otherwise"] == "random vectors do as well"
    same, _ = sweep_findings(sweep, {"norm-matched random direction": sweep}, seed=0)
    assert same[1].verdict == "no effect" and same[1].extra["diff"] == 0.0


def test_min_gain_and_ties_choose_nothing():
    n = 200
    base = [i % 2 == 0 for i in range(n)]
    small = list(base)
    for i in range(1, 40, 2):  # +10% of the odd problems fixed: a real but small gain
        small[i] = True
    f, _ = sweep_findings({0.0: base, 1.0: small}, seed=1, min_gain=0.5)
    assert f[0].verdict == "no effect" and f[0].extra["min_gain"] == 0.5
    assert choose_alpha({-1.0: base, 0.0: base, 1.0: base}, range(n)) == 0.0  # a tie chooses alpha 0


def test_sweeps_must_share_problems_and_include_alpha_0():
    with pytest.raises(ThinklensError, match="alpha 0"):
        sweep_findings({1.0: [True] * 10})
    with pytest.raises(ThinklensError, match="one per problem"):
        sweep_findings({0.0: [True] * 10, 1.0: [True] * 9})


def test_the_null_rarely_finds_an_effect():
    # an alpha sweep of pure noise (every alpha flips 15% of alpha 0's outcomes at random) over 7 alphas
    hits = 0
    for s in range(60):
        rng = np.random.default_rng(s)
        base = rng.random(200) < 0.5
        sweep = {a: (base ^ (rng.random(200) < 0.15)).tolist() if a else base.tolist() for a in (-1.0, 0.0, 0.5, 1, 1.5, 2, 3)}
        hits += sweep_findings(sweep, seed=s)[0][0].is_effect
    assert hits <= 6  # 5% of 60 is 3 (the split is what keeps it there: see the tests above for its mutant)


def test_v_is_the_grpo_update_of_its_recorded_parent():
    # Mutant killed: "v taken against the wrong model": A + v is exactly the GRPO model, and another A is refused.
    import torch

    from thinklens.steering.vector_validation import LINEAGE, lineage_vector, zoo_folder

    pytest.importorskip("transformers")
    try:
        v = lineage_vector()
    except ThinklensError as e:  # the committed zoo is absent
        pytest.skip(str(e))
    a, grpo = rv.load_causal_lm(zoo_folder(LINEAGE["a"])), rv.load_causal_lm(zoo_folder(LINEAGE["grpo"]))
    merged = rv.apply_vector(a, v, 1.0)
    assert all(torch.equal(p, q) for p, q in zip(merged.parameters(), grpo.parameters()))
    with pytest.raises(ThinklensError, match="recorded parent"):
        lineage_vector({**LINEAGE, "a": "tiny-pre"})
    with pytest.raises(ThinklensError, match="recorded parent"):
        lineage_vector({**LINEAGE, "a": LINEAGE["b"]})


def test_the_job_reports_findings_on_held_out_problems(tmp_path):
    from thinklens.runs.folders import RunFolder
    from thinklens.runs.jobs import run_job
    from thinklens.zoo.registry import zoo_path

    if zoo_path("tiny-cot") is None or zoo_path("tiny-think") is None:
        pytest.skip("needs the committed zoo")
    summary = run_job("reasoning-vector", model="tiny-pre", a="data/zoo/tiny-grpo", b="tiny-cot", base="tiny-pre",
                      alphas=(0.0, 1.0), groups=("all",), n_per_steps=12, steps=(8,), null_a="tiny-think", null_b="tiny-pre",
                      save_alpha=None, out=tmp_path / "rv", progress=False)
    run = RunFolder.open(tmp_path / "rv")
    doc = run.read_result("findings")
    choice = doc["choices"]["all"]
    assert not set(choice["select"]) & set(choice["report"]) and len(choice["select"]) + len(choice["report"]) == 12
    controls = [f["control"].split(" at alpha")[0] for f in summary["findings"]]
    assert controls == ["alpha 0", "norm-matched random direction", "structured null"]
    assert all(f["n"] == len(choice["report"]) for f in summary["findings"])
    assert summary["best"]["n_report"] == len(choice["report"]) and summary["best"]["alpha"] == choice["alpha"]
    groups = {r["group"] for r in run.read_result("alpha_sweep")}
    assert groups == {"all", "all (random direction)", "all (structured null)"}
    with pytest.raises(ThinklensError, match="both or neither"):
        run_job("reasoning-vector", null_a="tiny-think", out=tmp_path / "bad", progress=False)
