"""Latent-SFT sequence layouts, attention masks and dual-track position ids (pure functions).

Encoder input: ``prompt <think> t1 t2 C t3 t4 C ... C </think>`` -- a compress token C after every c
CoT tokens (and one after a last partial chunk). Encoder mask: causal, but no query attends to an
earlier C.

Decoder input: ``prompt <think> L1 S2 L2 S3 ... LK </think> answer``: L_k holds the superposition made
from C_k (which has read chunks 1..k), S_{k+1} is the next CoT chunk. Decoder mask: a text chunk
attends only to its own latent and itself; a latent to the prompt, earlier latents and itself; the
answer segment (``</think>`` on) to the prompt and all latents, not to text. Positions: latents
consecutive, each text chunk continuing from its latent, the answer after the last latent.

Example (the spec's): ``[P0,P1,<t>,L1,t1,t2,L2,t3,t4,L3,</t>,A1]`` gets positions
``[0,1,2,3,4,5,4,5,6,5,6,7]``:

    >>> kinds = [PROMPT] * 3 + [LATENT, TEXT, TEXT, LATENT, TEXT, TEXT, LATENT, ANSWER, ANSWER]
    >>> owner = [-1] * 3 + [0, 0, 0, 1, 1, 1, 2, -1, -1]
    >>> decoder_positions(kinds, owner)
    [0, 1, 2, 3, 4, 5, 4, 5, 6, 5, 6, 7]
"""

from __future__ import annotations

import torch
from torch import Tensor

#: Token kinds in a decoder layout.
PROMPT, LATENT, TEXT, ANSWER, PAD = 0, 1, 2, 3, 4


def chunks(cot: list[int], c: int) -> list[list[int]]:
    """Split a CoT into chunks of ``c`` tokens (the last may be shorter): one latent per chunk.

    Example:
        >>> chunks([1, 2, 3, 4, 5], 2)
        [[1, 2], [3, 4], [5]]
    """
    return [cot[i:i + c] for i in range(0, len(cot), c)]


def encoder_layout(prompt: list[int], cot: list[int], c: int, *, think: int, end_think: int,
                   compress: int) -> tuple[list[int], list[int]]:
    """``(ids, compress_positions)`` of the encoder input.

    Example:
        >>> encoder_layout([1, 2], [11, 12, 13], 2, think=4, end_think=5, compress=9)
        ([1, 2, 4, 11, 12, 9, 13, 9, 5], [5, 7])
    """
    ids = list(prompt) + [think]
    where = []
    for ch in chunks(cot, c):
        ids.extend(ch)
        where.append(len(ids))
        ids.append(compress)
    ids.append(end_think)
    return ids, where


def encoder_mask(ids: list[int], compress: int) -> Tensor:
    """``[T, T]`` bool (True = may attend): causal, minus every earlier compress token.

    Example:
        >>> encoder_mask([1, 9, 2, 9], 9).int().tolist()
        [[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 1, 1]]
    """
    n = len(ids)
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
    is_c = torch.tensor([t == compress for t in ids])
    earlier = torch.arange(n)[:, None] > torch.arange(n)[None, :]  # [query, key] key strictly before
    return causal & ~(is_c[None, :] & earlier)


def decoder_layout(prompt: list[int], cot: list[int], c: int, answer: list[int], *, think: int, end_think: int,
                   latent: int) -> tuple[list[int], list[int], list[int]]:
    """``(ids, kinds, owner)``: ``owner[i]`` is the latent index a latent or text token belongs to (-1 else).

    Example:
        >>> ids, kinds, owner = decoder_layout([1], [11, 12, 13, 14], 2, [40, 41], think=4, end_think=5, latent=8)
        >>> ids, kinds
        ([1, 4, 8, 13, 14, 8, 5, 40, 41], [0, 0, 1, 2, 2, 1, 3, 3, 3])
    """
    ids, kinds, owner = list(prompt) + [think], [PROMPT] * (len(prompt) + 1), [-1] * (len(prompt) + 1)
    parts = chunks(cot, c)
    for k in range(len(parts)):
        ids.append(latent)
        kinds.append(LATENT)
        owner.append(k)
        if k + 1 < len(parts):  # S_{k+1} follows L_k; the last latent is followed by </think>
            ids.extend(parts[k + 1])
            kinds.extend([TEXT] * len(parts[k + 1]))
            owner.extend([k] * len(parts[k + 1]))
    tail = [end_think] + list(answer)
    return ids + tail, kinds + [ANSWER] * len(tail), owner + [-1] * len(tail)


def decoder_mask(kinds: list[int], owner: list[int]) -> Tensor:
    """``[T, T]`` bool (True = may attend) for a decoder layout (see the module docstring).

    Example:
        >>> kinds = [PROMPT, LATENT, TEXT, LATENT, ANSWER]
        >>> decoder_mask(kinds, [-1, 0, 0, 1, -1]).int().tolist()
        [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 1, 1, 0, 0], [1, 1, 0, 1, 0], [1, 1, 0, 1, 1]]
    """
    n = len(kinds)
    k = torch.tensor(kinds)
    o = torch.tensor(owner)
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
    q, key = k[:, None], k[None, :]
    same_owner = o[:, None] == o[None, :]
    allow = torch.zeros(n, n, dtype=torch.bool)
    allow |= (q == PROMPT) & (key == PROMPT)
    allow |= (q == LATENT) & ((key == PROMPT) | (key == LATENT))
    allow |= (q == TEXT) & (((key == LATENT) | (key == TEXT)) & same_owner)
    allow |= (q == ANSWER) & ((key == PROMPT) | (key == LATENT) | (key == ANSWER))
    mask = allow & causal
    mask |= torch.eye(n, dtype=torch.bool)  # padding rows attend to themselves: no all-masked row
    return mask & ~((key == PAD) & ~torch.eye(n, dtype=torch.bool))


def decoder_positions(kinds: list[int], owner: list[int]) -> list[int]:
    """Dual-track position ids (see the module docstring for the spec's example)."""
    pos: list[int] = []
    latent_pos: dict[int, int] = {}
    last_latent = -1
    n_prompt = sum(1 for x in kinds if x == PROMPT)
    run = 0  # offset inside the current text chunk / answer
    for kind, own in zip(kinds, owner):
        if kind == PROMPT:
            pos.append(len(pos))
        elif kind == LATENT:
            last_latent = n_prompt + len(latent_pos)
            latent_pos[own] = last_latent
            pos.append(last_latent)
            run = 0
        elif kind == TEXT:
            run += 1
            pos.append(latent_pos[own] + run)
        elif kind == ANSWER:
            run = run + 1 if pos and kinds[len(pos) - 1] == ANSWER else 1
            pos.append((last_latent if last_latent >= 0 else n_prompt - 1) + run)
        else:  # padding: any position, never attended
            pos.append(0)
    return pos


def stack_masks(masks: list[Tensor], dtype: torch.dtype = torch.float32) -> Tensor:
    """Pad ``[T_i, T_i]`` bool masks to ``[batch, 1, T, T]`` additive float masks (right padding).

    Additive (0 / finfo.min) rather than bool: the eager attention adds the mask, sdpa accepts both.
    """
    t = max(m.shape[0] for m in masks)
    out = torch.zeros(len(masks), 1, t, t, dtype=torch.bool)
    for b, m in enumerate(masks):
        n = m.shape[0]
        out[b, 0, :n, :n] = m
        out[b, 0, n:, n:] = torch.eye(t - n, dtype=torch.bool)  # padding rows: themselves only
    return torch.zeros(out.shape, dtype=dtype).masked_fill(~out, torch.finfo(dtype).min)
