"""Latent-SFT (Deng et al., arXiv 2510.15522): latents are top-K superpositions of vocabulary embeddings.

Stage 1 (three runs: encoder only, decoder only, both): an encoder (a copy of the start model) reads
the CoT with a compress token after every c tokens; its last hidden state at each compress token,
scored against the (detached) input embeddings, gives ``z_k = sum_j p_j e_j`` over the top-K. The
decoder reads ``prompt <think> L1 S2 L2 ... LK </think> answer`` with the masks and positions of
:mod:`thinklens.latent.lsft_layout`; CE only. Stage 2: the encoder is frozen and only makes soft labels q_i; the
decoder sees ``prompt <think> L1..LK </think> answer`` and learns CE(</think> + answer) +
KL(q_i || p(.|prefix)). Inference: top-K softmax of the next-token logits, fed as the next input
embedding, until the argmax is ``</think>``.

This module is Latent-SFT's entry of the method table (:mod:`thinklens.latent.methods`): its four phases, its trainer
and its inference (without the encoder, which only trains).

Example:
    >>> # lsft = LatentSFT(model, tokens, c=2, top_k=10); lsft.set_phase("encoder")
    >>> # losses = lsft(lsft.collate(examples)); preds = lsft.infer(examples)
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from thinklens.engine.interventions import InjectEmbeddings
from thinklens.latent.lsft_layout import (
    ANSWER,
    LATENT,
    TEXT,
    decoder_layout,
    decoder_mask,
    decoder_positions,
    encoder_layout,
    encoder_mask,
    stack_masks,
)
from thinklens.latent.methods import Phase
from thinklens.latent.segments import IGNORE, Example, LatentTokens, per_example_ce, right_pad
from thinklens.latent.session import LatentSession

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel
    from thinklens.latent.config import LatentSFTConfig

PHASES = ("encoder", "decoder", "joint", "stage2")


def superpose(scores: Tensor, emb: Tensor, k: int) -> tuple[Tensor, Tensor, Tensor]:
    """Top-``k`` softmax superposition: ``(z [n, d], idx [n, k], p [n, k])`` from ``scores [n, vocab]``.

    Example:
        >>> z, idx, p = superpose(torch.tensor([[0.0, 5.0, 5.0]]), torch.eye(3), 2)
        >>> z.tolist(), sorted(idx[0].tolist())
        ([[0.0, 0.5, 0.5]], [1, 2])
    """
    top = scores.float().topk(min(k, scores.shape[-1]), dim=-1)
    p = torch.softmax(top.values, -1)  # [n, k] renormalised over the top-k
    z = torch.einsum("nk,nkd->nd", p.to(emb.dtype), emb[top.indices])  # [n, d]
    return z, top.indices, p


def entropy(p: Tensor) -> Tensor:
    """Entropy in nats of distributions ``[..., k]``."""
    return -(p * p.clamp_min(1e-12).log()).sum(-1)


class LatentSFT(nn.Module):
    """Encoder + decoder of Latent-SFT; ``phase`` picks what trains and which loss ``forward`` computes."""

    def __init__(self, model: "HookedModel", tokens: LatentTokens, *, c: int = 2, top_k: int = 10,
                 kl_weight: float = 1.0, ce_weight: float = 1.0, gumbel: float = 0.0, encoder: nn.Module | None = None):
        super().__init__()
        self.model, self.hf, self.tokens = model, model.hf, tokens
        self.encoder = encoder if encoder is not None else copy.deepcopy(model.hf)  # initialised from the start model
        self.c, self.top_k, self.kl_weight, self.ce_weight, self.gumbel = c, top_k, kl_weight, ce_weight, gumbel
        self.phase = "encoder"

    def set_phase(self, phase: str) -> None:
        """Freeze what this phase does not train (encoder / decoder / joint / stage2)."""
        if phase not in PHASES:
            raise ValueError(f"phase {phase!r} not in {PHASES}")
        self.phase = phase
        self.encoder.requires_grad_(phase in ("encoder", "joint"))
        self.hf.requires_grad_(phase in ("decoder", "joint", "stage2"))

    def _emb(self) -> Tensor:
        return self.model.embedding_weight.detach()  # [vocab, d] detached, as in the reference

    # ------------------------------------------------------------------ batches
    def collate(self, examples: list[Example]) -> dict[str, Any]:
        t = self.tokens
        enc = [encoder_layout(list(ex.prompt), ex.cot, self.c, think=t.think, end_think=t.end_think, compress=t.compress)
               for ex in examples]
        e_ids, e_mask = right_pad([ids for ids, _ in enc], t.pad)
        batch: dict[str, Any] = {
            "enc_ids": e_ids, "enc_mask": stack_masks([encoder_mask(ids, t.compress) for ids, _ in enc]),
            "enc_where": [w for _, w in enc],
        }
        answer = [list(ex.answer) + [t.eos] for ex in examples]
        if self.phase != "stage2":
            lay = [decoder_layout(list(ex.prompt), ex.cot, self.c, a, think=t.think, end_think=t.end_think, latent=t.latent)
                   for ex, a in zip(examples, answer)]
            ids, _ = right_pad([x[0] for x in lay], t.pad)
            width = ids.shape[1]
            pos = torch.zeros_like(ids)
            labels = torch.full_like(ids, IGNORE)
            for b, (row, kinds, owner) in enumerate(lay):
                pos[b, : len(row)] = torch.tensor(decoder_positions(kinds, owner))
                for j in range(len(row) - 1):
                    if kinds[j + 1] in (TEXT, ANSWER):
                        labels[b, j] = row[j + 1]
            batch.update(ids=ids, mask=stack_masks([decoder_mask(k, o) for _, k, o in lay]), pos=pos, labels=labels,
                         slots=[[j for j, k in enumerate(kinds) if k == LATENT] for _, kinds, _ in lay], width=width)
        else:
            rows, first, slots = [], [], []
            for ex, a, (_, w) in zip(examples, answer, enc):
                head = list(ex.prompt) + [t.think]
                slots.append(list(range(len(head), len(head) + len(w))))
                rows.append(head + [t.latent] * len(w) + [t.end_think] + a)
                first.append(len(head) + len(w))  # </think> is the first labelled token
            ids, mask = right_pad(rows, t.pad)
            labels = torch.full_like(ids, IGNORE)
            for b, row in enumerate(rows):
                for j in range(first[b] - 1, len(row) - 1):
                    labels[b, j] = row[j + 1]
            batch.update(ids=ids, mask=mask, pos=self.model.position_ids(mask), labels=labels, slots=slots)
        return batch

    # ------------------------------------------------------------------ pieces
    def encode(self, batch: dict[str, Any]) -> tuple[Tensor, Tensor, Tensor]:
        """Encoder superpositions of every compress token, rows in order: ``(z, idx, p)``."""
        dev = self.model.device
        ids = batch["enc_ids"].to(dev)
        pos = torch.arange(ids.shape[1], device=dev).expand_as(ids)
        out = self.encoder(input_ids=ids, attention_mask=batch["enc_mask"].to(dev), position_ids=pos, output_hidden_states=True)
        h = out.hidden_states[-1]  # [batch, T, d] post-norm
        rows = torch.tensor([b for b, w in enumerate(batch["enc_where"]) for _ in w], device=dev)
        cols = torch.tensor([j for w in batch["enc_where"] for j in w], device=dev)
        emb = self._emb()
        scores = h[rows, cols] @ emb.T  # [n, vocab]
        if self.phase == "stage2" and self.gumbel > 0:
            u = torch.rand_like(scores).clamp(1e-9, 1 - 1e-9)
            scores = scores + self.gumbel * -torch.log(-torch.log(u))
        return superpose(scores, emb, self.top_k)

    def _decode(self, batch: dict[str, Any], z: Tensor) -> Any:
        """Decoder forward with the latent slots' embeddings replaced by ``z`` through the embed site."""
        dev = self.model.device
        rows = torch.tensor([b for b, s in enumerate(batch["slots"]) for _ in s], device=dev)
        cols = torch.tensor([j for s in batch["slots"] for j in s], device=dev)

        def put(act: Tensor, ctx: Any) -> Tensor:
            return act.index_put((rows, cols), z.to(act.dtype))  # differentiable in z

        with self.model.intervene([InjectEmbeddings(values=put)]):
            return self.hf(input_ids=batch["ids"].to(dev), attention_mask=batch["mask"].to(dev),
                           position_ids=batch["pos"].to(dev))

    def forward(self, batch: dict[str, Any]) -> dict[str, Tensor]:
        if self.phase != "stage2":
            with torch.set_grad_enabled(torch.is_grad_enabled() and self.phase in ("encoder", "joint")):
                z, _, p = self.encode(batch)
            out = self._decode(batch, z)
            ce = per_example_ce(out.logits, batch["labels"].to(out.logits.device)).mean()
            return {"loss": ce, "ce": ce.detach(), "latent_entropy": entropy(p).mean().detach()}
        with torch.no_grad():
            _, idx, q = self.encode(batch)  # soft labels of the frozen stage-1 encoder
        z = torch.einsum("nk,nkd->nd", q, self._emb()[idx])
        out = self._decode(batch, z)
        logits = out.logits
        ce = per_example_ce(logits, batch["labels"].to(logits.device))  # [batch]
        dev = logits.device
        rows = torch.tensor([b for b, s in enumerate(batch["slots"]) for _ in s], device=dev)
        cols = torch.tensor([j - 1 for s in batch["slots"] for j in s], device=dev)  # the position predicting L_i
        logp = torch.log_softmax(logits[rows, cols].float(), -1).gather(1, idx)  # [n, k]
        kl_each = (q * (q.clamp_min(1e-12).log() - logp)).sum(-1)  # [n] KL(q || p) on q's support
        kl = torch.zeros(len(batch["slots"]), device=dev).index_add(0, rows, kl_each)
        kl = kl / torch.tensor([max(len(s), 1) for s in batch["slots"]], device=dev)
        loss = (self.ce_weight * ce + self.kl_weight * kl).mean()
        return {"loss": loss, "ce": ce.mean().detach(), "kl": kl.mean().detach()}

    # ------------------------------------------------------------------ inference
    def latent_input(self, z: Tensor) -> Tensor:
        """The superposition fed back as the next latent step's input (identity; the validation's noise null
        replaces it, as it does a continuous thought's)."""
        return z

    @torch.no_grad()
    def infer(self, examples: list[Example], *, max_latent_steps: int = 48, max_new_tokens: int = 12,
              decode_top: int = 5) -> list[dict]:
        """Generate latents until the argmax is ``</think>`` (one example at a time: rows stop at
        different steps), then ``</think>`` and greedy decoding. Records per latent step the top
        tokens, their weights, the entropy and exp(entropy) of the top-K weights."""
        t = self.tokens
        emb = self._emb()
        results = []
        for ex in examples:
            ids = torch.tensor([list(ex.prompt) + [t.think]])
            steps = []
            with LatentSession(self.model, latent_id=t.latent, hidden_states=False) as s:
                out = s.run_tokens(ids)
                for _ in range(max_latent_steps):
                    logits = out.logits[:, -1]  # [1, vocab]
                    if int(logits.argmax(-1)) == t.end_think:
                        break
                    z, idx, p = superpose(logits, emb, self.top_k)
                    h = float(entropy(p)[0])
                    n = min(decode_top, idx.shape[1])
                    steps.append({"tokens": self.model.tokenizer.convert_ids_to_tokens(idx[0, :n].tolist()),
                                  "probs": [round(float(x), 4) for x in p[0, :n]], "entropy": round(h, 4),
                                  "exp_entropy": round(math.exp(h), 4)})
                    out = s.run_latent(self.latent_input(z))
                rows = s.greedy(torch.tensor([[t.end_think]]), stop_id=t.eos, max_new_tokens=max_new_tokens)
            results.append({"ids": rows[0], "latents": steps})
        return results


