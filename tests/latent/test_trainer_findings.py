"""Findings of the jobs that had none: the latent trainers (held-out accuracy against the majority guess, the
training-loss change), LatentSeek (after vs before and vs oracle best-of-N, McNemar), GRPO (against its start, the
reward's change) and the data jobs (``findings: []`` with a reason); a planted effect and a null for each new kind of
finding, oracles computed here by hand (Wilson's formula, the binomial test on the discordant pairs), and a registry
check that names where every job's findings come from."""

import json
import math
from collections import Counter

import numpy as np
import pytest
from scipy.stats import binomtest

from thinklens.latent.config import SFTConfig
from thinklens.latent.latent_findings import seek_findings, table_findings, training_findings, window_change_finding
from thinklens.latent.training_loop import evaluation_problems
from thinklens.runs.jobs import run_job


def _wilson(k, n, z=1.959963984540054):  # the score interval by its formula (Wilson 1927)
    p = k / n
    mid, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (mid - half) / (1 + z * z / n), (mid + half) / (1 + z * z / n)


# ---------------------------------------------------------------- the loss (or reward) change


def test_window_change_is_last_minus_first_window_mean_and_falls_only_when_planted():
    rng = np.random.default_rng(0)
    falling = 2.0 - 0.01 * np.arange(200) + rng.normal(0, 0.05, 200)  # planted: the loss falls by ~1.5
    f = window_change_finding("loss falls", falling.tolist(), statistic="loss change", higher_is_effect=False)
    assert f.n == 50 and f.extra["window"] == 50
    assert f.value == pytest.approx(falling[-50:].mean() - falling[:50].mean())  # oracle: the two window means
    assert f.ci[1] < 0 and f.verdict == "effect"
    flat = (1.0 + rng.normal(0, 0.05, 200)).tolist()  # null: noise around a constant
    g = window_change_finding("loss falls", flat, statistic="loss change", higher_is_effect=False)
    assert g.ci[0] < 0 < g.ci[1] and g.verdict == "no effect"
    rising = window_change_finding("loss falls", (-falling).tolist(), statistic="loss change", higher_is_effect=False)
    assert rising.verdict == "no effect"  # a rising loss is never a fall
    short = window_change_finding("loss falls", [3.0, 2.0, 1.0, 0.5], statistic="loss change", higher_is_effect=False)
    assert short.verdict == "too few samples" and short.n == 1


def _cfg(n_eval=20):
    return SFTConfig(model="tiny-cot", n_eval=n_eval, min_steps=3, max_steps=4)


def _history(losses, phase="sft"):
    return [{"step": i, "phase": phase, "loss": x} for i, x in enumerate(losses)]


def test_training_accuracy_is_measured_against_the_majority_guess_per_step_count():
    cfg = _cfg()
    problems = evaluation_problems(cfg)  # the held-out problems the trainer grades: 20 of 3 and of 4 steps
    guess = sum(Counter(p.answer for p in ps).most_common(1)[0][1] for ps in problems.values())  # oracle
    planted = {"eval": {"accuracy": {3: 0.9, 4: 0.8}}, "history": _history([1.0] * 8)}
    acc, loss = training_findings(cfg, planted)
    assert (acc["value"], acc["n"]) == (pytest.approx(34 / 40), 40)
    assert acc["control_value"] == pytest.approx(guess / 40) and acc["verdict"] == "effect"
    assert acc["ci"] == pytest.approx(list(_wilson(34, 40)), abs=1e-6)
    assert loss["verdict"] == "too few samples"  # 8 steps: windows of 2
    null = {"eval": {"accuracy": {3: guess / 40, 4: guess / 40}}}  # as good as the guess
    (f,) = training_findings(cfg, null)
    assert f["verdict"] == "no effect" and "not shown to beat guessing" in f["extra"]["otherwise"]


