"""``hidden_state_site``: the site of HF ``hidden_states[i]``, checked against HF itself on every family."""

import pytest
import torch

from thinklens.engine.sites import Site, hidden_state_site
from thinklens.errors import ThinklensError


@pytest.mark.parametrize("fam", ["llama", "qwen2", "gpt2", "gemma"])
def test_capture_at_the_mapped_site_equals_hf_hidden_states(tiny_models, fam):
    m = tiny_models[fam]
    prompts = ["w1 w2 w3 w4", "w5 w6"]
    sites = [hidden_state_site(i, m.n_layers) for i in range(m.n_layers + 1)]
    batch = m.capture(prompts, sites)
    enc = m.tokenize(prompts)
    with torch.no_grad():
        hs = m.hf(**enc, position_ids=m.position_ids(enc["attention_mask"]), output_hidden_states=True).hidden_states
    for i, site in enumerate(sites):
        torch.testing.assert_close(batch[site], hs[i], atol=1e-5, rtol=0, msg=f"hidden_states[{i}] vs {site}")
    assert hidden_state_site(-1, m.n_layers) == Site("final_norm") == sites[-1]


@pytest.mark.parametrize("index", [5, -6, True])
def test_out_of_range_indices_are_refused(index):
    with pytest.raises(ThinklensError, match="hidden-state index"):
        hidden_state_site(index, 4)
