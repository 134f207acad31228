"""Thinking tokens: which words the model emits from MI-peak states, and how enriched they are.

For each trajectory, peak step i marks token g[i] (the token emitted from the peak state). Words are
found on the trajectory's decoded text, with word boundaries (:func:`token_words`), and mapped back
to the tokens they span: a real tokenizer writes " Wait" as one token or as " W" + "ait", and both
tokens of the split word are positions of "Wait". Markup is not a word ("think" in ``</think>``,
"boxed" in ``\\boxed``). Raw counts mislead ("So" is frequent anyway), so each word
gets an enrichment ratio

    ratio = (count at peaks / number of peak positions) / (count anywhere / number of positions),

over the same trajectories (both denominators count every position, words or not), with a
confidence interval, named by ``ci``:

* ``"bootstrap"`` (default): percentile interval over trajectories resampled with replacement
  (seeded), which respects that tokens within one trajectory are not independent. Resamples in
  which the word never occurs leave its ratio undefined and are skipped. One trajectory gives a
  degenerate interval: use "wilson" then.
* ``"wilson"``: Wilson score interval of the peak frequency, divided by the background frequency
  treated as known (it rests on all positions, many more than the peaks); ignores clustering.

Either way a word's ``n_units`` counts the trajectories that hold it: the independent units of its evidence (a word
looping 19 times in one trajectory is one unit, and its bootstrap interval has zero width).

Example:
    >>> trajs = [TokenTrajectory(tokens=(" So", " x", "=", "2", " So", " Wait", " x"), peaks=(0, 5))]
    >>> res = thinking_token_enrichment(trajs, ci="wilson")
    >>> [(w.word, w.peak_count, w.total_count, round(w.ratio, 3)) for w in res.words]
    [('Wait', 1, 1, 3.5), ('So', 1, 2, 1.75)]
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from thinklens.analyses.mi.peaks import Peaks
from thinklens.calibration.stats import wilson
from thinklens.errors import ThinklensError

CI_METHODS = ("bootstrap", "wilson")
_MARKERS = "Ġ▁Ċ"  # byte-level BPE space, sentencepiece space, byte-level newline
_MARKER_TEXT = str.maketrans({"Ġ": " ", "▁": " ", "Ċ": "\n"})  # one char each: offsets are kept
# A word: a maximal run of letters, not part of markup (a LaTeX command, a tag such as </think>, <|...|>
# or [THINK]) and not glued to digits or underscores.
_WORD_RE = re.compile(r"(?<![\w\\/<|\['])[^\W\d_]+(?![\w>|\]])")


@dataclass(frozen=True)
class TokenTrajectory:
    """One generated trajectory: its tokens g[0..n-1] as decoded text and its peak steps."""

    tokens: tuple[str, ...]
    """Decoded generated tokens, one string per step (``Trace.tokens``)."""
    peaks: tuple[int, ...]
    """Peak steps i; token g[i] is the one emitted from the peak state."""
    separator: str = ""
    """Put between tokens to rebuild the text: "" for BPE pieces (they carry their spaces), " " for
    word-level tokenizers such as the zoo's, whose tokens decode without spaces."""

    def __post_init__(self) -> None:
        peaks = self.peaks
        bad = [i for i in peaks if not 0 <= i < len(self.tokens)]
        if bad:
            raise ThinklensError.of("peak index", bad[0], f"a step in [0, {len(self.tokens)})",
                                    "compute peaks on the curve of this same trajectory")
        if len(set(peaks)) != len(peaks):
            raise ThinklensError.of("peaks", peaks, "distinct steps", "deduplicate the peak indices")

    @classmethod
    def of(cls, tokens: Sequence[str], peaks: Sequence[int] | Peaks, separator: str = "") -> TokenTrajectory:
        """From any sequences, or from a :class:`Peaks` result.

        Example:
            >>> TokenTrajectory.of([" So", " x"], [0]).peaks
            (0,)
        """
        idx = peaks.indices if isinstance(peaks, Peaks) else peaks
        return cls(tokens=tuple(tokens), peaks=tuple(int(i) for i in idx), separator=separator)


@dataclass(frozen=True)
class WordEnrichment:
    """Counts and enrichment of one word."""

    word: str
    peak_count: int
    """Peak positions whose token is this word."""
    total_count: int
    """Positions anywhere in the same trajectories whose token is this word."""
    peak_freq: float
    """peak_count / number of peak positions."""
    background_freq: float
    """total_count / number of positions."""
    ratio: float
    """peak_freq / background_freq (NaN if the word never occurs)."""
    ci_low: float
    ci_high: float
    n_units: int = 0
    """Trajectories that hold the word: the units its evidence rests on (the bootstrap resamples trajectories, and
    only those holding the word move its ratio; 19 occurrences in one looping trajectory are one unit, not 19)."""


