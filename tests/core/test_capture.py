"""Capture against two oracles: HF output_hidden_states and TransformerLens run_with_cache."""

import pytest
import torch

from thinklens import HookedModel, Site, ThinklensError

PROMPTS = ["w1 w2 w3 w4 w5", "w6 w7", "w8 w9 w10"]
FAMS = ["llama", "qwen2", "gpt2", "gemma"]


@pytest.mark.parametrize("fam", FAMS)
def test_capture_equals_hf_hidden_states(tiny_models, fam):
    m = tiny_models[fam]
    layers = range(m.n_layers)
    sites = [Site("resid_pre", i) for i in layers] + [Site("resid_post", i) for i in layers] + [Site("final_norm"), Site("logits")]
    batch = m.capture(PROMPTS, sites)
    enc = m.tokenize(PROMPTS)
    with torch.no_grad():
        out = m.hf(**enc, position_ids=m.position_ids(enc["attention_mask"]), output_hidden_states=True)
    hs = out.hidden_states
    assert len(hs) == m.n_layers + 1
    for i in range(m.n_layers):
        torch.testing.assert_close(batch[Site("resid_pre", i)], hs[i], atol=1e-5, rtol=0)
    for i in range(m.n_layers - 1):
        torch.testing.assert_close(batch[Site("resid_post", i)], hs[i + 1], atol=1e-5, rtol=0)
    # HF's last entry has the final norm applied: our final_norm, not resid_post of the last block
    torch.testing.assert_close(batch[Site("final_norm")], hs[-1], atol=1e-5, rtol=0)
    assert not torch.allclose(batch[Site("resid_post", m.n_layers - 1)], hs[-1])
    torch.testing.assert_close(batch[Site("logits")], out.logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(m.embed(enc["input_ids"]), batch.acts.get(Site("embed"), m.embed(enc["input_ids"])))


@pytest.mark.parametrize("fam", ["llama", "gpt2", "gemma"])
def test_capture_equals_transformer_lens(tiny_models, fam):
    m = tiny_models[fam]
    bridge = m.to_transformer_lens()
    ids = m.tokenize(["w1 w2 w3 w4 w5 w6"])["input_ids"]
    _, cache = bridge.run_with_cache(ids)
    ours = m.capture(ids, ["embed", "resid_pre.0"] + [f"resid_post.{i}" for i in range(m.n_layers)])
    torch.testing.assert_close(ours["embed"], cache["hook_embed"], atol=1e-5, rtol=0)
    for i in range(m.n_layers):
        torch.testing.assert_close(ours[f"resid_post.{i}"], cache[f"blocks.{i}.hook_out"], atol=1e-5, rtol=0)


@pytest.mark.parametrize("fam", ["llama", "gpt2"])
def test_nnsight_backend_matches_hooks(tiny_models, fam):
    m = tiny_models[fam]
    enc = m.tokenize(PROMPTS)
    sites = [Site("resid_post", 1), Site("resid_pre", 1), Site("attn_out", 0), Site("mlp_out", 1)]
    ns = m._capture_nnsight(enc, sites)
    ours = m.capture(PROMPTS, sites)
    for s in sites:
        torch.testing.assert_close(ns[s], ours[s], atol=0, rtol=0)


def test_attn_plus_mlp_rebuilds_residual(tiny_models):
    m = tiny_models["llama"]
    b = m.capture(PROMPTS, ["resid_pre.1", "attn_out.1", "mlp_out.1", "resid_post.1"])
    torch.testing.assert_close(b["resid_pre.1"] + b["attn_out.1"] + b["mlp_out.1"], b["resid_post.1"], atol=1e-5, rtol=0)


def test_positions_selection(tiny_models):
    m = tiny_models["llama"]
    full = m.capture(PROMPTS, ["resid_post.0"])
    last = m.capture(PROMPTS, ["resid_post.0"], positions="last")
    assert last["resid_post.0"].shape == (3, 1, m.d_model)
    torch.testing.assert_close(last["resid_post.0"][:, 0], full["resid_post.0"][:, -1])
    first = m.capture(PROMPTS, ["resid_post.0"], positions=[0])
    lens = full.attention_mask.sum(1)
    for r in range(3):  # logical position 0 = first real token after the left padding
        torch.testing.assert_close(first["resid_post.0"][r, 0], full["resid_post.0"][r, full.input_ids.shape[1] - lens[r]])


def test_capture_errors(tiny_models, tiny_dirs, tmp_path):
    m = tiny_models["llama"]
    with pytest.raises(ThinklensError, match="0..1"):
        m.capture(PROMPTS, ["resid_post.7"])
    with pytest.raises(ThinklensError, match="did you mean"):
        m.capture(PROMPTS, ["resid_psot.1"])
    with pytest.raises(ThinklensError, match="context"):
        m.capture([" ".join(["w1"] * 200)], ["resid_post.0"])
    with pytest.raises(ThinklensError, match="non-empty"):
        m.capture(["w1", ""], ["resid_post.0"])
    with pytest.raises(ThinklensError, match="model"):
        HookedModel.load(str(tmp_path / "missing"))
    with pytest.raises(ThinklensError, match="config.json"):
        HookedModel.load(str(tmp_path))


def test_capture_job_from_python(tiny_models, tmp_path):
    """``run_job("capture", ...)`` with a loaded model: the typed result opens the store it wrote."""
    from thinklens import run_job

    m = tiny_models["gpt2"]
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "w1 w2 w3"}\n{"question": "w4"}\n')
    res = run_job("capture", model=m, prompts=str(prompts), sites=("resid_post.-1",), positions="last",
                  out=tmp_path / "run", progress=False)
    assert res.sites == [f"resid_post.{m.n_layers - 1}"] and res.n_rows == 2 and res.store == str((tmp_path / "run" / "store").resolve())
    rows = next(res.open_store().iter_batches(2))[Site("resid_post", m.n_layers - 1)]
    torch.testing.assert_close(rows, m.capture(["w1 w2 w3", "w4"], ["resid_post.-1"], positions="last")["resid_post.-1"][:, 0])
