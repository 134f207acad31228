"""Reasoning vectors: exact weight arithmetic, groups, lineage checks, saving in HF format."""

from __future__ import annotations

import warnings

import pytest
import torch

from thinklens import HookedModel, ThinklensError
from thinklens.engine.adapters import adapter_for
from thinklens.steering.reasoning_vectors import (
    GROUPS,
    LineageWarning,
    ReasoningVector,
    alpha_sweep,
    apply_vector,
    in_group,
    lineage_report,
    load_weights,
    reasoning_vector,
    save_merged,
    vector_stats,
)


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    """base (seed 0), two 'fine-tunes' of it sharing a direction, an unrelated init, a wider model."""
    from tools.testing import build_tiny_model

    root = tmp_path_factory.mktemp("rv")
    base = HookedModel.load(str(build_tiny_model("llama", root / "base", seed=0))).hf
    other = HookedModel.load(str(build_tiny_model("llama", root / "other", seed=1))).hf
    wide = HookedModel.load(str(build_tiny_model("llama", root / "wide", d_model=48, seed=0))).hf
    g = torch.Generator().manual_seed(0)
    shared = {n: 0.003 * torch.randn(p.shape, generator=g) for n, p in base.named_parameters()}

    def tuned(model, scale):
        import copy

        m = copy.deepcopy(model)
        with torch.no_grad():
            for n, p in m.named_parameters():
                p.add_(shared[n] + scale * 0.003 * torch.randn(p.shape, generator=g))
        return m

    return {"base": base, "a": tuned(base, 1.0), "b": tuned(base, 1.0), "far": tuned(other, 1.0), "wide": wide, "root": root}


def test_apply_is_exact(family):
    v, report = reasoning_vector(family["a"], family["b"], base=family["base"])
    assert report.related and report.cos_deltas > 0.1
    merged = apply_vector(family["base"], v, 0.5)
    wa, wb = load_weights(family["a"])[0], load_weights(family["b"])[0]
    for n, p in merged.named_parameters():
        base_p = dict(family["base"].named_parameters())[n]
        assert torch.equal(p, base_p + 0.5 * (wa[n] - wb[n])), n
    zero = apply_vector(family["base"], v, 0.0)
    assert all(torch.equal(p, q) for p, q in zip(zero.parameters(), family["base"].parameters()))
    assert not torch.equal(next(merged.parameters()), next(family["base"].parameters()))  # target untouched, copy changed


def test_groups(family):
    v, _ = reasoning_vector(family["a"], family["b"])
    merged = apply_vector(family["base"], v, 1.0, group="attention")
    base = dict(family["base"].named_parameters())
    for n, p in merged.named_parameters():
        assert torch.equal(p, base[n]) != (".self_attn." in n), n
    no_emb = apply_vector(family["base"], v, 1.0, group="no_embeddings")
    assert torch.equal(dict(no_emb.named_parameters())["model.embed_tokens.weight"], base["model.embed_tokens.weight"])
    llama = adapter_for("llama")
    assert in_group("model.layers.0.mlp.down_proj.weight", "mlp", llama)
    assert not in_group("model.layers.0.mlp.down_proj.weight", "attention", llama)
    norms = v.norms()
    assert set(norms) == set(GROUPS) and norms["attention"] < norms["all"]
    with pytest.raises(ThinklensError, match="did you mean 'mlp'"):
        in_group("x", "mpl", llama)
    with pytest.raises(ThinklensError, match="model_type"):  # groups need the family's adapter
        ReasoningVector.between({"w": torch.ones(2)}, {"w": torch.zeros(2)}).norm("mlp")


@pytest.mark.parametrize("fam", ["llama", "qwen2", "gpt2", "gemma"])
def test_groups_from_the_adapter_match_the_name_rules_they_replace(fam, tmp_path):
    """Oracle: the substring rules the steering package used before the adapters grouped parameters."""
    from tools.testing import build_tiny_model

    model = HookedModel.load(str(build_tiny_model(fam, tmp_path / fam))).hf
    old = {"attention": lambda n: ".self_attn." in n or ".attn." in n, "mlp": lambda n: ".mlp." in n,
           "no_embeddings": lambda n: not any(k in n for k in ("embed_tokens", "wte", "wpe", "lm_head", "embed_positions")),
           "all": lambda n: True}
    adapter = adapter_for(model.config.model_type)
    for name, _ in model.named_parameters():
        for group, rule in old.items():
            assert in_group(name, group, adapter) == rule(name), (fam, name, group)


def test_lineage_checks(family):
    with pytest.warns(LineageWarning, match="unrelated"):
        reasoning_vector(family["a"], family["far"], base=family["base"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", LineageWarning)
        reasoning_vector(family["a"], family["b"], base=family["base"])
        rep = reasoning_vector(family["a"], family["base"], base=family["base"])[1]  # b is the base itself
        assert rep.related and rep.cos_deltas is None
    with pytest.warns(LineageWarning):
        lineage_report(load_weights(family["a"])[0], load_weights(family["far"])[0])
    with pytest.raises(ThinklensError, match="architecture.*hidden_size=32 vs hidden_size=48"):
        reasoning_vector(family["a"], family["wide"])
    v, _ = reasoning_vector(family["a"], family["b"])
    with pytest.raises(ThinklensError, match="target tensor"):
        apply_vector(family["wide"], v, 1.0)
    with pytest.raises(ThinklensError, match="alpha"):
        apply_vector(family["base"], v, float("inf"))


def test_sweep_stats_and_save(family, tmp_path):
    v, _ = reasoning_vector(family["a"], family["b"])
    seen = []
    rows = alpha_sweep(family["base"], v, [-1.0, 0.0, 1.0], lambda m: seen.append(m) or {"accuracy": 0.5},
                       groups=("all", "mlp"))
    assert [(r["group"], r["alpha"]) for r in rows] == [(g, a) for g in ("all", "mlp") for a in (-1.0, 0.0, 1.0)]
    assert len(seen) == 5  # alpha 0 is the target in every group: evaluated once
    st = vector_stats(v, load_weights(family["base"])[0], load_weights(family["base"])[0])
    assert st["norms"]["all"] == pytest.approx(v.norm()) and "cos_with_target_delta" in st
    merged = apply_vector(family["base"], v, 1.0)
    tok = HookedModel(family["base"], __import__("tools.testing", fromlist=["x"]).word_tokenizer()).tokenizer
    out = save_merged(merged, tok, tmp_path / "merged", meta={"alpha": 1.0})
    back = HookedModel.load(str(out))
    x = torch.tensor([[3, 4, 5]])
    assert torch.allclose(back.hf(x).logits, merged(x).logits, atol=1e-5)
    assert ReasoningVector.between({"w": torch.ones(2)}, {"w": torch.zeros(2)}).norm() == pytest.approx(2 ** 0.5)