@dataclass(frozen=True)
class EnrichmentResult:
    """Thinking-token enrichment over a set of trajectories."""

    words: tuple[WordEnrichment, ...]
    """Sorted by peak_count (desc), then ratio (desc), then word."""
    n_trajectories: int
    n_peak_tokens: int
    """All peak positions, whether or not their token is a word."""
    n_tokens: int
    """All positions."""
    ci: str
    level: float
    n_boot: int
    seed: int
    lowercase: bool

    def top(self, n: int = 20, by: str = "peak_count") -> tuple[WordEnrichment, ...]:
        """The n first words by "peak_count" (stored order) or by "ratio"."""
        if by == "ratio":
            return tuple(sorted(self.words, key=lambda w: (-_nan_low(w.ratio), -w.peak_count, w.word))[:n])
        if by != "peak_count":
            raise ThinklensError.of("sort key", by, "'peak_count' or 'ratio'", "pick one of the two")
        return self.words[:n]

    def get(self, word: str) -> WordEnrichment | None:
        """The entry of one word, or None."""
        return next((w for w in self.words if w.word == word), None)

    def rows(self) -> list[dict[str, object]]:
        """One plain dict per word, for a dataframe or a parquet file."""
        return [asdict(w) for w in self.words]


def _nan_low(x: float) -> float:
    return -math.inf if math.isnan(x) else x


def word_of(token: str, lowercase: bool = False) -> str | None:
    """The alphabetic word a token stands for, or None.

    Example:
        >>> word_of(" Wait"), word_of("ĠSo"), word_of("42"), word_of(" x="), word_of("Hmm", lowercase=True)
        ('Wait', 'So', None, None, 'hmm')
    """
    w = token.strip().strip(_MARKERS).strip()
    if not w.isalpha():
        return None
    return w.lower() if lowercase else w


def token_of(token: str, lowercase: bool = False) -> str | None:
    """Any token, stripped of whitespace and BPE space markers; None if nothing is left.

    Example:
        >>> token_of(" <<"), token_of("</think>"), token_of("Ċ"), token_of(" So", lowercase=True)
        ('<<', '</think>', None, 'so')
    """
    w = token.strip().strip(_MARKERS).strip()
    if not w:
        return None
    return w.lower() if lowercase else w


def token_words(tokens: Sequence[str], separator: str = "", lowercase: bool = False) -> list[str | None]:
    """The word each token belongs to (None: no word), found on the joined text with word boundaries.

    A word split over several tokens (" W" + "ait") belongs to each of them; a token holding a word and
    punctuation (" Wait,") belongs to the word; BPE space markers count as spaces.

    Example:
        >>> token_words([" W", "ait", ",", " so", " x", "=", "2", "</think>", " \\\\boxed{", "4", "}"])
        ['Wait', 'Wait', None, 'so', 'x', None, None, None, None, None, None]
        >>> token_words(["so", "therefore", "<<"], separator=" ")
        ['so', 'therefore', None]
    """
    starts, pos = [], 0
    for t in tokens:
        starts.append(pos)
        pos += len(t) + len(separator)
    text = separator.join(t.translate(_MARKER_TEXT) for t in tokens)
    out: list[str | None] = [None] * len(tokens)
    for m in _WORD_RE.finditer(text):
        word = m.group(0).lower() if lowercase else m.group(0)
        first = bisect.bisect_right(starts, m.start()) - 1  # the token holding the word's first char
        for i in range(first, len(tokens)):
            if starts[i] >= m.end():
                break
            if out[i] is None and starts[i] + len(tokens[i]) > m.start():
                out[i] = word
    return out


def _per_token(unit_of):
    return lambda t, lowercase: [unit_of(tok, lowercase) for tok in t.tokens]


UNITS = {"words": lambda t, lowercase: token_words(t.tokens, t.separator, lowercase), "all": _per_token(token_of)}
"""What is counted: words on the decoded text (the paper's alphabetic words) or every token."""


def _wilson(successes: int, n: int, level: float) -> tuple[float, float]:
    return (math.nan, math.nan) if n == 0 else wilson(int(successes), int(n), level)


