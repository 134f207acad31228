"""Induction analysis and head ablation on tiny random models, against oracles.

Mutants these tests kill (each checked by hand):
- AblateHeads a no-op (the pre-hook returns its input): ``test_ablating_every_head_zeroes_attn_out``;
- AblateHeads slicing the wrong head (``idx + 1``): ``test_one_head_ablation_matches_the_projection_oracle``;
- the prefix-matching key one position early (``k = q - length``: the earlier copy of the same token):
  ``test_prefix_matching_scores_match_hf_attentions``;
- the copy losses reading the prediction of the token itself (no shift): ``test_copy_losses_match_cross_entropy``;
- the planted verdict ignoring the gain size: ``test_random_model_has_no_induction``.
"""

from __future__ import annotations

import pytest
import torch

from thinklens.analyses.induction import (
    copy_losses,
    ordinary_tokens,
    prefix_id,
    prefix_matching_scores,
    random_heads,
    repeated_tokens,
    top_heads,
)
from thinklens.engine.heads import AblateHeads, head_means, head_shape, output_projection


@pytest.fixture(scope="module")
def llama(family_model):
    return family_model("llama")


def _ids(model, n=4, length=6, **kw):
    return repeated_tokens(torch.arange(3, model.vocab_size), n_seqs=n, length=length, prefix_id=prefix_id(model), seed=0, **kw)


def test_repeated_and_fresh_share_the_first_half(llama):
    rep, fresh = _ids(llama), _ids(llama, repeat=False)
    assert torch.equal(rep[:, :7], fresh[:, :7]) and torch.equal(rep[:, 1:7], rep[:, 7:])
    assert not torch.equal(fresh[:, 1:7], fresh[:, 7:])
    assert not torch.equal(fresh, _ids(llama, repeat=False, fresh_seed=2))


def test_ablating_every_head_zeroes_attn_out(llama):
    n_heads, _ = head_shape(llama)
    ids = _ids(llama)
    with llama.intervene([AblateHeads({1: tuple(range(n_heads))})]):
        out = llama.capture(ids, sites=["attn_out.1"])["attn_out.1"]
    assert torch.count_nonzero(out) == 0  # Llama's o_proj has no bias: all heads off, nothing written


def test_one_head_ablation_matches_the_projection_oracle(llama):
    n_heads, head_dim = head_shape(llama)
    proj = output_projection(llama, 0)
    ids = _ids(llama)
    seen = {}
    h = proj.register_forward_pre_hook(lambda mod, args: seen.__setitem__("x", args[0].detach().clone()))
    try:
        clean = llama.capture(ids, sites=["attn_out.0"])["attn_out.0"]
    finally:
        h.remove()
    with llama.intervene([AblateHeads({0: (2,)})]):
        ablated = llama.capture(ids, sites=["attn_out.0"])["attn_out.0"]
    head = seen["x"][..., 2 * head_dim:3 * head_dim]  # [batch, pos, head_dim]
    expected = clean - head @ proj.weight[:, 2 * head_dim:3 * head_dim].T
    torch.testing.assert_close(ablated, expected, atol=1e-5, rtol=1e-4)


def test_mean_ablation_with_zero_means_is_zero_ablation(llama):
    n_heads, head_dim = head_shape(llama)
    ids = _ids(llama)
    zeros = {0: torch.zeros(n_heads, head_dim)}
    with llama.intervene([AblateHeads({0: (1,)})]):
        a = llama.forward_with(ids)
    with llama.intervene([AblateHeads({0: (1,)}, zeros)]):
        b = llama.forward_with(ids)
    assert torch.equal(a, b)
    means = head_means(llama, ids, [0])
    assert means[0].shape == (n_heads, head_dim)


def test_ablation_is_removed_after_an_exception(llama):
    ids = _ids(llama)
    before = llama.forward_with(ids)
    with pytest.raises(RuntimeError), llama.intervene([AblateHeads({0: (0, 1)})]):
        raise RuntimeError("boom")
    assert torch.equal(llama.forward_with(ids), before)


def test_bad_head_is_one_line(llama):
    from thinklens.errors import ThinklensError

    with pytest.raises(ThinklensError, match="bad head"), llama.intervene([AblateHeads({0: (99,)})]):
        pass


def test_prefix_matching_scores_match_hf_attentions(llama):
    ids = _ids(llama, length=6)
    scores = prefix_matching_scores(llama, ids)  # [layer, head]
    llama.hf.set_attn_implementation("eager")
    with torch.no_grad():
        att = llama.hf(input_ids=ids, output_attentions=True).attentions
    llama.hf.set_attn_implementation("sdpa")
    for layer in range(llama.n_layers):
        for h in range(head_shape(llama)[0]):
            want = torch.stack([att[layer][:, h, 6 + 1 + i, 1 + i + 1] for i in range(5)]).mean()  # r_i -> after first r_i
            assert abs(float(scores[layer, h]) - float(want)) < 1e-5


def test_copy_losses_match_cross_entropy(llama):
    ids = _ids(llama, length=6)
    first, second = copy_losses(llama, ids)
    with torch.no_grad():
        logits = llama.hf(input_ids=ids).logits
    ce = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")  # [batch, pos-1]
    torch.testing.assert_close(first, ce[:, 1:6].mean(1))
    torch.testing.assert_close(second, ce[:, 7:12].mean(1))


def test_head_sets():
    scores = torch.tensor([[0.1, 0.9], [0.5, 0.2]])
    assert top_heads(scores, 2).pairs == ((0, 1), (1, 0))
    r = random_heads(2, 2, 2, seed=0, exclude=top_heads(scores, 2))
    assert set(r.pairs) == {(0, 0), (1, 1)}
    assert top_heads(scores, 2).by_layer == {0: (1,), 1: (0,)}


def test_ordinary_tokens_skip_specials(llama):
    ids = ordinary_tokens(llama)
    assert len(ids) > 0 and not set(ids.tolist()) & set(llama.tokenizer.all_special_ids)


def test_random_model_has_no_induction(llama, monkeypatch):
    """A random tiny model has no induction heads: the planted settings fail and the nulls hold (the settings can fail)."""
    from thinklens.analyses import induction_validation as iv
    from thinklens.calibration.controls import SettingContext

    monkeypatch.setattr(iv, "QUICK", iv.Plan(n_seqs=8, length=8, n_select=2))
    monkeypatch.setattr(iv, "K", 1)
    ctx = SettingContext(quick=True, seed=0, workdir=None, model="tiny", _models={"tiny": llama})
    checks = {s.name: s.run(ctx) for s in iv.SETTINGS}
    assert checks["planted"].verdict == "failed" and checks["planted-heads"].verdict == "failed"
    assert checks["null"].verdict == "no-effect"
