"""From thinking words to token ids, and seeded random token sets for controls.

A word maps to every vocabulary entry that decodes to it once surrounding whitespace and BPE
space markers are stripped (" So", "So", "ĠSo" all map to "So"), special tokens excluded.

Example:
    >>> from tools.testing import word_tokenizer
    >>> tok = word_tokenizer(8)
    >>> token_ids_for_words(tok, ["w1", "w5"])
    {'w1': [4], 'w5': [8]}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from thinklens.analyses.mi.thinking_tokens import word_of
from thinklens.errors import ThinklensError

_MARKERS = "Ġ▁Ċ"


def _normal(text: str, lowercase: bool) -> str:
    w = text.strip().strip(_MARKERS).strip()
    return w.lower() if lowercase else w


def decoded_vocab(tokenizer: Any) -> list[str]:
    """Every vocabulary id decoded on its own (index = token id)."""
    n = len(tokenizer)
    return tokenizer.batch_decode([[i] for i in range(n)])


def token_ids_for_words(tokenizer: Any, words: Sequence[str], *, lowercase: bool = False) -> dict[str, list[int]]:
    """The ids of each word (possibly several: with or without a leading space, ...).

    A word with no id is an error: suppressing or recycling "nothing" would silently pass.
    """
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    table: dict[str, list[int]] = {_normal(w, lowercase): [] for w in words}
    for i, text in enumerate(decoded_vocab(tokenizer)):
        key = _normal(text, lowercase)
        if key in table and i not in special:
            table[key].append(i)
    missing = [w for w, ids in table.items() if not ids]
    if missing:
        raise ThinklensError.of("thinking words", missing, "words that are tokens of this model's vocabulary",
                                "pick words from the enrichment result of this model (thinking_token_enrichment)")
    return table


def flat_ids(table: dict[str, list[int]]) -> list[int]:
    """All ids of a word table, sorted and deduplicated."""
    return sorted({i for ids in table.values() for i in ids})


def random_token_ids(tokenizer: Any, n: int, *, exclude: Sequence[int] = (), pool: str = "words",
                     seed: int = 0) -> list[int]:
    """``n`` distinct random ids (seeded), none in ``exclude``, no special tokens.

    ``pool="words"`` draws from alphabetic word tokens (the fair control for thinking words, which
    are words too); ``pool="any"`` from every non-empty token.
    """
    if pool not in ("words", "any"):
        raise ThinklensError.of("pool", pool, "'words' or 'any'", "use 'words'")
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    banned = special | {int(i) for i in exclude}
    candidates = [i for i, text in enumerate(decoded_vocab(tokenizer))
                  if i not in banned and (word_of(text) is not None if pool == "words" else _normal(text, False))]
    if len(candidates) < n:
        raise ThinklensError.of("random token pool", f"{len(candidates)} tokens", f"at least {n}",
                                "use pool='any', or suppress fewer words")
    g = torch.Generator().manual_seed(seed)
    pick = torch.randperm(len(candidates), generator=g)[:n].tolist()
    return sorted(candidates[j] for j in pick)
