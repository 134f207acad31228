"""``kind.*`` site patterns in the Python API: capture and generate expand them against the model,
giving exactly what the explicit list of sites gives."""

import pytest
import torch

from thinklens import Site, ThinklensError

PROMPTS = ["w1 w2 w3 w4", "w5 w6", "w7"]


def test_resolve_sites_expands_patterns_in_order_once(tiny_models):
    m = tiny_models["llama"]
    every = [Site("resid_post", i) for i in range(m.n_layers)]
    assert m.resolve_sites(["resid_post.*"]) == every
    assert m.resolve_sites("resid_post.*,final_norm") == [*every, Site("final_norm")]
    assert m.resolve_sites(["resid_post.-1", "resid_post.*"]) == [every[-1], *every[:-1]]  # -1 == last: once
    assert m.resolve_sites(Site("resid_post", -1)) == [every[-1]]
    with pytest.raises(ThinklensError, match="did you mean"):
        m.resolve_sites(["resid_psot.*"])


@pytest.mark.parametrize("fam", ["llama", "gpt2"])
def test_capture_pattern_equals_the_explicit_list(tiny_models, fam):
    m = tiny_models[fam]
    explicit = [f"attn_out.{i}" for i in range(m.n_layers)] + [f"resid_post.{i}" for i in range(m.n_layers)]
    ref = m.capture(PROMPTS, explicit)
    got = m.capture(PROMPTS, ["attn_out.*", "resid_post.*"])
    assert list(got.acts) == list(ref.acts) == [Site.parse(s) for s in explicit]
    for site, act in ref.acts.items():
        assert torch.equal(got.acts[site], act)
    assert torch.equal(m.capture(PROMPTS, "resid_post.*")["resid_post.1"], ref["resid_post.1"])


def test_generate_capture_pattern_equals_the_explicit_list(tiny_models):
    m = tiny_models["llama"]
    explicit = [f"resid_post.{i}" for i in range(m.n_layers)] + ["final_norm"]
    ref = m.generate(PROMPTS, max_new_tokens=5, capture=explicit)
    got = m.generate(PROMPTS, max_new_tokens=5, capture=["resid_post.*", "final_norm"])
    for t_ref, t_got in zip(ref, got):
        assert t_got.token_ids == t_ref.token_ids
        assert list(t_got.hidden) == list(t_ref.hidden) == [Site.parse(s) for s in explicit]
        for site, h in t_ref.hidden.items():
            assert torch.equal(t_got.hidden[site], h)


def test_batch_lookup_by_negative_layer(tiny_models):
    m = tiny_models["llama"]
    batch = m.capture(PROMPTS, ["resid_post.*"])
    assert torch.equal(batch["resid_post.-1"], batch[Site("resid_post", m.n_layers - 1)])
