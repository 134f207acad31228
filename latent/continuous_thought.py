"""Continuous thoughts, shared by Coconut and CODI: the last hidden state is fed back as the next input
embedding, N times, between ``<bot>`` and ``<eot>``; then the answer is decoded greedily.

Example:
    >>> # class Mine(ContinuousThought):
    >>> #     def latent_input(self, h): return self.prj(h)          # CODI: a projection; Coconut: identity
    >>> # preds = Mine(model, tokens).infer(examples, n_latents=6)  # 6 latents, <eot>, then greedy decoding
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from thinklens.generation.kv_batch import left_pad
from thinklens.latent.segments import Example, LatentTokens
from thinklens.latent.session import LatentSession, last_hidden

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel


class ContinuousThought(nn.Module):
    """Shared machinery: prompt + ``<bot>``, N latent steps, then ``<eot>`` + a token suffix.

    Subclasses set :meth:`latent_input` (identity for Coconut, a projection for CODI).
    """

    def __init__(self, model: "HookedModel", tokens: LatentTokens):
        super().__init__()
        self.model = model
        self.hf = model.hf  # registered, so DDP / optimizers / checkpoints see the weights
        self.tokens = tokens

    def latent_input(self, h: Tensor) -> Tensor:
        """Map the last hidden state ``[batch, d]`` to the next input embedding."""
        return h

    def prompt_batch(self, examples: list[Example]) -> tuple[Tensor, Tensor]:
        """Prompt + ``<bot>``, left padded."""
        enc = left_pad([list(ex.prompt) + [self.tokens.bot] for ex in examples], self.tokens.pad)
        return enc["input_ids"], enc["attention_mask"]

    def run(self, session: LatentSession, prompt: tuple[Tensor, Tensor], n_latents: int,
            suffix: tuple[Tensor, Tensor] | None = None) -> tuple[Any, list[Tensor]]:
        """Prefill, ``n_latents`` latent steps, then the suffix (if given).

        Returns the last HF output and the hidden states ``[batch, d]`` that produced each latent
        (index 0 = the state at ``<bot>``).
        """
        out = session.run_tokens(*prompt)
        h = last_hidden(out)
        states = []
        for _ in range(n_latents):
            states.append(h)
            out = session.run_latent(self.latent_input(h))
            h = last_hidden(out)
        states.append(h)
        if suffix is not None:
            out = session.run_tokens(*suffix)
        return out, states

    @torch.no_grad()
    def infer(self, examples: list[Example], n_latents: int, *, max_new_tokens: int = 40,
              decode_top: int = 5) -> list[dict]:
        """Latent inference: ``n_latents`` steps, ``<eot>``, then greedy decoding up to eos.

        Returns one dict per example: ``ids`` (generated after ``<eot>``), ``latents`` (top tokens
        and probabilities of each latent's hidden state through the LM head).
        """
        was = self.training
        self.eval()
        try:
            with LatentSession(self.model, latent_id=self.tokens.latent) as s:
                _, states = self.run(s, self.prompt_batch(examples), n_latents)
                eot = torch.full((len(examples), 1), self.tokens.eot, dtype=torch.long)
                rows = s.greedy(eot, stop_id=self.tokens.eos, max_new_tokens=max_new_tokens)
        finally:
            self.train(was)
        decoded = decode_states(self.model, torch.stack(states[:n_latents], 1), decode_top)  # per row, per latent
        return [{"ids": rows[r], "latents": decoded[r]} for r in range(len(examples))]


def answer_room(examples: list[Example]) -> int:
    """New tokens an answer may take: 8, or the longest answer segment and 4 more (a BPE tokenizer writes a LaTeX
    answer in many tokens)."""
    return max(8, max(len(ex.answer) for ex in examples) + 4)


def answer_budget(examples: list[Example]) -> int:
    """New tokens after ``<eot>`` at test time: the longest CoT of the batch plus :func:`answer_room`."""
    return max(len(ex.cot) for ex in examples) + answer_room(examples)


def decode_states(model: "HookedModel", states: Tensor, k: int = 5) -> list[list[dict]]:
    """Top-k tokens of post-norm states ``[batch, n, d]`` through the LM head (the logit lens).

    Example output for one latent: ``{"tokens": ["12", "=", ...], "probs": [0.61, 0.1, ...]}``.
    """
    if states.shape[1] == 0:
        return [[] for _ in range(states.shape[0])]
    probs = torch.softmax(model.unembed(states, apply_norm=False).float(), -1)  # [batch, n, vocab]
    p, i = probs.topk(k, -1)
    tok = model.tokenizer
    return [[{"tokens": [tok.convert_ids_to_tokens(int(t)) for t in i[b, j]], "probs": [round(float(x), 4) for x in p[b, j]]}
             for j in range(states.shape[1])] for b in range(states.shape[0])]
