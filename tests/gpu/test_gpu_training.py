"""Training and labelling on the accelerator: a CODI step (loss and gradients equal the CPU's in float32; a
bfloat16 step as ``thinklens.latent.training_loop`` runs it), and LYNX forced-exit labels (one pass per rollout equals the
per-event reference on the device; the device labels the zoo's rollouts as the CPU does)."""

from __future__ import annotations

import pytest
import torch
from gpu_fixtures import DEVICE, GPU, ZOO, gpu_dirs, grader_without_math_verify, load_model, rel_error  # noqa: F401
from lynx_checks import one_pass_matches_reference

from thinklens import HookedModel

pytestmark = GPU


# ---------------------------------------------------------------- CODI

def _codi_setup(path, device: str, dtype: torch.dtype = torch.float32):
    """A fresh model (training changes its weights: never a cached one), a seeded CODI module on ``device``
    in ``dtype`` (as ``thinklens.latent.training_loop.prepare`` moves it), and a batch of examples."""
    from thinklens.latent.codi import CODI
    from thinklens.latent.segments import example_from_problem, latent_tokens
    from thinklens.tasks import generate_problems

    model = HookedModel.load(str(path), device=device, dtype=dtype)
    with torch.random.fork_rng(devices=[]):  # the projection's init draws from the global CPU RNG
        torch.manual_seed(0)
        codi = CODI(model, latent_tokens(model.tokenizer), n_latents=2)
    codi.to(device=device, dtype=dtype)
    examples = [example_from_problem(p, model.tokenizer) for p in generate_problems(8, seed=3, n_steps=3)]
    return model, codi, codi.collate(examples)


def test_codi_loss_and_gradients_equal_the_cpu(gpu_dirs):
    _, dev, dev_batch = _codi_setup(gpu_dirs["zooish"], DEVICE)
    _, cpu, cpu_batch = _codi_setup(gpu_dirs["zooish"], "cpu")
    out_d, out_c = dev(dev_batch), cpu(cpu_batch)
    for key in ("loss", "ce_student", "ce_teacher", "kd"):
        torch.testing.assert_close(out_d[key].detach().cpu(), out_c[key].detach(), rtol=1e-4, atol=1e-5, msg=key)
    out_d["loss"].backward()
    out_c["loss"].backward()
    for (name, p_d), (_, p_c) in zip(dev.named_parameters(), cpu.named_parameters()):
        if p_c.grad is not None and float(p_c.grad.norm()) > 0:
            assert rel_error(p_d.grad, p_c.grad) <= 1e-3, name


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_codi_training_step_on_the_device(gpu_dirs, dtype):
    model, codi, batch = _codi_setup(gpu_dirs["zooish"], DEVICE, dtype)
    assert next(codi.prj.parameters()).dtype == dtype and next(codi.prj.parameters()).device.type == model.device.type
    opt = torch.optim.AdamW(codi.parameters(), lr=1e-3)
    codi.train()
    before = [p.detach().clone() for p in codi.prj.parameters()]
    first = codi(batch)
    first["loss"].backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    assert all(bool(torch.isfinite(p).all()) for p in codi.parameters())
    assert any(not torch.equal(b, p) for b, p in zip(before, codi.prj.parameters()))
    second = codi(batch)
    # one step lowers the loss on the same batch
    assert bool(torch.isfinite(second["loss"])) and float(second["loss"].detach()) < float(first["loss"].detach())
    from thinklens.latent.segments import example_from_problem
    from thinklens.tasks import generate_problems

    examples = [example_from_problem(p, model.tokenizer) for p in generate_problems(2, seed=5, n_steps=2)]
    preds = codi.infer(examples, 2, max_new_tokens=4)  # latent inference on the device
    assert len(preds) == 2 and all(isinstance(i, int) for p in preds for i in p["ids"])


# ---------------------------------------------------------------- LYNX labels

@pytest.mark.parametrize("batch_size,max_batch_tokens", [(16, 2048), (3, 60)])
def test_lynx_one_pass_labels_equal_the_reference_on_the_device(load_model, grader_without_math_verify, batch_size,
                                                                max_batch_tokens):
    """float32: the two paths run different kernel shapes; a bf16 model's greedy answers could part at near-ties."""
    one_pass_matches_reference(load_model("zooish"), batch_size=batch_size, max_batch_tokens=max_batch_tokens, atol=1e-4)


def test_lynx_labels_on_the_device_equal_the_cpu(load_model, grader_without_math_verify):
    from thinklens.probes.datasets import sampled_think_rollouts
    from thinklens.probes.forced import event_features_and_labels
    from thinklens.probes.lynx import lynx_sites

    cpu, dev = load_model(ZOO, torch.float32, "cpu"), load_model(ZOO, torch.float32)
    # the same rollouts for both devices
    traces, events, gold = sampled_think_rollouts(cpu, 12, max_steps=4, max_new_tokens=64, seed=1)
    assert sum(len(e) for e in events) > 0
    kw = dict(exit_string="</think> ####", max_answer_tokens=8)
    sites = lynx_sites(cpu.n_layers)
    X_c, want = event_features_and_labels(cpu, traces, events, gold, sites, **kw)
    X_d, got = event_features_and_labels(dev, traces, events, gold, sites, **kw)
    assert got.same_as(want)
    assert rel_error(torch.from_numpy(X_d), torch.from_numpy(X_c)) <= 1e-4
