"""Traced generation on the accelerator: greedy tokens equal HF ``generate`` in the same dtype (our decode loop
runs HF's kernel shapes: the LM head on the last position only), states equal teacher forcing, sampling is
seeded by a local generator on the device."""

from __future__ import annotations

import pytest
import torch
from gpu_fixtures import CROSS_REL, DEVICE, DTYPES, GPU, TINY, ZOO, gpu_dirs, load_model, prompts_for, rel_error  # noqa: F401

from thinklens import Site
from tools.testing import check_generate

pytestmark = GPU


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", (*TINY, ZOO))
def test_greedy_tokens_equal_hf_generate(load_model, name, dtype):
    model = load_model(name, DTYPES[dtype])
    check_generate(model, prompts_for(name), max_new_tokens=32 if name == ZOO else 12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_trace_states_equal_teacher_forcing(load_model, dtype):
    """The state that produced token t is the last-position state of a plain forward over prompt + tokens[:t]."""
    model = load_model(ZOO, DTYPES[dtype])
    site = Site("resid_post", model.n_layers - 1)
    traces = model.generate(prompts_for(ZOO)[:2], max_new_tokens=12, capture=[site])
    for tr in traces:
        states = tr.hidden[site]  # [step, d], on the CPU
        assert states.dtype == DTYPES[dtype] and states.shape[0] == len(tr)
        rows = [tr.prompt_ids + tr.token_ids[:t] for t in range(len(tr))]
        forced = model.capture(rows, [site])[site][:, -1]  # [step, d] each row's last position
        assert rel_error(states, forced) <= CROSS_REL[DTYPES[dtype]]  # cached vs uncached kernels round differently


def test_sampling_is_seeded_on_the_device(load_model):
    model = load_model("llama", torch.bfloat16)
    prompts = prompts_for("llama")
    kw = dict(max_new_tokens=16, do_sample=True, temperature=1.0, top_p=0.9)
    a = [t.token_ids for t in model.generate(prompts, seed=3, **kw)]
    b = [t.token_ids for t in model.generate(prompts, seed=3, **kw)]
    c = [t.token_ids for t in model.generate(prompts, seed=4, **kw)]
    assert a == b and a != c
    state = torch.random.get_rng_state()
    cuda_state = torch.cuda.get_rng_state() if DEVICE.startswith("cuda") else None
    model.generate(prompts, seed=3, **kw)
    assert torch.equal(state, torch.random.get_rng_state())  # the global RNGs are untouched
    if cuda_state is not None:
        assert torch.equal(cuda_state, torch.cuda.get_rng_state())


def test_zoo_greedy_text_equals_the_cpu(load_model):
    """float32 on the device decodes the zoo model's greedy text exactly as the CPU does (a trained model's
    greedy choices are far from ties; float32 sums in another order differ by ~1e-6)."""
    prompts = prompts_for(ZOO)
    gpu = load_model(ZOO, torch.float32).generate(prompts, max_new_tokens=48)
    cpu = load_model(ZOO, torch.float32, "cpu").generate(prompts, max_new_tokens=48)
    assert [t.text for t in gpu] == [t.text for t in cpu]
    for g, c in zip(gpu, cpu):
        torch.testing.assert_close(g.entropy, c.entropy, rtol=0, atol=1e-4)


def test_batches_and_devices_of_generate_outputs(load_model):
    model = load_model("qwen2", torch.bfloat16)
    traces = model.generate(prompts_for("qwen2"), max_new_tokens=6, capture=["resid_post.0", "logits"], batch_size=2)
    for tr in traces:
        assert all(v.device.type == "cpu" for v in tr.hidden.values())  # traces hold CPU tensors
        assert tr.topk_probs.dtype == torch.float32 and tr.entropy.device.type == "cpu"
        assert tr.hidden[Site("logits")].shape == (len(tr), model.vocab_size)
