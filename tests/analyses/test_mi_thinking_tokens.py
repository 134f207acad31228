"""Thinking-token enrichment against hand-computed counts, ratios and intervals."""

from __future__ import annotations

import math

import pytest

from thinklens.analyses.mi import TokenTrajectory, iqr_peaks, thinking_token_enrichment, token_words, word_of
from thinklens.errors import ThinklensError

# N = 16 positions, P = 6 peak positions. Peak tokens: A: "So", "Wait", "so"; B: "Hmm", "So", "=".
A = TokenTrajectory(tokens=(" So", " the", " answer", " is", " 4", ".", " Wait", ",", " so", " 5"), peaks=(0, 6, 8))
B = TokenTrajectory(tokens=("Hmm", " So", " x", " So", "=", "3"), peaks=(0, 3, 4))


def test_counts_and_ratios_by_hand() -> None:
    res = thinking_token_enrichment([A, B], ci="wilson")
    assert (res.n_trajectories, res.n_tokens, res.n_peak_tokens) == (2, 16, 6)
    table = {w.word: (w.peak_count, w.total_count) for w in res.words}
    assert table == {"So": (2, 3), "Wait": (1, 1), "so": (1, 1), "Hmm": (1, 1)}
    so = res.get("So")
    assert so is not None
    assert so.peak_freq == pytest.approx(2 / 6) and so.background_freq == pytest.approx(3 / 16)
    assert so.ratio == pytest.approx(16 / 9)
    assert res.get("Wait").ratio == pytest.approx(16 / 6)  # type: ignore[union-attr]
    # order: peak count, then ratio, then word
    assert [w.word for w in res.words] == ["So", "Hmm", "Wait", "so"]
    assert [w.word for w in res.top(2, by="ratio")] == ["Hmm", "Wait"]


def test_lowercase_merges_case() -> None:
    res = thinking_token_enrichment([A, B], lowercase=True, ci="wilson")
    so = res.get("so")
    assert so is not None and (so.peak_count, so.total_count) == (3, 4)
    assert so.ratio == pytest.approx((3 / 6) / (4 / 16))
    assert res.get("So") is None


def test_wilson_interval_by_hand() -> None:
    # Wilson 95% for 2 of 6: [0.0968, 0.7000]; divided by the background frequency 3/16.
    so = thinking_token_enrichment([A, B], ci="wilson").get("So")
    assert so is not None
    assert so.ci_low == pytest.approx(0.09677 / (3 / 16), rel=1e-3)
    assert so.ci_high == pytest.approx(0.70001 / (3 / 16), rel=1e-3)


def test_bootstrap_over_two_trajectories_by_hand() -> None:
    """Resamples are AA (1/4), AB (1/2), BB (1/4). "So": AA -> (2/6)/(2/20) = 10/3, AB -> 16/9,
    BB -> (2/6)/(4/12) = 1; the 2.5% and 97.5% percentiles fall inside the BB and AA blocks.
    "Wait" is absent from BB (undefined, skipped): AA -> 10/3, AB -> 8/3."""
    res = thinking_token_enrichment([A, B], n_boot=2000, seed=3)
    so, wait = res.get("So"), res.get("Wait")
    assert so is not None and wait is not None
    assert (so.ci_low, so.ci_high) == (pytest.approx(1.0), pytest.approx(10 / 3))
    assert (wait.ci_low, wait.ci_high) == (pytest.approx(8 / 3), pytest.approx(10 / 3))
    again = thinking_token_enrichment([A, B], n_boot=2000, seed=3)
    assert again == res


def test_bootstrap_of_identical_trajectories_is_the_point_estimate() -> None:
    res = thinking_token_enrichment([A, A, A, A])
    for w in res.words:
        assert w.ci_low == pytest.approx(w.ratio) and w.ci_high == pytest.approx(w.ratio)


def test_requested_words_and_min_count() -> None:
    res = thinking_token_enrichment([A, B], words=["Okay", "the"], min_peak_count=2, ci="wilson")
    assert [w.word for w in res.words] == ["So", "the", "Okay"]
    the = res.get("the")
    assert the is not None and (the.peak_count, the.total_count, the.ratio) == (0, 1, 0.0)
    okay = res.get("Okay")
    assert okay is not None and okay.total_count == 0 and math.isnan(okay.ratio) and math.isnan(okay.ci_low)


