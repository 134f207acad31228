"""bfloat16 on the CPU: a zoo model loaded with ``dtype=torch.bfloat16`` captures and generates as HF does in
bfloat16; the MI estimator and the probes upcast bf16 inputs; an activation store keeps the dtype it is given.

Tolerances. Against HF in the SAME dtype the comparisons are exact: our sites read the very tensors the HF
forward computes, and greedy decoding runs HF's own kernel shapes (the LM head on the last position only,
as ``generate`` does). Against float32 weights, bf16 keeps 8 significant bits (unit roundoff 2^-9, about
2e-3); every matmul and norm rounds its output and the errors add up over the blocks, so a site's relative
error (Frobenius norm over the real tokens) is allowed 3e-2: tiny-think measures at most 1e-2 (final_norm).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from thinklens import HookedModel, Site
from thinklens.zoo.registry import zoo_path
from tools.testing import check_capture, check_generate

ZOO = "tiny-think"
BF16_REL = 3e-2
"""Relative Frobenius error of a bf16 site against float32 weights (see the module docstring)."""

pytestmark = pytest.mark.skipif(zoo_path(ZOO) is None, reason=f"{ZOO} is not trained")


@pytest.fixture(scope="module")
def prompts():
    from thinklens.tasks import generate_problems, render_prompt

    return [render_prompt(p, "think") for p in generate_problems(4, seed=1)]


@pytest.fixture(scope="module")
def bf16():
    return HookedModel.load(ZOO, dtype=torch.bfloat16)


@pytest.fixture(scope="module")
def fp32():
    return HookedModel.load(ZOO)


def _rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    return float((a.double() - ref.double()).norm() / ref.double().norm())


def test_bf16_weights_and_capture_equal_hf(bf16, prompts):
    assert next(bf16.hf.parameters()).dtype == torch.bfloat16
    check_capture(bf16, prompts, atol=0)  # every resid_pre / resid_post / final_norm, exactly HF's tensors
    batch = bf16.capture(prompts, ["resid_post.-1", "logits"])
    assert all(a.dtype == torch.bfloat16 for a in batch.acts.values())


def test_bf16_capture_is_close_to_float32(bf16, fp32, prompts):
    sites = [*bf16.resolve_sites("resid_post.*"), Site("final_norm"), Site("logits")]
    low, ref = bf16.capture(prompts, sites), fp32.capture(prompts, sites)
    real = fp32.tokenize(prompts)["attention_mask"].bool()  # [batch, pos]
    errors = {str(s): _rel(low[s][real], ref[s][real]) for s in sites}
    assert max(errors.values()) <= BF16_REL, errors


def test_bf16_greedy_tokens_equal_hf_generate(bf16, prompts):
    check_generate(bf16, prompts, max_new_tokens=24)  # HF generate in bf16 on the same model
    traces = bf16.generate(prompts, max_new_tokens=8, capture=["resid_post.-1"])
    for tr in traces:
        assert tr.hidden[Site("resid_post", bf16.n_layers - 1)].dtype == torch.bfloat16
        assert tr.entropy.dtype == torch.float32 and bool(torch.isfinite(tr.entropy).all())  # stats from float32 logits


def test_decoding_runs_the_lm_head_on_the_last_position_only(bf16, prompts):
    from thinklens.generation.kv_batch import Decoder

    dec = Decoder(bf16, prompts)
    out = dec.append(dec.prompt["input_ids"], dec.prompt["attention_mask"], last_logits_only=True)
    assert out.logits.shape == (len(prompts), 1, bf16.vocab_size)  # no [batch, prompt, vocab] tensor


def test_mi_estimator_upcasts_bf16_states(fp32, prompts):
    from thinklens.analyses.mi.estimator import nhsic_trajectory

    trace = fp32.generate(prompts[:1], max_new_tokens=16, capture=["resid_post.-1"])[0]
    states = trace.hidden[Site("resid_post", fp32.n_layers - 1)]  # [step, d] float32
    answer = states[-1]
    low = nhsic_trajectory(states.bfloat16(), answer.bfloat16())
    assert low.mi.dtype == torch.float64
    # the upcast is exact: bf16 states score as the same values given in float32
    same = nhsic_trajectory(states.bfloat16().float(), answer.bfloat16().float())
    assert torch.equal(low.mi, same.mi)
    # and near the unrounded float32 states: the scores move by what bf16 rounding does to the inputs
    full = nhsic_trajectory(states, answer)
    torch.testing.assert_close(low.mi, full.mi, rtol=5e-2, atol=5e-3)


@pytest.mark.parametrize("probe", ["LinearProbe", "DiffMeanProbe", "LynxMLPProbe"])
def test_probe_fits_bf16_features(bf16, probe):
    import thinklens.probes.estimators as estimators
    from thinklens.tasks import generate_problems, render_prompt

    problems = generate_problems(32, seed=2)
    batch = bf16.capture([render_prompt(p, "think") for p in problems], ["resid_post.-1"], positions="last")
    X = batch["resid_post.-1"][:, -1]  # [problem, d] bf16
    y = np.array([int(p.answer) % 2 for p in problems])
    make = getattr(estimators, probe)
    kw = {"hidden_layer_sizes": (8,), "max_iter": 50} if probe == "LynxMLPProbe" else {}
    a = make(**kw).fit(X, y)
    b = make(**kw).fit(X.double().numpy(), y)  # the same values in float64
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X.double().numpy()))


def test_store_keeps_bf16(tmp_path):
    from thinklens.engine.activation_store import ActivationStore

    rows = torch.randn(10, 6).bfloat16()
    store = ActivationStore(tmp_path / "s")
    with store.writer() as w:
        w.add({Site("resid_post", 0): rows}, meta=[{"i": i} for i in range(10)])
    (shard, meta), = store.shards()
    assert meta["dtype"] == "bfloat16"
    back = next(store.iter_batches(64))[Site("resid_post", 0)]
    assert back.dtype == torch.bfloat16 and torch.equal(back, rows)
    forced = ActivationStore(tmp_path / "f")
    with forced.writer(dtype=torch.float32) as w:  # an explicit dtype still converts
        w.add({Site("resid_post", 0): rows})
    assert next(forced.iter_batches(64))[Site("resid_post", 0)].dtype == torch.float32


def test_capture_job_on_a_bf16_model_stores_bf16(bf16, prompts, tmp_path):
    from thinklens import run_job

    path = tmp_path / "prompts.txt"
    path.write_text("\n".join(prompts) + "\n")
    result = run_job("capture", model=bf16, prompts=str(path), sites=("resid_post.-1",), positions="last",
                     runs=tmp_path / "runs", progress=False)
    store = result.open_store()
    assert {m["dtype"] for _, m in store.shards()} == {"bfloat16"}
    rows = next(store.iter_batches(64))[Site("resid_post", bf16.n_layers - 1)]
    want = bf16.capture(prompts, ["resid_post.-1"], positions="last")["resid_post.-1"][:, -1]
    assert rows.dtype == torch.bfloat16 and torch.equal(rows, want)
