"""MI peaks: a peak fraction above 20% is flagged in every thinking word's finding of the run (claim, extra and the
CLI's closing lines), and no word is an effect there; the peak fraction itself is no finding (top-k sets it). A word
is an effect only where its enrichment interval excludes 1 and has width, over more than one trajectory that holds
it, in a run whose MI beats its shuffled-answer control."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from thinklens.analyses.mi.mi_findings import (
    NO_WORD,
    SPARSE,
    mi_vs_shuffled_finding,
    model_findings,
    peak_fraction_note,
    word_findings,
    words_headline,
)
from thinklens.calibration.findings import finding_sentence

WORDS = [{"word": "wait", "peak_count": 30, "total_count": 40, "ratio": 1.9, "ci_low": 1.5, "ci_high": 2.0, "n_units": 20},
         {"word": "so", "peak_count": 9, "total_count": 40, "ratio": 1.007, "ci_low": 0.33, "ci_high": 1.80, "n_units": 20}]
ANSWER_SPECIFIC = mi_vs_shuffled_finding("m", [0.3] * 20, [0.2] * 20)
NOT_SPECIFIC = mi_vs_shuffled_finding("m", [1.465 + 0.01 * (-1) ** i for i in range(20)],
                                      [1.456 + 0.01 * (-1) ** (i + 1) for i in range(20)])


def _records(n_peaks: int, n: int = 20, length: int = 10, own: float = 0.3) -> list[SimpleNamespace]:
    """Trajectories of ``length`` tokens with ``n_peaks`` peaks each (own MI ``own`` against a shuffled 0.2)."""
    return [SimpleNamespace(estimator="e", variants={"e": [own + 0.01 * (t % 3) for t in range(length)]},
                            shuffled={"e": [0.2] * length}, tokens=tuple(f"w{t}" for t in range(length)), answer="zzz",
                            peaks={"top_k": tuple(range(n_peaks))}) for _ in range(n)]


def test_dense_peaks_are_flagged_and_hold_every_word_back():
    """Kills: 'so' enrichment 'effect' under a 'not sparse' banner: a word at peaks that mark half of the
    tokens stated as a thinking token."""
    found = model_findings("m", _records(5), word_rows=WORDS, rule="top_k", top=5)
    assert not [f for f in found if f.statistic == "peak_fraction"]  # set by k: no finding
    wait, so = [f for f in found if f.statistic == "enrichment"]
    for w in (wait, so):
        assert "no enrichment can exceed 2.00" in w.extra["flag"] and w.extra["flag"] in w.claim
        assert w.extra["peak_fraction"] == 0.5 and w.verdict == "no effect"
        assert "not sparse" in finding_sentence(w.to_dict())
    assert "not sparse" in wait.extra["not_shown"]  # its interval [1.5, 2.0] excludes 1, the peaks do not allow it
    head = words_headline([wait, so])
    assert head.startswith(NO_WORD) and "not sparse" in head
    assert words_headline([w.to_dict() for w in (wait, so)]) == head


def test_sparse_peaks_carry_no_flag_and_an_enriched_word_is_an_effect():
    found = model_findings("m", _records(1), word_rows=WORDS, rule="top_k", top=5)
    words = [f for f in found if f.statistic == "enrichment"]
    assert all("flag" not in f.extra and "[" not in f.claim for f in words)
    assert [f.verdict for f in words] == ["effect", "no effect"] and words[0].n == 20
    assert words_headline(words).startswith("thinking words enriched at peaks: 'wait' x1.90")


def test_words_at_peaks_of_a_signal_that_failed_its_control_are_not_thinking_tokens():
    """Kills: 'The' x4.6 and 'To' x4.4 declared in a run whose own shuffled-answer control says the MI is not
    answer-specific (1.465 vs 1.456)."""
    rows = [{"word": "The", "peak_count": 40, "total_count": 60, "ratio": 4.6, "ci_low": 3.1, "ci_high": 6.0, "n_units": 30}]
    assert NOT_SPECIFIC.verdict == "no effect" and ANSWER_SPECIFIC.verdict == "effect"
    (held,) = word_findings("m", rows, top=3, mi_control=NOT_SPECIFIC)
    assert held.verdict == "no effect" and "not answer-specific" in held.extra["not_shown"]
    assert "not shown as a thinking word" in finding_sentence(held)
    assert "not answer-specific" in words_headline([held])
    (shown,) = word_findings("m", rows, top=3, mi_control=ANSWER_SPECIFIC)
    assert shown.verdict == "effect"
    found = model_findings("m", _records(1, own=0.19), word_rows=rows, rule="top_k", top=3)  # own ~ shuffled
    assert found[0].verdict != "effect" and found[-1].verdict == "no effect"


def test_n_counts_the_trajectories_that_hold_the_word_and_a_zero_width_interval_is_no_effect():
    """Kills: 'fiber' x3.03 [3.03, 3.03] 'effect' with n=16 though all 19 occurrences sit in one looping trajectory:
    n the job's problem count; one unit accepted; a zero-width interval accepted."""
    fiber = {"word": "fiber", "peak_count": 19, "total_count": 19, "ratio": 3.03, "ci_low": 3.03, "ci_high": 3.03,
             "n_units": 1}
    (f,) = word_findings("m", [fiber], top=3, mi_control=ANSWER_SPECIFIC)
    assert f.n == 1 and f.verdict == "too few samples"
    (f,) = word_findings("m", [fiber | {"n_units": 16}], top=3, mi_control=ANSWER_SPECIFIC)
    assert f.verdict == "too few samples" and "zero width" in f.extra["not_shown"]
    (f,) = word_findings("m", [fiber | {"n_units": 16, "ci_low": 2.5, "ci_high": 3.5}], top=3, mi_control=ANSWER_SPECIFIC)
    assert f.verdict == "effect" and f.n == 16


