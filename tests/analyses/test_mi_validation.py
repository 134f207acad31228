"""mi-peaks validation: the planted and null settings on tiny-r1 (quick), and oracles for what they rest on:
the planted steps, the shuffled-answer control of a record, the mi_gap verdicts, and the job's findings.

Mutants each test kills are named in its docstring."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import pytest
import torch

from thinklens.analyses.mi.mi_findings import (
    NO_ANSWER_MI,
    NO_WORD,
    mi_headline,
    mi_vs_shuffled_finding,
    peak_fraction_note,
    recycling_findings,
    suppression_findings,
    ttts_findings,
    word_findings,
    words_headline,
)
from thinklens.analyses.mi.planted import PlantedScore, answer_span, answer_steps, score_trajectory
from thinklens.analyses.mi.validation import SETTINGS, gap_check, write_problems
from thinklens.calibration.controls import SettingContext


def _zoo_has(name: str) -> bool:
    from thinklens.zoo.registry import zoo_path

    try:
        return zoo_path(name) is not None
    except Exception:
        return False


# ---------------------------------------------------------------- the settings themselves (default tier, quick)


@pytest.mark.parametrize("setting", [s for s in SETTINGS if not s.on_model], ids=[s.key for s in SETTINGS if not s.on_model])
def test_quick_setting_gives_its_expected_verdict(setting, tmp_path) -> None:
    """Kills (the synthetic settings, no model needed): the control computed on unshuffled answers (the planted
    gap would be 0); peaks placed off the planted steps (precision at chance). The null settings kill the broken peak
    rules of ``bench/mutants.py`` (the first k steps, k random steps, the last k steps: rules that ignore the states
    and so the curve): their peaks do not stand above the rest of the curve, and a null the method cannot fail is
    no null."""
    if "synthetic" not in setting.name and not _zoo_has("tiny-r1"):
        pytest.skip("tiny-r1 is not trained")
    torch.set_num_threads(1)
    check = setting.run(SettingContext(quick=True, seed=0, workdir=tmp_path, threads=1, progress=False))
    assert check.verdict == setting.expected, check
    assert check.statistic == "mi_gap" and check.n >= 12  # nearly every trajectory writes its answer
    d = check.details
    assert d["peaks_read_the_curve"] and d["peak_contrast"] >= 1.0  # both kinds: the peak rule is seen to work
    if setting.expected == "recovered":
        assert check.ci[0] > 0 and d["p_gap"] < 0.01 and d["mi_own"] > d["mi_elsewhere"]
        assert d["peak_precision"] > 2 * d["peak_precision_chance"] and d["peak_recall"] > 2 * d["peak_recall_chance"]
    else:  # shown by equivalence within the margins stated beforehand, not by a non-significant test
        assert check.ci[0] <= 0 <= check.ci[1] and d["p_gap"] >= 0.01
        assert d["tost_gap"]["equivalent"] and d["tost_precision"]["equivalent"]
        assert -d["tost_gap"]["margin"] < d["tost_gap"]["ci90"][0] and d["tost_gap"]["ci90"][1] < d["tost_gap"]["margin"]


@pytest.mark.slow
@pytest.mark.parametrize("setting", SETTINGS, ids=[s.key for s in SETTINGS])
def test_full_setting_gives_its_expected_verdict(setting, tmp_path) -> None:
    if "synthetic" not in setting.name and not _zoo_has("tiny-r1"):
        pytest.skip("tiny-r1 is not trained")
    torch.set_num_threads(1)
    check = setting.run(SettingContext(quick=False, seed=0, workdir=tmp_path, threads=1, progress=False))
    assert check.verdict == setting.expected, check
    assert check.n >= 48


# ---------------------------------------------------------------- planted steps


def test_answer_steps_are_the_states_at_the_first_written_value() -> None:
    """Kills: planted steps off by one (t instead of t + 1: the state that *produces* the value, which does not
    have it in its input); the last statement of the value used instead of the first; a digit inside another
    number (7 in 17) taken for the value."""
    tokens = ["Okay", ",", " 1", "7", " -", " 1", "0", " =", " 7", ".", " So", " 7", "."]
    assert answer_steps(tokens, "7") == [9]  # " 7" is g[8]; rep[9] is the state at its position
    tokens = ["so", " 3", "3", " *", " 2", " =", " 6", "6", ".", " T", " 6", "6"]
    assert answer_steps(tokens, "66") == [7, 8]
    assert answer_steps(tokens, "5") == []
    assert answer_span("Tom has 17 then 7", "7") == (16, 17)
    assert answer_span("x = 7.5 then = 7", "7") == (15, 16)


def test_score_trajectory_precision_recall_and_chance_by_hand() -> None:
    """Kills: precision over planted steps instead of over peaks; chance levels swapped; the own MI elsewhere
    counting the planted steps."""
    tokens = ["a", " =", " 4", "2", ".", "b", "c", "d", "e", "f"]  # "= 42": tokens 2, 3 -> steps 3, 4
    own = [0.0, 0.0, 0.0, 1.0, 0.8, 0.0, 0.1, 0.1, 0.0, 0.0]
    shuf = [0.0, 0.0, 0.0, 0.2, 0.2, 0.0, 0.1, 0.1, 0.0, 0.0]
    s = score_trajectory(own, shuf, tokens, "42", peaks=[3, 6, 7])
    assert s.steps == (3, 4)
    assert s.own == pytest.approx(0.9) and s.shuffled == pytest.approx(0.2) and s.gap == pytest.approx(0.7)
    assert s.own_elsewhere == pytest.approx(0.2 / 8)
    assert s.precision == pytest.approx(1 / 3) and s.recall == pytest.approx(1 / 2)
    assert s.chance_precision == pytest.approx(2 / 10) and s.chance_recall == pytest.approx(3 / 10)
    assert math.isnan(score_trajectory(own, shuf, tokens, "42").precision)
    assert score_trajectory(own, shuf, tokens, "99") is None


def test_null_problems_pair_each_chain_with_an_independent_answer(tmp_path) -> None:
    """Kills: a null whose 'own' answer is still the chain's (the file would be the planted one)."""
    import json

    truth = write_problems(tmp_path / "p.jsonl", 12, seed=0, independent=False)
    truth_null = write_problems(tmp_path / "n.jsonl", 12, seed=0, independent=True)
    planted = [json.loads(x) for x in (tmp_path / "p.jsonl").read_text().splitlines()]
    null = [json.loads(x) for x in (tmp_path / "n.jsonl").read_text().splitlines()]
    assert truth == truth_null and [p["question"] for p in planted] == [p["question"] for p in null]
    assert all(p["answer"].endswith(f"#### {t}") for p, t in zip(planted, truth))
    assert sum(p["answer"].endswith(f"#### {t}") for p, t in zip(null, truth)) <= 2  # chance coincidences only


