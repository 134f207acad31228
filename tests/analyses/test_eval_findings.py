"""Findings of ``eval`` and ``zoo-eval``: the accuracy against the majority-answer guess on the same problems
(McNemar, or a sign-flip test over problems when each has several samples), reasoning against answer tokens, the
per-model headline of zoo-eval; a planted effect and a null for each, oracles computed here by hand (Wilson's
formula, the binomial test on the discordant pairs, the most frequent gold answer by counting), and both jobs end to
end at their smallest settings."""

import json
import math
from collections import Counter

import pytest
from scipy.stats import binomtest

from thinklens.analyses.eval_findings import eval_findings, majority_correct
from thinklens.zoo.accuracy import ZooEvalResult
from thinklens.zoo.jobs.zoo_eval import summary as zoo_summary
from thinklens.zoo.jobs.zoo_eval import zoo_findings
from thinklens.zoo.registry import zoo_path


def _wilson(k, n, z=1.959963984540054):  # the score interval by its formula (Wilson 1927)
    p = k / n
    mid, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (mid - half) / (1 + z * z / n), (mid + half) / (1 + z * z / n)


def _rows(correct, golds, samples=1, reasoning=10, answer=2):
    return [{"i": i // samples, "sample": i % samples, "gold": g, "correct": c, "n_tokens": reasoning + answer,
             "n_reasoning_tokens": reasoning, "n_answer_tokens": answer} for i, (c, g) in enumerate(zip(correct, golds))]


def test_majority_guess_is_the_most_frequent_answer_of_each_group():
    golds = [5, 5, 7, "7", 7, 1, 2, 2]
    groups = ["a", "a", "a", "a", "a", "b", "b", "b"]
    assert majority_correct(golds) == [str(g) == "7" for g in golds]  # 7 three times ("7" and 7 are one answer)
    assert majority_correct(golds, groups) == [False, False, True, True, True, False, True, True]


def test_eval_accuracy_against_the_majority_guess_planted_and_null():
    golds = [str(i % 5) for i in range(50)]  # every answer 10 times: the guess ("0") is right on 10
    guess = majority_correct(golds)
    right = [i % 5 != 4 for i in range(50)]  # planted: 40 right, including every problem the guess gets
    (acc, tokens) = eval_findings(_rows(right, golds), model="m", data="d")
    assert (acc["value"], acc["n"], acc["control_value"]) == (0.8, 50, 0.2) and acc["verdict"] == "effect"
    assert acc["ci"] == pytest.approx(list(_wilson(40, 50)), abs=1e-6)
    only_m = sum(r and not g for r, g in zip(right, guess))
    only_g = sum(g and not r for r, g in zip(right, guess))
    assert acc["p"] == pytest.approx(binomtest(only_m, only_m + only_g, 0.5).pvalue, abs=1e-6) and acc["extra"]["test"] == "mcnemar"
    null = [g for g in guess]  # null: right exactly where the guess is
    (acc, _) = eval_findings(_rows(null, golds), model="m", data="d")
    assert acc["verdict"] == "no effect" and acc["p"] == 1.0
    (acc, _) = eval_findings(_rows(right[:6], golds[:6]), model="m", data="d")
    assert acc["verdict"] == "too few samples" and acc["n"] == 6


def test_eval_with_several_samples_counts_problems_not_completions():
    golds = [g for i in range(30) for g in [str(i % 6)] * 4]  # 30 problems, 4 samples each
    correct = [i % 4 < 3 for i in range(120)]  # 3 of 4 samples right on every problem
    (acc, _) = eval_findings(_rows(correct, golds, samples=4), model="m", data="d")
    assert acc["n"] == 30 and acc["value"] == pytest.approx(0.75) and acc["extra"]["samples"] == 4
    assert acc["extra"]["test"] == "sign-flip permutation" and acc["verdict"] == "effect"


def test_eval_tokens_planted_and_null():
    golds = [str(i) for i in range(20)]
    (_, t) = eval_findings(_rows([True] * 20, golds, reasoning=30, answer=3), model="m", data="d")
    assert (t["value"], t["control_value"], t["verdict"]) == (30.0, 3.0, "effect")
    assert t["extra"]["mean_tokens"] == 33.0 and t["extra"]["mean_tokens_ci"] == [33.0, 33.0]
    rows = _rows([True] * 20, golds)
    for k, r in enumerate(rows):  # null: half the completions lean each way by the same amount
        r["n_reasoning_tokens"], r["n_answer_tokens"] = (8, 4) if k % 2 else (4, 8)
    (_, t) = eval_findings(rows, model="m", data="d")
    assert t["verdict"] == "no effect"


