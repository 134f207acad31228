"""The settings of GRPO on the zoo task (:class:`GRPOConfig`): what :func:`thinklens.zoo.grpo.train_grpo` trains tiny-grpo
with, the donor of the reasoning vector (:mod:`thinklens.steering.reasoning_vectors`). Apart from the trainer, which
imports torch, so that the ``grpo`` job's config subclasses it and ``thinklens run --help`` stays fast.

Example:
    >>> GRPOConfig().model, GRPOConfig().group_size
    ('tiny-cot', 8)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from thinklens.engine.training import OptimOptions
from thinklens.errors import ThinklensError, opt
from thinklens.tasks import StepRange, check_style


@dataclass(frozen=True)
class GRPOConfig(StepRange, OptimOptions):
    """Settings of the GRPO run: by default the committed tiny-grpo (GRPO from tiny-cot on 6-8 step problems)."""

    model: str = "tiny-cot"
    """Zoo name or folder to start from: the SFT model, as in Zbeeb et al.'s code (v = theta_GRPO - theta_SFT is then
    the RL update alone)."""
    prompt_format: str = "cot"
    """Prompt format: a zoo format, direct, cot or think (cot: tiny-cot's data)."""
    train_steps: int = 150
    """Optimizer steps (150 trained the committed tiny-grpo: its training time is in README.md "Steering",
    results/reasoning_vectors.json values.training)."""
    prompts_per_step: int = 32
    """Distinct problems per step (8 at lr 1e-4 did not lift greedy accuracy in 180 steps: too noisy; 32 did)."""
    group_size: int = 8
    """Samples per problem (the group of GRPO)."""
    lr: float = 1e-4
    """AdamW learning rate, constant (3e-4 collapsed the reward)."""
    weight_decay: float = 0.0
    """AdamW weight decay on matrices (0: the delta should come from the reward alone)."""
    temperature: float = 1.0
    """Sampling temperature (1: the policy's own distribution, so the gradient is unbiased)."""
    kl_coef: float = 0.02
    """Weight of the KL penalty to the init (k3 estimator)."""
    min_steps: int = 6
    max_steps: int = 8
    seed: int = 0
    """Problem and sampling seed (local generators only)."""
    max_minutes: float = 30.0
    """Cap on this process's CPU time (not wall time: shared machines stretch wall time several-fold);
    the model is written anyway, marked truncated."""
    n_eval: int = 25
    """Held-out problems evaluated per step count (1..8) for the final accuracy; 0 skips."""
    renamed: ClassVar[dict[str, str]] = {"steps": "train_steps", "style": "prompt_format", "eval_per_steps": "n_eval"}

    def check(self) -> None:
        check_style(self.prompt_format)  # a typo is refused here, not once the trained model is evaluated
        for name in ("train_steps", "prompts_per_step", "group_size"):
            if getattr(self, name) < 1:
                raise ThinklensError.of(f"GRPOConfig.{name}", getattr(self, name), "a positive integer", f"pass {opt(name, 8)}")
        if self.group_size < 2:
            raise ThinklensError.of("GRPOConfig.group_size", self.group_size, ">= 2 (advantages are relative to the group)",
                                    f"pass {opt('group_size', 8)}")
        if not (self.temperature > 0) or self.kl_coef < 0:
            raise ThinklensError.of("GRPOConfig", (self.temperature, self.kl_coef), "temperature > 0, kl_coef >= 0",
                                    "fix the config")
