"""Every intervention on the accelerator, in float32, bfloat16 and float16: AddVector and ReplaceActivation are
exact (checked against the activation recorded in the same forward), InjectEmbeddings equals HF run on the
edited embeddings, RepeatBlock equals its oracle in a forward and in a KV-cached step (cache length kept),
intervened generation on the device decodes what the CPU decodes, and hooks go away after an exception."""

from __future__ import annotations

import pytest
import torch
from gpu_fixtures import DTYPES, GPU, TINY, ZOO, gpu_dirs, load_model, module_hooks, prompts_for, same_dtype_atol  # noqa: F401

from thinklens import AddVector, HookFn, InjectEmbeddings, RepeatBlock, ReplaceActivation, Site
from tools.testing import check_repeat_block

pytestmark = GPU
CASES = [(name, dtype) for name in TINY for dtype in DTYPES]


def _recorded(model, prompts, site, intervention):
    """``(before, after)``: the activation at ``site`` entering the intervention and leaving it, in ONE forward."""
    seen: dict[str, torch.Tensor] = {}
    record = HookFn(site, lambda a, c: seen.__setitem__("before", a.clone()))  # runs first: installed first
    after = model.capture(prompts, [site], interventions=[record, intervention])[site]
    return seen["before"], after


@pytest.mark.parametrize("name,dtype", CASES)
def test_add_vector_is_exact(load_model, name, dtype):
    model = load_model(name, DTYPES[dtype])
    prompts = prompts_for(name)
    real = model.tokenize(prompts)["attention_mask"].bool()  # [batch, pos]
    g = torch.Generator().manual_seed(0)
    for site in (Site("resid_post", 0), Site("resid_pre", 1), Site("attn_out", 0), Site("mlp_out", model.n_layers - 1)):
        v = torch.randn(model.d_model, generator=g)  # float32 on the CPU: the hook casts it
        before, after = _recorded(model, prompts, site, AddVector(site, v, scale=2.5))
        want = before + 2.5 * v.to(before.device, before.dtype)  # the hook's own arithmetic, in the model's dtype
        assert torch.equal(after[real], want[real]), site
        assert torch.equal(after[~real], before[~real]), f"{site}: padding touched"


@pytest.mark.parametrize("name,dtype", CASES)
def test_replace_activation_is_exact(load_model, name, dtype):
    model = load_model(name, DTYPES[dtype])
    prompts = prompts_for(name)
    enc = model.tokenize(prompts)
    real, pos = enc["attention_mask"].bool(), model.position_ids(enc["attention_mask"])
    site = Site("resid_post", 0)
    values = torch.randn(2, model.d_model, generator=torch.Generator().manual_seed(1))  # [n, d] for positions 0 and 1
    before, after = _recorded(model, prompts, site, ReplaceActivation(site, values, positions=[0, 1]))
    for j in (0, 1):
        at = (pos == j) & real  # [batch, pos]
        assert torch.equal(after[at], values[j].to(after.device, after.dtype).expand(int(at.sum()), -1))
    rest = real & (pos > 1)
    assert torch.equal(after[rest], before[rest])
    before, after = _recorded(model, prompts, site, ReplaceActivation(site, lambda a, c: a * 0, positions="last"))
    assert not bool(after[:, -1].any()) and torch.equal(after[:, :-1], before[:, :-1])


@pytest.mark.parametrize("name,dtype", CASES)
def test_inject_embeddings_equals_hf_on_edited_embeddings(load_model, name, dtype):
    model = load_model(name, DTYPES[dtype])
    ids = model.tokenize(prompts_for(name)[:1])["input_ids"]  # [1, pos], no padding
    new = torch.randn(1, 2, model.d_model, generator=torch.Generator().manual_seed(2))
    manual = model.embed(ids).detach().clone()
    manual[:, 1:3] = new.to(manual.device, manual.dtype)
    iv = InjectEmbeddings(values=new, positions=[1, 2])
    assert torch.equal(model.capture(ids, ["embed"], interventions=[iv])["embed"], manual)
    ones = torch.ones_like(ids)
    with torch.no_grad():
        ref = model.hf(inputs_embeds=manual, attention_mask=ones, position_ids=model.position_ids(ones)).logits
    got = model.forward_with(ids, [iv])
    torch.testing.assert_close(got, ref, rtol=0, atol=same_dtype_atol(ref))


@pytest.mark.parametrize("name,dtype", CASES)
def test_repeat_block_equals_its_oracle(load_model, name, dtype):
    model = load_model(name, DTYPES[dtype])
    ids = model.tokenize(prompts_for(name)[:1])["input_ids"]
    clean = model.forward_with(ids)
    for layer in range(model.n_layers):  # forward and KV-cached step, tolerances of the weights' dtype
        check_repeat_block(model, ids, layer, clean, atol=same_dtype_atol)


def test_intervened_generation_equals_the_cpu(load_model):
    """float32 zoo model: steered and recycled greedy decoding gives the CPU's text on the device."""
    gpu, cpu = load_model(ZOO, torch.float32), load_model(ZOO, torch.float32, "cpu")
    prompts = prompts_for(ZOO)
    v = torch.randn(gpu.d_model, generator=torch.Generator().manual_seed(3))
    v = v / v.norm()
    plain = [t.text for t in gpu.generate(prompts, max_new_tokens=40)]
    zero = [t.text for t in gpu.generate(prompts, max_new_tokens=40, interventions=[AddVector(Site("resid_post", 1), v, scale=0.0)])]
    assert zero == plain
    for iv in (AddVector(Site("resid_post", 1), v, positions="last", scale=4.0), RepeatBlock(2, positions="last"),
               ReplaceActivation(Site("mlp_out", 0), lambda a, c: a * 0.5, positions="last")):
        got = [t.text for t in gpu.generate(prompts, max_new_tokens=40, interventions=[iv])]
        want = [t.text for t in cpu.generate(prompts, max_new_tokens=40, interventions=[iv])]
        assert got == want, type(iv).__name__


def test_hooks_are_removed_after_an_exception(load_model):
    model = load_model("llama", torch.bfloat16)
    before = module_hooks(model.hf)
    ivs = [AddVector(Site("resid_post", 0), torch.ones(model.d_model)), RepeatBlock(1, positions="last"),
           InjectEmbeddings(values=torch.zeros(model.d_model), positions=[0])]
    with pytest.raises(RuntimeError, match="boom"):
        with model.intervene(ivs):
            assert module_hooks(model.hf) != before
            model.generate(prompts_for("llama"), max_new_tokens=2)
            raise RuntimeError("boom")
    assert module_hooks(model.hf) == before