# ---------------------------------------------------------------- the shuffled control of a record


def test_record_scores_the_shuffled_control_against_another_problems_answer_on_the_same_states() -> None:
    """Kills: the control computed on unshuffled answers (gold[i] instead of gold[perm[i]]); the control scored
    on other states than the trajectory's own."""
    from thinklens.analyses.jobs.mi_peaks import MIPeaksJobConfig
    from thinklens.analyses.mi.estimator import nhsic_trajectory
    from thinklens.analyses.mi.per_model import _record
    from thinklens.engine.sites import Site

    site = Site.parse("resid_post.1")
    g = torch.Generator().manual_seed(0)
    gold = {site: torch.randn(3, 16, generator=g) * 20}
    states = gold[site][0] + torch.randn(6, 16, generator=g) * 5  # the trajectory of problem 0: near its answer
    tr = SimpleNamespace(hidden={site: states}, text="a b c d e f", tokens=list("abcdef"), token_ids=list(range(6)),
                         stop_reason="eos")
    cfg = MIPeaksJobConfig(estimators=("reference",), k=2)
    rec = _record(0, "m", tr, "p", "s", "1", [site], gold, [2, 0, 1], cfg, torch.device("cpu"))
    own = nhsic_trajectory(states, gold[site][0]).mi.tolist()
    other = nhsic_trajectory(states, gold[site][2]).mi.tolist()
    assert rec.shuffled_answer_of == 2
    assert rec.variants["reference"] == pytest.approx(own) and rec.shuffled["reference"] == pytest.approx(other)
    assert sum(own) > sum(other)  # the planted pairing shows on these states


