"""Analyses on the accelerator: the MI estimator computes in float64 on the device and equals the CPU; SAE
feature steering (clamp with the error term kept, decoder-row addition) is exact on the device."""

from __future__ import annotations

import pytest
import torch
from gpu_fixtures import DEVICE, DTYPES, GPU, ZOO, gpu_dirs, load_model, make_sae, prompts_for, same_dtype_atol  # noqa: F401

from thinklens import HookFn, Site

pytestmark = GPU

MI_RTOL = 1e-6
"""Both devices certify each score to 1e-9 relative (Krylov) or solve it in float64 (Cholesky); 1e-6 leaves room
for the float64 rounding of two LAPACK / BLAS libraries and for the answer factor's certified truncation."""


def _states(model, n_steps: int = 24):
    """Real states: the zoo model's last block over one generated trajectory, ``[step, d]`` and the answer ``[d]``."""
    site = Site("resid_post", model.n_layers - 1)
    tr = model.generate(prompts_for(ZOO)[:1], max_new_tokens=n_steps, capture=[site])[0]
    states = tr.hidden[site]
    return states[:-1], states[-1]


@pytest.mark.parametrize("config", ["reference", "median_sigma", "l2"])
@pytest.mark.parametrize("method", ["nystrom", "cholesky"])
def test_mi_on_the_device_equals_the_cpu(load_model, method, config):
    from thinklens.analyses.mi.estimator import nhsic_trajectory

    states, answer = _states(load_model(ZOO, torch.float32, "cpu"))
    kw = dict(method=method, dtype=torch.float64)
    cpu = nhsic_trajectory(states, answer, config, **kw)
    dev = nhsic_trajectory(states.to(DEVICE), answer.to(DEVICE), config, **kw)
    assert dev.mi.dtype == torch.float64 and dev.mi.device.type == "cpu"  # results come back as float64 CPU tensors
    torch.testing.assert_close(dev.mi, cpu.mi, rtol=MI_RTOL, atol=1e-9)
    torch.testing.assert_close(dev.sigma, cpu.sigma, rtol=1e-12, atol=0)


def test_mi_of_wide_random_states_on_the_device_equals_the_cpu():
    """A width like a 1.5B model's residual (d = 1536) at the reference settings."""
    from thinklens.analyses.mi.estimator import nhsic_trajectory

    g = torch.Generator().manual_seed(0)
    answer = torch.randn(1536, generator=g) * 20
    states = torch.stack([answer * (k / 8) + torch.randn(1536, generator=g) * 20 for k in range(8)])  # [8, d]
    cpu = nhsic_trajectory(states, answer)
    dev = nhsic_trajectory(states, answer, device=DEVICE)  # CPU tensors computed on the device
    torch.testing.assert_close(dev.mi, cpu.mi, rtol=MI_RTOL, atol=1e-9)
    assert float(dev.mi[-1]) > float(dev.mi[0])  # the state holding most of the answer scores above pure noise


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_mi_upcasts_low_precision_states_on_the_device(load_model, dtype):
    from thinklens.analyses.mi.estimator import nhsic_trajectory

    states, answer = _states(load_model(ZOO, torch.float32, "cpu"))
    low_s, low_a = states.to(DEVICE, DTYPES[dtype]), answer.to(DEVICE, DTYPES[dtype])
    got = nhsic_trajectory(low_s, low_a)
    same = nhsic_trajectory(low_s.float(), low_a.float())  # the same values in float32: the upcast is exact
    assert got.mi.dtype == torch.float64
    torch.testing.assert_close(got.mi, same.mi, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------- SAE feature steering

SAE_SITE = Site("resid_post", 0)


@pytest.fixture(scope="module")
def sae(load_model):
    return make_sae(load_model("llama").d_model, str(SAE_SITE))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_clamp_scale_one_changes_nothing(load_model, sae, dtype):
    from thinklens.steering.feature_steering import clamp_feature

    model = load_model("llama", DTYPES[dtype])
    prompts = prompts_for("llama")
    base = model.forward_with(prompts)
    assert torch.equal(model.forward_with(prompts, [clamp_feature(SAE_SITE, sae, 5, 1.0, mode="scale")]), base)


def _steered(model, intervention):
    """``(steered, x, real)``: the site's activations under ``intervention``, what it received (recorded by a hook
    before it) and the mask of real (not padding) tokens, on the llama prompts."""
    prompts = prompts_for("llama")
    seen: dict[str, torch.Tensor] = {}
    record = HookFn(SAE_SITE, lambda a, c: seen.__setitem__("x", a.clone()))
    steered = model.capture(prompts, [SAE_SITE], interventions=[record, intervention])[SAE_SITE]
    return steered, seen["x"], model.tokenize(prompts)["attention_mask"].bool()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_clamp_keeps_the_error_term(load_model, sae, dtype):
    from thinklens.steering.feature_steering import clamp_feature

    steered, x, real = _steered(load_model("llama", DTYPES[dtype]), clamp_feature(SAE_SITE, sae, 7, 3.0))
    with torch.no_grad():  # the hand-written formula: x + decode(z') - decode(z), z = encode(x), in float32
        z = sae.encode(x.float())
        z2 = z.clone()
        z2[..., 7] = 3.0
        oracle = x + (sae.decode(z2) - sae.decode(z)).to(x.dtype)
    torch.testing.assert_close(steered[real], oracle[real], rtol=0, atol=same_dtype_atol(oracle[real]))
    assert not torch.equal(steered, x)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_add_feature_is_exact_and_steers_generation(load_model, sae, dtype):
    from thinklens.steering.feature_steering import add_feature

    model = load_model("llama", DTYPES[dtype])
    prompts = prompts_for("llama")
    steered, x, real = _steered(model, add_feature(SAE_SITE, sae, 11, 2.5))
    v = sae.W_dec[11].detach().float().cpu().to(x.device, x.dtype)
    assert torch.equal(steered[real], (x + 2.5 * v)[real]) and torch.equal(steered[~real], x[~real])
    plain = [t.token_ids for t in model.generate(prompts, max_new_tokens=6)]
    pushed = [t.token_ids for t in model.generate(prompts, max_new_tokens=6, interventions=[add_feature(SAE_SITE, sae, 3, 50.0)])]
    assert pushed != plain and plain == [t.token_ids for t in model.generate(prompts, max_new_tokens=6)]
