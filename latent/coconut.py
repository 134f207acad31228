"""Coconut (Hao et al., arXiv 2412.06769): continuous thoughts (:mod:`thinklens.latent.continuous_thought`) with no
projection, learnt by a curriculum where stage s replaces the first s reasoning steps by s*c latents and the
loss covers only the remaining steps and the answer.

This module is Coconut's entry of the method table (:mod:`thinklens.latent.methods`): its phases, its trainer and its
inference.

Example:
    >>> from thinklens.latent.config import CoconutConfig
    >>> [p.name for p in train_phases(CoconutConfig(max_stage=2))]
    ['stage-1', 'stage-2', 'stage-all']
    >>> # coco = Coconut(model, tokens, c=2, max_stage=3)
    >>> # coco.stage = 1; losses = coco(coco.collate(examples))     # training, stage 1
    >>> # preds = coco.infer(examples, n_latents=6)                  # test: 6 latents then decode
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torch import Tensor, nn

from thinklens.latent.continuous_thought import ContinuousThought, answer_budget
from thinklens.latent.methods import Phase
from thinklens.latent.segments import Example, LatentTokens, per_example_ce, right_pad, shifted_labels
from thinklens.latent.session import LatentSession

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel
    from thinklens.latent.config import CoconutConfig


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


# ---------------------------------------------------------------- the method table's functions


def train_phases(cfg: "CoconutConfig") -> list[Phase]:
    """Stages 1..max_stage (the optimizer is reset at each), then the all-latent stage if it has steps."""
    out = [Phase(f"stage-{s}", cfg.stage_steps, lambda m, s=s: setattr(m, "stage", s)) for s in range(1, cfg.max_stage + 1)]
    if cfg.final_stage_steps:
        out.append(Phase("stage-all", cfg.final_stage_steps, lambda m: setattr(m, "stage", cfg.max_stage + 1)))
    return out


def build_trainer(cfg: "CoconutConfig", model: "HookedModel", tokens: LatentTokens) -> Coconut:
    return Coconut(model, tokens, c=cfg.c, max_stage=cfg.max_stage)


def build_for_inference(model: "HookedModel", tokens: LatentTokens, saved: dict) -> Coconut:
    return Coconut(model, tokens, c=saved["c"], max_stage=saved["max_stage"])


def infer_examples(module: Coconut, examples: list[Example], saved: dict) -> list[dict]:
    """``c * max_stage`` latents (the last stage's), then greedy decoding."""
    return module.infer(examples, saved["c"] * saved["max_stage"], max_new_tokens=answer_budget(examples))


def side_modules(module: nn.Module, saved: dict) -> dict[str, nn.Module]:
    return {}


def label_tags(saved: dict, prior_steps: int | None) -> str:
    return ""
