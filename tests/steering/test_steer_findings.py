"""The steer job's findings (steered rate vs the equal-norm random feature) and its refusal of a word never written."""

from __future__ import annotations

import pytest

from thinklens.errors import ThinklensError
from thinklens.runs.jobs import run_job
from thinklens.steering.jobs.steer import check_word_seen, headlines, steer_findings, word_rates


def _rows():
    rows = []
    for seed in (0, 1):  # two seeds of 20 traces each: the findings pool them (n = 40)
        for arm, c, k in (("feature", 1.0, 15), ("random_feature", 1.0, 5), ("feature", -1.0, 4), ("random_feature", -1.0, 5),
                          ("feature", 0.0, 8), ("random_feature", 0.0, 8)):
            rows.append({"arm": arm, "coeff": c, "seed": seed, "traces_with_word": k, "n_traces": 20})
    return rows


def test_findings_pool_seeds_and_compare_with_the_random_feature():
    """Mutants killed: counts averaged over seeds instead of summed (n would be 20), the control taken from another arm
    or coefficient, a lowering coefficient judged in the raising direction."""
    rates = word_rates(_rows(), "wait")
    assert rates["feature"]["1"] == [30, 40] and rates["random_feature"]["-1"] == [10, 40]
    found = {f.extra["coeff"]: f for f in steer_findings(_rows(), "wait", 7)}
    assert set(found) == {-1.0, 1.0}  # no finding at coefficient 0 (the shared unsteered baseline)
    up, down = found[1.0], found[-1.0]
    assert (up.n, up.value, up.control_value, up.verdict) == (40, 0.75, 0.25, "effect")
    assert up.ci[0] > up.extra["control_ci"][1]  # Wilson intervals apart
    assert (down.value, down.control_value, down.verdict) == (0.2, 0.25, "no effect")
    assert "lowers" in down.claim and "raises" in up.claim


def test_headlines_say_random_feature_does_as_well_unless_effect():
    """Mutant killed: a headline that states the steered rate as a finding whatever the verdict."""
    lines = headlines(steer_findings(_rows(), "wait", 7), "wait", 7)
    down, up = lines  # coefficients in increasing order
    assert "random feature does as well" in down and "(no effect)" in down and "moves" not in down
    assert "feature 7 moves the 'wait' rate to 0.75" in up and "random feature does as well" not in up


def test_check_word_seen():
    """A word never written, or one no feature predicts, is refused with the words the model does write."""
    from types import SimpleNamespace

    stats = SimpleNamespace(word_counts={"wait": 0, "so": 12}, corr_words={"wait": [0.0, 0.0], "so": [-0.1, -0.2]},
                            n_tokens=300, n_traces=10)
    with pytest.raises(ThinklensError, match=r"(?si)bad word: .*wait.*300 generated tokens.*so \(12\).*feature=<N>"):
        check_word_seen(stats, "wait", "Wait")
    with pytest.raises(ThinklensError, match="correlates positively"):
        check_word_seen(stats, "so", "so")


def test_steer_job_refuses_a_word_never_written(tiny_llama, trained_sae, tmp_path):
    """`steer --word <w>` on a model that never writes w used to steer feature 0 (correlation 0.000, the argmax of
    zeros); now it refuses. With --feature the same run steers that feature and reports its findings."""
    _, _, sae_dir = trained_sae
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(f"w{i} w{i + 1} w{i + 2}" for i in range(6)))
    common = dict(model=tiny_llama, sae=str(sae_dir), prompts=str(prompts), n_prompts=4, stats_traces=6, coeffs=(0.0, 1.0),
                  diff_of_means=False, runs=tmp_path / "runs", progress=False)
    with pytest.raises(ThinklensError, match=r"(?s)bad word: .*zebra.*feature=<N>") as refused:
        run_job("steer", word="zebra", run_id="no", **common)
    assert "scanned traces" in str(refused.value)  # with the counts of the thinking words it does write, if any
    summary = run_job("steer", word="zebra", feature=3, run_id="yes", **common)
    assert summary["feature"] == 3 and [f["extra"]["coeff"] for f in summary["findings"]] == [1.0]
    f = summary["findings"][0]
    assert f["value"] == 0.0 and f["verdict"] != "effect" and f["n"] == 4  # too few samples: never an effect
    assert "random feature does as well" in summary["headlines"][0]
