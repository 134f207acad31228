"""The answer's lens along a trace: a target token read at every step and block of a trace through a lens.

For a generated trace the states are ``Trace.hidden[resid_post.l][t]``, the state that *produced* token ``t``
(:class:`~thinklens.generation.trace.Trace`); for a latent-reasoning model they are its latent steps' states per block,
given as ``{block: [step, d]}``. At each (step, block) the lens gives the target's probability and its rank (0: the
lens's top token); :attr:`AnswerLens.first` is the earliest step, and at that step the lowest block, where the target is
the top token. The target of a trace is usually the first token of its final answer as the model wrote it
(:func:`answer_target`).

Example:
    >>> rank = [[3, 1, 0], [0, 0, 0]]           # [step][layer]
    >>> first_top(rank)
    (0, 2)
    >>> first_top([[1, 2], [4, 1]]) is None
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Float
from torch import Tensor

from thinklens.analyses.lens.translators import TunedLens, layer_list, lens_logits
from thinklens.data.answers import extract_answer
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel
    from thinklens.generation.trace import Trace


@dataclass(frozen=True)
class AnswerLens:
    """A target token read through one lens at every step and block of a trace (lists, JSON-ready)."""

    lens: str
    """``logit`` or ``tuned``."""
    target: int
    """The token id read."""
    target_text: str
    """Its text."""
    layers: list[int]
    """The blocks read (``resid_post``)."""
    tokens: list[str]
    """The token each step produced (labels of the steps)."""
    prob: list[list[float]]
    """``[step][layer]`` the lens's probability of the target."""
    rank: list[list[int]]
    """``[step][layer]`` the target's rank under the lens (0: its top token)."""
    first: tuple[int, int] | None
    """``(step, layer)``: the earliest step, then the lowest block, where the target is the lens's top token; None: never."""

    def to_dict(self) -> dict[str, Any]:
        return {"lens": self.lens, "target": self.target, "target_text": self.target_text, "layers": self.layers,
                "tokens": self.tokens, "prob": self.prob, "rank": self.rank,
                "first": None if self.first is None else list(self.first)}


def first_top(rank: Sequence[Sequence[int]], layers: Sequence[int] | None = None) -> tuple[int, int] | None:
    """``(step, layer)`` of the earliest step, then the lowest block, where ``rank`` is 0; None when it never is.
    ``layers`` names the columns (default: their indices)."""
    for step, row in enumerate(rank):
        for col, r in enumerate(row):
            if r == 0:
                return step, (layers[col] if layers is not None else col)
    return None


def trace_states(trace: "Trace", n_layers: int, layers: Sequence[int] | None = None) -> dict[int, Float[Tensor, "step d"]]:
    """``{block: [step, d]}`` of a trace generated with ``capture=["resid_post.*"]`` (or the blocks read)."""
    out = {}
    for li in layer_list(n_layers, layers):
        site = Site("resid_post", li)
        if site not in trace.hidden:
            raise ThinklensError.of("trace states", f"no {site} in the trace", "states captured at every block read",
                                    "generate with capture=['resid_post.*']")
        out[li] = trace.hidden[site]
    return out


@torch.no_grad()
def read_along(model: "HookedModel", states: Mapping[int, Float[Tensor, "step d"]], target: int, *,
               lens: TunedLens | None = None, tokens: Sequence[str] | None = None, steps: int | None = None) -> AnswerLens:
    """The target's probability and rank at every step and block of ``states`` (``{block: [step, d]}``) through the
    logit lens (``lens`` None) or a tuned lens; ``steps`` keeps the first steps only.

    Example:
        >>> # (tr,) = model.generate([prompt], max_new_tokens=64, capture=["resid_post.*"])
        >>> # res = read_along(model, trace_states(tr, model.n_layers), target=answer_target(tr)[0])
        >>> # figure_answer_lens(res).show()
    """
    if lens is not None:
        lens.check_model(model)
    layers = sorted(states)
    n = min((int(states[li].shape[0]) for li in layers), default=0)
    n = n if steps is None else min(n, steps)
    if n == 0:
        raise ThinklensError.of("states", f"{n} steps at {len(layers)} blocks", "at least one step and one block",
                                "read a trace with generated tokens")
    prob = torch.empty(n, len(layers))  # [step, layer]
    rank = torch.empty(n, len(layers), dtype=torch.long)
    for j, li in enumerate(layers):
        logits = lens_logits(model, states[li][:n].float().to(model.device), li, lens).float()  # [step, vocab]
        tgt = logits[:, target]  # [step]
        prob[:, j] = torch.softmax(logits, -1)[:, target].cpu()
        rank[:, j] = (logits > tgt[:, None]).sum(-1).cpu()  # tokens the lens puts strictly above the target
    labels = list(tokens[:n]) if tokens is not None else [str(t) for t in range(n)]
    ranks = rank.tolist()
    return AnswerLens("logit" if lens is None else "tuned", int(target), model.tokenizer.decode([int(target)]), layers,
                      labels, prob.tolist(), ranks, first_top(ranks, layers))


def answer_target(trace: "Trace") -> tuple[int, int] | None:
    """``(token id, step)`` of the first token of the trace's final answer where the model last wrote it (the answer as
    :func:`thinklens.data.answers.extract_answer` reads the text), or None when the trace states no answer."""

    answer = extract_answer(trace.text)
    if not answer:
        return None
    text = "".join(trace.tokens)
    at = text.rfind(answer.strip())
    if at < 0:
        return None
    end = 0
    for step, tok in enumerate(trace.tokens):
        end += len(tok)
        if end > at:
            return int(trace.token_ids[step]), step
    return None
