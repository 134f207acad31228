"""SAE fidelity scored where it means something: on the tokens the model generated, never on prompt or padding.

CE loss recovered and KL score compare three forward passes over ``prompt + generated`` rows: the clean model,
the model with the SAE's reconstruction spliced in at its site, and the model with the site zero-ablated
(sae-lens's definitions)::

    ce_loss_recovered = (CE_ablation - CE_sae) / (CE_ablation - CE_clean)
    kl_div_score      = (KL_ablation - KL_sae) / KL_ablation       (KL of the clean next-token distribution
                                                                     to the spliced one)

Each mean is over the positions that predict a generated token (the last prompt position predicts the first
generated token; the last generated token predicts nothing), pooled over rows. Prompt positions are the
user's text, not the model's; padding is nothing at all: scoring either (as sae-lens's ``run_evals`` does on
right-padded rows) gave "CE loss recovered" above 1.

The SAE is spliced in at every position but those of pad, bos and eos tokens (:func:`thinklens.steering.corpora.special_ids`)
and each row's first position, which keep their own activation, as sae-lens's ``get_recons_loss`` does for the
special tokens: the SAE never trained on them (training leaves a row's first position out too,
:func:`thinklens.steering.corpora.sink_slice`), and the first position is the attention sink whether it holds a BOS or,
with a tokenizer that prepends none (SmolLM2's), a word (at SmolLM2's ``resid_post.15`` its norm is about 120x an
ordinary state's). Spliced there too, the SAE's reconstruction of a state it never saw broke every later position's
attention: an SAE explaining 0.89 of the variance "recovered" -0.41 of the CE loss at a chat's ``<|im_start|>``, and
0.04 at a plain text's first word. Zero ablation zeroes every position, as in sae-lens.

Example:
    >>> generated_targets([[5, 6, 7], [8]], [[1, 2], [3, 4, 5]], width=6).tolist()
    [[False, False, False, True, True, False], [False, False, True, True, True, False]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from thinklens.engine.interventions import ReplaceActivation
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.steering.corpora import special_ids
from thinklens.steering.sae import check_sae

if TYPE_CHECKING:
    from sae_lens import SAE

    from thinklens.engine.model import HookedModel
    from thinklens.generation.trace import Trace


def generated_targets(prompts: Sequence[Sequence[int]], generated: Sequence[Sequence[int]], *, width: int) -> Tensor:
    """``[batch, width]`` mask of the positions (in left-padded rows of ``prompt + generated``) that predict a
    generated token: positions ``pad + len(prompt) - 1 .. pad + len(row) - 2``."""
    mask = torch.zeros(len(prompts), width, dtype=torch.bool)
    for i, (p, g) in enumerate(zip(prompts, generated)):
        pad = width - len(p) - len(g)
        if g:
            mask[i, pad + len(p) - 1: pad + len(p) + len(g) - 1] = True
    return mask


def _sums(clean: Tensor, other: Tensor, targets: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Per-row summed CE of ``other`` on the targets, and summed KL(clean || other), over the masked positions:
    two ``[batch]`` float64 tensors."""
    lp_clean = torch.log_softmax(clean.float(), dim=-1)[mask]  # [n, vocab]
    lp = torch.log_softmax(other.float(), dim=-1)[mask]  # [n, vocab]
    row = mask.nonzero()[:, 0]  # [n]: the row of each masked position
    ce = -lp.gather(-1, targets[mask][:, None])[:, 0]  # [n]
    kl = (lp_clean.exp() * (lp_clean - lp)).sum(-1)  # [n]
    zeros = torch.zeros(mask.shape[0], dtype=torch.float64)
    return zeros.index_add(0, row, ce.double()), zeros.index_add(0, row, kl.double())


