"""Results of capture and generation: :class:`ActivationBatch` and :class:`Trace`, and a trace's JSON form.

Example:
    >>> t = Trace(prompt="Q:", prompt_ids=[1, 2], token_ids=[5], tokens=["4"], text="4", stop_reason="eos")
    >>> trace_from_json(trace_to_json(t)) == t
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jaxtyping import Float, Int
from torch import Tensor

from thinklens.engine.sites import Site


@dataclass
class ActivationBatch:
    """Activations of one forward pass over a (left-padded) batch.

    Attributes:
        input_ids: ``[batch, pos]`` token ids (left padded).
        attention_mask: ``[batch, pos]`` 1 for real tokens.
        acts: site -> ``[batch, pos, d]`` (or ``[batch, n, d]`` when positions were chosen; ``[batch, pos, streams, d]``
            at the residual sites of a multi-stream residual, DeepSeek-V4).
        positions: the logical positions kept (None = every position of the padded batch).
        n_layers: the model's number of blocks, so that ``batch["resid_post.-1"]`` finds the last one.
    """

    input_ids: Int[Tensor, "batch pos"]
    attention_mask: Int[Tensor, "batch pos"]
    acts: dict[Site, Float[Tensor, "batch n *d"]]
    positions: list[int] | str | None = None
    n_layers: int | None = None

    def __getitem__(self, site: Site | str) -> Tensor:
        return self.acts[Site.parse(site, self.n_layers)]


@dataclass
class Trace:
    """One generated trajectory.

    ``hidden[site][t]`` is the state that *produced* generated token ``t`` (row 0 is the state at
    the last prompt token), the convention of the MI-peaks measurement. ``entropy[t]`` (nats) and
    ``topk_*[t]`` describe the next-token distribution from which token ``t`` was chosen.
    """

    prompt: str
    prompt_ids: list[int]
    token_ids: list[int]
    tokens: list[str]
    text: str
    stop_reason: str
    hidden: Mapping[Site, Float[Tensor, " step *d"]] = field(default_factory=dict)
    """Per site ``[step, d]``: a dict, or a :class:`thinklens.engine.activation_store.StoredStates` reading a store (streamed)."""
    entropy: Float[Tensor, " step"] | None = None
    topk_ids: Int[Tensor, "step k"] | None = None
    topk_probs: Float[Tensor, "step k"] | None = None

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def full_text(self) -> str:
        """The prompt followed by the generated text."""
        return self.prompt + self.text


def trace_to_json(trace: Trace, *, logit_stats: bool = False) -> dict[str, Any]:
    """The token-level part of a trace as plain JSON values (no hidden states); with ``logit_stats`` also
    its per-step ``entropy``, ``topk_ids`` and ``topk_probs`` (when the trace has them)."""
    doc = {"prompt": trace.prompt, "prompt_ids": [int(i) for i in trace.prompt_ids],
           "token_ids": [int(i) for i in trace.token_ids], "tokens": list(trace.tokens), "text": trace.text,
           "stop_reason": trace.stop_reason}
    if logit_stats and trace.entropy is not None:
        doc["entropy"] = trace.entropy.float().tolist()
        doc["topk_ids"] = trace.topk_ids.tolist() if trace.topk_ids is not None else None
        doc["topk_probs"] = trace.topk_probs.float().tolist() if trace.topk_probs is not None else None
    return doc


def trace_from_json(doc: dict[str, Any]) -> Trace:
    """Inverse of :func:`trace_to_json` (hidden states are not kept; logit statistics when ``doc`` has them)."""
    trace = Trace(prompt=doc["prompt"], prompt_ids=[int(i) for i in doc["prompt_ids"]],
                  token_ids=[int(i) for i in doc["token_ids"]], tokens=list(doc["tokens"]), text=doc["text"],
                  stop_reason=doc["stop_reason"])
    if doc.get("entropy") is not None:
        import torch

        n = len(trace.token_ids)
        trace.entropy = torch.tensor(doc["entropy"], dtype=torch.float32)
        if doc.get("topk_ids") is not None:  # [step, k]; reshape keeps a 0-step trace 2-D
            trace.topk_ids = torch.tensor(doc["topk_ids"], dtype=torch.long).reshape(n, -1 if n else 0)
        if doc.get("topk_probs") is not None:
            trace.topk_probs = torch.tensor(doc["topk_probs"], dtype=torch.float32).reshape(n, -1 if n else 0)
    return trace
