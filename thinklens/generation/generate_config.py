"""The decoding settings of :func:`thinklens.generation.generate.generate` (:class:`GenerateConfig`), apart from it so
that both backends (the hook loop and :mod:`thinklens.engine.nnsight_backend`) read one type below the function that
picks between them.

Example:
    >>> GenerateConfig(max_new_tokens=(8, 16)).max_new_tokens
    (8, 16)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from thinklens.errors import ThinklensError
from thinklens.generation.decode_loop import row_budgets


@dataclass(frozen=True)
class GenerateConfig:
    """Decoding settings."""

    max_new_tokens: int | tuple[int, ...] = 64
    """Upper bound on generated tokens per prompt: one for all, or one per prompt
    (:func:`thinklens.generation.budgets.budgets_for` gives them inside the context)."""
    do_sample: bool = False
    """Sample (True) or greedy argmax (False)."""
    seed: int | None = None
    """Seed of the local torch.Generator used for sampling."""
    temperature: float = 1.0
    """Softmax temperature when sampling."""
    top_p: float = 1.0
    """Nucleus mass when sampling (1.0 = off)."""
    stop: tuple[str, ...] = ()
    """Stop once the generated text contains any of these strings."""
    top_k_stats: int = 5
    """How many top tokens (ids, probabilities) to record per step."""
    batch_size: int | None = None
    """Prompts per batch (None = all at once)."""
    stream_every: int = 64
    """With a store to stream to: steps between two hand-overs of the states to the store."""
    continuous: bool = True
    """With more prompts than ``batch_size``: a row that stops frees its slot for the next prompt (continuous
    batching, :func:`thinklens.generation.decode_loop.decode_queue`); False: batch after batch. Greedy decoding only
    (the same tokens; sampling keeps batch after batch, so a seed draws the samples it drew before), in the local
    loop, without interventions, on full-attention caches (else batch after batch)."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_new_tokens, int):
            row_budgets(self.max_new_tokens, len(self.max_new_tokens))
        elif self.max_new_tokens < 1:
            raise ThinklensError.of("max_new_tokens", self.max_new_tokens, "an integer >= 1", "pass e.g. max_new_tokens=64")
        if not (self.temperature > 0 and math.isfinite(self.temperature)):
            raise ThinklensError.of("temperature", self.temperature, "a finite number > 0", "use do_sample=False for greedy")
        if not 0 < self.top_p <= 1:
            raise ThinklensError.of("top_p", self.top_p, "a number in (0, 1]", "pass top_p=0.95")
        if self.batch_size is not None and self.batch_size < 1:
            raise ThinklensError.of("batch_size", self.batch_size, "an integer >= 1 or None", "pass batch_size=16")
        if not isinstance(self.stream_every, int) or self.stream_every < 1:
            raise ThinklensError.of("stream_every", self.stream_every, "an integer >= 1", "pass stream_every=64")
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ThinklensError.of("stop strings", self.stop, "non-empty strings", "remove empty stop strings")
