"""The one way a prompt becomes token ids: as generation reads it, with one BOS.

Chat templates of Llama 3 and the R1 distills write the BOS token into the prompt text; their tokenizers add
one too, so calling the tokenizer on a rendered prompt gives ``[bos, bos, ...]`` while
:meth:`thinklens.engine.model.HookedModel.generate` reads ``[bos, ...]``. Every path that tokenizes a prompt (generation,
imported traces, SAE corpora, hybrid steering, LatentSeek, the latent data sets) goes through :func:`prompt_ids`.

Example:
    >>> from tools.testing import word_tokenizer
    >>> prompt_ids(word_tokenizer(), ["w1 w2", "w3"])
    [[4, 5], [6]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload


def adds_bos(tokenizer: Any) -> bool:
    """Whether the tokenizer prepends its BOS token itself (asked on one word)."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return False
    ids = tokenizer("a")["input_ids"]
    return bool(ids) and ids[0] == bos


def without_template_bos(tokenizer: Any, prompts: Sequence[str], *, tokenizer_adds_bos: bool | None = None) -> list[str]:
    """``prompts`` without a leading BOS text when the tokenizer adds a BOS itself: one BOS, never two.

    ``tokenizer_adds_bos``: the answer of :func:`adds_bos` when the caller keeps it (asked here otherwise).
    """
    bos = getattr(tokenizer, "bos_token", None)
    if not bos or not any(p.startswith(bos) for p in prompts):
        return list(prompts)
    if not (adds_bos(tokenizer) if tokenizer_adds_bos is None else tokenizer_adds_bos):
        return list(prompts)
    return [p[len(bos):] if p.startswith(bos) else p for p in prompts]


@overload
def prompt_ids(tokenizer: Any, prompts: str) -> list[int]: ...
@overload
def prompt_ids(tokenizer: Any, prompts: Sequence[str]) -> list[list[int]]: ...
def prompt_ids(tokenizer: Any, prompts: "str | Sequence[str]") -> "list[int] | list[list[int]]":
    """Token ids of a prompt (or of each of a list), as :meth:`HookedModel.tokenize` feeds them to the model: the
    tokenizer's own special tokens, one BOS even when the text starts with one."""
    one = isinstance(prompts, str)
    texts = without_template_bos(tokenizer, [prompts] if one else list(prompts))
    if not texts:
        return []
    ids = [list(row) for row in tokenizer(texts)["input_ids"]]
    return ids[0] if one else ids
