"""LatentSeek (Li et al., arXiv 2505.13308): per-instance test-time optimisation of a frozen model's
latents, guided by a reward. No training.

A greedy CoT is generated with the core's decode loop (:func:`thinklens.generation.decode_loop.decode`), storing z_t, the
final-layer post-norm state (LM-head input) that produced each token. The first
``m = min(int(rho*T), max_latents)`` of them become one parameter tensor (Adam). One iteration:
``logits = lm_head(z)``; ``x_t`` = argmax (the released code) or a sample (the paper's algorithm);
``loss = -R * sum_t log p(x_t)``; step; re-decode those m tokens by argmax, regenerate the rest
greedily from them and score the new answer. Stop when the reward exceeds ``threshold`` or after
``max_iters`` iterations.

Rewards: :func:`psrm` (0 if the answer is right else -1, the paper's perfect sparse reward; graded by
:func:`thinklens.data.answers.is_correct`, so the gold may be any answer a data set holds), the paper's self-reward
(:class:`thinklens.latent.self_reward.SelfReward`: the model judges its own solution), or any ``fn(text, gold) -> float``.
A reward with a ``for_question(question)`` method is bound to each problem's question first. Sanity
(tested): R = 0 changes nothing; rho = 0 returns the original.

Example:
    >>> # res = latent_seek(model, prompt_ids, answer="36", cfg=LatentSeekConfig(), reward=psrm)
    >>> # res.final_correct, [it.reward for it in res.iterations]
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from thinklens.data.answers import is_correct
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError, opt
from thinklens.generation.decode_loop import Greedy, decode
from thinklens.generation.kv_batch import Decoder
from thinklens.latent.config import LatentSeekConfig

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel

#: A reward: ``fn(text, gold) -> float`` (the gold answer as the data set writes it, or the synthetic integer).
RewardFn = Callable[[str, "int | str"], float]


def psrm(text: str, answer: int | str) -> float:
    """Perfect sparse reward: 0 if the output states the gold ``answer`` (:func:`~thinklens.data.answers.is_correct`), else -1.

    Example:
        >>> psrm("<< 2 + 3 = 5 >> #### 5", 5), psrm("#### 4", 5), psrm(r"so \\boxed{\\frac{1}{2}}", "0.5")
        (0.0, -1.0, 0.0)
    """
    return 0.0 if is_correct(text, answer) else -1.0


def load_reward(spec: str) -> RewardFn:
    """``"psrm"`` or ``"module:function"`` (a pluggable ``fn(text, gold) -> float``); the self-reward needs the model:
    :class:`thinklens.latent.self_reward.SelfReward`."""
    if spec == "psrm":
        return psrm
    if ":" not in spec:
        raise ThinklensError.of("reward", spec, "psrm, self or module:function", f"pass {opt('reward', 'psrm')}")
    mod, fn = spec.split(":", 1)
    try:
        return getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as e:
        raise ThinklensError.of("reward", spec, "an importable module:function", f"check the name ({e})") from None


def greedy_with_states(model: "HookedModel", prefix: list[int], *, max_new_tokens: int,
                       stop_id: int) -> tuple[list[int], Tensor]:
    """Greedy continuation of token ids ``prefix``: ``(ids, states [T, d])`` (stop token excluded),
    ``states[t]`` the post-norm state that produced token t (the core's ``final_norm`` site)."""
    site = Site("final_norm")
    out = decode(Decoder(model, [list(prefix)]), Greedy(), max_new_tokens=max_new_tokens, eos={stop_id}, capture=[site])
    ids = out.row(0)
    if out.stop_reasons[0] == "eos":
        ids = ids[:-1]
    return ids, out.hidden[site][0, : len(ids)].clone() if ids else torch.zeros(0, model.d_model)


@dataclass
class SeekIteration:
    """One optimisation step's log."""

    iteration: int
    reward: float
    flipped: int
    """Optimised tokens that differ from the original chain's."""
    delta_norm: float
    """||z' - z|| over the optimised states."""
    correct: bool
    text: str


@dataclass
class SeekResult:
    """One problem's LatentSeek run."""

    answer: int | str
    """The gold answer."""
    original_text: str
    original_reward: float
    n_tokens: int
    n_optimised: int
    final_text: str
    iterations: list[SeekIteration] = field(default_factory=list)
    baseline: dict[str, list[bool]] = field(default_factory=dict)
    """The oracle best-of-N baseline on the same prompt (:mod:`thinklens.latent.best_of_n`): temperature -> each sampled
    chain's correctness; empty when it was not run."""

    @property
    def original_correct(self) -> bool:
        return is_correct(self.original_text, self.answer)

    @property
    def final_correct(self) -> bool:
        return is_correct(self.final_text, self.answer)

    def correct_at(self, budget: int) -> bool:
        """Correct after at most ``budget`` iterations (the run may have stopped earlier)."""
        done = [it for it in self.iterations if it.iteration <= budget]
        return done[-1].correct if done else self.original_correct


def latent_seek(model: "HookedModel", prompt: list[int], answer: int | str, cfg: LatentSeekConfig,
                reward: RewardFn = psrm, *, generator: torch.Generator | None = None,
                max_new_tokens: int | None = None) -> SeekResult:
    """Run LatentSeek on one prompt (token ids) whose gold answer is ``answer``; see the module docstring.

    ``max_new_tokens``: the budget of each (re)generation (default ``cfg.max_new_tokens``; the job resolves its 0).
    """
    budget = max_new_tokens or cfg.max_new_tokens
    if budget < 1:
        raise ThinklensError.of("max_new_tokens", budget, "an integer >= 1", "pass max_new_tokens=1024")
    tok = model.tokenizer
    eos = tok.eos_token_id
    ids0, z0 = greedy_with_states(model, prompt, max_new_tokens=budget, stop_id=eos)
    text0 = tok.decode(ids0, skip_special_tokens=True)
    r = float(reward(text0, answer))
    m = min(int(cfg.rho * len(ids0)), cfg.max_latents)
    res = SeekResult(answer, text0, r, len(ids0), m, text0)
    if m == 0 or r > cfg.threshold or cfg.max_iters == 0:
        return res
    gen = generator or torch.Generator().manual_seed(0)
    z_ref = z0[:m].clone()  # [m, d]
    z = z_ref.clone().requires_grad_(True)
    opt = torch.optim.Adam([z], lr=cfg.lr)
    with model.frozen():
        for it in range(1, cfg.max_iters + 1):
            with torch.enable_grad():
                logp = torch.log_softmax(model.unembed(z, apply_norm=False).float(), -1)  # [m, vocab]
                if cfg.variant == "argmax":
                    x = logp.argmax(-1)
                else:
                    x = torch.multinomial(logp.exp().detach().cpu(), 1, generator=gen)[:, 0].to(logp.device)
                loss = -r * logp.gather(1, x[:, None]).sum()
                opt.zero_grad()
                loss.backward()
            opt.step()
            with torch.no_grad():
                head = model.unembed(z, apply_norm=False).argmax(-1).tolist()
            if eos in head:  # an optimised token became eos: the chain ends there
                head = head[: head.index(eos)]
                rest: list[int] = []
            else:
                rest, _ = greedy_with_states(model, prompt + head, max_new_tokens=max(budget - m, 1), stop_id=eos)
            text = tok.decode(head + rest, skip_special_tokens=True)
            r = float(reward(text, answer))
            flipped = sum(int(a != b) for a, b in zip(head, ids0[:m])) + abs(len(head) - m)
            delta = float((z.detach() - z_ref).norm())
            res.iterations.append(SeekIteration(it, r, flipped, round(delta, 5), is_correct(text, answer), text))
            res.final_text = text
            if r > cfg.threshold:
                break
    return res


def accuracy_by_budget(results: list[SeekResult], max_iters: int) -> list[float]:
    """Accuracy after at most b iterations, b = 0..max_iters (b = 0 is plain greedy CoT)."""
    if not results:
        return []
    return [sum(r.correct_at(b) for r in results) / len(results) for b in range(max_iters + 1)]
