"""Words in generated text: reflection words and cues (``wait``, ``hmm``, ``let me check``) found the one way
every method finds them: case-insensitively, on word boundaries, any whitespace inside a phrase, on the
decoded text; and, on a token sequence, the tokens where each occurrence starts and ends (a word split
over several tokens, `` W`` + ``ait``, counts once).

Example:
    >>> [m.group(0) for m in word_pattern(["wait", "let me check"]).finditer("Wait, let  me check. awaiting")]
    ['Wait', 'let  me check']
    >>> [(h.start_index, h.end_index, h.word) for h in find_words([" So", " W", "ait", ",", " wait"], ["wait"])]
    [(1, 2, 'wait'), (4, 4, 'wait')]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

RECHECK = re.compile(r"let me (?:double-check|verify|recompute)")
"""What opens a re-check round in a reasoning trace, as tiny-overthink writes it (thinklens/zoo/overthink.py); hybrid
steering's planted behaviour counts the rounds (steering/hybrid_validation.py)."""


@lru_cache(maxsize=256)
def _pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    # longest first, so "wait a moment" wins over "wait" at the same start
    alternatives = "|".join(r"\s+".join(re.escape(part) for part in w.split()) for w in sorted(words, key=len, reverse=True))
    # (?<!\w) / (?!\w) instead of \b: also correct when a word starts or ends with a non-word char
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def word_pattern(words: str | Sequence[str]) -> re.Pattern[str]:
    """A pattern matching any of ``words`` (or one word or phrase) on decoded text: case-insensitive, on word
    boundaries (``awaiting`` is not ``wait``), any whitespace between a phrase's words, longest first.

    Example:
        >>> len(word_pattern("wait").findall("Wait. wait! awaiting"))
        2
    """
    return _pattern((words,) if isinstance(words, str) else tuple(words))


@dataclass(frozen=True)
class WordHit:
    """One occurrence of a word in a token sequence."""

    start_index: int
    """Index of the token where the word starts."""
    end_index: int
    """Index of the token where the word ends (its last character)."""
    word: str
    """The word as written, lower-cased."""
    char_span: tuple[int, int]
    """Character span in the tokens joined by the separator."""


def find_words(tokens: Sequence[str], words: str | Sequence[str], *, separator: str = "") -> list[WordHit]:
    """Occurrences of ``words`` in a token sequence, in order, at most one ending in each token.

    Args:
        tokens: tokens, each decoded on its own; joined by ``separator`` they are the text.
        words: words or phrases to find (:func:`word_pattern`).
        separator: put between tokens when joining them; ``" "`` for word-level tokenizers (the zoo's) whose
            tokens decode without spaces, so ``so`` + ``wait`` is not read as ``sowait``.

    Example:
        >>> [h.end_index for h in find_words(["so", "wait", "<<"], ["wait"], separator=" ")]
        [1]
    """
    if len(tokens) == 0:
        return []
    # [token] char offset where each token ends; a separator counts to the token before it
    ends = np.cumsum([len(t) + len(separator) for t in tokens]) - len(separator)
    hits: list[WordHit] = []
    seen: set[int] = set()
    for m in word_pattern(words).finditer(separator.join(tokens)):
        # the token containing the word's last char: first token whose end offset reaches m.end()
        end_tok = int(np.searchsorted(ends, m.end(), side="left"))
        if end_tok in seen:
            continue
        seen.add(end_tok)
        start_tok = int(np.searchsorted(ends, m.start(), side="right"))
        hits.append(WordHit(start_tok, end_tok, m.group(0).lower(), (m.start(), m.end())))
    return hits
