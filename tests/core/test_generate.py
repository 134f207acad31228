"""Traced generation against HF generate, batch independence, per-step statistics."""

import pytest
import torch

from thinklens import Site, ThinklensError
from thinklens.generation.kv_batch import Decoder

PROMPTS = ["w1 w2 w3 w4", "w5 w6", "w7", "w9 w9 w9 w9 w9 w9 w9 w9", "w3", "w20 w21", "w30 w31 w32", "w40"]


@pytest.mark.parametrize("fam", ["llama", "qwen2", "gpt2", "gemma"])
def test_greedy_equals_hf_generate(tiny_models, fam):
    m = tiny_models[fam]
    traces = m.generate(PROMPTS, max_new_tokens=12)
    enc = m.tokenize(PROMPTS)
    ref = m.hf.generate(**enc, max_new_tokens=12, do_sample=False, pad_token_id=m.tokenizer.pad_token_id)
    for r, tr in enumerate(traces):
        assert tr.token_ids == ref[r, enc["input_ids"].shape[1]:].tolist()[: len(tr)]


def test_batch_1_vs_8(tiny_models):
    m = tiny_models["llama"]
    site = Site("resid_post", 1)
    batched = m.generate(PROMPTS, max_new_tokens=10, capture=[site])
    for p, tb in zip(PROMPTS, batched):
        (t1,) = m.generate([p], max_new_tokens=10, capture=[site])
        assert t1.token_ids == tb.token_ids
        torch.testing.assert_close(t1.hidden[site], tb.hidden[site], atol=1e-5, rtol=0)
        torch.testing.assert_close(t1.entropy, tb.entropy, atol=1e-5, rtol=0)


def test_hidden_row_t_produced_token_t(tiny_models):
    """Row t of the trace is the final_norm state whose logits' argmax is token t (greedy)."""
    m = tiny_models["gpt2"]
    (tr,) = m.generate(["w1 w2 w3"], max_new_tokens=8, capture=["final_norm", "resid_post.-1"])
    logits = m.unembed(tr.hidden[Site("final_norm")], apply_norm=False)
    assert logits.argmax(-1).tolist() == tr.token_ids
    # and equals a full forward over prompt + generated tokens
    full = m.capture(torch.tensor([tr.prompt_ids + tr.token_ids]), ["resid_post.1"])["resid_post.1"][0]
    n = len(tr.prompt_ids)
    torch.testing.assert_close(tr.hidden[Site("resid_post", 1)], full[n - 1: n - 1 + len(tr)], atol=1e-5, rtol=0)


def test_entropy_topk(tiny_models):
    m = tiny_models["llama"]
    (tr,) = m.generate(["w1 w2"], max_new_tokens=5, capture=["final_norm"], top_k_stats=3)
    logp = torch.log_softmax(m.unembed(tr.hidden[Site("final_norm")], apply_norm=False).float(), -1)
    torch.testing.assert_close(tr.entropy, -(logp.exp() * logp).sum(-1), atol=1e-5, rtol=0)
    assert tr.topk_ids.shape == (len(tr), 3) and tr.topk_ids[:, 0].tolist() == tr.token_ids
    assert bool((tr.topk_probs[:, :-1] >= tr.topk_probs[:, 1:]).all())


def test_sampling_seeded(tiny_models):
    m = tiny_models["llama"]
    a = m.generate(PROMPTS[:3], max_new_tokens=8, do_sample=True, seed=3, temperature=1.5)
    b = m.generate(PROMPTS[:3], max_new_tokens=8, do_sample=True, seed=3, temperature=1.5)
    c = m.generate(PROMPTS[:3], max_new_tokens=8, do_sample=True, seed=4, temperature=1.5)
    assert [t.token_ids for t in a] == [t.token_ids for t in b]
    assert [t.token_ids for t in a] != [t.token_ids for t in c]


def test_stop_strings_and_batching(tiny_models):
    m = tiny_models["llama"]
    free = next(t for t in m.generate(PROMPTS, max_new_tokens=10) if len(t) >= 5)
    k = 3
    target = free.tokens[k].strip()
    (tr,) = m.generate([free.prompt], max_new_tokens=10, stop=[target])
    assert tr.stop_reason == "stop_string" and target in tr.text and len(tr) <= k + 1
    chunked = m.generate(PROMPTS, max_new_tokens=6, batch_size=3)
    whole = m.generate(PROMPTS, max_new_tokens=6)
    assert [t.token_ids for t in chunked] == [t.token_ids for t in whole]


def test_decoder_rollback_restores_state(tiny_models):
    m = tiny_models["llama"]
    dec = Decoder(m, m.tokenize(["w1 w2 w3"]))
    with torch.no_grad():
        logits = dec.prefill()
        tok = logits.argmax(-1)
        l1 = dec.step(tok)
        n = dec.cache_length
        dec.rollback(1)
        l2 = dec.step(tok)
    assert dec.cache_length == n
    torch.testing.assert_close(l1, l2, atol=0, rtol=0)


def test_generate_config_errors(tiny_models):
    m = tiny_models["llama"]
    with pytest.raises(ThinklensError, match="max_new_tokens"):
        m.generate(["w1"], max_new_tokens=0)
    with pytest.raises(ThinklensError, match="top_p"):
        m.generate(["w1"], do_sample=True, top_p=0.0)
