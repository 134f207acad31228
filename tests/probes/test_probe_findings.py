"""The probe job's findings: planted and null settings give ``effect`` and ``no effect``, the site is chosen on a
half of the problems that the reported numbers never see, the intervals match an independent computation, and the
job's summary carries them."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import r2_score, roc_auc_score
from zoo_fixtures import reasoner, zooish  # noqa: F401 - fixtures

from thinklens.calibration.findings import VERDICTS
from thinklens.probes.probe_findings import auroc_rows, held_out_choice, probe_findings, r2_rows
from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import run_job


def _labels(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(np.tile([0, 1], n // 2))


def test_planted_label_signal_is_an_effect_and_noise_is_not():
    rng = np.random.default_rng(1)
    y = _labels(120, 1)
    planted = {"noise": rng.normal(size=(120, 4)), "signal": rng.normal(size=(120, 4)) + 1.5 * y[:, None]}
    null = {"a": rng.normal(size=(120, 4)), "b": rng.normal(size=(120, 4))}
    auc, acc = probe_findings(planted, y, target="correct", folds=3)
    assert (auc.verdict, acc.verdict, auc.extra["site"]) == ("effect", "effect", "signal")
    assert auc.n == acc.n == 60 and auc.extra["n_select"] == 60 and auc.ci[0] > 0.5
    assert auc.control_value == max(0.5, auc.extra["shuffled_label_auroc"])
    assert acc.control == "majority class" and acc.control_value == 0.5
    assert [f.verdict for f in probe_findings(null, y, target="correct", folds=3)] == ["no effect", "no effect"]


def test_planted_running_value_is_an_effect_and_noise_is_not():
    rng = np.random.default_rng(2)
    groups = np.repeat(np.arange(40), 6)
    y = rng.normal(size=240)
    planted = {"embed": rng.normal(size=(240, 3)), "resid_post.0": np.c_[y + 0.3 * rng.normal(size=240), rng.normal(size=(240, 2))]}
    null = {"embed": rng.normal(size=(240, 3))}
    (f,) = probe_findings(planted, y, target="intermediate", groups=groups, folds=3)
    assert (f.verdict, f.statistic, f.extra["site"], f.n) == ("effect", "r2", "resid_post.0", 20)
    assert f.control_value == max(0.0, f.extra["shuffled_label_r2"]) and f.ci[0] > 0.5
    (g,) = probe_findings(null, y, target="intermediate", groups=groups, folds=3)
    assert g.verdict == "no effect" and g.ci[0] < g.control_value


def test_steps_control_explains_everything_then_the_probe_is_no_effect():
    rng = np.random.default_rng(3)
    n_steps = rng.integers(1, 5, size=160)
    steps = np.eye(5)[n_steps]
    y = (rng.random(160) < np.where(n_steps <= 2, 0.85, 0.15)).astype(int)  # correctness is the difficulty, and noise
    feats = {"resid_post.0": np.c_[steps + 0.05 * rng.normal(size=(160, 5)), rng.normal(size=(160, 2))]}
    beats_chance, _, beats_steps = probe_findings(feats, y, target="correct", folds=3, steps=steps)
    assert beats_chance.verdict == "effect" and beats_steps.control == "steps-only probe (same problems)"
    assert beats_steps.verdict == "no effect" and beats_steps.extra["diff_ci"][0] <= 0 <= beats_steps.extra["diff_ci"][1]
    h = rng.normal(size=160)  # what the model knows beyond the difficulty
    more = ((n_steps <= 2) + 1.5 * h > 0.5).astype(int)
    *_, planted = probe_findings({"resid_post.0": np.c_[steps, h]}, more, target="correct", folds=3, steps=steps)
    assert planted.verdict == "effect" and planted.extra["diff_ci"][0] > 0
    exact = (n_steps <= 2).astype(int)  # difficulty ranks every problem: no probe can beat it
    *_, perfect = probe_findings(feats, exact, target="correct", folds=3, steps=steps)
    assert perfect.control_value == 1.0 and perfect.verdict == "at ceiling"


def test_the_site_is_chosen_without_the_report_half():
    """Changing the report half's features cannot change the chosen site; the report rows are disjoint from the
    selection rows and hold whole problems."""
    rng = np.random.default_rng(4)
    y = _labels(80, 4)
    feats = {"a": rng.normal(size=(80, 3)) + 1.0 * y[:, None], "b": rng.normal(size=(80, 3))}
    c1 = held_out_choice(feats, y, probe=_probe(), classify=True, folds=3)
    rigged = {"a": feats["a"].copy(), "b": feats["b"].copy()}
    rigged["b"][c1.report] += 5.0 * y[c1.report, None]  # a perfect site, but only on the report half
    c2 = held_out_choice(rigged, y, probe=_probe(), classify=True, folds=3)
    assert c1.site == c2.site == "a" and np.array_equal(c1.report, c2.report)
    groups = np.repeat(np.arange(20), 3)
    c3 = held_out_choice({"x": rng.normal(size=(60, 2))}, rng.normal(size=60), probe=_ridge(), classify=False,
                         folds=2, groups=groups)
    sel = np.setdiff1d(np.arange(60), c3.report)
    assert not set(groups[sel]) & set(groups[c3.report]) and c3.n_report == c3.n_select == 10


def test_interval_statistics_match_sklearn():
    rng = np.random.default_rng(5)
    y, s = _labels(30, 5), rng.normal(size=30)
    idx = rng.integers(0, 30, size=(5, 30))
    want = [roc_auc_score(y[i], s[i]) for i in idx]
    np.testing.assert_allclose(auroc_rows(s, y, idx), want)
    groups = np.repeat(np.arange(10), 3)
    v, p = rng.normal(size=30), rng.normal(size=30)
    gidx = rng.integers(0, 10, size=(4, 10))
    rows = [np.concatenate([np.flatnonzero(groups == g) for g in gi]) for gi in gidx]
    np.testing.assert_allclose(r2_rows(p, v, groups, gidx), [r2_score(v[r], p[r]) for r in rows])


def test_too_few_problems_say_so():
    rng = np.random.default_rng(0)
    y = np.array([0, 1] * 6)
    found = probe_findings({"a": rng.normal(size=(12, 2)) + 3.0 * y[:, None]}, y, target="correct", folds=3)
    assert [(f.verdict, f.n) for f in found] == [("too few samples", 6)] * 2  # 6 report problems < MIN_N
    rare = np.array([0] * 38 + [1] * 2)  # one right answer per half: no CV within a half
    (f,) = probe_findings({"a": rng.normal(size=(40, 2))}, rare, target="correct", folds=3)
    assert f.verdict == "too few samples" and "half" in f.extra["why"]


def test_bad_target_is_refused():
    from thinklens.errors import ThinklensError

    with pytest.raises(ThinklensError, match="correct or intermediate"):
        probe_findings({"a": np.zeros((20, 2))}, np.zeros(20), target="values")


def _probe():
    from thinklens.probes.estimators import LinearProbe

    return LinearProbe()


def _ridge():
    from thinklens.probes.estimators import RidgeProbe

    return RidgeProbe()


def _check_summary(summary: dict) -> None:
    assert summary["findings"]
    for f in summary["findings"]:
        assert {"claim", "n", "ci", "control", "control_value", "verdict"} <= set(f)
        assert f["verdict"] in VERDICTS and len(f["ci"]) == 2 and f["n"] > 0 and f["control"]


def test_intermediate_job_summary_carries_findings(zooish, tmp_path):
    run_job("probe", model=zooish, n_problems=24, max_steps=2, folds=2, sites=("embed", "resid_post.0"),
            prompt_format="think", runs=tmp_path, run_id="p", progress=False, threads=1)
    summary = RunFolder.open(tmp_path / "probe" / "p").meta()["summary"]
    _check_summary(summary)
    (f,) = summary["findings"]
    assert f["statistic"] == "r2" and f["n"] == 12 and "held-out split" in f["extra"]["layer_choice"]


def test_correct_job_summary_carries_findings(reasoner, tmp_path):
    run_job("probe", model=reasoner, target="correct", n_problems=40, min_steps=5, max_steps=8, folds=2,
            sites=("resid_post.0",), intention=False, runs=tmp_path, run_id="c", progress=False, threads=1)
    summary = RunFolder.open(tmp_path / "probe" / "c").meta()["summary"]
    _check_summary(summary)
    assert {f["statistic"] for f in summary["findings"]} <= {"auroc", "accuracy"}


def test_a_majority_guess_near_every_problem_is_no_headroom_not_at_ceiling():
    """Kills: 'at ceiling' for a majority class of 58 in 60 (the top of the scale is 60/60; the guess leaves no room)."""
    rng = np.random.default_rng(3)
    y = np.zeros(120, dtype=int)
    y[rng.choice(120, 4, replace=False)] = 1  # 4 of 120 positive: the majority guess is right 58 times in 60
    feats = {"a": rng.normal(size=(120, 4)) + 2.0 * y[:, None], "b": rng.normal(size=(120, 4))}
    acc = probe_findings(feats, y, target="correct", folds=2)[1]
    assert acc.control_value > 0.9 and acc.verdict == "no headroom", (acc.control_value, acc.verdict)
