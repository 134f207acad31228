"""``ActivationBatch.stack``: one site kind across layers, against raw HF ``output_hidden_states`` as the oracle, and
its errors name what the capture holds."""

import pytest
import torch

from thinklens import Site, ThinklensError

PROMPTS = ["w1 w2 w3 w4 w5", "w6 w7", "w8 w9 w10"]


@pytest.mark.parametrize("fam", ["llama", "gpt2"])
def test_stack_equals_hf_hidden_states(tiny_models, fam):
    m = tiny_models[fam]
    batch = m.capture(PROMPTS, ["resid_pre.*", "resid_post.*"])
    enc = m.tokenize(PROMPTS)
    with torch.no_grad():
        hs = m.hf(**enc, position_ids=m.position_ids(enc["attention_mask"]), output_hidden_states=True).hidden_states
    pre, post = batch.stack("resid_pre"), batch.stack("resid_post")
    assert pre.shape == post.shape == (m.n_layers, *enc["input_ids"].shape, m.d_model)  # [layer, batch, pos, d]
    # resid_pre.i is hidden_states[i]; resid_post.i is hidden_states[i + 1] but for the last block (HF norms it)
    torch.testing.assert_close(pre, torch.stack(hs[:-1]), atol=1e-5, rtol=0)
    torch.testing.assert_close(post[:-1], torch.stack(hs[1:-1]), atol=1e-5, rtol=0)
    assert torch.equal(post[-1], batch[f"resid_post.{m.n_layers - 1}"])
    assert batch.layers("resid_post") == list(range(m.n_layers))


def test_stack_picks_layers_in_the_order_given(tiny_models):
    m = tiny_models["llama"]
    batch = m.capture(PROMPTS, ["resid_post.*", "mlp_out.0"], positions="last")
    picked = batch.stack("resid_post", [-1, 0])
    assert torch.equal(picked, torch.stack([batch[f"resid_post.{m.n_layers - 1}"], batch["resid_post.0"]]))
    assert batch.stack("mlp_out").shape == (1, len(PROMPTS), 1, m.d_model)  # only the layers captured


def test_stack_errors_name_what_the_capture_holds(tiny_models):
    m = tiny_models["llama"]
    batch = m.capture(PROMPTS, ["embed", "resid_post.0", "attn_out.1"])
    with pytest.raises(ThinklensError, match=r"resid_pots.*resid_post, attn_out.*did you mean 'resid_post'"):
        batch.stack("resid_pots")
    with pytest.raises(ThinklensError, match=r"mlp_out.*capture it: model.capture\(inputs, \['mlp_out.\*'\]\)"):
        batch.stack("mlp_out")
    with pytest.raises(ThinklensError, match=r"embed has no layers: read batch\['embed'\]"):
        batch.stack("embed")
    with pytest.raises(ThinklensError, match=r"layers this capture holds: \[1\]"):
        batch.stack("attn_out", [0])
    assert batch.stack("attn_out").shape[0] == 1 and batch.layers("attn_out") == [1]
    assert Site("attn_out", 1) in batch.acts
