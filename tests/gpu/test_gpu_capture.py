"""Capture on the accelerator: every residual site equals HF ``output_hidden_states`` in float32, bfloat16 and
float16; low-precision sites stay within the stated error of float32 weights on the CPU (tolerances: gpu_fixtures)."""

from __future__ import annotations

import pytest
import torch
from gpu_fixtures import CROSS_REL, DEVICE, DTYPES, GPU, TINY, ZOO, gpu_dirs, load_model, prompts_for, rel_error, same_dtype_atol  # noqa: F401

from thinklens import Site

pytestmark = GPU

MODELS = (*TINY, ZOO)


def _hf_hidden(model, prompts):
    """HF's own ``output_hidden_states`` (same left padding and position ids as our capture)."""
    enc = model.tokenize(prompts)
    with torch.no_grad():
        out = model.hf(**enc, position_ids=model.position_ids(enc["attention_mask"]), output_hidden_states=True)
    return enc["attention_mask"].bool(), out.hidden_states


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", MODELS)
def test_capture_equals_hf_output_hidden_states(load_model, name, dtype):
    model = load_model(name, DTYPES[dtype])
    assert model.device.type == torch.device(DEVICE).type and next(model.hf.parameters()).dtype == DTYPES[dtype]
    prompts = prompts_for(name)
    n = model.n_layers
    sites = [Site("resid_pre", i) for i in range(n)] + [Site("resid_post", i) for i in range(n - 1)] + [Site("final_norm")]
    batch = model.capture(prompts, sites)
    real, hidden = _hf_hidden(model, prompts)
    refs = [hidden[i] for i in range(n)] + [hidden[i + 1] for i in range(n - 1)] + [hidden[n]]
    for site, ref in zip(sites, refs):
        got = batch[site]
        assert got.device == ref.device and got.dtype == ref.dtype == DTYPES[dtype], site
        torch.testing.assert_close(got[real], ref[real], rtol=0, atol=same_dtype_atol(ref[real]), msg=lambda m, s=site: f"{s}: {m}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", MODELS)
def test_capture_is_close_to_float32_on_the_cpu(load_model, name, dtype):
    model = load_model(name, DTYPES[dtype])
    ref_model = load_model(name, torch.float32, "cpu")
    prompts = prompts_for(name)
    sites = [*model.resolve_sites("resid_post.*"), Site("final_norm"), Site("logits")]
    got, ref = model.capture(prompts, sites), ref_model.capture(prompts, sites)
    real = ref_model.tokenize(prompts)["attention_mask"].bool()  # [batch, pos]
    errors = {str(s): rel_error(got[s][real.to(got[s].device)], ref[s][real]) for s in sites}
    assert max(errors.values()) <= CROSS_REL[DTYPES[dtype]], errors


@pytest.mark.parametrize("positions", ["last", [0, 1]])
def test_capture_positions_on_the_device(load_model, positions):
    model = load_model("llama", torch.bfloat16)
    prompts = prompts_for("llama")
    full = model.capture(prompts, ["resid_post.1"])["resid_post.1"]  # [batch, pos, d]
    picked = model.capture(prompts, ["resid_post.1"], positions=positions)["resid_post.1"]  # [batch, n, d]
    real = model.tokenize(prompts)["attention_mask"].bool()
    if positions == "last":
        assert torch.equal(picked[:, 0], full[:, -1])
    else:
        first = (~real).sum(1)  # left padding: the first real column of each row
        for r in range(len(prompts)):
            assert torch.equal(picked[r], full[r, first[r] + torch.tensor(positions, device=full.device)])


def test_device_map_auto_equals_device_load(gpu_dirs):
    from thinklens import HookedModel

    if not DEVICE.startswith("cuda"):
        pytest.skip("device_map='auto' places weights on accelerators")
    a = HookedModel.load(str(gpu_dirs["llama"]), device=DEVICE, dtype=torch.bfloat16)
    b = HookedModel.load(str(gpu_dirs["llama"]), device_map="auto", dtype=torch.bfloat16)
    assert b.device.type == "cuda"
    prompts = prompts_for("llama")
    ref = a.forward_with(prompts)
    torch.testing.assert_close(b.forward_with(prompts), ref, rtol=0, atol=same_dtype_atol(ref))