def test_record_stores_the_answer_specific_peaks_of_own_minus_shuffled() -> None:
    """The job's ``peaks["top_k_specific"]``: top_k_peaks of own - shuffled MI, computed here by hand from the two
    curves, with the job's k and clipping; the paper's ``top_k`` peaks of the raw MI stay as they were. Kills: the
    specific peaks read on the own curve (they would equal ``top_k``), on shuffled - own, on the shuffled curve alone,
    or with another k."""
    import numpy as np

    from thinklens.analyses.jobs.mi_peaks import MIPeaksJobConfig
    from thinklens.analyses.mi.estimator import nhsic_trajectory
    from thinklens.analyses.mi.peaks import top_k_peaks
    from thinklens.analyses.mi.per_model import _record
    from thinklens.analyses.mi.run_format import SPECIFIC_PEAKS
    from thinklens.engine.sites import Site

    site = Site.parse("resid_post.1")
    g = torch.Generator().manual_seed(0)
    mu = torch.randn(16, generator=g) * 20  # [d_model] a profile every answer shares
    gold = {site: mu + torch.randn(3, 16, generator=g) * 10}  # [problem, d_model]
    states = torch.randn(8, 16, generator=g) * 20  # [step, d_model] a trajectory near no answer ...
    states[[1, 6]] = mu + torch.randn(2, 16, generator=g) * 2  # ... like every answer at steps 1, 6 ...
    states[[2, 5]] = gold[site][0] + torch.randn(2, 16, generator=g) * 8  # ... and its own one at steps 2, 5
    tr = SimpleNamespace(hidden={site: states}, text="abcdefgh", tokens=list("abcdefgh"), token_ids=list(range(8)),
                         stop_reason="eos")
    own = np.asarray(nhsic_trajectory(states, gold[site][0]).mi.tolist())
    other = np.asarray(nhsic_trajectory(states, gold[site][2]).mi.tolist())
    for k in (2, 3, 20):  # 20 > 8 steps: clipped to every step, as top_k
        rec = _record(0, "m", tr, "p", "s", "1", [site], gold, [2, 0, 1], MIPeaksJobConfig(estimators=("reference",), k=k),
                      torch.device("cpu"))
        assert rec.peaks[SPECIFIC_PEAKS] == list(top_k_peaks(own - other, k=k, clip=True).indices)
        assert rec.peaks["top_k"] == list(top_k_peaks(own, k=k, clip=True).indices)  # the paper's, unchanged
        assert rec.thresholds[SPECIFIC_PEAKS] == pytest.approx(np.sort(own - other)[::-1][min(k, 8) - 1])
    rec = _record(0, "m", tr, "p", "s", "1", [site], gold, [2, 0, 1], MIPeaksJobConfig(estimators=("reference",), k=3),
                  torch.device("cpu"))
    assert rec.peaks["top_k"] == [2, 5, 6] and rec.peaks[SPECIFIC_PEAKS] == [2, 3, 5]  # the case tells the curves apart
    assert rec.peaks_of(SPECIFIC_PEAKS).k == 3 and rec.index_row()["n_peaks"] == {"top_k": 3, "iqr": 0, SPECIFIC_PEAKS: 3}


# ---------------------------------------------------------------- mi_gap verdicts


def _scores(gaps: list[float], *, elsewhere: float = 0.0) -> list[PlantedScore]:
    return [PlantedScore(n_steps=50, steps=(10, 11), own=0.3 + d, shuffled=0.3, own_elsewhere=elsewhere, precision=0.5,
                         recall=0.5, chance_precision=0.04, chance_recall=0.06, peak_contrast=3.0) for d in gaps]


def _null_scores(gaps: list[float], *, precision: float = 0.04, contrast: float = 3.0) -> list[PlantedScore]:
    """Null-like scores: the given gaps, peak precision alternating +-0.04 around ``precision`` (chance 0.04)."""
    return [PlantedScore(n_steps=50, steps=(10, 11), own=0.3 + d, shuffled=0.3, own_elsewhere=0.3,
                         precision=precision + 0.04 * (-1) ** i, recall=0.0, chance_precision=0.04, chance_recall=0.06,
                         peak_contrast=contrast) for i, d in enumerate(gaps)]


