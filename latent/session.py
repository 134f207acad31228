"""KV-cached, mask-correct passes over one batch with latent steps: a thin layer over the core's
:class:`~thinklens.generation.kv_batch.Decoder` and decode loop.

A :class:`LatentSession` runs the prompt (left padded, so every row's latents land in the same
column), then appends latent steps (an input embedding per row, recorded as a ``<latent>`` token in
the sequence) and token segments (right padded). The attention mask always covers the left padding --
the CODI reference drops it after the question, so its outputs depend on batch composition; here
batch 1 and batch 16 agree (tested). Gradients flow through the cache, so trainers and inference
share this one code path.

Example:
    >>> # with LatentSession(model, latent_id=tok.latent) as s:
    >>> #     out = s.run_tokens(ids, mask)            # prefill
    >>> #     h = out.hidden_states[-1][:, -1]          # [batch, d] post-norm state
    >>> #     out = s.run_latent(h)                     # Coconut: feed it back as the next input
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from thinklens.generation.decode_loop import Greedy, decode
from thinklens.generation.kv_batch import Decoder

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel


class LatentSession:
    """One batch's growing sequence; use as a context manager (the cache, and its graph, go on exit).

    Args:
        latent_id: the ``<latent>`` token id the sequence records where a latent step was fed.
        hidden_states: return every layer's states with each output (CODI's distillation needs them).
    """

    def __init__(self, model: "HookedModel", *, latent_id: int, hidden_states: bool = True):
        self.model = model
        self.latent_id = latent_id
        self.decoder = Decoder(model, output_hidden_states=hidden_states)

    def __enter__(self) -> "LatentSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.decoder = Decoder(self.model, output_hidden_states=self.decoder.output_hidden_states)

    def run_tokens(self, ids: Tensor, mask: Tensor | None = None) -> Any:
        """Run a token segment ``[batch, n]`` (the first call is the prefill; left padding allowed there,
        right padding after). Returns the HF output (``logits``, ``hidden_states``)."""
        return self.decoder.append(ids, mask)

    def run_latent(self, vectors: Tensor) -> Any:
        """Append one latent step whose input embedding is ``vectors`` ``[batch, d]``."""
        ids = torch.full((vectors.shape[0], 1), self.latent_id, dtype=torch.long)
        return self.decoder.append(ids, inputs_embeds=vectors[:, None, :])

    @torch.no_grad()
    def greedy(self, first: Tensor, *, stop_id: int, max_new_tokens: int, mask: Tensor | None = None) -> list[list[int]]:
        """Feed ``first`` ``[batch, n]`` (``mask``: its padding, as :meth:`run_tokens`) then decode greedily; each
        row's ids up to (excluding) ``stop_id``."""
        logits = self.run_tokens(first, mask).logits[:, -1].float()
        out = decode(self.decoder, Greedy(), max_new_tokens=max_new_tokens, eos={stop_id}, logits=logits)
        return [out.row(r)[:-1] if out.stop_reasons[r] == "eos" else out.row(r) for r in range(first.shape[0])]


def last_hidden(out: Any) -> Tensor:
    """The last position's final-layer (post-norm) hidden state ``[batch, d]``: HF ``hidden_states[-1]``."""
    return out.hidden_states[-1][:, -1]
