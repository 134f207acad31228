"""Every architecture family loads with typed sites, checked against HF oracles.

A tiny random model of each family (2 blocks, d_model 32, vocab 64, built from its config with the quirks it
needs: MoE sizes, multi-head latent attention, short sliding windows, tied embeddings) is saved with
``save_pretrained`` and loaded through ``HookedModel.load``, which runs the parity self-check. Then: capture
equals ``output_hidden_states`` (float32, atol 1e-5), greedy ``generate`` equals HF ``generate`` with left
padding, and AddVector / InjectEmbeddings / RepeatBlock equal their oracles (tools/testing.py).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from thinklens import AddVector, HookedModel, ThinklensError
from thinklens.engine.adapters import ADAPTERS, MODEL_TYPES, adapter_for
from thinklens.engine.discovery import adapter_from_model_type, adapter_from_structure
from thinklens.engine.parity import check_site_parity
from tools.testing import (
    CHECK_PROMPTS,
    TINY_FAMILIES,
    check_capture,
    check_generate,
    check_interventions,
)

MOE = ("qwen3_moe", "gpt_oss", "deepseek_v3")
# Families whose blocks add a transformed copy of the attention / MLP output (post-norms, a residual scale).
POST_NORM = ("gemma2", "gemma3_text", "olmo2", "olmo3")
SCALED = ("granite",)
PATHS = ("layers", "embed", "final_norm", "lm_head", "attn", "mlp", "pos_embed")


@pytest.mark.parametrize("fam", TINY_FAMILIES)
def test_capture_equals_hf_hidden_states(family_model, fam):
    check_capture(family_model(fam))


@pytest.mark.parametrize("fam", TINY_FAMILIES)
def test_greedy_generate_equals_hf(family_model, fam):
    check_generate(family_model(fam))


@pytest.mark.parametrize("fam", TINY_FAMILIES)
def test_interventions(family_model, fam):
    check_interventions(family_model(fam))


@pytest.mark.parametrize("fam", [f for f in TINY_FAMILIES if f not in POST_NORM + SCALED])
def test_attn_and_mlp_outputs_rebuild_the_residual(family_model, fam):
    """Sequential and parallel (GPT-NeoX, Phi) blocks add exactly attn_out + mlp_out; on MoE blocks mlp_out is
    the whole sparse block (routed plus shared experts)."""
    m = family_model(fam)
    for i in range(m.n_layers):
        b = m.capture(list(CHECK_PROMPTS), [f"resid_pre.{i}", f"attn_out.{i}", f"mlp_out.{i}", f"resid_post.{i}"])
        torch.testing.assert_close(b[f"resid_pre.{i}"] + b[f"attn_out.{i}"] + b[f"mlp_out.{i}"], b[f"resid_post.{i}"],
                                   atol=1e-5, rtol=0)


@pytest.mark.parametrize("fam", POST_NORM + SCALED)
def test_post_norm_and_scaled_blocks_add_a_transform_of_the_module_outputs(family_model, fam):
    """attn_out / mlp_out are the modules' outputs (TransformerLens's convention); these families add their
    post-norm (Gemma 2/3, OLMo 2/3) or a scaled copy (Granite)."""
    m = family_model(fam)
    b = m.capture(list(CHECK_PROMPTS), ["resid_pre.1", "attn_out.1", "mlp_out.1", "resid_post.1"])
    block = m.hf.get_submodule(m.adapter.layer_path(1))
    with torch.no_grad():
        if fam in SCALED:
            scale = m.config.residual_multiplier
            added = scale * b["attn_out.1"], scale * b["mlp_out.1"]
        else:
            added = block.post_attention_layernorm(b["attn_out.1"]), block.post_feedforward_layernorm(b["mlp_out.1"])
    torch.testing.assert_close(b["resid_pre.1"] + added[0] + added[1], b["resid_post.1"], atol=1e-5, rtol=0)


@pytest.mark.parametrize("fam", MOE)
def test_router_logits_equal_hf(family_model, fam):
    m = family_model(fam)
    routers = [s for s in m.sites if s.kind == "router_logits"]
    assert [s.layer for s in routers] == list(m.adapter.router_layers) and routers
    assert m.resolve_sites("router_logits.*") == routers
    enc = m.tokenize(list(CHECK_PROMPTS))
    batch = m.capture(list(CHECK_PROMPTS), "router_logits.*")
    with torch.no_grad():
        ref = m.hf(**enc, position_ids=m.position_ids(enc["attention_mask"]), output_router_logits=True).router_logits
    assert len(ref) == len(routers)
    b, p = enc["input_ids"].shape
    for site, logits in zip(routers, ref):
        assert batch[site].shape == (b, p, m.site_width(site))
        torch.testing.assert_close(batch[site].reshape(b * p, -1), logits, atol=1e-5, rtol=0)
    with pytest.raises(ThinklensError, match="read-only"):
        m.forward_with(list(CHECK_PROMPTS), [AddVector(routers[0], torch.ones(m.site_width(routers[0])))])


def test_dense_blocks_and_dense_models_have_no_router_site(family_model):
    assert family_model("deepseek_v3").adapter.router_layers == (1,)  # block 0 is dense (first_k_dense_replace)
    with pytest.raises(ThinklensError, match="router_logits at an MoE block"):
        family_model("deepseek_v3").resolve_site("router_logits.0")
    llama = family_model("llama")
    assert "router_logits" not in {s.kind for s in llama.sites}
    with pytest.raises(ThinklensError, match="this model has none"):
        llama.capture(["w1"], "router_logits.0")


@pytest.mark.parametrize("fam", [f for f in TINY_FAMILIES if f not in MODEL_TYPES])
def test_families_outside_the_table_use_transformer_lens_adapters(family_model, fam):
    assert family_model(fam).adapter.source == "transformer_lens"


@pytest.mark.parametrize("model_type", sorted(MODEL_TYPES))
def test_table_agrees_with_transformer_lens(model_type):
    """The hand-written table is a shortcut, not a second source of truth: TransformerLens names the same modules."""
    ours, theirs = ADAPTERS[MODEL_TYPES[model_type]], adapter_from_model_type(model_type)
    assert theirs is not None
    assert {k: getattr(ours, k) for k in PATHS} == {k: getattr(theirs, k) for k in PATHS}


@pytest.mark.parametrize("fam", TINY_FAMILIES)
def test_structural_discovery_finds_the_same_modules(family_model, fam):
    m = family_model(fam)
    found = adapter_from_structure(m.hf)
    assert {k: getattr(found, k) for k in PATHS} == {k: getattr(m.adapter, k) for k in PATHS}
    check_site_parity(HookedModel(m.hf, m.tokenizer, adapter=found))


def test_parity_check_refuses_a_wrong_adapter(family_model):
    m = family_model("llama")
    wrong = replace(m.adapter, final_norm="model.layers.1.post_attention_layernorm")
    with pytest.raises(ThinklensError, match=r"final_norm \(module model.layers.1.post_attention_layernorm\) differs "
                                             r"from HF output_hidden_states\[2\] by max \|diff\|.*adapter=Adapter"):
        HookedModel.load(m.name, adapter=wrong)
    with pytest.raises(ThinklensError, match=r"module path.*adapter=Adapter"):
        HookedModel.load(m.name, adapter=replace(m.adapter, mlp="ffn"))


def test_undiscoverable_structure_is_a_clear_error(family_model):
    hf = family_model("gpt2").hf
    config = hf.config
    try:
        config.n_layer = 5  # no ModuleList of 5 blocks
        with pytest.raises(ThinklensError, match="block list.*adapter=Adapter"):
            adapter_from_structure(hf)
    finally:
        config.n_layer = 2


def test_adapter_for_a_model_type_without_a_model():
    assert adapter_for("gpt_neox").layers == "gpt_neox.layers"
    assert adapter_for("opt").mlp == "fc2"  # no MLP container: its output projection
    with pytest.raises(ThinklensError, match="register_adapter"):
        adapter_for("not_a_model_type")