def test_training_loss_finding_uses_the_last_phase_only():
    # a first phase whose loss is on another scale must not count: the last phase is flat
    hist = _history([9.0] * 100, phase="encoder") + _history((1.0 + 0.01 * np.sin(np.arange(100))).tolist(), phase="joint")
    (f,) = training_findings(_cfg(), {"history": hist})
    assert f["verdict"] == "no effect" and "joint" in f["claim"] and f["extra"]["steps"] == 100


def test_sft_job_summary_holds_its_findings(zoo_like_dir, tmp_path):
    """The smallest real trainer run: 4 steps, 2 held-out problems of 3 steps; the summary in meta.json holds the
    accuracy and loss findings (both 'too few samples' at this size) beside the trainer's own keys."""
    metrics = run_job("sft", model=str(zoo_like_dir), train_steps=4, batch_size=4, n_eval=2, min_steps=3, max_steps=3,
                      runs=tmp_path, run_id="s", progress=False, threads=1)
    summary = json.loads((tmp_path / "sft" / "s" / "meta.json").read_text())["summary"]
    assert "train_wall_s" in summary and "mean_accuracy" in summary
    acc, loss = summary["findings"]
    assert (acc["statistic"], acc["n"], acc["verdict"]) == ("accuracy", 2, "too few samples")
    assert acc["value"] == pytest.approx(metrics["eval"]["accuracy"][3])
    assert loss["statistic"].startswith("loss change") and loss["verdict"] == "too few samples"


# ---------------------------------------------------------------- LatentSeek


def test_table_findings_compare_every_latent_row_with_every_no_cot_row_on_the_same_problems():
    """The matched No-CoT SFT (answer-only, ``no_cot``) is a control beside tiny-direct, never a method compared with
    them, and comes first (tiny-direct is unmatched: tests/latent/test_matched_baseline.py); a row on other problems is
    compared with nothing and says it has no matched No-CoT (mutants killed: only the first No-CoT row as control; the
    matched No-CoT compared as a method; rows on other problems paired)."""
    from thinklens.calibration.stats import mcnemar

    serial = {"parent": "tiny-cot", "steps": 7000, "problems": "6-8 steps"}
    rows = [{"label": "No-CoT SFT (tiny-direct)", "method": "direct", "problems": "6-8 steps", "accuracy": 0.1, "n": 20,
             "training": {"parent": "tiny-pre", "steps": 250, "problems": "1-8 steps"}},
            {"label": "SFT (No-CoT, 7000 steps)", "method": "sft", "no_cot": True, "problems": "6-8 steps", "accuracy": 0.3,
             "n": 20, "training": serial},
            {"label": "CODI", "method": "codi", "problems": "6-8 steps", "accuracy": 0.8, "n": 20, "training": serial},
            {"label": "CODI (3-4)", "method": "codi", "problems": "3-4 steps", "accuracy": 0.8, "n": 20, "training": serial}]
    correct = {"No-CoT SFT (tiny-direct)": [True] * 2 + [False] * 18, "SFT (No-CoT, 7000 steps)": [True] * 6 + [False] * 14,
               "CODI": [True] * 16 + [False] * 4, "CODI (3-4)": [True] * 16 + [False] * 4}
    found = table_findings(rows, correct)
    assert [(f["claim"].split(" beats ")[0], f["control"]) for f in found] == [
        ("CODI", "SFT (No-CoT, 7000 steps)"), ("CODI (3-4)", "no matched No-CoT in this table"), ("CODI", "No-CoT SFT (tiny-direct)")]
    matched = found[0]
    assert matched["p"] == pytest.approx(mcnemar(correct["CODI"], correct["SFT (No-CoT, 7000 steps)"]), abs=1e-6)
    assert matched["verdict"] == "effect" and matched["n"] == 20
    assert found[1]["verdict"] == "too few samples" and found[1]["n"] == 0