def _measured(scores: list[PlantedScore]) -> dict:
    return {"model": "m", "n_problems": len(scores), "scores": scores, "run": "-"}


def test_gap_check_verdicts_follow_the_paired_test() -> None:
    """Kills: a verdict from the pooled means instead of the paired test (a few large gaps and many negative
    ones); a null that says no-effect whatever the data; a planted verdict that ignores the rise."""
    planted = gap_check(_measured(_scores([0.05 + 0.01 * (i % 3) for i in range(16)])), seed=0, planted=True)
    assert planted.verdict == "recovered" and planted.value == pytest.approx(0.06, abs=0.01) and planted.ci[0] > 0
    mixed = [1.0, 1.0] + [-0.05] * 14  # the mean is positive, most trajectories are not
    assert gap_check(_measured(_scores(mixed)), seed=0, planted=True).verdict == "failed"
    assert gap_check(_measured(_null_scores([0.01 * (-1) ** i for i in range(16)])), seed=0, planted=False).verdict == "no-effect"
    assert gap_check(_measured(_null_scores([0.05] * 16)), seed=0, planted=False).verdict == "failed"
    # units that all differ alike show nothing (tost_mean: no spread, no interval): not a null passed
    assert gap_check(_measured(_null_scores([0.0] * 16)), seed=0, planted=False).verdict == "failed"
    no_rise = _scores([0.05] * 16, elsewhere=0.9)
    assert gap_check(_measured(no_rise), seed=0, planted=True).verdict == "failed"
    assert gap_check(_measured(_scores([0.05] * 5)), seed=0, planted=True).verdict == "failed"  # too few


def test_planted_model_must_beat_a_reader_of_the_raw_tokens() -> None:
    """``beats_raw_tokens``: the state's gap must exceed the embed site's on the same trajectories, paired. Kills: "the
    same estimator on the embed site" passing (it is its own raw-token reader: difference 0); a state that scores what
    the tokens alone score passing (smol-r1-like numbers: 0.40 at the state against 0.02 at embed passes, the zoo's
    0.053 against 0.047 does not); pairing by list position instead of by trajectory index."""
    from thinklens.analyses.mi.validation import beats_raw_tokens

    def measured(gaps, indices):
        return {**_measured(_scores(gaps)), "indices": list(indices), "site": "s"}

    idx = list(range(16))
    raw = measured([0.02 + 0.002 * (i % 3) for i in idx], idx)
    state = measured([0.40 + 0.01 * (i % 3) for i in idx], idx)
    ok = beats_raw_tokens(gap_check(state, seed=0, planted=True), state, raw, seed=0)
    assert ok.verdict == "recovered" and ok.details["raw_tokens"]["beaten"]
    assert ok.details["raw_tokens"]["state_minus_raw"] == pytest.approx(0.38, abs=0.01)
    embed_reader = beats_raw_tokens(gap_check(raw, seed=0, planted=True), raw, raw, seed=0)
    assert embed_reader.verdict == "failed" and not embed_reader.details["raw_tokens"]["beaten"]
    token_like = measured([0.047 + 0.006 * (-1) ** i + 0.02 * (i % 2) for i in idx], idx)  # no better than the tokens
    raw_like = measured([0.047 + 0.02 * (i % 2) for i in idx], idx)
    assert beats_raw_tokens(gap_check(token_like, seed=0, planted=True), token_like, raw_like, seed=0).verdict == "failed"
    # pairs follow the trajectory index: a raw reader that scored only trajectories 8-15, listed backwards
    rising = measured([0.30 + 0.01 * i for i in idx], idx)
    some_raw = measured([0.02] * 8, idx[8:][::-1])
    got = beats_raw_tokens(gap_check(rising, seed=0, planted=True), rising, some_raw, seed=0).details["raw_tokens"]
    assert got["n_paired"] == 8 and got["state_minus_raw"] == pytest.approx(0.30 + 0.01 * 11.5 - 0.02)


