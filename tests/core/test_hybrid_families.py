"""Hybrid (attention beside SSM / linear-attention / convolution blocks), recurrent and multi-stream families.

A tiny random model of a family (4 blocks, so that both token-mixer kinds occur) is saved and loaded through
``HookedModel.load`` (parity self-check). Sites follow each block's own parts (``attn_out.i`` on attention
blocks, ``mixer_out.i`` on the others, read from the HF modules as the oracle); the block update equals its
mixer plus its MLP; the checks of tools/testing.py (capture vs ``output_hidden_states``, greedy tokens vs
HF ``generate`` with the model's own cache, AddVector / ReplaceActivation / InjectEmbeddings / RepeatBlock
against their oracles) pass; a recurrent state is never rolled back silently; a multi-stream residual
(DeepSeek-V4) is edited per stream. The whole table is the ``slow`` sweep.
"""

from __future__ import annotations

import pytest
import torch

from thinklens import AddVector, HookedModel, ThinklensError
from thinklens.engine.sites import Site
from thinklens.generation.kv_batch import Decoder
from tools.testing import CHECK_PROMPTS, HYBRID_FAMILIES, build_tiny_model, check_family

torch.set_num_threads(1)

# Gated DeltaNet + attention; Mamba + attention with MoE routers; pure Mamba (no embedding entry in hidden_states).
REPRESENTATIVE = ("qwen3_5_text", "jamba", "mamba")


def _mixer_kind(block: torch.nn.Module) -> str:
    """The oracle: an attention block has a ``self_attn`` child (Jamba, Qwen3.5), the others a Mamba / DeltaNet one."""
    return "attn_out" if hasattr(block, "self_attn") else "mixer_out"


@pytest.mark.parametrize("family", REPRESENTATIVE)
def test_family_passes_every_check(tmp_path, family):
    report = check_family(family, tmp_path)
    assert report == {"load": "ok", "adapter": report.get("adapter"), "capture": "ok", "generate": "ok",
                      "interventions": "ok"}, report


@pytest.mark.parametrize("family", ["jamba", "qwen3_5_text"])
def test_sites_follow_each_blocks_token_mixer(family_model, family):
    m = family_model(family)
    blocks = m.hf.model.layers
    kinds = [_mixer_kind(b) for b in blocks]
    assert set(kinds) == {"attn_out", "mixer_out"}  # both kinds occur in the tiny model
    for i, kind in enumerate(kinds):
        assert Site(kind, i) in m.sites
        other = "mixer_out" if kind == "attn_out" else "attn_out"
        assert Site(other, i) not in m.sites
    assert m.resolve_sites("attn_out.*") == [Site("attn_out", i) for i, k in enumerate(kinds) if k == "attn_out"]
    assert m.resolve_sites("mixer_out.*") == [Site("mixer_out", i) for i, k in enumerate(kinds) if k == "mixer_out"]
    assert m.resolve_sites("token_mixer.*") == [Site(k, i) for i, k in enumerate(kinds)]
    assert m.resolve_sites("mlp_out.*") == [Site("mlp_out", i) for i in range(m.n_layers)]
    wrong = kinds.index("mixer_out")
    with pytest.raises(ThinklensError, match=f"block {wrong} has.*mixer_out.{wrong}"):
        m.capture(CHECK_PROMPTS, [f"attn_out.{wrong}"])


def test_mixer_plus_mlp_is_the_block_update(family_model):
    """Jamba's blocks are pre-norm: resid_post = resid_pre + mixer (or attention) + MLP (or MoE), each added once."""
    m = family_model("jamba")
    sites = m.resolve_sites(["resid_pre.*", "resid_post.*", "token_mixer.*", "mlp_out.*"])
    batch = m.capture(CHECK_PROMPTS, sites)
    real = batch.attention_mask.bool()
    for i in range(m.n_layers):
        mixer = next(s for s in sites if s.layer == i and s.kind in ("attn_out", "mixer_out"))
        update = batch[Site("resid_post", i)] - batch[Site("resid_pre", i)]
        torch.testing.assert_close(update[real], (batch[mixer] + batch[Site("mlp_out", i)])[real], atol=1e-5, rtol=0)
    assert m.adapter.router_layers  # Jamba's MoE blocks have their router logits
    assert all(Site("router_logits", i) in m.sites for i in m.adapter.router_layers)


def test_recurrent_state_is_never_rolled_back_silently(family_model):
    m = family_model("jamba")
    dec = Decoder(m, list(CHECK_PROMPTS))
    dec.step(dec.prefill().argmax(-1))
    with pytest.raises(ThinklensError, match="recurrent states"):
        dec.rollback(1)


def test_multi_stream_residual_is_edited_per_stream(family_model):
    m = family_model("deepseek_v4")
    streams = m.adapter.residual_streams
    assert streams > 1 and m.site_shape("resid_post.0") == (streams, m.d_model)
    assert m.site_shape("mlp_out.0") == (m.d_model,)
    site = Site("resid_post", 0)
    v = torch.randn(m.d_model, generator=torch.Generator().manual_seed(0))
    orig = m.capture(CHECK_PROMPTS, [site])[site]
    assert orig.shape[2:] == (streams, m.d_model)
    steered = m.capture(CHECK_PROMPTS, [site], interventions=[AddVector(site, v, scale=2.0)])[site]
    real = m.tokenize(list(CHECK_PROMPTS))["attention_mask"].bool()
    assert torch.equal(steered[real], orig[real] + 2.0 * v)  # every stream of every real token
    assert torch.equal(steered[~real], orig[~real])
    per_row = torch.randn(len(CHECK_PROMPTS), m.d_model, generator=torch.Generator().manual_seed(1))
    rows = m.capture(CHECK_PROMPTS, [site], interventions=[AddVector(site, per_row)])[site]
    torch.testing.assert_close(rows, torch.where(real[..., None, None], orig + per_row[:, None, None, :], orig), atol=0, rtol=0)
    # generation records the per-stream state that produced each token: the first is the prompt's last position
    for r, trace in enumerate(m.generate(list(CHECK_PROMPTS), max_new_tokens=3, capture=[site])):
        assert trace.hidden[site].shape == (len(trace.token_ids), streams, m.d_model)
        torch.testing.assert_close(trace.hidden[site][0], orig[r, -1], atol=1e-5, rtol=0)


def test_an_activation_of_another_shape_is_refused_with_site_and_shape():
    from thinklens.engine.interventions import _streams

    with pytest.raises(ThinklensError, match=r"\(2, 3\) at resid_post.1"):
        _streams(torch.ones(2, 3, dtype=torch.bool), torch.zeros(2, 3), Site("resid_post", 1))


@pytest.mark.slow
@pytest.mark.parametrize("family", HYBRID_FAMILIES)
def test_every_hybrid_family_passes_or_is_refused_in_one_line(tmp_path, family):
    report = check_family(family, tmp_path)
    if report["load"] != "ok":
        assert report["load"].startswith("ThinklensError") and "\n" not in report["load"], report
        return
    assert all(report[c] == "ok" for c in ("capture", "generate", "interventions")), report


def test_a_part_thinklens_cannot_run_is_refused_at_load_in_one_line(tmp_path):
    path = build_tiny_model("rwkv", tmp_path / "rwkv")
    with pytest.raises(ThinklensError) as refused:
        HookedModel.load(str(path))
    message = str(refused.value)
    assert "rwkv" in message and "RWKV's recurrent state" in message and "\n" not in message
