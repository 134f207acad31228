"""White-box thought-anchor measures: attention suppression and receiver heads (Bogdan et al. 2025, section 5).

- **Attention suppression** (:func:`suppression_matrix`): for each sentence ``i``, every token after it is kept from
  attending to sentence ``i``'s tokens, in every layer and head (:class:`SuppressAttention`: the additive attention mask
  that each attention module receives gets ``-inf``-like entries there, with eager attention; a forward pre-hook per
  layer, removed and the attention implementation restored on exit, exception or not). ``M[i, j]`` is the mean over
  sentence ``j``'s tokens (``j > i``) of ``KL(clean || suppressed)`` of the full next-token distributions (nats; the
  reference code's ``get_suppression_KL_matrix`` averages the log of a KL of temperature-0.6 top-p distributions).
- **Receiver heads** (:func:`receiver_heads`): per head, the sentence-averaged attention pattern (the mean weight from
  sentence ``j``'s tokens to sentence ``i``'s), each sentence's *vertical score* (the mean it receives from sentences
  ``j >= i + proximity``), and the kurtosis of those scores across sentences (Fisher's, scipy); the ``top_k`` heads of
  highest kurtosis are the receiver heads, and a sentence's receiver score is its mean vertical score over them.

Example:
    >>> SuppressAttention([], start=0).keys
    ()
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from thinklens.engine.adapters import get_module
from thinklens.engine.heads import attention_patterns
from thinklens.errors import ThinklensError

PROXIMITY = 2
"""Sentences right before a receiver that its vertical score leaves out (the paper leaves out 4 of longer traces)."""
TOP_K = 4
"""Receiver heads kept (the heads of highest kurtosis)."""


def _attention_modules(model: Any) -> list[torch.nn.Module]:
    mods = []
    for layer in range(model.n_layers):
        path = model.adapter.parts(layer).get("attn_out")
        if path is None:
            raise ThinklensError.of("attention", f"block {layer}", "a block with an attention module",
                                    "attention suppression needs attention in every block")
        mods.append(get_module(model.hf, f"{model.adapter.layer_path(layer)}.{path}"))
    return mods


@contextmanager
def eager_attention(model: Any) -> Iterator[None]:
    """Eager attention while open (the additive mask reaches every attention module), restored on exit."""
    hf = model.hf
    before = getattr(hf.config, "_attn_implementation", None)
    hf.set_attn_implementation("eager")
    try:
        yield
    finally:
        if before is not None and before != "eager":
            hf.set_attn_implementation(before)


@dataclass(frozen=True)
class SuppressAttention:
    """Keep query positions ``>= start`` from attending to key positions ``keys`` (every layer, every head)."""

    keys: tuple[int, ...]
    """Key positions (tokens of the suppressed sentence)."""
    start: int
    """First query position the suppression applies to (the token after the sentence)."""

    def __init__(self, keys: Sequence[int], *, start: int):
        object.__setattr__(self, "keys", tuple(int(k) for k in keys))
        object.__setattr__(self, "start", int(start))

    def _hook(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
        if not self.keys:
            return None
        mask = kwargs.get("attention_mask")
        hs = kwargs.get("hidden_states", args[0] if args else None)
        q = hs.shape[1]
        if mask is None or mask.ndim != 4 or not mask.dtype.is_floating_point:
            raise ThinklensError.of("attention mask", None if mask is None else (mask.dtype, tuple(mask.shape)),
                                    "a 4-d additive float mask (eager attention)", "run inside eager_attention(model)")
        k = mask.shape[-1]
        block = torch.zeros(q, k, dtype=torch.bool, device=mask.device)  # [q, k]
        keys = torch.tensor([p for p in self.keys if p < k], dtype=torch.long, device=mask.device)
        block[self.start:, keys] = True
        kwargs = {**kwargs, "attention_mask": mask.masked_fill(block, torch.finfo(mask.dtype).min)}
        return args, kwargs

    @contextmanager
    def install(self, model: Any) -> Iterator[None]:
        """The pre-hooks on every attention module, removed on exit."""
        handles = []
        try:
            for mod in _attention_modules(model):
                handles.append(mod.register_forward_pre_hook(self._hook, with_kwargs=True))
            yield
        finally:
            for h in handles:
                h.remove()


@torch.no_grad()
def logits_of(model: Any, ids: Sequence[int], suppress: SuppressAttention | None = None) -> Tensor:
    """``[pos, vocab]`` float logits of one row under eager attention, with ``suppress`` applied when given."""
    x = torch.tensor([list(ids)], dtype=torch.long, device=model.device)
    with eager_attention(model):
        if suppress is None:
            return model.hf(input_ids=x, use_cache=False).logits[0].float()
        with suppress.install(model):
            return model.hf(input_ids=x, use_cache=False).logits[0].float()


def _positions(owner: Sequence[int], k: int) -> list[int]:
    return [p for p, s in enumerate(owner) if s == k]


@dataclass(frozen=True)
class Suppression:
    """The sentence-by-sentence suppression matrix of one trace."""

    matrix: list[list[float]]
    """``[i][j]``: mean KL (nats) at sentence ``j``'s tokens when attention to sentence ``i`` is suppressed (NaN for
    ``j <= i``)."""
    importance: list[float]
    """Per sentence ``i``: the mean of row ``i`` over later sentences (NaN for the last)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def suppression_matrix(model: Any, ids: Sequence[int], owner: Sequence[int]) -> Suppression:
    """Attention-suppression importance (the module's docstring); ``owner[p]`` is token ``p``'s sentence (``-1``: none)."""
    n = max(owner) + 1
    clean = torch.log_softmax(logits_of(model, ids), -1)  # [pos, vocab]
    mat = np.full((n, n), np.nan)
    for i in range(n):
        keys = _positions(owner, i)
        if not keys:
            continue
        sup = torch.log_softmax(logits_of(model, ids, SuppressAttention(keys, start=max(keys) + 1)), -1)  # [pos, vocab]
        kl = (clean.exp() * (clean - sup)).sum(-1)  # [pos]
        for j in range(i + 1, n):
            pos = _positions(owner, j)
            if pos:
                mat[i, j] = float(kl[pos].mean())
    imp = [float(np.nanmean(row[i + 1:])) if np.isfinite(row[i + 1:]).any() else float("nan") for i, row in enumerate(mat)]
    return Suppression(mat.tolist(), imp)