def test_pairs_and_peaks_objects_are_accepted() -> None:
    peaks = iqr_peaks([0.1, 0.1, 0.1, 0.1, 0.1, 0.9])
    tokens = ["a", "b", "c", "d", "e", " Wait"]
    res = thinking_token_enrichment([(tokens, peaks)], ci="wilson")
    assert [(w.word, w.peak_count) for w in res.words] == [("Wait", 1)]
    assert TokenTrajectory.of(tokens, peaks) == TokenTrajectory(tokens=tuple(tokens), peaks=(5,))


def test_word_of() -> None:
    assert word_of(" So") == "So"
    assert word_of("ĠWait") == "Wait" and word_of("▁Hmm") == "Hmm"
    assert word_of("\nThen") == "Then"
    for tok in ["42", " x=", ",", " ", "", "don't"]:
        assert word_of(tok) is None
    assert word_of(" OK", lowercase=True) == "ok"


def test_words_are_found_on_the_decoded_text_and_mapped_back_to_tokens() -> None:
    """Real tokenizers: " Wait" may be one token or " W" + "ait"; "\\n\\nSo" after a paragraph; markup is no word."""
    tokens = ("Okay", ",", " W", "ait", ",", " 1", "2", ".\n\n", "So", " </think>", "\n\n", "\\boxed{", "1", "2", "}")
    assert token_words(tokens) == ["Okay", None, "Wait", "Wait", None, None, None, None, "So", None, None, None, None,
                                   None, None]
    # a peak on either piece of the split word is a peak on "Wait"; both pieces are "Wait" positions
    res = thinking_token_enrichment([TokenTrajectory(tokens=tokens, peaks=(3, 8))], ci="wilson")
    assert {w.word: (w.peak_count, w.total_count) for w in res.words} == {"Wait": (1, 2), "So": (1, 1)}
    # word-level tokenizers (the zoo's) decode tokens without spaces: the separator rebuilds the text
    zoo = TokenTrajectory(tokens=("hmm", "<<", "so", "therefore", "</think>"), peaks=(2, 3), separator=" ")
    assert token_words(zoo.tokens, zoo.separator) == ["hmm", None, "so", "therefore", None]
    assert [w.word for w in thinking_token_enrichment([zoo], ci="wilson").words] == ["so", "therefore"]
    assert token_words(["ĠWait", "Ġso"], lowercase=True) == ["wait", "so"]  # raw BPE markers count as spaces


def test_interventions_use_enrichment_words_that_are_whole_tokens(tiny_r1) -> None:
    """A word the tokenizer always splits cannot be suppressed or recycled as a token: it is passed over."""
    from thinklens.analyses.jobs.mi_peaks import MIPeaksJobConfig
    from thinklens.analyses.mi.pipeline import thinking_words_for
    from thinklens.engine.model import load_tokenizer
    from thinklens.zoo.registry import zoo_path

    class _Model:
        tokenizer = load_tokenizer(str(zoo_path("tiny-r1")) if tiny_r1 == "tiny-r1" else tiny_r1)

    rows = [{"word": "Qwxyzzy", "peak_count": 9}, {"word": "Wait", "peak_count": 4}, {"word": "So", "peak_count": 0}]
    words, source = thinking_words_for(_Model(), MIPeaksJobConfig(top_words=2), rows)  # type: ignore[arg-type]
    assert words == ["Wait"] and source == "enrichment (words that are whole tokens)"
    with pytest.raises(ThinklensError, match="thinking words"):
        thinking_words_for(_Model(), MIPeaksJobConfig(thinking_words=("Qwxyzzy",)), rows)  # type: ignore[arg-type]


def test_bad_inputs() -> None:
    with pytest.raises(ThinklensError, match="peak index"):
        TokenTrajectory(tokens=("a", "b"), peaks=(2,))
    with pytest.raises(ThinklensError, match="distinct"):
        TokenTrajectory(tokens=("a", "b"), peaks=(1, 1))
    with pytest.raises(ThinklensError, match="ci"):
        thinking_token_enrichment([A], ci="normal")
    with pytest.raises(ThinklensError, match="trajectories"):
        thinking_token_enrichment([])
    with pytest.raises(ThinklensError, match="level"):
        thinking_token_enrichment([A], level=95.0)
    with pytest.raises(ThinklensError, match="sort key"):
        thinking_token_enrichment([A], ci="wilson").top(3, by="count")
