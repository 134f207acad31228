"""``HookedModel.forward(logits_at=mask)``: the LM head on the masked positions only equals the full forward's logits
at those positions, on every architecture family (gemma2's soft-capped logits included), with gradients; and the
hybrid vectors' sentence NLL built on it equals the plain formula over full logits.

Mutants killed: rows taken in another order than ``full.logits[mask]`` (e.g. position-major), the mask shifted by one
position, the soft-capping skipped (the pre-hook replacing the head's output instead of its input), the hook left
registered after the call (the next plain forward returns ``[1, n, vocab]``).
"""

from __future__ import annotations

import pytest
import torch

from thinklens import ThinklensError
from tools.testing import TINY_FAMILIES


def _inputs(model, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, model.vocab_size - 1, (3, 7), generator=g)
    attn = torch.ones_like(ids)
    attn[1, 5:] = 0  # a right-padded row
    keep = torch.rand(ids.shape, generator=g) < 0.4
    keep[0, 0] = keep[2, 6] = True
    keep &= attn.bool()
    return {"input_ids": ids, "attention_mask": attn}, keep


@pytest.mark.parametrize("fam", TINY_FAMILIES)
def test_logits_at_equals_the_full_logits_at_those_positions(family_model, fam):
    model = family_model(fam)
    enc, keep = _inputs(model)
    with torch.no_grad():
        full = model.forward(enc).logits
        some = model.forward(enc, logits_at=keep).logits
        again = model.forward(enc).logits  # the head's hook is gone
    assert some.shape == (int(keep.sum()), full.shape[-1])
    torch.testing.assert_close(some, full[keep.to(full.device)], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(again, full)


def test_logits_at_carries_gradients_and_refuses_a_wrong_shape(family_model):
    model = family_model("llama")
    enc, keep = _inputs(model)
    out = model.forward(enc, logits_at=keep).logits
    out.sum().backward()  # the weights' gradients: the graph reaches through the kept rows
    assert any(p.grad is not None for p in model.hf.parameters())
    model.hf.zero_grad(set_to_none=True)
    with pytest.raises(ThinklensError, match="logits_at"):
        model.forward(enc, logits_at=keep[:, :-1])


def test_sentence_nll_equals_the_plain_formula(family_model):
    from thinklens.engine.interventions import HookFn
    from thinklens.steering.hybrid import sentence_nll

    model = family_model("gemma2")
    enc, _ = _inputs(model, seed=1)
    steer = torch.zeros_like(enc["input_ids"], dtype=torch.bool)
    steer[0, 1:4] = steer[1, 2:5] = steer[2, 3:7] = True  # row 2's sentence runs to the last position
    site = model.resolve_site("resid_post.0")
    vec = torch.randn(model.d_model) * 0.1
    got = sentence_nll(model, {**enc, "steer": steer}, vec, site)

    def add(act, ctx):
        return act + steer[..., None].to(act.dtype) * vec.to(act.dtype)

    with model.intervene([HookFn(site, add)]):
        logits = model.forward(enc).logits
    lp = torch.log_softmax(logits[:, :-1].float(), -1)
    nll = -lp.gather(-1, enc["input_ids"][:, 1:, None])[..., 0]
    m = steer[:, :-1].float()
    torch.testing.assert_close(got, (nll * m).sum() / m.sum())