# ---------------------------------------------------------------- the method table's functions


def train_phases(cfg: "LatentSFTConfig") -> list[Phase]:
    """Stage 1's three runs (encoder, decoder, joint) then stage 2; phases with 0 steps left out."""
    steps = {"encoder": cfg.encoder_steps, "decoder": cfg.decoder_steps, "joint": cfg.joint_steps, "stage2": cfg.stage2_steps}
    return [Phase(p, n, lambda m, p=p: m.set_phase(p)) for p, n in steps.items() if n > 0]


def build_trainer(cfg: "LatentSFTConfig", model: "HookedModel", tokens: LatentTokens) -> LatentSFT:
    return LatentSFT(model, tokens, c=cfg.c, top_k=cfg.top_k, kl_weight=cfg.kl_weight, ce_weight=cfg.ce_weight,
                     gumbel=cfg.gumbel)


def build_for_inference(model: "HookedModel", tokens: LatentTokens, saved: dict) -> LatentSFT:
    return LatentSFT(model, tokens, c=saved["c"], top_k=saved["top_k"], encoder=nn.Identity())  # no encoder at inference


def infer_examples(module: LatentSFT, examples: list[Example], saved: dict) -> list[dict]:
    """Latents until ``</think>`` wins (at most ``max_latent_steps``), then greedy decoding: 12 tokens, or the
    longest answer segment and 4 more (a BPE tokenizer writes ``The answer is: 1450000`` in more than 12)."""
    budget = max(12, max(len(ex.answer) for ex in examples) + 4)
    return module.infer(examples, max_latent_steps=saved["max_latent_steps"], max_new_tokens=budget)


def side_modules(module: nn.Module, saved: dict) -> dict[str, nn.Module]:
    return {}


def label_tags(saved: dict, prior_steps: int | None) -> str:
    return ""
