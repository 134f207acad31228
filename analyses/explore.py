"""Explore one prompt: generation with per-token entropy and a logit-lens view of every layer.

The logit lens reads each block's residual output through the final norm and the LM head. For
generated token t it reports, per layer, the probability the layer already gives to token t and
that layer's own top token.

Example:
    >>> # res = explore(model, "Q: ...", max_new_tokens=24)
    >>> # figure_logit_lens(res).show()
"""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go
import torch

from thinklens.engine.model import HookedModel
from thinklens.engine.sites import Site


@dataclass(frozen=True)
class ExploreResult:
    """Generation of one prompt with per-layer logit-lens statistics (lists, JSON-ready)."""

    prompt: str
    tokens: list[str]
    entropy: list[float]
    layers: list[int]
    p_token: list[list[float]]
    """[layer][step] probability the layer's logit lens gives to the token finally generated."""
    top_token: list[list[str]]
    """[layer][step] the layer's own top token."""
    stop_reason: str = ""
    """Why generation ended: ``eos``, a stop string, or ``max_new_tokens`` (cut at the limit: the text is unfinished)."""

    @property
    def truncated(self) -> bool:
        """Generation stopped at the token limit, not at an end of its own."""
        return self.stop_reason == "max_new_tokens"


@torch.no_grad()
def explore(model: HookedModel, prompt: str, *, max_new_tokens: int = 32, stop: tuple[str, ...] = ()) -> ExploreResult:
    """Generate greedily from ``prompt`` and compute the logit lens at every block output."""
    layers = list(range(model.n_layers))
    sites = [Site("resid_post", i) for i in layers]
    (tr,) = model.generate([prompt], max_new_tokens=max_new_tokens, capture=sites, stop=stop)
    ids = torch.tensor(tr.token_ids)
    p_tok, top = [], []
    for s in sites:
        probs = torch.softmax(model.unembed(tr.hidden[s].to(model.device)).float(), -1).cpu()  # [step, vocab]
        p_tok.append(probs[torch.arange(len(ids)), ids].tolist())
        top.append([model.tokenizer.decode([int(i)]) for i in probs.argmax(-1)])
    return ExploreResult(prompt, tr.tokens, tr.entropy.tolist(), layers, p_tok, top, stop_reason=tr.stop_reason)


def figure_entropy(res: ExploreResult) -> go.Figure:
    """Bar chart of next-token entropy per generated token."""
    x = list(range(len(res.tokens)))
    fig = go.Figure(go.Bar(x=x, y=res.entropy, hovertext=res.tokens, hovertemplate="%{hovertext}<br>H=%{y:.3f} nats<extra></extra>"))
    fig.update_layout(title="Next-token entropy per generated token", xaxis=dict(tickmode="array", tickvals=x, ticktext=res.tokens),
                      yaxis_title="entropy (nats)", height=320, margin=dict(t=40, b=40))
    return fig


def figure_logit_lens(res: ExploreResult) -> go.Figure:
    """Heatmap layer x step of the probability of the generated token, hover shows each layer's top token."""
    x = list(range(len(res.tokens)))
    hover = [[f"layer {layer} -> {res.top_token[k][t]!r}; p(gen)={res.p_token[k][t]:.3f}" for t in x] for k, layer in enumerate(res.layers)]
    fig = go.Figure(go.Heatmap(z=res.p_token, x=x, y=[f"L{layer}" for layer in res.layers], zmin=0, zmax=1, colorscale="Viridis",
                               text=hover, hovertemplate="%{text}<extra></extra>"))
    fig.update_layout(title="Logit lens: probability of the generated token by layer", height=120 + 40 * len(res.layers),
                      xaxis=dict(tickmode="array", tickvals=x, ticktext=res.tokens), margin=dict(t=40, b=40))
    return fig
