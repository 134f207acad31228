"""smol-r1's parts that need no real weights: the organism registry and its errors, the adapter written and merged
(against the LoRA formula by hand, on a zoo model), and the evaluation's per-trace ground truth (on tiny-overthink,
against the construction's values)."""

from __future__ import annotations

import hashlib
import json

import pytest
import torch

from thinklens.errors import ThinklensError


def test_organism_names_and_missing_pieces(monkeypatch, tmp_path):
    from thinklens.engine import real_models, real_organisms
    from thinklens.engine.model import resolve_model_path

    assert real_models.is_real_name("smol-r1") and real_organisms.is_organism_name("smol-r1")
    # no adapter committed: the error names the command that trains it
    monkeypatch.setattr(real_organisms, "adapter_dir", lambda name: tmp_path / "none")
    with pytest.raises(ThinklensError, match="zoo-train --model smol-r1"):
        resolve_model_path("smol-r1")
    # an adapter but no base package: the error names `make real`
    (tmp_path / "a").mkdir()
    for f in ("adapter_config.json", "adapter_model.safetensors", "organism.json"):
        (tmp_path / "a" / f).write_text("{}")
    monkeypatch.setattr(real_organisms, "adapter_dir", lambda name: tmp_path / "a")
    monkeypatch.setattr(real_models, "_module_dir", lambda module: None)
    assert not real_models.installed("smol-r1")
    with pytest.raises(ThinklensError, match="make real"):
        resolve_model_path("smol-r1")


def test_zoo_train_accepts_the_organism():
    from thinklens.zoo.jobs.zoo_train import ZooTrainConfig

    assert ZooTrainConfig(model="smol-r1", minutes=45).model == "smol-r1"
    with pytest.raises(ThinklensError, match="did you mean"):
        ZooTrainConfig(model="smol-r2")


def test_adapter_saved_and_merged_is_the_lora_formula(tmp_path):
    """save_adapter (fp16) then merge_adapter equals W + alpha / r * B @ A, computed by hand on tiny-pre's weights."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from thinklens.engine.real_organisms import merge_adapter
    from thinklens.zoo.r1 import CHAT_TEMPLATE
    from thinklens.zoo.registry import zoo_path
    from thinklens.zoo.smol_r1 import save_adapter

    base = zoo_path("tiny-pre")
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    w0 = model.model.layers[0].self_attn.q_proj.weight.detach().clone()
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"], lora_dropout=0.0))
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_" in name:
                p.copy_((torch.randn(p.shape, generator=gen) * 0.1).half().float())  # exact in fp16
    q = peft_model.base_model.model.model.layers[0].self_attn.q_proj
    a, b = q.lora_A["default"].weight.detach().clone(), q.lora_B["default"].weight.detach().clone()
    save_adapter(peft_model, tmp_path / "adapter", meta={"name": "test"})
    weights = tmp_path / "adapter" / "adapter_model.safetensors"
    assert json.loads((tmp_path / "adapter" / "weights.json").read_text()) == {
        weights.name: {"sha256": hashlib.sha256(weights.read_bytes()).hexdigest(), "bytes": weights.stat().st_size}}
    assert json.loads((tmp_path / "adapter" / "organism.json").read_text())["chat_template"] == CHAT_TEMPLATE
    merge_adapter(base, tmp_path / "adapter", tmp_path / "merged")
    merged = AutoModelForCausalLM.from_pretrained(str(tmp_path / "merged"), dtype=torch.float32)
    torch.testing.assert_close(merged.model.layers[0].self_attn.q_proj.weight, w0 + 8 / 4 * b @ a, atol=1e-5, rtol=1e-5)
    untouched = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    assert torch.equal(merged.model.layers[0].self_attn.k_proj.weight, untouched.model.layers[0].self_attn.k_proj.weight)


def test_per_trace_truth_on_tiny_overthink():
    """Each cue's forced answer is the construction's value there (tiny-overthink answers them all: its zoo.json);
    answer_known_at's forced answer is the answer; the pooled summary counts the records."""
    from thinklens.engine.model import HookedModel
    from thinklens.zoo.smol_r1 import SMOL_R1
    from thinklens.zoo.smol_r1_eval import evaluate_model, truth_summary

    model = HookedModel.load("tiny-overthink")
    ev = evaluate_model(model, n_per_steps=3, steps=(1,), seed=7, task=SMOL_R1.task, mix=SMOL_R1.mix)
    assert ev["opens_think"] and ev["think"]["all"]["n"] == 3 and ev["no_think"]["all"]["n"] == 3
    traces = ev["traces"]
    cues = [c for t in traces for c in t["cues"]]
    assert cues and all(c["forced"] == str(c["value"]) for c in cues)
    assert all(t["forced_at_known"] == str(t["answer"]) for t in traces if t["answer_known_at"] is not None)
    for t in traces:  # reasoning tokens end before "</think>", so the answer is not counted as reasoning
        assert t["closed"] and t["answer_known_at"] < t["reasoning_tokens"]
    s = truth_summary(traces)
    assert s["n"] == 3 and s["cues"] == len(cues)
    assert s["forced_matches_construction"]["k"] == len(cues)
    assert s["forced_pre_answer_cues"]["n"] + s["forced_post_answer_cues"]["n"] == len(cues)


def test_validate_on_a_model_runs_lynx_and_mi_peaks_on_it():
    """``validate --model smol-r1 --methods lynx,mi-peaks``: the settings that need only the model and its ground truth
    (the zoo's own settings stay off a real model; the zoo's validation table does not ask records for these)."""
    from thinklens.calibration.controls import select_settings

    on_model = {s.key: s.expected for s in select_settings(("lynx", "mi-peaks")) if s.on_model}
    assert on_model == {"lynx/planted-model": "recovered", "lynx/null-model": "no-effect", "mi-peaks/planted-model": "recovered",
                        "mi-peaks/null-model": "no-effect"}