def test_seek_findings_are_mcnemar_on_the_same_problems():
    before = [False] * 30 + [True] * 10
    after = [True] * 22 + [False] * 8 + [True] * 10  # planted: 22 corrected, none broken
    oracle = [True] * 20 + [False] * 20
    vs_cot, vs_oracle = seek_findings(before, after, baseline={"1.0": {"samples": 4, "best_of_n": 0.5, "n": 40}},
                                      oracle_correct={"1.0": oracle})
    assert vs_cot.p == pytest.approx(binomtest(22, 22, 0.5).pvalue) and vs_cot.verdict == "effect"
    only_seek = sum(a and not o for a, o in zip(after, oracle))
    only_oracle = sum(o and not a for a, o in zip(after, oracle))
    assert vs_oracle.p == pytest.approx(binomtest(only_seek, only_seek + only_oracle, 0.5).pvalue)
    assert vs_oracle.extra["test"] == "mcnemar" and vs_oracle.n == 40
    start = [False] * 20 + [True] * 20
    swapped = [True] * 10 + [False] * 20 + [True] * 10  # null: 10 fixed and 10 broken
    null = seek_findings(start, swapped)[0]
    assert null.verdict == "no effect" and null.p == 1.0 and null.value == null.control_value == 0.5


def test_seek_findings_pair_only_the_problems_with_a_baseline():
    after = [True] * 15 + [False] * 5
    (_, f) = seek_findings([False] * 20, after, baseline={"0.5": {"samples": 2, "best_of_n": 0.0, "n": 10}},
                           oracle_correct={"0.5": [False] * 10 + [None] * 10})
    assert f.n == 10 and f.value == 1.0 and f.control_value == 0.0


def test_latent_seek_job_summary_holds_its_findings(zoo_like_dir, tmp_path):
    s = run_job("latent-seek", model=str(zoo_like_dir), n_eval=1, min_steps=2, max_steps=2, max_iters=1, max_new_tokens=8,
                rho=0.5, threshold=1.0, runs=tmp_path, run_id="s", progress=False, threads=1)
    meta = json.loads((tmp_path / "latent-seek" / "s" / "meta.json").read_text())
    fs = meta["summary"]["findings"]
    assert fs == s["findings"] and len(fs) == 3  # after vs before, and vs the oracle at each of two temperatures
    assert {f["verdict"] for f in fs} == {"too few samples"} and meta["summary"]["cot_accuracy"] == s["cot_accuracy"]


# ---------------------------------------------------------------- GRPO


def test_grpo_findings_against_its_start_and_the_reward_curve():
    from thinklens.zoo.jobs.grpo import findings

    ev = lambda a: {"n_per_steps": 25, "accuracy": {str(s): a for s in range(1, 9)}}  # noqa: E731
    rng = np.random.default_rng(1)
    rising = [[i + 1, 0.3 + 0.002 * i + rng.normal(0, 0.02)] for i in range(150)]
    acc, reward = findings({"init": "tiny-cot", "eval": ev(0.96), "start_eval": ev(0.8), "reward_curve": rising})
    assert (acc["n"], acc["value"], acc["control_value"]) == (200, 0.96, 0.8) and acc["verdict"] == "effect"
    assert acc["ci"] == pytest.approx(list(_wilson(192, 200)), abs=1e-6)
    assert reward["verdict"] == "effect" and reward["n"] == 37
    flat = [[i + 1, 0.5 + rng.normal(0, 0.02)] for i in range(150)]
    acc, reward = findings({"init": "tiny-cot", "eval": ev(0.84), "start_eval": ev(0.8), "reward_curve": flat})
    assert acc["verdict"] == "no effect" and reward["verdict"] == "no effect"
    assert findings({"init": "tiny-cot", "reward_curve": []}) == []  # no evaluation, no curve: nothing claimed


# ---------------------------------------------------------------- data jobs and the registry


