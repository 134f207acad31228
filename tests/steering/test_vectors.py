"""Difference-of-means steering vectors: oracle means and exact addition."""

from __future__ import annotations

import pytest
import torch

from thinklens import Site, ThinklensError
from thinklens.steering.vectors import SteeringVector, diff_of_means, from_traces, mean_activation

A = ["w1 w2 w3", "w4 w5", "w6 w7 w8 w9"]
B = ["w10 w11", "w12 w13 w14"]
SITE = Site("resid_post", 1)


def _oracle_last(model, texts):
    rows = [model.capture([t], [SITE]).acts[SITE][0, -1] for t in texts]  # one prompt at a time: no padding
    return torch.stack(rows).mean(0)


def test_diff_of_means_matches_oracle(tiny_llama):
    sv = diff_of_means(tiny_llama, SITE, A, B, reduce="last")
    want = _oracle_last(tiny_llama, A) - _oracle_last(tiny_llama, B)
    assert torch.allclose(sv.vector, want, atol=1e-5)
    mean_a = mean_activation(tiny_llama, A, SITE, reduce="mean")
    oracle = torch.stack([tiny_llama.capture([t], [SITE]).acts[SITE][0].mean(0) for t in A]).mean(0)
    assert torch.allclose(mean_a, oracle, atol=1e-5)


def test_orig_plus_v_equals_steered(tiny_llama):
    sv = diff_of_means(tiny_llama, SITE, A, B)
    prompts = ["w3 w4 w5 w6", "w9 w8"]
    orig = tiny_llama.capture(prompts, [SITE]).acts[SITE]
    steered = tiny_llama.capture(prompts, [SITE], interventions=[sv.intervention(1.0)]).acts[SITE]
    mask = tiny_llama.tokenize(prompts)["attention_mask"].bool()
    assert torch.equal((orig + sv.vector)[mask], steered[mask])


def test_chosen_positions_only(tiny_llama):
    sv = diff_of_means(tiny_llama, SITE, A, B)
    prompts = ["w3 w4 w5 w6"]
    orig = tiny_llama.capture(prompts, [SITE]).acts[SITE][0]
    steered = tiny_llama.capture(prompts, [SITE], interventions=[sv.intervention(3.0, positions=[1, 2])]).acts[SITE][0]
    assert torch.equal(steered[0], orig[0]) and torch.equal(steered[3], orig[3])
    assert torch.equal(steered[1:3], orig[1:3] + 3.0 * sv.vector)


def test_from_traces_and_roundtrip(tiny_llama, tmp_path):
    ta = tiny_llama.generate(A, max_new_tokens=4, capture=[SITE])
    tb = tiny_llama.generate(B, max_new_tokens=4, capture=[SITE])
    sv = from_traces(ta, tb, SITE)
    want = torch.stack([t.hidden[SITE].mean(0) for t in ta]).mean(0) - torch.stack([t.hidden[SITE].mean(0) for t in tb]).mean(0)
    assert torch.allclose(sv.vector, want, atol=1e-5)
    sv.save(tmp_path / "v")
    back = SteeringVector.load(tmp_path / "v")
    assert torch.equal(back.vector, sv.vector) and back.site == "resid_post.1"


def test_bad_inputs(tiny_llama):
    sv = diff_of_means(tiny_llama, SITE, A, B)
    with pytest.raises(ThinklensError, match="scale"):
        sv.intervention(float("nan"))
    with pytest.raises(ThinklensError, match="prompt set"):
        diff_of_means(tiny_llama, SITE, [], B)
    with pytest.raises(ThinklensError, match="reduce"):
        mean_activation(tiny_llama, A, SITE, reduce="max")
    with pytest.raises(ThinklensError, match="steering vector width"):
        tiny_llama.forward_with(A, [SteeringVector("resid_post.1", torch.ones(5), 1, 1, "last").intervention()])
