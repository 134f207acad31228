"""MI peaks: a peak fraction above 20% is flagged in the peak-fraction finding and in every thinking word's finding
of the run (claim, extra and the CLI's closing lines), and a word is an effect only where its enrichment interval
excludes 1, flagged run or not."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from thinklens.analyses.mi.mi_findings import SPARSE, model_findings, peak_fraction_finding, word_findings, words_headline
from thinklens.calibration.stats import finding_sentence

WORDS = [{"word": "wait", "peak_count": 30, "total_count": 40, "ratio": 1.9, "ci_low": 1.5, "ci_high": 2.0},
         {"word": "so", "peak_count": 9, "total_count": 40, "ratio": 1.007, "ci_low": 0.33, "ci_high": 1.80}]


def _records(n_peaks: int, n: int = 20, length: int = 10) -> list[SimpleNamespace]:
    """Trajectories of ``length`` tokens with ``n_peaks`` peaks each (own MI above the shuffled control)."""
    return [SimpleNamespace(estimator="e", variants={"e": [0.3 + 0.01 * (t % 3) for t in range(length)]},
                            shuffled={"e": [0.2] * length}, tokens=tuple(f"w{t}" for t in range(length)), answer="zzz",
                            peaks={"top_k": tuple(range(n_peaks))}) for _ in range(n)]


def test_dense_peaks_are_flagged_everywhere():
    found = model_findings("m", _records(5), word_rows=WORDS, rule="top_k", top=5)
    frac = next(f for f in found if f.statistic == "peak_fraction")
    assert frac.value == 0.5 and frac.verdict == "no effect" and frac.extra["flag"].startswith("peaks are 50% of tokens")
    assert "peaks are 50% of tokens (above 20%)" in finding_sentence(frac.to_dict())  # the CLI's closing line
    wait, so = [f for f in found if f.statistic == "enrichment"]
    for w in (wait, so):
        assert "no enrichment can exceed 2.00" in w.extra["flag"] and w.extra["flag"] in w.claim
        assert w.extra["flag"] in finding_sentence(w.to_dict()) and w.extra["peak_fraction"] == 0.5
    assert (wait.verdict, so.verdict) == ("effect", "no effect")  # wait's interval [1.5, 2.0] excludes 1; so's holds it
    head = words_headline([wait, so])
    assert head.startswith("thinking words enriched at peaks: 'wait' x1.90") and head.endswith(f"({wait.extra['flag']})")
    assert words_headline([w.to_dict() for w in (wait, so)]) == head


def test_sparse_peaks_are_an_effect_and_carry_no_flag():
    found = model_findings("m", _records(1), word_rows=WORDS, rule="top_k", top=5)
    frac = next(f for f in found if f.statistic == "peak_fraction")
    assert frac.value == pytest.approx(0.1) and frac.verdict == "effect" and "flag" not in frac.extra
    assert all("flag" not in f.extra and "[" not in f.claim for f in found if f.statistic == "enrichment")


@pytest.mark.parametrize("lo,hi,verdict", [(1.01, 2.1, "effect"), (0.99, 2.1, "no effect"), (1.0, 1.9, "no effect"),
                                           (0.4, 0.9, "no effect")])
def test_flagged_word_is_an_effect_only_when_its_interval_excludes_one(lo, hi, verdict):
    rows = [{"word": "hmm", "peak_count": 10, "total_count": 20, "ratio": (lo + hi) / 2, "ci_low": lo, "ci_high": hi}]
    (f,) = word_findings("m", rows, n=40, top=3, peak_fraction=0.46)
    assert f.verdict == verdict and "46%" in f.claim


def test_flag_threshold_is_strictly_above_twenty_percent():
    assert "flag" not in peak_fraction_finding("m", 20, 100, n=40).extra  # exactly 20%: not above
    assert "flag" in peak_fraction_finding("m", 21, 100, n=40).extra
    assert SPARSE == 0.2
    (f,) = word_findings("m", WORDS[:1], n=40, top=3, peak_fraction=0.2)
    assert "flag" not in f.extra


def test_mi_peaks_report_lines_show_the_flag():
    """The mi-peaks job's own report prints each finding with its flag."""
    from thinklens.analyses.jobs.mi_peaks import _finding_line

    found = model_findings("m", _records(5), word_rows=WORDS, rule="top_k", top=5)
    lines = [_finding_line(f.to_dict()) for f in found if f.statistic in ("peak_fraction", "enrichment")]
    assert len(lines) == 3 and all("above 20%" in line for line in lines)


def test_cli_closing_lines_show_the_flag(tiny_dirs, tmp_path, capsys):
    """The CLI's closing ``findings:`` lines (thinklens.calibration.stats.finding_sentence of the summary's findings) carry the
    flag of a dense run: k = 2 peaks of at most 6 tokens is a third of the tokens or more."""
    import json

    from thinklens.cli import main

    out = tmp_path / "mi"
    assert main(["run", "mi-peaks", "--model", str(tiny_dirs["llama"]), "--n-problems", "4", "--max-new-tokens", "6",
                 "--k", "2", "--ci", "wilson", "--estimators", "reference", "--out", str(out), "--no-progress",
                 "--threads", "1"]) == 0
    closing = capsys.readouterr().out.split("\nfindings:\n", 1)[1].splitlines()
    findings = json.loads((out / "meta.json").read_text())["summary"]["findings"]
    assert len(closing) == len(findings)
    flagged = [line for line, f in zip(closing, findings) if f["statistic"] in ("peak_fraction", "enrichment")]
    assert flagged and all("above 20%" in line for line in flagged)
    assert all(f["verdict"] != "effect" or f["ci"][0] > 1 for f in findings if f["statistic"] == "enrichment")
