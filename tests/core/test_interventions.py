"""Interventions: exact oracles and guaranteed removal."""

import pytest
import torch

from thinklens import AddVector, HookFn, InjectEmbeddings, RepeatBlock, ReplaceActivation, Site, ThinklensError
from tools.testing import check_repeat_block

PROMPTS = ["w1 w2 w3 w4", "w5 w6"]


def test_add_vector_exact(tiny_models):
    m = tiny_models["llama"]
    site = Site("resid_post", 0)
    v = torch.randn(m.d_model, generator=torch.Generator().manual_seed(0))
    orig = m.capture(PROMPTS, [site])[site]
    steered = m.capture(PROMPTS, [site], interventions=[AddVector(site, v, scale=2.5)])[site]
    mask = orig.new_zeros(orig.shape[:2], dtype=torch.bool) | m.tokenize(PROMPTS)["attention_mask"].bool()
    assert torch.equal(steered[mask], (orig + 2.5 * v)[mask])
    assert torch.equal(steered[~mask], orig[~mask])  # padding untouched


def test_add_vector_positions_last(tiny_models):
    m = tiny_models["gpt2"]
    site = Site("resid_post", 0)
    v = torch.ones(m.d_model)
    orig = m.capture(PROMPTS, [site])[site]
    steered = m.capture(PROMPTS, [site], interventions=[AddVector(site, v, positions="last")])[site]
    assert torch.equal(steered[:, -1], orig[:, -1] + v)
    assert torch.equal(steered[:, :-1], orig[:, :-1])


def test_add_vector_during_generation_changes_and_restores(tiny_models):
    m = tiny_models["llama"]
    site = Site("resid_post", 1)
    base = m.generate(PROMPTS, max_new_tokens=8, capture=[site])
    v = 5 * torch.randn(m.d_model, generator=torch.Generator().manual_seed(1))
    steered = m.generate(PROMPTS, max_new_tokens=8, capture=[site], interventions=[AddVector(site, v, positions="last")])
    # the captured state at the hooked site of step 0 is the original state + v exactly
    assert torch.equal(steered[0].hidden[site][0], base[0].hidden[site][0] + v)
    again = m.generate(PROMPTS, max_new_tokens=8)
    assert [t.token_ids for t in again] == [t.token_ids for t in base]


def test_replace_and_inject(tiny_models):
    m = tiny_models["llama"]
    enc = m.tokenize(["w1 w2 w3 w4"])
    emb = m.embed(enc["input_ids"])  # [1, 4, d]
    new = torch.randn(1, 2, m.d_model)
    manual = emb.clone()
    manual[:, 1:3] = new
    with torch.no_grad():
        ref = m.hf(inputs_embeds=manual).logits
    got = m.forward_with(enc["input_ids"], [InjectEmbeddings(values=new, positions=[1, 2])])
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=0)
    zero = m.capture(PROMPTS, ["mlp_out.0"], interventions=[ReplaceActivation(Site("mlp_out", 0), torch.zeros(m.d_model))])
    assert float(zero["mlp_out.0"][m.tokenize(PROMPTS)["attention_mask"].bool()].abs().max()) == 0.0


def test_hookfn_generic(tiny_models):
    m = tiny_models["gemma"]
    seen = []
    m.forward_with(PROMPTS, [HookFn(Site("attn_out", 1), lambda a, ctx: seen.append(a.shape))])
    assert seen and seen[0][-1] == m.d_model


@pytest.mark.parametrize("fam", ["llama", "gpt2"])
def test_clean_after_exception(tiny_models, fam):
    m = tiny_models[fam]
    clean = m.forward_with(PROMPTS)
    hooks_before = [(len(mod._forward_hooks), len(mod._forward_pre_hooks)) for mod in m.hf.modules()]
    v = torch.randn(m.d_model)
    with pytest.raises(RuntimeError, match="boom"):
        with m.intervene([AddVector(Site("resid_post", 0), v), RepeatBlock(0), HookFn(Site("mlp_out", 1), lambda a, c: a * 0)]):
            raise RuntimeError("boom")
    with pytest.raises(RuntimeError, match="inside hook"):
        m.forward_with(PROMPTS, [HookFn(Site("resid_post", 1), lambda a, c: (_ for _ in ()).throw(RuntimeError("inside hook")))])
    assert torch.equal(m.forward_with(PROMPTS), clean)
    assert [(len(mod._forward_hooks), len(mod._forward_pre_hooks)) for mod in m.hf.modules()] == hooks_before


def test_repeat_block_matches_replace_oracle_and_cache_length(tiny_models):
    """RepeatBlock at step t == re-running the step with block L's input replaced by its first output: the same
    logits and cached keys, and the repeated block does not append its keys twice (and the same in a forward)."""
    m = tiny_models["llama"]
    ids = m.tokenize(["w1 w2 w3"])["input_ids"]
    check_repeat_block(m, ids, 1, m.forward_with(ids), atol=lambda ref, dtype: 1e-6)


def test_bad_interventions(tiny_models):
    m = tiny_models["llama"]
    with pytest.raises(ThinklensError, match="width"):
        m.forward_with(PROMPTS, [AddVector(Site("resid_post", 0), torch.ones(m.d_model + 1))])
    with pytest.raises(ThinklensError, match="finite"):
        AddVector(Site("resid_post", 0), torch.ones(4), scale=float("nan"))
    with pytest.raises((ThinklensError, TypeError), match="Intervention"):  # TypeError: shape/type checks under pytest
        m.forward_with(PROMPTS, [lambda a, c: a])
