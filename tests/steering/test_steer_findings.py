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


def _sweep(cells):
    """Rows of one seed from ``{(arm, coeff): (traces saying the word, correct, degenerate)}``, 30 traces each."""
    return [{"arm": arm, "coeff": c, "seed": 0, "traces_with_word": k, "correct_traces": r, "degenerate_traces": d,
             "n_traces": 30} for (arm, c), (k, r, d) in cells.items()]


#: A demo run once headlined as an effect (tiny-think, feature 633, 30 prompts): c=1 says wait in every trace, as the
#: difference of means does, while accuracy falls 0.467 -> 0 and the text degenerates; the random feature
#: stays at the unsteered 17/30.
DEMO = {("feature", 0.0): (17, 14, 1), ("random_feature", 0.0): (17, 14, 1), ("diff_of_means", 0.0): (17, 14, 1),
        ("feature", 1.0): (30, 0, 24), ("random_feature", 1.0): (17, 14, 1), ("random_direction", 1.0): (16, 13, 1),
        ("top_activating", 1.0): (18, 12, 2), ("diff_of_means", 1.0): (30, 0, 27),
        ("feature", -1.0): (0, 0, 28), ("random_feature", -1.0): (16, 14, 1), ("random_direction", -1.0): (17, 13, 1),
        ("top_activating", -1.0): (15, 13, 1), ("diff_of_means", -1.0): (0, 2, 26)}


def test_the_demo_run_is_not_an_effect():
    """Feature 633 was once an "effect" (wait rate 0 -> 1) while the diff-of-means baseline did as well and
    accuracy fell 0.467 -> 0 with degenerate text. Mutants killed: the verdict taken against the random feature alone
    (both ends would be "effect"), the harm bound not applied, the competing method not required."""
    found = {f.extra["coeff"]: f for f in steer_findings(_sweep(DEMO), "wait", 633)}
    for c, f in found.items():
        assert f.verdict == "no effect", (c, f.extra)
        assert "difference-of-means baseline (a competing method) does as well or better" in f.extra["not_shown"]
        assert "beyond the harm bound" in f.extra["not_shown"] and "accuracy 0.467 -> 0.000" in f.extra["not_shown"]
        assert f.extra["controls"]["random_direction"]["beaten"] and not f.extra["controls"]["diff_of_means"]["beaten"]
        assert f.extra["harm"]["degenerate"]["worse_by"] > 0.2 and not f.extra["harm"]["within"]
    for line in headlines(list(found.values()), "wait", 633):
        assert "not shown" in line and "moves" not in line and "(no effect)" in line


def test_effect_needs_every_control_and_the_harm_bound():
    """One condition at a time: each missing one turns the feature's effect into "not shown", with its reason."""
    clean = {**DEMO, ("feature", 1.0): (29, 13, 1), ("diff_of_means", 1.0): (20, 14, 1)}
    up = {f.extra["coeff"]: f for f in steer_findings(_sweep(clean), "wait", 633)}[1.0]
    assert up.verdict == "effect" and "not_shown" not in up.extra and up.extra["harm"]["within"]
    assert set(up.extra["controls"]) == {"random_direction", "top_activating", "diff_of_means", "unsteered"}
    line = headlines([up], "wait", 633)[0]
    assert "feature 633 moves the 'wait' rate to 0.97" in line and "not shown" not in line
    cases = {"difference-of-means baseline": {("diff_of_means", 1.0): (30, 14, 1)},
             "random direction does as well": {("random_direction", 1.0): (28, 14, 1)},
             "top-activating feature": {("top_activating", 1.0): (29, 14, 1)},
             "the unsteered run does as well": {("feature", 0.0): (28, 14, 1)},
             "accuracy 0.467 -> 0.300": {("feature", 1.0): (29, 9, 1)},
             "degenerate 0.033 -> 0.333": {("feature", 1.0): (29, 13, 10)}}
    for reason, change in cases.items():
        f = {f.extra["coeff"]: f for f in steer_findings(_sweep({**clean, **change}), "wait", 633)}[1.0]
        assert f.verdict == "no effect" and reason in f.extra["not_shown"], (reason, f.extra.get("not_shown"))
    # the bound is the run's, stated before it: a looser one admits the accuracy cost above
    loose = steer_findings(_sweep({**clean, ("feature", 1.0): (29, 9, 1)}), "wait", 633,
                           harm={"max_accuracy_drop": 0.2, "max_degenerate_rise": 0.2})
    assert {f.extra["coeff"]: f for f in loose}[1.0].verdict == "effect"


def test_steer_job_states_its_harm_bound_and_refuses_a_thin_diff_of_means(tiny_llama, trained_sae, tmp_path):
    """A difference of means from fewer states before the word than --min-dom-states is not run, and the summary,
    the report and the run's headline say so; the harm bound is in the summary and the report."""
    from thinklens.runs.folders import RunFolder
    from thinklens.runs.jobs import get_job

    _, _, sae_dir = trained_sae
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(f"w{i} w{i + 1} w{i + 2}" for i in range(6)))
    word = tiny_llama.generate(["w1 w2 w3"], max_new_tokens=3, do_sample=True, seed=20_000)[0].tokens[0].strip()
    summary = run_job("steer", model=tiny_llama, sae=str(sae_dir), prompts=str(prompts), n_prompts=4, stats_traces=16,
                      coeffs=(0.0, 1.0), word=word, min_dom_states=10**6, runs=tmp_path / "runs", run_id="thin",
                      progress=False)
    run = RunFolder.open(tmp_path / "runs" / "steer" / "thin")
    assert "diff_of_means" not in {r["arm"] for r in run.read_result("steer")["rows"]}
    assert len(summary["warnings"]) == 1 and "difference-of-means baseline not run" in summary["warnings"][0]
    assert "fewer than 1000000" in summary["warnings"][0]
    job = get_job("steer")
    text = job.report(summary)
    assert "warning: difference-of-means baseline not run" in text and "harm bound (stated before the run)" in text
    assert summary["harm_bound"] == {"max_accuracy_drop": 0.1, "max_degenerate_rise": 0.2}
    assert "1 warning(s)" in job.headline(summary, run.path)
    assert all(f["verdict"] != "effect" for f in summary["findings"]) and "no steering effect shown" in job.headline(summary, run.path)


def test_the_stated_sentence_says_why_not():
    """The CLI's closing lines, Home and the pages state a finding with finding_sentence: a not-shown steering effect
    says so and why, never the claim as a finding."""
    from thinklens.calibration.findings import finding_sentence

    up = {f.extra["coeff"]: f for f in steer_findings(_sweep(DEMO), "wait", 633)}[1.0]
    sentence = finding_sentence(up)
    assert sentence.startswith("steering feature 633 at c=1 (raises 'wait'): not shown: the difference-of-means")
    assert "beyond the harm bound" in sentence and "(no effect;" in sentence
