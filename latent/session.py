"""KV-cached, mask-correct passes over one batch, with latents fed through the core's embed site.

A :class:`LatentSession` runs the prompt (left padded, so every row's latents land in the same
column), then appends latent steps (a ``<latent>`` token whose embedding the core's
:class:`~thinklens.interventions.InjectEmbeddings` replaces by the given vector) and token segments
(right padded). The attention mask always covers the left padding -- the CODI reference drops it after
the question, so its outputs depend on batch composition; here batch 1 and batch 16 agree (tested).
Gradients flow through the cache, so trainers and inference share this one code path.

Example:
    >>> # with LatentSession(model, ids, mask, latent_id=tok.latent) as s:
    >>> #     out = s.run_tokens(ids, mask)            # prefill
    >>> #     h = out.hidden_states[-1][:, -1]          # [batch, d] post-norm state
    >>> #     out = s.run_latent(h)                     # Coconut: feed it back as the next input
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from thinklens.generate import cache_kwarg
from thinklens.hooks import ForwardContext
from thinklens.interventions import InjectEmbeddings

if TYPE_CHECKING:
    from thinklens.model import HookedModel


class LatentSession:
    """One batch's growing sequence; use as a context manager (the injection hook is removed on exit)."""

    def __init__(self, model: "HookedModel", *, latent_id: int, hidden_states: bool = True):
        from transformers import DynamicCache

        self.model = model
        self.latent_id = latent_id
        self.hidden_states = hidden_states
        self.cache = DynamicCache(config=model.config)
        self.mask: Tensor | None = None  # [batch, seen]
        self.last_pos: Tensor | None = None  # [batch, 1] logical position of the last real token
        self._pending: Tensor | None = None
        self._stack: ExitStack | None = None

    def __enter__(self) -> "LatentSession":
        self._stack = ExitStack()
        self._stack.enter_context(self.model.intervene([InjectEmbeddings(values=self._inject)]))
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._stack is not None
        self._stack.close()

    def _inject(self, act: Tensor, ctx: ForwardContext) -> Tensor | None:
        # only the forward call that run_latent started carries a pending vector
        if self._pending is None:
            return None
        new, self._pending = self._pending.to(act.dtype), None
        return new  # [batch, 1, d]

    def _forward(self, ids: Tensor, new_mask: Tensor) -> Any:
        """Append ``ids`` ``[batch, n]`` (``new_mask`` 1 = real) and run the model over them."""
        dev = self.model.device
        ids, new_mask = ids.to(dev), new_mask.to(dev).long()
        if self.mask is None:
            full = new_mask
            pos = self.model.position_ids(new_mask)  # [batch, n]
        else:
            full = torch.cat([self.mask, new_mask], 1)
            pos = self.last_pos + new_mask.cumsum(1)  # padding after a row's end gets harmless positions
        self.mask = full
        last = (pos * new_mask).max(1, keepdim=True).values
        has = new_mask.sum(1, keepdim=True) > 0
        self.last_pos = torch.where(has, last, self.last_pos if self.last_pos is not None else last)
        hf = self.model.hf
        ctx = ForwardContext(position_ids=pos, token_mask=new_mask.bool(), cache=self.cache)
        kw = {"attention_mask": full, "position_ids": pos, "use_cache": True, cache_kwarg(hf): self.cache,
              "output_hidden_states": self.hidden_states}
        with self.model.context.use(ctx):
            return hf(input_ids=ids, **kw)

    def run_tokens(self, ids: Tensor, mask: Tensor | None = None) -> Any:
        """Run a token segment ``[batch, n]`` (the first call is the prefill; left padding allowed there,
        right padding after). Returns the HF output (``logits``, ``hidden_states``)."""
        return self._forward(ids, torch.ones_like(ids) if mask is None else mask)

    def run_latent(self, vectors: Tensor) -> Any:
        """Append one latent step whose input embedding is ``vectors`` ``[batch, d]``."""
        if self._stack is None:
            raise RuntimeError("use LatentSession as a context manager (the injection hook lives there)")
        b = vectors.shape[0]
        self._pending = vectors[:, None, :]
        ids = torch.full((b, 1), self.latent_id, dtype=torch.long)
        try:
            return self._forward(ids, torch.ones_like(ids))
        finally:
            self._pending = None

    @torch.no_grad()
    def greedy(self, first: Tensor, *, stop_id: int, max_new_tokens: int) -> list[list[int]]:
        """Feed ``first`` ``[batch, n]`` then decode greedily; each row's ids up to (excluding) ``stop_id``."""
        out = self.run_tokens(first)
        rows: list[list[int]] = [[] for _ in range(first.shape[0])]
        done = torch.zeros(first.shape[0], dtype=torch.bool)
        for _ in range(max_new_tokens):
            nxt = out.logits[:, -1].argmax(-1).cpu()  # [batch]
            for r in range(len(rows)):
                if not done[r]:
                    if int(nxt[r]) == stop_id:
                        done[r] = True
                    else:
                        rows[r].append(int(nxt[r]))
            if bool(done.all()):
                break
            out = self.run_tokens(nxt[:, None])
        return rows


def last_hidden(out: Any) -> Tensor:
    """The last position's final-layer (post-norm) hidden state ``[batch, d]``: HF ``hidden_states[-1]``."""
    return out.hidden_states[-1][:, -1]
