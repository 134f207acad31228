"""Activation steering vectors: difference of means between two sets of prompts or traces.

``v = mean(act | A) - mean(act | B)`` at one site (contrastive activation addition), applied as
``x + scale * v`` at chosen positions through :class:`~thinklens.engine.interventions.AddVector`. The added
vector is exactly ``scale * v``: a test checks ``torch.equal(orig + v, steered)``.

Example:
    >>> import torch
    >>> sv = SteeringVector("resid_post.1", torch.ones(4), n_a=2, n_b=2, reduce="last")
    >>> sv.intervention(scale=2.0).scale
    2.0
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor

from thinklens.engine.interventions import AddVector, Positions
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.generation.trace import Trace

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel

Reduce = Literal["last", "mean"]


@dataclass(frozen=True)
class SteeringVector:
    """A steering vector at one site, with how it was made."""

    site: str
    """Site string, e.g. ``resid_post.2``."""
    vector: Tensor
    """``[d]`` float32 vector (mean of A minus mean of B)."""
    n_a: int
    """Examples in set A."""
    n_b: int
    """Examples in set B."""
    reduce: str
    """How an example became one vector: ``last`` token, ``mean`` over tokens, or ``trace`` steps."""

    def __post_init__(self) -> None:
        if self.vector.ndim != 1 or not bool(torch.isfinite(self.vector).all()):
            raise ThinklensError.of("steering vector", tuple(self.vector.shape), "a finite 1-D [d] tensor",
                                    "build it with diff_of_means")

    @property
    def norm(self) -> float:
        return float(self.vector.norm())

    def intervention(self, scale: float = 1.0, positions: Positions = None) -> AddVector:
        """``AddVector(site, v, positions, scale)``; ``scale`` must be finite."""
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
            raise ThinklensError.of("scale", scale, "a finite number", "pass e.g. scale=4.0")
        return AddVector(Site.parse(self.site), self.vector, positions=positions, scale=float(scale))

    def save(self, path: str | Path) -> Path:
        """Write ``<path>.safetensors`` (the vector) and ``<path>.json`` (site, counts, norm)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        save_file({"vector": self.vector.contiguous()}, str(p.with_suffix(".safetensors")))
        p.with_suffix(".json").write_text(json.dumps({"site": self.site, "n_a": self.n_a, "n_b": self.n_b,
                                                      "reduce": self.reduce, "norm": self.norm}, indent=2))
        return p.with_suffix(".safetensors")

    @classmethod
    def load(cls, path: str | Path) -> "SteeringVector":
        p = Path(path)
        if not p.with_suffix(".safetensors").is_file() or not p.with_suffix(".json").is_file():
            raise ThinklensError.of("steering vector file", str(p), "<name>.safetensors next to <name>.json",
                                    "save it with SteeringVector.save")
        meta = json.loads(p.with_suffix(".json").read_text())
        vec = load_file(str(p.with_suffix(".safetensors")))["vector"]
        return cls(meta["site"], vec, meta["n_a"], meta["n_b"], meta["reduce"])


@torch.no_grad()
def mean_activation(model: "HookedModel", texts: Sequence[str], site: Site | str, *, reduce: Reduce = "last",
                    batch_size: int = 32) -> Tensor:
    """Mean over ``texts`` of one vector per text: its ``last`` token's activation, or the ``mean``
    over its real tokens (left padding excluded). Returns ``[d]`` float32."""
    if reduce not in ("last", "mean"):
        raise ThinklensError.of("reduce", reduce, "'last' or 'mean'", "pass reduce='last'")
    if not texts:
        raise ThinklensError.of("prompt set", 0, "at least one prompt per set", "pass non-empty sets A and B")
    s = model.resolve_site(site)
    total = torch.zeros(model.site_width(s), dtype=torch.float64)
    for i in range(0, len(texts), batch_size):
        chunk = list(texts[i:i + batch_size])
        b = model.capture(chunk, [s])
        a = b.acts[s].double().cpu()  # [batch, pos, d]
        if reduce == "last":
            total += a[:, -1].sum(0)  # left padding: the last column is every row's last token
        else:
            m = b.attention_mask.cpu().double()[..., None]  # [batch, pos, 1]
            total += ((a * m).sum(1) / m.sum(1)).sum(0)
    return (total / len(texts)).float()


