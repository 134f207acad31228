"""What hooks know about the forward call in flight (:class:`ForwardContext`), and where a model keeps it
(:class:`ContextHolder`): set by the model's one forward (:meth:`thinklens.engine.base.BaseHookedModel._forward`),
read by every site hook (:mod:`thinklens.engine.hooks`).

Example:
    >>> import torch
    >>> ContextHolder().get(torch.zeros(2, 3, 4)).position_ids.tolist()
    [[0, 1, 2], [0, 1, 2]]
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor


@dataclass
class ForwardContext:
    """What hooks know about the current forward call.

    Attributes:
        position_ids: ``[batch, pos]`` logical position of each input token (0 = the first real
            token of the row; left padding excluded), as HF ``generate`` computes them.
        token_mask: ``[batch, pos]`` True where the input is a real token (not padding).
        step: -1 for a plain forward or the prefill, t >= 0 for generation step t.
        cache: the KV cache object of the call, if any.
    """

    position_ids: Tensor
    token_mask: Tensor
    step: int = -1
    cache: Any = None


class ContextHolder:
    """Holds the :class:`ForwardContext` of the call in flight; hooks read it.

    When the HF model is called directly (not through a HookedModel), a default context
    (all tokens real, positions 0..pos-1) is derived from the activation's shape.
    """

    def __init__(self) -> None:
        self.current: ForwardContext | None = None

    def get(self, act: Tensor) -> ForwardContext:
        cur = self.current
        if cur is not None and cur.position_ids.shape == act.shape[:2]:
            return cur
        b, p = act.shape[:2]
        if cur is not None and cur.position_ids.shape[0] == b and p < cur.position_ids.shape[1]:
            # the LM head ran on the last p positions only (``logits_to_keep``, as in decoding)
            return ForwardContext(cur.position_ids[:, -p:], cur.token_mask[:, -p:], cur.step, cur.cache)
        pos = torch.arange(p, device=act.device).expand(b, p)
        return ForwardContext(pos, torch.ones(b, p, dtype=torch.bool, device=act.device))

    @contextmanager
    def use(self, ctx: ForwardContext) -> Iterator[ForwardContext]:
        prev, self.current = self.current, ctx
        try:
            yield ctx
        finally:
            self.current = prev