@torch.no_grad()
def sae_fidelity(model: "HookedModel", sae: "SAE", rows: Sequence[tuple[Sequence[int], Sequence[int]]], *,
                 site: Site | str | None = None, batch_size: int = 16) -> dict[str, Any]:
    """CE loss recovered and KL score of ``sae`` on ``rows`` of ``(prompt ids, generated ids)``, scored on the
    generated tokens only (see the module docstring). Returns the three CEs, the two KLs, both scores (None where
    undefined: zero-ablation no worse than the clean model, as in an untrained one), ``fidelity_tokens``
    (positions scored) and ``per_row``: each row's summed CEs and KLs, its scored positions, and the SAE's squared
    reconstruction error and the activations' squared deviation from their pooled mean at those positions
    (``res_ss``, ``tot_ss``), from which :mod:`thinklens.steering.sae_findings` bootstraps intervals over rows."""
    s = check_sae(model, sae, site)
    special = torch.tensor(special_ids(model.tokenizer), dtype=torch.long)
    rows = [(list(p), list(g)) for p, g in rows if len(g) > 0 and len(p) > 0]
    if not rows:
        raise ThinklensError.of("fidelity rows", 0, "at least one row with a prompt and generated tokens",
                                "generate traces from held-out prompts first")
    dev = next(sae.parameters()).device

    seen: dict[str, Tensor] = {}

    def spliced(act: Tensor, ctx) -> Tensor:
        recon = sae(act.to(dev, torch.float32)).to(act.device, act.dtype)  # decode(encode(x)) in place of x
        # special tokens and the first position keep their own state in the forward pass; the reconstruction error
        # (explained variance) is the SAE's own at every scored position
        seen["x"], seen["xhat"] = act.detach(), recon.detach()
        return torch.where(seen["splice"].to(act.device)[..., None], recon, act)

    def ablated(act: Tensor, ctx) -> Tensor:
        return torch.zeros_like(act)

    per: dict[str, list[Tensor]] = {k: [] for k in ("ce_clean", "ce_sae", "ce_zero", "kl_sae", "kl_zero", "tokens",
                                                    "res_ss", "sq", "sum_x")}
    for start in range(0, len(rows), batch_size):
        chunk = rows[start: start + batch_size]
        ids = [p + g for p, g in chunk]
        width = max(len(r) for r in ids)
        mask = generated_targets([p for p, _ in chunk], [g for _, g in chunk], width=width)  # [batch, width]
        targets = torch.zeros(len(ids), width, dtype=torch.long)  # [batch, width]: the next token at each position
        for i, r in enumerate(ids):
            targets[i, width - len(r): width - 1] = torch.tensor(r[1:])
        padded = model.tokenize(ids)["input_ids"]  # [batch, width]: left-padded as forward_with pads them
        splice = ~torch.isin(padded.cpu(), special)  # [batch, width]
        for i, r in enumerate(ids):
            splice[i, width - len(r)] = False  # the row's first position: the attention sink, never trained on
        seen["splice"] = splice
        clean = model.forward_with(ids).cpu()  # [batch, width, vocab]
        with_sae = model.forward_with(ids, [ReplaceActivation(s, spliced)]).cpu()
        zero = model.forward_with(ids, [ReplaceActivation(s, ablated)]).cpu()
        ce_clean, _ = _sums(clean, clean, targets, mask)
        ce_sae, kl_sae = _sums(clean, with_sae, targets, mask)
        ce_zero, kl_zero = _sums(clean, zero, targets, mask)
        m3 = mask[..., None].double()  # [batch, width, 1]
        x, xhat = seen["x"].cpu().double() * m3, seen["xhat"].cpu().double() * m3  # [batch, width, d]
        for k, v in (("ce_clean", ce_clean), ("ce_sae", ce_sae), ("ce_zero", ce_zero), ("kl_sae", kl_sae),
                     ("kl_zero", kl_zero), ("tokens", mask.sum(1).double()), ("res_ss", ((x - xhat) ** 2).sum((1, 2))),
                     ("sq", (x ** 2).sum((1, 2))), ("sum_x", x.sum(1))):
            per[k].append(v)
    cat = {k: torch.cat(v) for k, v in per.items()}
    n_tok = int(cat["tokens"].sum())
    mean_x = cat["sum_x"].sum(0) / n_tok  # [d]: the pooled mean activation at the scored positions
    # sum over a row's positions of |x - mean|^2 = sum |x|^2 - 2 mean . sum x + n |mean|^2
    tot_ss = cat["sq"] - 2 * cat["sum_x"] @ mean_x + cat["tokens"] * (mean_x @ mean_x)
    per_row = {k: cat[k].tolist() for k in ("ce_clean", "ce_sae", "ce_zero", "kl_sae", "kl_zero", "res_ss")}
    per_row |= {"tokens": [int(t) for t in cat["tokens"].tolist()], "tot_ss": tot_ss.tolist()}
    m = {k: float(cat[k].sum()) / n_tok for k in ("ce_clean", "ce_sae", "ce_zero", "kl_sae", "kl_zero")}
    gap = m["ce_zero"] - m["ce_clean"]
    return {"ce_loss_without_sae": m["ce_clean"], "ce_loss_with_sae": m["ce_sae"], "ce_loss_with_ablation": m["ce_zero"],
            "ce_loss_recovered": (m["ce_zero"] - m["ce_sae"]) / gap if gap > 0 else None,
            "kl_div_with_sae": m["kl_sae"], "kl_div_with_ablation": m["kl_zero"],
            "kl_div_score": (m["kl_zero"] - m["kl_sae"]) / m["kl_zero"] if m["kl_zero"] > 0 else None,
            "generated_explained_variance": 1.0 - float(cat["res_ss"].sum() / tot_ss.sum()) if tot_ss.sum() > 0 else None,
            "fidelity_tokens": n_tok, "fidelity_rows": len(rows), "fidelity_scored_on": "generated tokens",
            "per_row": per_row}


def trace_rows(traces: Sequence["Trace"]) -> list[tuple[list[int], list[int]]]:
    """``(prompt ids, generated ids)`` of generated traces, for :func:`sae_fidelity`."""
    return [(list(t.prompt_ids), list(t.token_ids)) for t in traces]