def test_planted_verdict_needs_peaks_above_chance() -> None:
    """Kills: a planted verdict that ignores where the peaks are (the gap and the rise shown, the peaks at chance:
    precision and recall equal to what as many peaks placed at random would score)."""
    at_chance = [PlantedScore(n_steps=50, steps=(10, 11), own=0.35, shuffled=0.3, own_elsewhere=0.0, precision=0.04,
                              recall=0.06, chance_precision=0.04, chance_recall=0.06, peak_contrast=3.0) for _ in range(16)]
    check = gap_check(_measured(at_chance), seed=0, planted=True)
    assert check.details["p_gap"] < 0.01 and check.details["p_rise"] < 0.01  # everything but the peaks holds
    assert check.verdict == "failed"
    assert gap_check(_measured(_scores([0.05] * 16)), seed=0, planted=True).verdict == "recovered"  # peaks above it


def test_null_passes_only_by_equivalence_and_with_a_peak_rule_that_reads_the_curve() -> None:
    """Kills: a null read from a non-significant test (gaps of +-0.2 alternating: p ~ 0.5, but the 90% interval is
    far wider than the margin: no effect is not shown); peaks on the value's steps above chance let through (a rule
    fixed where the chain writes its value, e.g. its last steps); a peak rule that ignores the curve let through
    (peaks no higher than the other steps: random or fixed positions)."""
    ok = gap_check(_measured(_null_scores([0.01 * (-1) ** i for i in range(16)])), seed=0, planted=False)
    assert ok.verdict == "no-effect" and ok.details["tost_gap"]["equivalent"] and ok.details["peaks_read_the_curve"]
    noisy = gap_check(_measured(_null_scores([0.2 * (-1) ** i for i in range(16)])), seed=0, planted=False)
    assert noisy.details["p_gap"] > 0.4 and not noisy.details["tost_gap"]["equivalent"] and noisy.verdict == "failed"
    on_value = gap_check(_measured(_null_scores([0.01 * (-1) ** i for i in range(16)], precision=1 / 3)), seed=0,
                         planted=False)
    assert not on_value.details["tost_precision"]["equivalent"] and on_value.verdict == "failed"
    for contrast in (0.0, 0.5):  # ~0: a rule that ignores the curve; 0.5: below the minimum stated beforehand
        blind = gap_check(_measured(_null_scores([0.01 * (-1) ** i for i in range(16)], contrast=contrast)), seed=0,
                          planted=False)
        assert not blind.details["peaks_read_the_curve"] and blind.verdict == "failed"
    blind = gap_check(_measured(_scores([0.05] * 16)) | {"scores": [dataclasses.replace(s, peak_contrast=0.0)
                                                                   for s in _scores([0.05] * 16)]}, seed=0, planted=True)
    assert blind.verdict == "failed"  # the planted setting asks it too


def test_peak_contrast_by_hand() -> None:
    """Kills: the contrast not standardised by the curve's spread; peaks counted among the other steps."""
    from thinklens.analyses.mi.planted import peak_contrast

    curve = [0.0, 1.0, 0.0, 0.0, 3.0, 0.0]  # peaks 1, 4: mean 2; elsewhere 0; sd = sqrt(mean(c^2) - mean^2)
    sd = math.sqrt((1 + 9) / 6 - (4 / 6) ** 2)
    assert peak_contrast(curve, [1, 4]) == pytest.approx(2.0 / sd)
    assert math.isnan(peak_contrast(curve, [])) and math.isnan(peak_contrast([1.0] * 4, [0]))
    s = score_trajectory(curve, curve, ["a", "=", " 4", "b", "c", "d"], "4", peaks=[1, 4])
    assert s.peak_contrast == pytest.approx(2.0 / sd)


# ---------------------------------------------------------------- findings and headlines


