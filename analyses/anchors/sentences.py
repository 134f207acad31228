"""Sentences of a reasoning trace, the units of thought-anchor analysis (Bogdan et al. 2025, arXiv 2506.19143).

The rules (the paper's splitter, ``split_solution_into_chunks`` in its reference code's ``utils.py``, restated;
:func:`split_sentences`):

1. a sentence ends after ``.``, ``!`` or ``?`` when a space or a line break follows it: a decimal point (``3.5``),
   a period before a closing quote (``"stop." He``) or a period at the very end never ends one;
2. a paragraph break (a blank line, ``\n\n``) ends a sentence; a single line break does not;
3. a piece shorter than ``min_chars`` (10) characters, surrounding whitespace left out, is merged into the sentence
   that follows it (and the merged piece checked again), or into the one before it at the end of the text;
4. whitespace between sentences belongs to no sentence: a span starts at its first non-space character and ends after
   its last one.

One deliberate difference: the paper's code drops the text after the last sentence end (an unterminated tail);
here the tail is a sentence of its own (a trace cut by its token budget still has a last, unfinished sentence).

Example:
    >>> [text[a:b] for text in ["So x = 3.5 now. Wait!\\nThen y = 2? Fine"] for a, b in split_sentences(text)]
    ['So x = 3.5 now.', 'Wait!\\nThen y = 2? Fine']
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from thinklens.errors import ThinklensError

MIN_CHARS = 10
"""Pieces shorter than this (characters, surrounding whitespace left out) are merged into a neighbour (rule 3)."""

_END = re.compile(r"[.!?](?=[ \n])|\n\n|\r\n\r\n")
"""Where a sentence ends (rules 1 and 2): terminal punctuation before a space or a line break, or a blank line."""


def split_sentences(text: str, *, min_chars: int = MIN_CHARS) -> list[tuple[int, int]]:
    """``(start, end)`` character spans of the sentences of ``text`` by the module's rules, in order."""
    if min_chars < 1:
        raise ThinklensError.of("min_chars", min_chars, "an integer >= 1", "pass e.g. min_chars=10")
    pieces: list[tuple[int, int]] = []
    start = 0
    for m in _END.finditer(text):
        pieces.append((start, m.end()))
        start = m.end()
    pieces.append((start, len(text)))
    spans = []
    for a, b in pieces:
        seg = text[a:b]
        if not seg.strip():
            continue
        a += len(seg) - len(seg.lstrip())
        b -= len(seg) - len(seg.rstrip())
        spans.append((a, b))
    out: list[tuple[int, int]] = []
    carry: int | None = None  # start of short pieces waiting for the next sentence
    for a, b in spans:
        if carry is not None:
            a, carry = carry, None
        if len(text[a:b]) < min_chars:
            carry = a
            continue
        out.append((a, b))
    if carry is not None:  # a short piece at the end joins the one before it
        if out:
            out[-1] = (out[-1][0], len(text.rstrip()))
        else:
            out.append((carry, len(text.rstrip())))
    return out


@dataclass(frozen=True)
class Sentences:
    """A trace split into sentences, with their token spans in ``prompt + trace``."""

    prompt: str
    """The prompt text the trace continues."""
    text: str
    """The trace text (the model's reasoning)."""
    spans: tuple[tuple[int, int], ...]
    """``(start, end)`` characters of each sentence in :attr:`text`."""

    @property
    def sentences(self) -> list[str]:
        """The sentences' texts."""
        return [self.text[a:b] for a, b in self.spans]

    def __len__(self) -> int:
        return len(self.spans)

    def prefix(self, i: int) -> str:
        """``prompt`` plus the trace up to the end of sentence ``i - 1`` (``i = 0``: the prompt alone; ``i = len``: the
        whole trace up to its last sentence); trailing whitespace is left to the continuation (a BPE tokenizer writes
        ``" So"`` as one token)."""
        if not 0 <= i <= len(self):
            raise ThinklensError.of("prefix index", i, f"0..{len(self)}", "count sentences from 0")
        return self.prompt + (self.text[: self.spans[i - 1][1]] if i else "")

    def token_sentence(self, tokenizer: Any) -> tuple[list[int], list[int]]:
        """Token ids of ``prompt + trace`` (up to the last sentence) and each token's sentence index (``-1``: the
        prompt or whitespace between sentences), from the tokenizer's character offsets."""
        full = self.prefix(len(self))
        enc = tokenizer(full, return_offsets_mapping=True)  # special tokens the tokenizer adds own no sentence
        base = len(self.prompt)
        owner = []
        for a, b in enc["offset_mapping"]:
            idx = -1
            for k, (s, e) in enumerate(self.spans):
                if s <= max(a - base, (b - base) - 1) < e and b > base:  # the token's last character lies in sentence k
                    idx = k
                    break
            owner.append(idx)
        return list(enc["input_ids"]), owner


def sentences_of(prompt: str, text: str, *, max_sentences: int | None = None, min_chars: int = MIN_CHARS) -> Sentences:
    """``text`` (a trace continuing ``prompt``) split by :func:`split_sentences`, kept to its first ``max_sentences``."""
    spans = split_sentences(text, min_chars=min_chars)
    if max_sentences is not None:
        spans = spans[:max_sentences]
    if not spans:
        raise ThinklensError.of("trace", repr(text[:60]), "a trace with at least one sentence", "generate a longer trace")
    return Sentences(prompt, text, tuple(spans))


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the two sentences' lower-cased word multisets (numbers are words): the stated substitute
    for the paper's sentence-embedding cosine (all-MiniLM-L6-v2), which thinklens does not ship.

    Example:
        >>> word_overlap("So Leo has 77 stones.", "so leo has 77 stones"), round(word_overlap("So Leo has 77", "So Leo has 70"), 3)
        (1.0, 0.6)
    """

    wa, wb = (Counter(re.findall(r"\w+", s.lower())) for s in (a, b))
    union = sum((wa | wb).values())
    return 1.0 if union == 0 else sum((wa & wb).values()) / union


def first_sentence(text: str) -> str:
    """The first sentence of a continuation (the rollout's replacement of the resampled sentence)."""
    spans = split_sentences(text)
    return text[spans[0][0]:spans[0][1]] if spans else ""

