"""Long traces: the KV cache pre-sized from the budget, and continuous batching in the decode loop.

Oracles: the dynamic cache (``presize=False``) and HF ``generate`` for the pre-sized one, on every tiny family;
each prompt decoded alone for continuous batching (same greedy tokens, same states and statistics), and the
number of row-steps the model ran (about the total tokens, not batches x longest).
"""

from __future__ import annotations

import pytest
import torch

from thinklens import ThinklensError
from thinklens.engine.activation_store import ActivationStore, StoredStates, TraceStream
from thinklens.generation.decode_loop import Forced, Greedy, continuous_ready, decode, decode_queue
from thinklens.generation.generate import GenerateConfig, generate
from thinklens.generation.kv_batch import Decoder
from thinklens.generation.presized_cache import PresizedLayer
from tools.testing import TINY_FAMILIES, check_generate

PROMPTS = ["w1 w2 w3 w4", "w5 w6", "w7", "w9 w9 w9 w9 w9 w9 w9 w9 w9 w9 w9 w9", "w3", "w2 w8 w1", "w4 w4"]
BUDGETS = [2, 14, 12, 3, 4, 1, 2]  # the longest prompt is admitted after the first short trace, wider than the batch
SITES = ["embed", "resid_post.1", "final_norm"]
#: Families whose attention layers all keep every position (no sliding window in the tiny configs): their cache
#: is pre-sized throughout, and continuous batching can replace their rows.
SLIDING = {"mistral", "gemma2", "gemma3_text", "olmo3", "gpt_oss", "smollm3"}


def _presized(dec: Decoder) -> int:
    return sum(isinstance(layer, PresizedLayer) for layer in dec.cache.layers)


