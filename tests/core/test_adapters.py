"""The adapter layer's other names of a site (TransformerLens hooks, module outputs) and parameter groups."""

from __future__ import annotations

import pytest
import torch

from thinklens import Site
from thinklens.engine.adapters import (
    ParameterGroup,
    adapter_for,
    get_module,
    parameter_groups,
    site_of_transformer_lens,
    transformer_lens_name,
)
from thinklens.zoo.registry import zoo_path


@pytest.mark.parametrize("fam", ["llama", "gpt2"])
def test_transformer_lens_names_hold_our_tensors(tiny_models, fam):
    """Oracle: TransformerLens's own cache under the name we give each site equals our capture."""
    m = tiny_models[fam]
    ids = m.tokenize(["w1 w2 w3 w4 w5"])["input_ids"]
    _, cache = m.to_transformer_lens().run_with_cache(ids)
    ours = m.capture(ids, m.sites)
    for site in m.sites:
        name = transformer_lens_name(site)
        torch.testing.assert_close(cache[name].float(), ours[site].float(), atol=1e-4, rtol=0, msg=f"{site} vs {name}")
        assert site_of_transformer_lens(name) == site
    assert site_of_transformer_lens("blocks.1.hook_out") == Site("resid_post", 1)
    assert site_of_transformer_lens("blocks.0.hook_in") == Site("resid_pre", 0)
    for other in ("blocks.0.attn.hook_pattern", "blocks.x.hook_resid_post", "hook_in", "blocks.0.hook_resid_mid", ""):
        assert site_of_transformer_lens(other) is None, other


@pytest.mark.parametrize("fam", ["llama", "gpt2", "gemma"])
def test_output_paths_hold_our_tensors(tiny_models, fam):
    """A forward hook on the module ``output_path`` names sees the site's tensor; the inverse finds the site."""
    m = tiny_models[fam]
    ids = m.tokenize(["w1 w2 w3"])["input_ids"]
    ours = m.capture(ids, m.sites)
    seen: dict[str, torch.Tensor] = {}
    hooks = []
    for site in m.sites:
        path = m.adapter.output_path(site)
        if path is None:
            assert site == Site("resid_pre", 0)
            continue
        hooks.append(get_module(m.hf, path).register_forward_hook(
            lambda mod, i, out, path=path: seen.__setitem__(path, out[0] if isinstance(out, tuple) else out)))
        back = m.adapter.site_of_output(path, m.n_layers)
        assert back == (Site("resid_post", site.layer - 1) if site.kind == "resid_pre" else site)
    try:
        with torch.no_grad():
            m.hf(ids)
    finally:
        for h in hooks:
            h.remove()
    for site in m.sites:
        path = m.adapter.output_path(site)
        if path is not None:
            torch.testing.assert_close(seen[path], ours[site], atol=1e-5, rtol=0)
    assert m.adapter.site_of_output("not.a.module", m.n_layers) is None


def _check_partition(model: torch.nn.Module, n_layers: int) -> dict[ParameterGroup, list[str]]:
    groups = parameter_groups(model)
    names = [n for n, _ in model.named_parameters()]
    assert sorted(n for ns in groups.values() for n in ns) == sorted(names)  # each parameter in exactly one group
    assert {g.kind for g in groups} == {"embedding", "attention", "mlp", "norm"}  # nothing unclassified
    for kind in ("attention", "mlp", "norm"):
        assert {g.layer for g in groups if g.kind == kind} >= set(range(n_layers))
    return groups


def test_parameter_groups_of_a_zoo_model():
    from thinklens import HookedModel

    if zoo_path("tiny-think") is None:
        pytest.skip("needs the committed zoo")
    m = HookedModel.load("tiny-think")
    groups = _check_partition(m.hf, m.n_layers)
    assert groups == parameter_groups(m)  # a HookedModel or its HF module
    assert groups[ParameterGroup("embedding")] == ["model.embed_tokens.weight"]  # the tied head is counted once
    assert groups[ParameterGroup("norm")] == ["model.norm.weight"]
    assert all(".self_attn." in n and n.startswith("model.layers.1.") for n in groups[ParameterGroup("attention", 1)])
    assert groups[ParameterGroup("norm", 0)] == ["model.layers.0.input_layernorm.weight",
                                                 "model.layers.0.post_attention_layernorm.weight"]


def test_parameter_groups_of_gpt2_from_config():
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=50, n_positions=32, bos_token_id=0,
                                       eos_token_id=0))
    groups = _check_partition(model, 2)
    assert groups[ParameterGroup("embedding")] == ["transformer.wte.weight", "transformer.wpe.weight"]
    assert groups[ParameterGroup("norm")] == ["transformer.ln_f.weight", "transformer.ln_f.bias"]
    assert groups[ParameterGroup("mlp", 1)] == [f"transformer.h.1.mlp.{p}" for p in ("c_fc.weight", "c_fc.bias",
                                                                                      "c_proj.weight", "c_proj.bias")]
    assert groups[ParameterGroup("norm", 0)] == [f"transformer.h.0.{p}" for p in ("ln_1.weight", "ln_1.bias",
                                                                                  "ln_2.weight", "ln_2.bias")]
    assert adapter_for("gpt2").parameter_group("transformer.h.0.attn.c_attn.weight") == ParameterGroup("attention", 0)
