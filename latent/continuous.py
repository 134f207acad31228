"""Continuous thoughts (Coconut, and the base CODI builds on): the last hidden state is fed back as
the next input embedding, N times, between ``<bot>`` and ``<eot>``.

Coconut (Hao et al., arXiv 2412.06769): no projection; a curriculum where stage s replaces the first
s reasoning steps by s*c latents and the loss covers only the remaining steps and the answer.

Example:
    >>> # coco = Coconut(model, tokens, c=2, max_stage=3)
    >>> # coco.stage = 1; losses = coco(coco.collate(examples))     # training, stage 1
    >>> # preds = coco.infer(examples, n_latents=6)                  # test: 6 latents then decode
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from latent.data import Example, LatentTokens, left_pad, per_example_ce, right_pad, shifted_labels
from latent.session import LatentSession, last_hidden

if TYPE_CHECKING:
    from thinklens.model import HookedModel


def init_special_embeddings(model: "HookedModel", tokens: LatentTokens, source: str = "<<") -> None:
    """Coconut's init: ``<bot> <eot> <latent> <compress>`` rows := the embedding of ``source``.

    With tied embeddings this also sets their LM-head rows; training separates them again.
    """
    src = model.tokenizer(source, add_special_tokens=False)["input_ids"]
    emb = model.hf.get_input_embeddings().weight
    with torch.no_grad():
        row = emb[src].mean(0)
        for i in (tokens.bot, tokens.eot, tokens.latent, tokens.compress):
            emb[i] = row


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
        return left_pad([list(ex.prompt) + [self.tokens.bot] for ex in examples], self.tokens.pad)

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


def coconut_plan(n_steps: int, stage: int, c: int, max_stage: int) -> tuple[int, int]:
    """``(steps removed, latents)``: stage s <= max_stage removes min(s, n_steps) steps and uses s*c
    latents; a later stage removes all steps with max_stage*c latents (the reference's pad_latent_to_max).

    Example:
        >>> coconut_plan(4, 2, 2, 3), coconut_plan(2, 3, 2, 3), coconut_plan(4, 4, 2, 3)
        ((2, 4), (2, 6), (4, 6))
    """
    if stage > max_stage:
        return n_steps, max_stage * c
    return min(stage, n_steps), stage * c


class Coconut(ContinuousThought):
    """Coconut: latents are the raw last hidden states; curriculum over stages (see module doc)."""

    def __init__(self, model: "HookedModel", tokens: LatentTokens, *, c: int = 2, max_stage: int = 3):
        super().__init__(model, tokens)
        self.c, self.max_stage = c, max_stage
        self.stage = 1

    def plan(self, n_steps: int, stage: int) -> tuple[int, int]:
        """``(steps removed, latents)`` at ``stage``; see :func:`coconut_plan`."""
        return coconut_plan(n_steps, stage, self.c, self.max_stage)

    def collate(self, examples: list[Example]) -> dict[str, Any]:
        removed, n_lat = self.plan(len(examples[0].steps), self.stage)
        suffix = [[self.tokens.eot] + [t for s in ex.steps[removed:] for t in s] + list(ex.answer) + [self.tokens.eos]
                  for ex in examples]
        ids, mask = right_pad(suffix, self.tokens.pad)
        return {"prompt": self.prompt_batch(examples), "suffix": (ids, mask),
                "labels": shifted_labels(ids, [1] * len(examples), mask), "n_latents": n_lat}

    def forward(self, batch: dict[str, Any]) -> dict[str, Tensor]:
        with LatentSession(self.model, latent_id=self.tokens.latent) as s:
            out, _ = self.run(s, batch["prompt"], batch["n_latents"], batch["suffix"])
        ce = per_example_ce(out.logits, batch["labels"].to(out.logits.device)).mean()
        return {"loss": ce, "ce": ce.detach()}