def diff_of_means(model: "HookedModel", site: Site | str, texts_a: Sequence[str], texts_b: Sequence[str], *,
                  reduce: Reduce = "last", batch_size: int = 32) -> SteeringVector:
    """``mean(act | A) - mean(act | B)`` at ``site``.

    Example:
        >>> # sv = diff_of_means(model, "resid_post.2", think_prompts, cot_prompts)
        >>> # model.generate(prompts, interventions=[sv.intervention(scale=4.0, positions="last")])
    """
    s = model.resolve_site(site)
    va = mean_activation(model, texts_a, s, reduce=reduce, batch_size=batch_size)
    vb = mean_activation(model, texts_b, s, reduce=reduce, batch_size=batch_size)
    return SteeringVector(str(s), va - vb, len(texts_a), len(texts_b), reduce)


def from_traces(traces_a: Sequence[Trace], traces_b: Sequence[Trace], site: Site | str) -> SteeringVector:
    """Difference of means of the per-trace mean hidden state over generated steps (traces
    generated with ``capture=[site]``)."""
    s = Site.parse(site) if isinstance(site, str) else site

    def mean_of(trs: Sequence[Trace], name: str) -> Tensor:
        if not trs:
            raise ThinklensError.of(f"trace set {name}", 0, "at least one trace", "pass non-empty sets")
        if any(s not in t.hidden for t in trs):
            raise ThinklensError.of(f"trace set {name}", f"traces without {s}", f"traces generated with capture=[{s}]",
                                    "pass capture=[site] to model.generate")
        return torch.stack([t.hidden[s].double().mean(0) for t in trs]).mean(0).float()

    return SteeringVector(str(s), mean_of(traces_a, "A") - mean_of(traces_b, "B"), len(traces_a), len(traces_b), "trace")


def next_token_diff_of_means(traces: Sequence[Trace], site: Site | str, token_id: int) -> SteeringVector:
    """``mean(state | next token is token_id) - mean(state | any other next token)`` over generated steps.

    ``hidden[site][t]`` produced token ``t``, so set A holds the states that emitted ``token_id`` (e.g. the
    state just before "wait") and set B every other generated state. Traces come from
    ``model.generate(..., capture=[site])``; sampled traces are needed when greedy decoding never emits it.

    Example:
        >>> import torch
        >>> from thinklens.generation.trace import Trace
        >>> s = Site.parse("resid_post.0")
        >>> t = Trace(prompt="", prompt_ids=[1], token_ids=[5, 7, 5], tokens=["a", "b", "a"], text="",
        ...           stop_reason="length", hidden={s: torch.tensor([[1.0], [3.0], [2.0]])})
        >>> next_token_diff_of_means([t], s, 5).vector  # mean(1, 2) - 3
        tensor([-1.5000])
    """
    hits = [[i == int(token_id) for i in t.token_ids] for t in traces]
    return marked_diff_of_means(traces, site, hits, what=f"token {token_id}")


def marked_diff_of_means(traces: Sequence[Trace], site: Site | str, marks: Sequence[Sequence[bool]], *,
                         what: str = "the marked tokens") -> SteeringVector:
    """``mean(state | the token it produced is marked) - mean(state | any other token)`` over generated steps.

    ``marks[k][t]``: whether token ``t`` of trace ``k`` is marked, e.g. where a word starts
    (:func:`thinklens.steering.features.word_starts`: " Wait" or " W" + "ait" both mark the state before the word).
    """
    s = Site.parse(site) if isinstance(site, str) else site
    if len(marks) != len(traces):
        raise ThinklensError.of("marks", len(marks), f"{len(traces)} (one list per trace)", "pass one list per trace")
    pos: list[Tensor] = []
    neg: list[Tensor] = []
    for t, m in zip(traces, marks):
        if s not in t.hidden:
            raise ThinklensError.of("traces", f"a trace without {s}", f"traces generated with capture=[{s}]",
                                    "pass capture=[site] to model.generate")
        h = t.hidden[s].double()  # [step, d]
        n = h.shape[0]
        hit = torch.tensor([bool(x) for x in m[:n]] + [False] * max(0, n - len(m)), dtype=torch.bool)  # [step]
        pos.append(h[hit])
        neg.append(h[~hit])
    a, b = torch.cat(pos) if pos else torch.zeros(0), torch.cat(neg) if neg else torch.zeros(0)
    if a.shape[0] == 0 or b.shape[0] == 0:
        raise ThinklensError.of("next-token sets", f"{a.shape[0]} states before {what}, {b.shape[0]} others",
                                "at least one state in each set", "sample the traces (do_sample=True) or use more of them")
    return SteeringVector(str(s), (a.mean(0) - b.mean(0)).float(), int(a.shape[0]), int(b.shape[0]), "next_token")