@dataclass(frozen=True)
class ReceiverHeads:
    """Receiver heads of one trace and the sentences they attend to."""

    kurtosis: list[list[float]]
    """``[layer][head]`` kurtosis of the head's vertical scores across sentences."""
    heads: list[tuple[int, int]]
    """The ``top_k`` ``(layer, head)`` of highest kurtosis."""
    vertical: list[list[list[float]]]
    """``[layer][head][sentence]`` vertical scores."""
    importance: list[float]
    """Per sentence: the mean vertical score over the receiver heads."""
    proximity: int
    """Sentences right before a receiver left out of its score."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sentence_attention(pattern: Tensor, owner: Sequence[int]) -> Tensor:
    """``[head, j, i]`` mean attention weight from sentence ``j``'s tokens to sentence ``i``'s (``pattern`` ``[head, q, k]``)."""
    n = max(owner) + 1
    own = torch.tensor(list(owner), device=pattern.device)
    member = torch.stack([(own == k).float() for k in range(n)])  # [sentence, pos]
    size = member.sum(1).clamp(min=1)  # [sentence]
    summed = torch.einsum("jq,hqk,ik->hji", member, pattern.float(), member)  # [head, j, i]
    return summed / (size[None, :, None] * size[None, None, :])


def receiver_heads(model: Any, ids: Sequence[int], owner: Sequence[int], *, proximity: int = PROXIMITY,
                   top_k: int = TOP_K) -> ReceiverHeads:
    """Receiver heads (the module's docstring) from one forward's attention patterns."""
    from scipy.stats import kurtosis  # lazy: import cost (scipy)

    n = max(owner) + 1
    pats = attention_patterns(model, torch.tensor([list(ids)], dtype=torch.long))  # [layer] of [1, head, q, k]
    vertical, kurt = [], []
    for pat in pats:
        sa = sentence_attention(pat[0], owner)  # [head, j, i]
        rows = []
        for i in range(n):
            later = list(range(i + proximity, n))
            rows.append(sa[:, later, i].mean(1) if later else torch.full((sa.shape[0],), float("nan")))
        v = torch.stack(rows, 1).cpu().numpy()  # [head, sentence]
        vertical.append(v.tolist())
        kurt.append([float(kurtosis(h[np.isfinite(h)])) if np.isfinite(h).sum() > 3 else float("nan") for h in v])
    k = np.asarray(kurt)  # [layer, head]
    flat = np.where(np.isfinite(k), k, -np.inf).ravel()
    order = np.argsort(-flat, kind="stable")[:top_k]
    heads = [(int(o // k.shape[1]), int(o % k.shape[1])) for o in order if np.isfinite(flat[o])]
    vert = np.asarray(vertical)  # [layer, head, sentence]
    if heads:
        sel = np.stack([vert[a, b] for a, b in heads])  # [head, sentence]; NaN where a sentence has no later receivers
        imp = [float(np.mean(c[np.isfinite(c)])) if np.isfinite(c).any() else float("nan") for c in sel.T]
    else:
        imp = [float("nan")] * n
    return ReceiverHeads(k.tolist(), heads, vertical, [float(x) for x in imp], proximity)
