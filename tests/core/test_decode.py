"""The decode loop and the Decoder: token choices, forks, re-runs, rollbacks, embeddings steps, gradients."""

import pytest
import torch

from thinklens import ThinklensError
from thinklens.generation.decode_loop import Forced, Greedy, Guided, Sample, decode
from thinklens.generation.kv_batch import Decoder, left_pad

PROMPTS = ["w1 w2 w3 w4", "w5 w6", "w7"]


def test_left_pad_and_token_rows(tiny_models):
    m = tiny_models["llama"]
    enc = m.tokenize(PROMPTS)
    rows = [m.tokenizer(p)["input_ids"] for p in PROMPTS]
    got = m.tokenize(rows)
    assert torch.equal(got["input_ids"], enc["input_ids"]) and torch.equal(got["attention_mask"], enc["attention_mask"])
    assert torch.equal(m.tokenize(rows[0])["input_ids"], m.tokenize(PROMPTS[0])["input_ids"])
    assert left_pad([[4, 5], []], 0)["attention_mask"].tolist() == [[1, 1], [0, 0]]
    with pytest.raises(ThinklensError, match="token rows"):
        left_pad([], 0)


def test_decode_greedy_equals_generate(tiny_models):
    m = tiny_models["llama"]
    out = decode(Decoder(m, PROMPTS), max_new_tokens=7)
    assert [out.row(r) for r in range(3)] == [t.token_ids for t in m.generate(PROMPTS, max_new_tokens=7)]


def test_forced_tokens_then_greedy(tiny_models):
    m = tiny_models["llama"]
    forced = torch.tensor([5, 9])
    out = decode(Decoder(m, PROMPTS), Forced(forced), max_new_tokens=6, eos=set())
    assert all(out.row(r)[:2] == [5, 9] for r in range(3))
    # the same as reading the forced tokens as part of the prompt, then greedy
    rows = [m.tokenizer(p)["input_ids"] + [5, 9] for p in PROMPTS]
    rest = decode(Decoder(m, rows), Greedy(), max_new_tokens=4, eos=set())
    assert [out.row(r)[2:] for r in range(3)] == [rest.row(r) for r in range(3)]


def test_guided_follows_the_guide(tiny_models):
    m, g = tiny_models["llama"], tiny_models["qwen2"]
    assert m.vocab_size == g.vocab_size
    out = decode(Decoder(m, PROMPTS), Guided(Decoder(g, PROMPTS)), max_new_tokens=6, eos=set())
    ref = decode(Decoder(g, PROMPTS), Greedy(), max_new_tokens=6, eos=set())
    assert torch.equal(out.tokens, ref.tokens)


def test_sampling_uses_only_its_generator(tiny_models):
    m = tiny_models["llama"]
    state = torch.get_rng_state()
    a = decode(Decoder(m, PROMPTS), Sample(torch.Generator().manual_seed(1), temperature=1.5), max_new_tokens=6)
    assert torch.equal(torch.get_rng_state(), state)
    b = decode(Decoder(m, PROMPTS), Sample(torch.Generator().manual_seed(1), temperature=1.5), max_new_tokens=6)
    assert torch.equal(a.tokens, b.tokens)


@torch.no_grad()
def test_fork_rollback_rerun(tiny_models):
    m = tiny_models["llama"]
    dec = Decoder(m, PROMPTS)
    logits = dec.prefill()
    for _ in range(3):
        logits = dec.step(logits.argmax(-1))
    n = dec.cache_length
    again = dec.rerun()  # same step, no intervention: same logits, same cache length
    torch.testing.assert_close(again, logits, atol=1e-6, rtol=0)
    assert dec.cache_length == n
    # a fork of rows [2, 0] rolled back into the prompt (row 2 has one real token) and re-run
    fork = dec.fork([2, 0], repeats=2)
    ids, mask = fork.ids[:, -5:], fork.mask[:, -5:]
    fork.rollback(5)
    refork = fork.extend(ids, mask)
    torch.testing.assert_close(refork, logits[[2, 2, 0, 0]], atol=1e-5, rtol=0)
    assert dec.cache_length == n and fork.cache_length == n  # the original is untouched
    with pytest.raises(ThinklensError, match="rollback"):
        dec.rollback(n + 1)


@torch.no_grad()
def test_rerun_of_the_prefill(tiny_models):
    m = tiny_models["llama"]
    dec = Decoder(m, PROMPTS)
    first = dec.prefill()
    torch.testing.assert_close(dec.rerun(), first, atol=1e-6, rtol=0)
    assert dec.cache_length == dec.input_ids.shape[1] and dec.step_index == 0


def test_embedding_steps_keep_gradients(tiny_models):
    m = tiny_models["llama"]
    rows = [m.tokenizer(p)["input_ids"] for p in PROMPTS]
    with torch.no_grad():
        ref = Decoder(m, rows)
        ref.prefill()
        want = ref.step(torch.tensor([4, 5, 6]))
    dec = Decoder(m)
    enc = m.tokenize(rows)
    dec.append(enc["input_ids"], enc["attention_mask"])
    v = m.embed(torch.tensor([[4], [5], [6]])).detach().requires_grad_(True)  # [batch, 1, d]
    out = dec.append(inputs_embeds=v)
    torch.testing.assert_close(out.logits[:, -1].float(), want, atol=1e-5, rtol=0)
    out.logits[:, -1].sum().backward()
    assert v.grad is not None and float(v.grad.abs().sum()) > 0


def test_decode_after_a_manual_prefill(tiny_models):
    m = tiny_models["llama"]
    with pytest.raises(ThinklensError, match="capture"):
        dec = Decoder(m, PROMPTS)
        decode(dec, Greedy(), max_new_tokens=5, logits=dec.prefill(), capture=["resid_post.1"])
    dec = Decoder(m, PROMPTS, capture=["resid_post.1"])
    with torch.no_grad():
        logits = dec.prefill()
    out = decode(dec, Greedy(), max_new_tokens=5, logits=logits, capture=["resid_post.1"])
    ref = decode(Decoder(m, PROMPTS), Greedy(), max_new_tokens=5, capture=["resid_post.1"])
    assert torch.equal(out.tokens, ref.tokens)
    site = m.resolve_site("resid_post.1")
    torch.testing.assert_close(out.hidden[site], ref.hidden[site], atol=1e-6, rtol=0)


def test_frozen_restores_flags(tiny_models):
    m = tiny_models["llama"]
    params = list(m.hf.parameters())
    params[0].requires_grad_(False)
    with pytest.raises(RuntimeError):
        with m.frozen():
            assert not any(p.requires_grad for p in params)
            raise RuntimeError("inside")
    assert not params[0].requires_grad and all(p.requires_grad for p in params[1:])
    params[0].requires_grad_(True)


def test_decoder_errors(tiny_models):
    m = tiny_models["llama"]
    dec = Decoder(m, PROMPTS)
    with pytest.raises(ThinklensError, match="prefill"):
        dec.step(torch.tensor([1, 2, 3]))
    with pytest.raises(ThinklensError, match="rerun"):
        dec.rerun()
    with pytest.raises(ThinklensError, match="max_new_tokens"):
        decode(dec, max_new_tokens=0)
