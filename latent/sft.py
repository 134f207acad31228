"""Token-level SFT as an entry of the method table: the CoT-SFT and No-CoT baselines a latent method is compared
with, trained by the same trainer, on the same batches (``batch k`` of a seed is the same problems for every
method), from the same start model and for as many examples as the latent method saw.

``cot=True`` (CoT-SFT): cross-entropy on the whole chain, the answer segment and eos after the prompt, which is
CODI's teacher loss alone. ``cot=False`` (No-CoT): the answer segment and eos straight after the prompt, which is
CODI's student target without the latents. At test time the model decodes greedily from the prompt; its explicit
tokens before the answer marker are its reasoning positions.

Example:
    >>> from thinklens.latent.config import SFTConfig
    >>> [p.name for p in train_phases(SFTConfig(train_steps=10))], label_tags({"cot": False, "steps": 10})
    (['sft'], ' (No-CoT, 10 steps)')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from thinklens.generation.kv_batch import left_pad
from thinklens.latent.continuous_thought import answer_budget, answer_room
from thinklens.latent.methods import Phase
from thinklens.latent.segments import Example, LatentTokens, per_example_ce, right_pad, shifted_labels
from thinklens.latent.session import LatentSession

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel
    from thinklens.latent.config import SFTConfig


class SFT(nn.Module):
    """Cross-entropy on what follows the prompt: chain + answer + eos (``cot``) or answer + eos."""

    def __init__(self, model: "HookedModel", tokens: LatentTokens, *, cot: bool = True):
        super().__init__()
        self.model, self.tokens, self.cot = model, tokens, cot
        self.hf = model.hf  # registered, so DDP / optimizers / checkpoints see the weights

    def target(self, ex: Example) -> list[int]:
        return (ex.cot if self.cot else []) + list(ex.answer) + [self.tokens.eos]

    def collate(self, examples: list[Example]) -> dict[str, Any]:
        rows = [list(ex.prompt) + self.target(ex) for ex in examples]
        ids, mask = right_pad(rows, self.tokens.pad)
        return {"ids": (ids, mask), "labels": shifted_labels(ids, [len(ex.prompt) for ex in examples], mask)}

    def forward(self, batch: dict[str, Any]) -> dict[str, Tensor]:
        ids, mask = batch["ids"]
        dev = self.model.device
        out = self.model.forward({"input_ids": ids.to(dev), "attention_mask": mask.to(dev)})
        ce = per_example_ce(out.logits, batch["labels"].to(dev))  # [batch]
        return {"loss": ce.mean(), "ce": ce.mean().detach()}

    @torch.no_grad()
    def infer(self, examples: list[Example], *, max_new_tokens: int) -> list[dict]:
        """Greedy decoding from the prompt up to eos."""
        was = self.training
        self.eval()
        try:
            enc = left_pad([list(ex.prompt) for ex in examples], self.tokens.pad)
            with LatentSession(self.model, latent_id=self.tokens.latent, hidden_states=False) as s:
                rows = s.greedy(enc["input_ids"], mask=enc["attention_mask"], stop_id=self.tokens.eos,
                                max_new_tokens=max_new_tokens)
        finally:
            self.train(was)
        return [{"ids": r, "latents": []} for r in rows]


# ---------------------------------------------------------------- the method table's functions


def train_phases(cfg: "SFTConfig") -> list[Phase]:
    """One phase of ``steps``."""
    return [Phase("sft", cfg.train_steps, lambda m: None)]


def build_trainer(cfg: "SFTConfig", model: "HookedModel", tokens: LatentTokens) -> SFT:
    return SFT(model, tokens, cot=cfg.cot)


def build_for_inference(model: "HookedModel", tokens: LatentTokens, saved: dict) -> SFT:
    return SFT(model, tokens, cot=saved["cot"])


def infer_examples(module: SFT, examples: list[Example], saved: dict) -> list[dict]:
    """Greedy decoding from the prompt: the chain's length plus room for the answer (CoT), or the answer's."""
    budget = answer_budget(examples) if saved["cot"] else answer_room(examples)
    return module.infer(examples, max_new_tokens=budget)


def side_modules(module: SFT, saved: dict) -> dict[str, nn.Module]:
    """Nothing beside the LM weights."""
    return {}


def label_tags(saved: dict, prior_steps: int | None = None) -> str:
    """``(CoT, N steps)`` or ``(No-CoT, N steps)``, with the steps of a continued model first.

    Example:
        >>> label_tags({"cot": True, "steps": 300}, prior_steps=100)
        ' (CoT, 100+300 steps)'
    """
    trained = saved.get("train_steps", saved.get("steps"))  # "steps" in latent.json written before the rename
    steps = f"{prior_steps}+{trained}" if prior_steps else f"{trained}"
    return f" ({'CoT' if saved.get('cot', True) else 'No-CoT'}, {steps} steps)"