def test_data_jobs_say_they_claim_nothing(zoo_like_dir, tmp_path, capsys):
    from thinklens.cli import main

    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "Ann has 3 apples ."}\n')
    out = tmp_path / "cap"
    assert main(["run", "capture", "--model", str(zoo_like_dir), "--prompts", str(prompts), "--sites", "resid_post.-1",
                 "--positions", "last", "--out", str(out), "--no-progress", "--threads", "1"]) == 0
    summary = json.loads((out / "meta.json").read_text())["summary"]
    assert summary["findings"] == [] and summary["n_rows"] == 1
    assert "findings: none (data job: no findings)" in capsys.readouterr().out
    data = tmp_path / "c.jsonl"
    data.write_text('{"prompt": "Ann has 3 apples .", "completion": " << 3 + 1 = 4 >>", "answer": "4"}\n')
    out = tmp_path / "imp"
    assert main(["run", "import-traces", "--model", str(zoo_like_dir), "--data", str(data), "--out", str(out),
                 "--no-progress", "--threads", "1"]) == 0
    summary = json.loads((out / "meta.json").read_text())["summary"]
    assert summary["findings"] == [] and summary["findings_note"] == "data job: no findings"
    assert "findings: none (data job: no findings)" in capsys.readouterr().out


def test_every_registered_job_names_where_its_findings_come_from():
    """Each job declares it in its own module (``Job.findings``, ``module:name``); the name exists there."""
    from thinklens.runs.jobs import all_jobs

    missing = sorted(job.name for job in all_jobs() if not job.findings)
    assert not missing, f"jobs that do not declare where their findings come from (Job(findings=...)): {missing}"
    for job in all_jobs():
        assert job.declared("findings") is not None, (job.name, job.findings)


def test_zoo_train_findings_read_the_published_evaluation():
    """zoo-train's findings come from the evaluation stored in zoo.json: tiny-cot beats the majority guess (its
    Wilson interval recomputed here), tiny-direct is not shown to; no evaluation, no findings."""
    from thinklens.calibration.stats import wilson
    from thinklens.zoo.jobs.zoo_train import findings, summary
    from thinklens.zoo.registry import zoo_path

    got = {}
    for name in ("tiny-cot", "tiny-direct"):
        meta = json.loads((zoo_path(name) / "zoo.json").read_text())
        (f,) = findings(meta)
        acc, n = meta["eval"]["accuracy"], meta["eval"]["n_per_steps"]
        right = sum(round(v * n) for v in acc.values())
        assert f["n"] == n * len(acc) and f["value"] == pytest.approx(right / f["n"])
        assert f["ci"] == pytest.approx(list(wilson(right, f["n"])), abs=1e-5) and name in f["claim"]
        got[name] = f["verdict"]
        assert summary(meta)["findings"] == [f]
    assert got == {"tiny-cot": "effect", "tiny-direct": "no effect"}
    assert findings({"name": "x", "eval": {}}) == []


def test_seek_findings_never_call_a_winning_control_at_ceiling():
    """LatentSeek was once "at ceiling" where its control wins. The oracle at 1.0 beating LatentSeek at 0.5 is "no
    effect" (the control does better); "at ceiling" only where the control is at 1.0 and LatentSeek matches it; "no
    headroom" where the control leaves too few problems to fix."""
    before = [True] * 20
    lost = seek_findings(before, [True] * 10 + [False] * 10, oracle_correct={"1.0": [True] * 20})
    assert [f.verdict for f in lost] == ["no effect", "no effect"]
    assert all(f.extra["control_wins"] and f.extra["otherwise"].endswith("does better than LatentSeek") for f in lost)
    tied = seek_findings(before, before, oracle_correct={"1.0": [True] * 20})
    assert [f.verdict for f in tied] == ["at ceiling", "at ceiling"]
    assert tied[1].extra["otherwise"].endswith("is already at 1.0: nothing above it to show")
    near = seek_findings([True] * 58 + [False] * 2, [True] * 58 + [False] * 2)[0]
    assert near.verdict == "no headroom" and "too few problems to fix" in near.extra["otherwise"]
