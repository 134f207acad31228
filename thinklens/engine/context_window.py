"""How many tokens a model can read: its config's position limit, else its tokenizer's (:func:`context_length`).

What :attr:`thinklens.engine.base.BaseHookedModel.max_context` reports and every generation budget
(:mod:`thinklens.generation.budgets`) stays inside.
"""

from __future__ import annotations

from typing import Any

CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx")
"""Config fields that hold a model's context length, in the order they are trusted."""
NO_LENGTH = 10**7
"""A tokenizer's ``model_max_length`` at or above this is HF's "not set" sentinel, not a context."""


def context_length(config: Any, tokenizer: Any = None) -> int | None:
    """The context a model really has: its config's position limit (``max_position_embeddings``,
    ``n_positions``, ... of the text config), else the tokenizer's ``model_max_length`` when it is set.

    The config wins when both exist: its position table (or RoPE range) is what the weights were built
    for, while a tokenizer's limit is often a training-time choice (the R1 distills: 131072 vs 16384).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> context_length(NS(max_position_embeddings=512)), context_length(NS(), NS(model_max_length=2048))
        (512, 2048)
        >>> context_length(NS(), NS(model_max_length=int(1e30))) is None
        True
    """
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for cfg in (text, config):
        for key in CONTEXT_KEYS:
            v = getattr(cfg, key, None)
            if isinstance(v, int) and v > 0:
                return v
    n = getattr(tokenizer, "model_max_length", None)
    if isinstance(n, int) and 0 < n < NO_LENGTH:
        return n
    return None