def _problems_answers(n, steps, seed):  # the zoo's held-out stream, drawn here without the protocol helper
    from thinklens.tasks import generate_problems

    return [p.answer for p in generate_problems(n, seed=seed * 1000 + steps, n_steps=steps)]


def test_zoo_eval_headline_per_model_planted_and_null():
    n, seed = 30, 10_000
    per_step = {s: Counter(_problems_answers(n, s, seed)).most_common(1)[0][1] for s in (1, 2)}
    guess = sum(per_step.values())
    good = ZooEvalResult("good", "cot", seed, n, {1: 1.0, 2: 0.9}, {})
    blind = ZooEvalResult("blind", "direct", seed, n, {s: k / n for s, k in per_step.items()}, {})
    f_good, f_blind, f_vs = zoo_findings([good, blind])
    assert f_good["control_value"] == pytest.approx(guess / 60, abs=1e-6) and f_good["n"] == 60 and f_good["verdict"] == "effect"
    assert f_good["ci"] == pytest.approx(list(_wilson(57, 60)), abs=1e-6)
    assert f_blind["verdict"] == "no effect"
    assert f_vs["claim"] == "blind falls below good" and f_vs["verdict"] == "effect"
    twin = ZooEvalResult("twin", "cot", seed, n, {1: 0.97, 2: 0.9}, {})
    assert zoo_findings([good, twin])[-1]["verdict"] == "no effect"  # one problem apart
    s = zoo_summary([good])
    assert s["accuracy_ci"]["good"]["2"] == pytest.approx(list(_wilson(27, 30)), abs=1e-6)


needs_zoo = pytest.mark.skipif(zoo_path("tiny-cot") is None, reason="tiny-cot not trained")


@needs_zoo
def test_eval_job_writes_findings_to_its_summary_and_prints_them(tmp_path, capsys):
    from thinklens.cli import main

    out = tmp_path / "eval"
    assert main(["run", "eval", "--model", "tiny-cot", "--data", "synthetic:2-3:3", "--max-new-tokens", "30",
                 "--out", str(out), "--no-progress", "--threads", "1"]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "meta.json").read_text())["summary"]
    assert summary["findings"] == json.loads((out / "results" / "eval.json").read_text())["findings"]
    acc, tokens = summary["findings"]
    rows = json.loads((out / "results" / "eval_problems.json").read_text())
    assert acc["n"] == 6 and acc["value"] == pytest.approx(sum(r["correct"] for r in rows) / 6)
    assert acc["verdict"] == tokens["verdict"] == "too few samples"  # 6 problems
    assert "findings:\n  [too few samples] tiny-cot not shown to beat always giving the most frequent answer (too few samples; " in printed


@needs_zoo
def test_zoo_eval_job_writes_findings_to_its_summary(tmp_path):
    from thinklens.runs.jobs import run_job

    (r,) = run_job("zoo-eval", model="tiny-cot", n_eval=6, step_counts=(1, 2), out=tmp_path / "z", progress=False, threads=1)
    summary = json.loads((tmp_path / "z" / "meta.json").read_text())["summary"]
    (f,) = summary["findings"]
    assert f["n"] == 12 and f["value"] == pytest.approx(sum(r.accuracy.values()) / 2)
    assert f["extra"]["model"] == "tiny-cot" and set(summary["accuracy_ci"]["tiny-cot"]) == {"1", "2"}


def test_no_reasoning_token_finding_without_a_thinking_span():
    """Seen on real weights: eval's "writes more reasoning tokens than answer tokens" finding on a model
    whose format has no thinking span, where every completion has 0 reasoning tokens by construction. No such
    finding there; with a span (given or seen in the rows) it stays."""
    golds = [str(i) for i in range(20)]
    plain = _rows([True] * 20, golds, reasoning=0, answer=12)
    assert [f["statistic"] for f in eval_findings(plain, model="m", data="d", thinking_span=False)] == ["accuracy"]
    assert [f["statistic"] for f in eval_findings(plain, model="m", data="d")] == ["accuracy"]  # inferred: none
    spanned = eval_findings(plain, model="m", data="d", thinking_span=True)  # a span, but no reasoning written
    assert [f["statistic"] for f in spanned] == ["accuracy", "mean reasoning tokens"] and spanned[1]["verdict"] == "no effect"
    some = _rows([True] * 20, golds, reasoning=30, answer=3)
    assert eval_findings(some, model="m", data="d", thinking_span=False)[-1]["statistic"] == "accuracy"
