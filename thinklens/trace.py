"""Results of capture and generation: :class:`ActivationBatch` and :class:`Trace`."""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxtyping import Float, Int
from torch import Tensor

from thinklens.sites import Site


@dataclass
class ActivationBatch:
    """Activations of one forward pass over a (left-padded) batch.

    Attributes:
        input_ids: ``[batch, pos]`` token ids (left padded).
        attention_mask: ``[batch, pos]`` 1 for real tokens.
        acts: site -> ``[batch, pos, d]`` (or ``[batch, n, d]`` when positions were chosen).
        positions: the logical positions kept (None = every position of the padded batch).
        n_layers: the model's number of blocks, so that ``batch["resid_post.-1"]`` finds the last one.
    """

    input_ids: Int[Tensor, "batch pos"]
    attention_mask: Int[Tensor, "batch pos"]
    acts: dict[Site, Float[Tensor, "batch n d"]]
    positions: list[int] | str | None = None
    n_layers: int | None = None

    def __getitem__(self, site: Site | str) -> Tensor:
        return self.acts[Site.parse(site, self.n_layers)]


@dataclass
class Trace:
    """One generated trajectory.

    ``hidden[site][t]`` is the state that *produced* generated token ``t`` (row 0 is the state at
    the last prompt token), the convention of specs/mi-peaks.md. ``entropy[t]`` (nats) and
    ``topk_*[t]`` describe the next-token distribution from which token ``t`` was chosen.
    """

    prompt: str
    prompt_ids: list[int]
    token_ids: list[int]
    tokens: list[str]
    text: str
    stop_reason: str
    hidden: dict[Site, Float[Tensor, "step d"]] = field(default_factory=dict)
    entropy: Float[Tensor, " step"] | None = None
    topk_ids: Int[Tensor, "step k"] | None = None
    topk_probs: Float[Tensor, "step k"] | None = None

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def full_text(self) -> str:
        return self.prompt + self.text
