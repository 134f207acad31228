"""Induction (Olsson et al. 2022) on any causal LM: repeated random tokens, prefix-matching heads, head ablation.

On a sequence of random tokens repeated once, ``[prefix, r_1 .. r_T, r_1 .. r_T]``, a model with induction heads
predicts the second copy from the first: its loss there falls far below the first copy's. The heads that do it
attend from ``r_i`` in the second copy to the token after ``r_i`` in the first (the *prefix-matching* score, averaged
over the second copy); ablating the highest-scoring heads raises the second copy's loss again, far more than
ablating as many random heads.

The prefix token is the tokenizer's BOS, or its EOS / first special token when it has none (SmolLM2 adds no BOS):
position 0 is the attention sink of most models, so the random tokens never sit there.

Example:
    >>> import torch
    >>> ids = repeated_tokens(vocab_ids=torch.arange(100, 200), n_seqs=2, length=5, prefix_id=1, seed=0)
    >>> ids.shape, bool((ids[:, 1:6] == ids[:, 6:11]).all()), int(ids[0, 0])
    (torch.Size([2, 11]), True, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from jaxtyping import Float, Int
from torch import Tensor

from thinklens.engine.heads import attention_patterns
from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel


def repeated_tokens(vocab_ids: Int[Tensor, " vocab"], *, n_seqs: int, length: int, prefix_id: int, seed: int,
                    repeat: bool = True, fresh_seed: int = 1) -> Int[Tensor, "batch pos"]:
    """``[n_seqs, 1 + 2 * length]``: a prefix token, ``length`` random tokens drawn from ``vocab_ids``, and the same
    tokens again. ``repeat=False``: fresh random tokens instead (drawn with ``fresh_seed``), after the same first
    half: no copy to find, but the same context, so that in-context learning of the token distribution cancels in
    a paired comparison."""
    g = torch.Generator().manual_seed(seed)
    first = vocab_ids[torch.randint(len(vocab_ids), (n_seqs, length), generator=g)]  # [batch, T]
    g2 = torch.Generator().manual_seed(seed * 7919 + fresh_seed)
    second = first if repeat else vocab_ids[torch.randint(len(vocab_ids), (n_seqs, length), generator=g2)]
    return torch.cat([torch.full((n_seqs, 1), prefix_id, dtype=torch.long), first, second], dim=1)


def ordinary_tokens(model: "HookedModel", *, lo: int = 1000, hi: int = 30000) -> Int[Tensor, " vocab"]:
    """Token ids in ``[lo, min(hi, vocab))`` that are not special tokens: what the random sequences draw from."""
    vocab = model.vocab_size
    if vocab <= lo + 100:
        lo = min(10, vocab // 4)
    ids = torch.arange(lo, min(hi, vocab))
    special = torch.tensor(sorted(set(model.tokenizer.all_special_ids)), dtype=torch.long)
    return ids[~torch.isin(ids, special)]


def prefix_id(model: "HookedModel") -> int:
    """The token at position 0: BOS, else EOS, else the first special token."""
    tok = model.tokenizer
    for tid in (tok.bos_token_id, tok.eos_token_id, *tok.all_special_ids):
        if tid is not None:
            return int(tid)
    raise ThinklensError.of("tokenizer", type(tok).__name__, "a BOS, EOS or other special token", "set tokenizer.bos_token")


@torch.no_grad()
def copy_losses(model: "HookedModel", ids: Int[Tensor, "batch pos"], *, batch_size: int = 16,
                interventions: Sequence = ()) -> tuple[Float[Tensor, " batch"], Float[Tensor, " batch"]]:
    """Mean next-token loss (nats) on the first and on the second copy, per sequence.

    The first token of each copy is left out (nothing predicts it), so both means cover ``length - 1`` predictions.
    """
    length = (ids.shape[1] - 1) // 2
    firsts, seconds = [], []
    with model.intervene(list(interventions)):
        for i in range(0, len(ids), batch_size):
            chunk = ids[i:i + batch_size].to(model.device)
            logits = model.hf(input_ids=chunk).logits.float()  # [batch, pos, vocab]
            nll = -logits[:, :-1].log_softmax(-1).gather(-1, chunk[:, 1:, None])[..., 0]  # [batch, pos-1]: predicts i+1
            firsts.append(nll[:, 1:length].mean(1).cpu())  # predictions of r_2 .. r_T (first copy)
            seconds.append(nll[:, length + 1:2 * length].mean(1).cpu())  # predictions of r_2 .. r_T (second copy)
    return torch.cat(firsts), torch.cat(seconds)


def prefix_matching_scores(model: "HookedModel", ids: Int[Tensor, "batch pos"], *, batch_size: int = 8) -> Float[Tensor, "layer head"]:
    """Per head, the mean attention from each second-copy token ``r_i`` to the token after its first occurrence."""
    length = (ids.shape[1] - 1) // 2
    q = torch.arange(length + 1, 2 * length)  # second-copy positions of r_1 .. r_{T-1}
    k = q - length + 1  # first-copy positions of r_2 .. r_T
    total = None
    for i in range(0, len(ids), batch_size):
        pats = attention_patterns(model, ids[i:i + batch_size])  # per layer [batch, head, q, k]
        s = torch.stack([a[:, :, q, k].sum(dim=(0, 2)) for a in pats]).cpu()  # [layer, head]
        total = s if total is None else total + s
    return total / (len(ids) * len(q))


@dataclass(frozen=True)
class HeadSet:
    """Heads as ``{layer: (head, ...)}`` and as a flat list of ``(layer, head)``."""

    pairs: tuple[tuple[int, int], ...]

    @property
    def by_layer(self) -> dict[int, tuple[int, ...]]:
        out: dict[int, list[int]] = {}
        for layer, head in self.pairs:
            out.setdefault(layer, []).append(head)
        return {k: tuple(v) for k, v in out.items()}


def top_heads(scores: Float[Tensor, "layer head"], k: int) -> HeadSet:
    """The ``k`` heads with the highest scores."""
    n_heads = scores.shape[1]
    idx = torch.topk(scores.flatten(), k).indices
    return HeadSet(tuple((int(i) // n_heads, int(i) % n_heads) for i in idx))


def random_heads(n_layers: int, n_heads: int, k: int, *, seed: int, exclude: HeadSet | None = None) -> HeadSet:
    """``k`` heads drawn uniformly without replacement (outside ``exclude``)."""
    banned = set(exclude.pairs) if exclude else set()
    pool = [(layer, h) for layer in range(n_layers) for h in range(n_heads) if (layer, h) not in banned]
    g = torch.Generator().manual_seed(seed)
    pick = torch.randperm(len(pool), generator=g)[:k]
    return HeadSet(tuple(pool[int(i)] for i in pick))