def test_enrichment_counts_the_trajectories_that_hold_each_word() -> None:
    """n_units of the enrichment itself: a word looping in one trajectory is one unit, and its bootstrap interval
    has zero width."""
    from thinklens.analyses.mi import TokenTrajectory, thinking_token_enrichment

    loop = TokenTrajectory(tokens=tuple([" fiber", " x"] * 10), peaks=(0, 2, 4))
    others = [TokenTrajectory(tokens=tuple([" So", " y"] * 10), peaks=(0, 3, 5)) for _ in range(5)]
    res = thinking_token_enrichment([loop, *others], n_boot=200, seed=0)
    fiber, so = res.get("fiber"), res.get("So")
    assert fiber.n_units == 1 and so.n_units == 5
    assert fiber.ci_low == pytest.approx(fiber.ci_high)  # every resample scales its counts and denominators alike


@pytest.mark.parametrize("lo,hi,verdict", [(1.01, 2.1, "no effect"), (0.99, 2.1, "no effect"), (0.4, 0.9, "no effect")])
def test_flagged_word_is_never_an_effect(lo, hi, verdict):
    rows = [{"word": "hmm", "peak_count": 10, "total_count": 20, "ratio": (lo + hi) / 2, "ci_low": lo, "ci_high": hi,
             "n_units": 20}]
    (f,) = word_findings("m", rows, top=3, peak_fraction=0.46, mi_control=ANSWER_SPECIFIC)
    assert f.verdict == verdict and "46%" in f.claim


def test_flag_threshold_is_strictly_above_twenty_percent():
    assert "flag" not in peak_fraction_note("m", 20, 100)  # exactly 20%: not above
    assert "flag" in peak_fraction_note("m", 21, 100) and peak_fraction_note("m", 21, 100)["set_by_the_rule"]
    assert SPARSE == 0.2
    (f,) = word_findings("m", WORDS[:1], top=3, peak_fraction=0.2)
    assert "flag" not in f.extra and f.verdict == "effect"


def test_mi_peaks_report_lines_show_the_flag():
    """The mi-peaks job's own report prints each word finding with its flag."""
    from thinklens.analyses.jobs.mi_peaks import _finding_line

    found = model_findings("m", _records(5), word_rows=WORDS, rule="top_k", top=5)
    lines = [_finding_line(f.to_dict()) for f in found if f.statistic == "enrichment"]
    assert len(lines) == 2 and all("above 20%" in line for line in lines)


def test_cli_closing_lines_show_the_flag(tiny_dirs, tmp_path, capsys):
    """The CLI prints the run's peak-fraction flag (k = 2 peaks of at most 6 tokens is a third of the tokens or
    more), and no word of such a run is an effect."""
    import json

    from thinklens.cli import main

    out = tmp_path / "mi"
    assert main(["run", "mi-peaks", "--model", str(tiny_dirs["llama"]), "--n-problems", "4", "--max-new-tokens", "6",
                 "--k", "2", "--ci", "wilson", "--estimators", "reference", "--out", str(out), "--no-progress",
                 "--threads", "1"]) == 0
    printed = capsys.readouterr().out
    closing = printed.split("\nfindings:\n", 1)[1].splitlines()
    findings = json.loads((out / "meta.json").read_text())["summary"]["findings"]
    assert len(closing) == len(findings) and "not sparse" in printed
    words = [(line, f) for line, f in zip(closing, findings) if f["statistic"] == "enrichment"]
    assert all("above 20%" in line and f["verdict"] != "effect" for line, f in words)