@pytest.mark.parametrize("fam", TINY_FAMILIES)
def test_presized_cache_equals_the_dynamic_cache_and_hf(family_model, fam):
    m = family_model(fam)
    fast, plain = Decoder(m, PROMPTS[:4]), Decoder(m, PROMPTS[:4])
    a = decode(fast, max_new_tokens=12, eos=set(), capture=["resid_post.1"], top_k_stats=3)
    b = decode(plain, max_new_tokens=12, eos=set(), capture=["resid_post.1"], top_k_stats=3, presize=False)
    assert _presized(plain) == 0
    full = [type(x).__name__ for x in Decoder(m).cache.layers].count("DynamicLayer")
    assert _presized(fast) == full  # every full-attention layer pre-sized, the others kept (the fallback)
    if fam not in SLIDING:
        assert full > 0
    assert torch.equal(a.tokens, b.tokens)
    torch.testing.assert_close(a.hidden, b.hidden, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(a.entropy, b.entropy, atol=1e-5, rtol=1e-5)
    check_generate(m, max_new_tokens=12)  # the family's parity with HF generate, through the pre-sized cache


@torch.no_grad()  # with gradients on, the layers concatenate (next test)
def test_buffer_doubles_past_its_reserve_and_rolls_back(tiny_models):
    m = tiny_models["llama"]
    dec, ref = Decoder(m, PROMPTS[:3]), Decoder(m, PROMPTS[:3])
    width = dec.input_ids.shape[1]
    assert dec.reserve(99) == m.n_layers and dec.reserve(width + 2) == m.n_layers  # re-sized before the prefill
    la, lb = dec.prefill(), ref.prefill()
    gen = torch.Generator().manual_seed(0)
    for step in range(9):
        tok = torch.randint(3, 60, (3,), generator=gen)
        la, lb = dec.step(tok), ref.step(tok)
        torch.testing.assert_close(la, lb, atol=1e-6, rtol=1e-6)
        if step == 4:
            dec.rollback(2)
            ref.rollback(2)
            la, lb = dec.step(tok), ref.step(tok)
            torch.testing.assert_close(la, lb, atol=1e-6, rtol=1e-6)
    layer = dec.cache.layers[0]
    assert layer.buffer_positions >= dec.length and layer.buffer_positions in (2 * (width + 2), 4 * (width + 2))
    assert layer.keys.data_ptr() == layer._kbuf.data_ptr() and dec.reserve(10) == 0  # views; too late to re-size
    torch.testing.assert_close(dec.rerun(), ref.rerun(), atol=1e-6, rtol=1e-6)


def test_presized_cache_concatenates_when_gradients_flow(tiny_models):
    m = tiny_models["llama"]
    dec = Decoder(m, PROMPTS[:2])
    dec.reserve(64)
    with torch.enable_grad():
        dec.prefill()
        emb = torch.randn(2, 1, m.d_model, requires_grad=True)
        dec.step(None, inputs_embeds=emb).sum().backward()  # an in-place buffer would break the saved tensors
    assert emb.grad is not None and dec.cache.layers[0].buffer_positions == 0


def _solo(m, prompt, budget, **kw):
    return decode(Decoder(m, [prompt]), max_new_tokens=budget, eos=set(), **kw)


def test_continuous_batching_gives_each_prompt_its_own_decode(tiny_models, monkeypatch):
    m = tiny_models["llama"]
    seen = {"compact": 0, "pad_left": 0}
    for name in seen:
        orig = getattr(Decoder, "_pad_left" if name == "pad_left" else name)

        def counted(self, *a, _orig=orig, _name=name, **kw):
            got = _orig(self, *a, **kw)
            seen[_name] += 1 if _name == "pad_left" else int(bool(got))
            return got
        monkeypatch.setattr(Decoder, "_pad_left" if name == "pad_left" else name, counted)
    # the first queue admits a longer prompt than the batch is wide; in the second, the last admitted trace outlives
    # the first two, and their columns are dropped
    for prompts, budgets, slots in ((PROMPTS, BUDGETS, 3), (PROMPTS[:3], [20, 18, 17], 2)):
        outs = decode_queue(m, prompts, max_new_tokens=budgets, slots=slots, eos=set(), capture=SITES, top_k_stats=4)
        for p, b, got in zip(prompts, budgets, outs):
            want = _solo(m, p, b, capture=SITES, top_k_stats=4)
            assert got.row(0) == want.row(0) and got.lengths == [b] and got.stop_reasons == ["max_new_tokens"]
            for s in want.hidden:
                torch.testing.assert_close(got.hidden[s], want.hidden[s], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(got.entropy, want.entropy, atol=1e-5, rtol=1e-5)
            assert torch.equal(got.topk_ids, want.topk_ids)
    assert seen["compact"] > 0 and seen["pad_left"] > 0  # finished rows' columns dropped; a longer prompt admitted


def test_continuous_batching_runs_about_the_total_tokens(tiny_models):
    """Row-steps the model ran: about the sum of the budgets, where batch after batch runs batches x longest."""
    m = tiny_models["llama"]
    rows: list[int] = []
    handle = m.hf.register_forward_pre_hook(
        lambda mod, args, kw: rows.append(int((kw.get("input_ids") if kw.get("input_ids") is not None
                                               else kw["inputs_embeds"]).shape[0])), with_kwargs=True)
    budgets = [2, 30, 3, 2, 28, 2, 4, 3]
    prompts = [f"w{i} w{i + 1}" for i in range(len(budgets))]
    try:
        decode_queue(m, prompts, max_new_tokens=budgets, slots=2, eos=set())
        queued, rows[:] = sum(rows), []
        for k in range(0, len(prompts), 2):
            decode(Decoder(m, prompts[k:k + 2]), max_new_tokens=budgets[k:k + 2], eos=set())
        batched = sum(rows)
    finally:
        handle.remove()
    assert batched == sum(2 * max(budgets[k:k + 2]) for k in range(0, 8, 2))  # 2 x longest per batch
    assert queued <= sum(budgets) + 2 * len(budgets) < 0.75 * batched


def test_continuous_batching_admits_the_largest_budget_first(tiny_models):
    """Six short prompts before a long one, two slots: in prompt order the long trace would decode alone after the
    short ones (about 6 + 30 steps); admitted first, it runs beside them (about 30). Results stay in prompt order."""
    m = tiny_models["llama"]
    steps: list[int] = []
    handle = m.hf.register_forward_pre_hook(
        lambda mod, args, kw: steps.append(int(kw["input_ids"].shape[1] == 1)), with_kwargs=True)
    budgets = [2, 2, 2, 2, 2, 2, 30]
    prompts = [f"w{i} w{i + 1} w{i + 2}" for i in range(len(budgets))]
    try:
        outs = decode_queue(m, prompts, max_new_tokens=budgets, slots=2, eos=set())
    finally:
        handle.remove()
    assert sum(steps) <= max(budgets) + 1
    assert [o.lengths[0] for o in outs] == budgets
    assert [o.row(0) for o in outs] == [_solo(m, p, b).row(0) for p, b in zip(prompts, budgets)]


def test_generate_batches_continuously_and_streams(tiny_models, tmp_path):
    m = tiny_models["llama"]
    budgets = tuple(BUDGETS)
    batch = generate(m, PROMPTS, GenerateConfig(max_new_tokens=budgets, batch_size=3, continuous=False), capture=SITES)
    queued = generate(m, PROMPTS, GenerateConfig(max_new_tokens=budgets, batch_size=3), capture=SITES)
    store = ActivationStore(tmp_path / "acts")
    streamed = generate(m, PROMPTS, GenerateConfig(max_new_tokens=budgets, batch_size=3, stream_every=2), capture=SITES,
                        stream_to=store.writer(shard_mb=0.002))
    for a, b, c in zip(batch, queued, streamed):
        assert a.token_ids == b.token_ids == c.token_ids and a.prompt_ids == b.prompt_ids and a.text == b.text
        assert isinstance(c.hidden, StoredStates)
        for s in a.hidden:
            torch.testing.assert_close(b.hidden[s], a.hidden[s], atol=1e-5, rtol=1e-5)
            assert torch.equal(c.hidden[s], b.hidden[s])
    assert len(store) == sum(budgets)


def test_continuous_batching_falls_back_where_it_cannot_run(tiny_models, family_model):
    m = family_model("gemma2")  # sliding-window layers: batch after batch
    assert not continuous_ready(m, Greedy())
    assert continuous_ready(tiny_models["llama"], Greedy()) and not continuous_ready(tiny_models["llama"], Forced(torch.tensor([5])))
    got = generate(m, PROMPTS[:4], GenerateConfig(max_new_tokens=(3, 6, 2, 5), batch_size=2))
    want = generate(m, PROMPTS[:4], GenerateConfig(max_new_tokens=(3, 6, 2, 5), batch_size=2, continuous=False))
    assert [t.token_ids for t in got] == [t.token_ids for t in want]
    with pytest.raises(ThinklensError, match="continuous batching"):
        decode_queue(m, PROMPTS[:2], max_new_tokens=3, slots=1)


def test_decode_queue_errors(tiny_models, tmp_path):
    m = tiny_models["llama"]
    with pytest.raises(ThinklensError, match="Greedy or Sample"):
        decode_queue(m, PROMPTS, Forced(torch.tensor([5])), max_new_tokens=3, slots=2)
    with pytest.raises(ThinklensError, match="slots"):
        decode_queue(m, PROMPTS, max_new_tokens=3, slots=0)
    with pytest.raises(ThinklensError, match="one per prompt"):
        decode_queue(m, PROMPTS, max_new_tokens=3, slots=2, sinks=[TraceStream(ActivationStore(tmp_path).writer(), ["a"])])