def test_findings_never_state_a_non_effect_as_an_effect() -> None:
    """Kills: MI headline read from the pooled means (own 0.2764 vs shuffled 0.2732 on one recorded run); a
    thinking word headlined whose enrichment interval holds 1 ('so' x1.007 [0.33, 1.80]), or in a run whose MI does
    not beat its control; the peak-fraction flag missing on the hard run's 600 of 1312 tokens."""
    f = mi_vs_shuffled_finding("m", [0.2764 + 0.01 * (-1) ** i for i in range(20)],
                               [0.2732 + 0.01 * (-1) ** (i + 1) for i in range(20)])
    assert f.verdict == "no effect" and mi_headline(f).startswith(NO_ANSWER_MI)
    strong = mi_vs_shuffled_finding("m", [0.3] * 20, [0.2] * 20)
    assert strong.verdict == "effect" and mi_headline(strong.to_dict()).startswith("answer-specific MI")
    rows = [{"word": "so", "peak_count": 9, "total_count": 40, "ratio": 1.007, "ci_low": 0.33, "ci_high": 1.80,
             "n_units": 40},
            {"word": "zero", "peak_count": 0, "total_count": 5, "ratio": 0.0, "ci_low": 0.0, "ci_high": 0.0, "n_units": 5}]
    words = word_findings("m", rows, top=5, mi_control=strong)
    assert [w.claim for w in words] == ["m: 'so' is enriched at peaks"] and words[0].verdict == "no effect"
    assert words_headline(words).startswith(NO_WORD)
    rows[0].update(ratio=3.0, ci_low=2.1, ci_high=4.0)
    assert words_headline(word_findings("m", rows, top=5, mi_control=strong)).startswith(
        "thinking words enriched at peaks: 'so' x3.00")
    assert words_headline(word_findings("m", rows, top=5, mi_control=f)).startswith(NO_WORD)  # MI failed its control
    assert "46%" in peak_fraction_note("m", 600, 1312)["flag"] and "flag" not in peak_fraction_note("m", 30, 1312)


def test_intervention_findings_have_n_wilson_and_headroom() -> None:
    """Kills: a recycling 'gain' reported when greedy is already at 1.0 (no headroom); a suppression drop
    called an effect when it is within noise."""
    (rr,) = recycling_findings([{"layer": 2, "n": 20, "accuracy_plain": 1.0, "accuracy_rr": 1.0}])
    assert rr.verdict == "at ceiling" and rr.extra["headroom"] == 0.0 and rr.n == 20 and rr.extra["interval"] == "wilson"
    sup = suppression_findings([{"condition": "none", "n_correct": 20, "n": 20}, {"condition": "thinking", "n_correct": 19, "n": 20},
                                {"condition": "random_0", "n_correct": 20, "n": 20}])
    assert [s.verdict for s in sup] == ["no effect", "no effect"]
    big = suppression_findings([{"condition": "none", "n_correct": 40, "n": 40}, {"condition": "thinking", "n_correct": 5, "n": 40}])
    assert big[0].verdict == "effect" and big[0].ci[1] < 0.3
    tt = ttts_findings([{"method": "plain", "budget": 8, "n_correct": 10, "n": 10},
                        {"method": "ttts:Wait", "budget": 8, "n_correct": 10, "n": 10}])
    assert tt[0].verdict == "at ceiling"


def test_job_summary_holds_findings_and_the_report_uses_headlines(tiny_dirs, tmp_path, capsys) -> None:
    """Kills: findings missing from the job summary; the report printing top words as a finding."""
    import json

    from thinklens.cli import main

    out = tmp_path / "mi"
    argv = ["run", "mi-peaks", "--model", str(tiny_dirs["llama"]), "--n-problems", "4", "--max-new-tokens", "6",
            "--k", "2", "--ci", "wilson", "--estimators", "reference", "--recycling", "--out", str(out), "--no-progress",
            "--threads", "1"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "meta.json").read_text())["summary"]
    findings = summary["findings"]
    stats = [f["statistic"] for f in findings]
    assert stats[0] == "mean MI" and "peak_fraction" not in stats  # top-k sets it: a note, not a finding
    assert all(set(f) >= {"claim", "statistic", "value", "ci", "n", "control", "control_value", "verdict"} for f in findings)
    mi = findings[0]
    assert mi["control"] == "shuffled answer" and mi["n"] == 4 and mi["verdict"] == "too few samples"
    assert "no answer-specific MI: the shuffled control matches (all steps) (too few samples)" in printed
    assert "no thinking word is enriched" in printed and "top thinking words" not in printed
    note = summary["peak_fraction_note"]  # k = 2 of <= 6 tokens: a third or more
    assert note["peak_fraction"] > 0.2 and "not sparse" in note["flag"] and note["set_by_the_rule"] and "not sparse" in printed