def _bootstrap(peak_w: np.ndarray, all_w: np.ndarray, n_peaks: np.ndarray, n_all: np.ndarray, level: float,
               n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile CI of every word's ratio; arrays are per trajectory ([traj, word] or [traj])."""
    n = n_all.shape[0]
    rng = np.random.default_rng(seed)
    draws = np.zeros((n_boot, n))  # [boot, traj]: how often each trajectory was drawn
    np.add.at(draws, (np.repeat(np.arange(n_boot), n), rng.integers(0, n, size=n_boot * n)), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (draws @ peak_w / (draws @ n_peaks)[:, None]) / (draws @ all_w / (draws @ n_all)[:, None])
    ratio[~np.isfinite(ratio)] = np.nan  # word or peaks absent from that resample: undefined
    lo = np.full(ratio.shape[1], np.nan)
    hi = np.full(ratio.shape[1], np.nan)
    ok = ~np.all(np.isnan(ratio), axis=0)
    if ok.any():
        q = np.nanpercentile(ratio[:, ok], [50 * (1 - level), 50 * (1 + level)], axis=0)
        lo[ok], hi[ok] = q[0], q[1]
    return lo, hi


def thinking_token_enrichment(
    trajectories: Sequence[TokenTrajectory | tuple[Sequence[str], Sequence[int] | Peaks]],
    *,
    lowercase: bool = False,
    unit: str = "words",
    words: Sequence[str] = (),
    min_peak_count: int = 1,
    ci: str = "bootstrap",
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> EnrichmentResult:
    """Count the words emitted at peaks and their enrichment over the same trajectories.

    Args:
        trajectories: TokenTrajectory values or (tokens, peaks) pairs.
        lowercase: merge "So" and "so" (off by default: the paper's list keeps case).
        unit: "words" counts words found on the decoded text (the paper's alphabetic words; see
            :func:`token_words`); "all" counts every token (on the zoo, peaks also sit on structural
            tokens such as "<<" and "</think>").
        words: words to report even if seen at fewer than ``min_peak_count`` peaks (e.g. "Wait").
        min_peak_count: report words seen at least this often at peaks.
        ci: "bootstrap" (over trajectories) or "wilson"; see the module docstring.
        level: confidence level of the interval.
        n_boot, seed: bootstrap resamples and their seed.
    """
    if ci not in CI_METHODS:
        raise ThinklensError.of("ci", ci, f"one of {CI_METHODS}", "use 'bootstrap' or 'wilson'")
    if unit not in UNITS:
        raise ThinklensError.of("unit", unit, f"one of {sorted(UNITS)}", "use 'words'")
    units_of = UNITS[unit]
    if not 0 < level < 1:
        raise ThinklensError.of("level", level, "a number in (0, 1)", "use 0.95")
    if ci == "bootstrap" and not (isinstance(n_boot, int) and n_boot >= 1):
        raise ThinklensError.of("n_boot", n_boot, "an int >= 1", "use 1000")
    trajs = [t if isinstance(t, TokenTrajectory) else TokenTrajectory.of(t[0], t[1]) for t in trajectories]
    if not trajs:
        raise ThinklensError.of("trajectories", 0, "at least one trajectory", "generate some first")

    peak_counts, all_counts = [], []  # per trajectory Counters of words
    for t in trajs:
        ws = units_of(t, lowercase)
        all_counts.append(Counter(w for w in ws if w is not None))
        peak_counts.append(Counter(ws[i] for i in t.peaks if ws[i] is not None))
    peak_total = sum(peak_counts, Counter())
    all_total = sum(all_counts, Counter())
    wanted = [w.lower() if lowercase else w for w in words]
    vocab = sorted({w for w, n in peak_total.items() if n >= min_peak_count} | set(wanted))
    n_peaks = np.array([len(t.peaks) for t in trajs], dtype=np.float64)
    n_all = np.array([len(t.tokens) for t in trajs], dtype=np.float64)
    big_p, big_n = int(n_peaks.sum()), int(n_all.sum())

    if ci == "bootstrap" and vocab:
        peak_w = np.array([[c[w] for w in vocab] for c in peak_counts], dtype=np.float64)  # [traj, word]
        all_w = np.array([[c[w] for w in vocab] for c in all_counts], dtype=np.float64)
        lows, highs = _bootstrap(peak_w, all_w, n_peaks, n_all, level, n_boot, seed)
    out = []
    for j, w in enumerate(vocab):
        a, b = peak_total[w], all_total[w]
        peak_freq = a / big_p if big_p else math.nan
        bg = b / big_n if big_n else math.nan
        ratio = peak_freq / bg if b else math.nan
        if ci == "wilson":
            lo_p, hi_p = _wilson(a, big_p, level)
            lo, hi = (lo_p / bg, hi_p / bg) if b else (math.nan, math.nan)
        else:
            lo, hi = float(lows[j]), float(highs[j])
        out.append(WordEnrichment(word=w, peak_count=a, total_count=b, peak_freq=peak_freq, background_freq=bg,
                                  ratio=ratio, ci_low=lo, ci_high=hi, n_units=sum(1 for c in all_counts if c[w] > 0)))
    out.sort(key=lambda e: (-e.peak_count, -_nan_low(e.ratio), e.word))
    return EnrichmentResult(words=tuple(out), n_trajectories=len(trajs), n_peak_tokens=big_p, n_tokens=big_n,
                            ci=ci, level=level, n_boot=n_boot if ci == "bootstrap" else 0, seed=seed,
                            lowercase=lowercase)
