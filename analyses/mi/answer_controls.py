"""Controls for MI curves: the answer of a different problem, or a coordinate-permuted answer.

If a trajectory's curve against a *wrong* answer vector shows the same peaks as against its own,
the peaks follow the states (e.g. their norm), not information about the answer.

Example:
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> answers = [torch.randn(16, generator=g) * 30 for _ in range(3)]
    >>> trajs = [torch.stack([a + torch.randn(16, generator=g) for _ in range(4)]) for a in answers]
    >>> ctrl = shuffled_answer_control(trajs, answers, seed=0)
    >>> all(i != j for i, j in enumerate(ctrl.answer_of))  # never a problem's own answer
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from jaxtyping import Float
from torch import Tensor

from thinklens.analyses.mi.config import NHSICConfig
from thinklens.analyses.mi.estimator import MICurve, nhsic_trajectory
from thinklens.errors import ThinklensError


@dataclass(frozen=True)
class ShuffledControl:
    """Curves of each trajectory against another problem's answer."""

    curves: tuple[MICurve, ...]
    """curves[i]: trajectory i scored against answers[answer_of[i]]."""
    answer_of: tuple[int, ...]
    """A derangement: answer_of[i] != i."""
    seed: int


def derangement(n: int, seed: int) -> list[int]:
    """A seeded permutation of range(n) without fixed points (n >= 2), by rejection.

    Example:
        >>> p = derangement(5, seed=1)
        >>> sorted(p) == list(range(5)) and all(i != j for i, j in enumerate(p))
        True
    """
    if n < 2:
        raise ThinklensError.of("number of problems", n, "at least 2 for a shuffled-answer control",
                                "score more problems")
    g = torch.Generator().manual_seed(seed)
    while True:  # ~e tries on average
        p = torch.randperm(n, generator=g).tolist()
        if all(i != j for i, j in enumerate(p)):
            return p


def shuffled_answer_control(
    trajectories: Sequence[Tensor],
    answers: Sequence[Tensor],
    config: NHSICConfig | str = "reference",
    *,
    seed: int = 0,
    **kwargs: object,
) -> ShuffledControl:
    """Score trajectory i against the answer of problem answer_of[i] != i (h_gt of a different problem)."""
    if len(trajectories) != len(answers):
        raise ThinklensError.of("answers", f"{len(answers)} answers for {len(trajectories)} trajectories",
                                "one answer vector per trajectory", "pass them in the same order")
    perm = derangement(len(trajectories), seed)
    curves = tuple(nhsic_trajectory(t, answers[j], config, **kwargs)  # type: ignore[arg-type]
                   for t, j in zip(trajectories, perm))
    return ShuffledControl(curves=curves, answer_of=tuple(perm), seed=seed)


def permuted_coordinates_control(
    states: Float[Tensor, "step d_model"],
    answer: Float[Tensor, " d_model"],
    config: NHSICConfig | str = "reference",
    *,
    seed: int = 0,
    **kwargs: object,
) -> MICurve:
    """Score against the answer with its coordinates shuffled (seeded): keeps the answer's value
    distribution and norm but destroys the pairing of coordinates, which the estimator relies on."""
    if not isinstance(answer, Tensor) or answer.ndim != 1:
        raise ThinklensError.of("answer", getattr(answer, "shape", type(answer).__name__),
                                "a tensor [d_model]", "pass one vector")
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(answer.shape[0], generator=g).to(answer.device)
    return nhsic_trajectory(states, answer[perm], config, **kwargs)  # type: ignore[arg-type]
