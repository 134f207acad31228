"""The packaged real models load from the cache, pass the site parity check, and carry their GGUF's provenance."""

from __future__ import annotations

import json

import pytest
import torch

pytestmark = pytest.mark.real

EXPECTED = {"smollm2-135m": ("llama", 30, 576, 49152), "gemma-3-270m": ("gemma3_text", 18, 640, 262144)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_loads_with_its_source(real_model, name):
    model = real_model(name)
    family, n_layers, d_model, vocab = EXPECTED[name]
    assert (model.config.model_type, model.n_layers, model.d_model, model.vocab_size) == (family, n_layers, d_model, vocab)
    assert model.source["dequantized"] is True and len(model.source["gguf_sha256"]) == 64
    # capture against HF's own hidden states (the parity check at load compares them too; this is the oracle)
    enc = model.tokenizer(["The cat sat on the mat because"], return_tensors="pt")
    with torch.no_grad():
        hs = model.hf(**enc, output_hidden_states=True).hidden_states
    got = model.capture(enc["input_ids"], sites=[f"resid_post.{n_layers // 2}"])[f"resid_post.{n_layers // 2}"]
    torch.testing.assert_close(got, hs[n_layers // 2 + 1], atol=1e-4, rtol=1e-4)


def test_smollm2_answers_in_its_chat_format(real_model):
    model = real_model("smollm2-135m")
    prompt = model.tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                                 add_generation_prompt=True, tokenize=False)
    (trace,) = model.generate([prompt], max_new_tokens=12)
    assert "Paris" in trace.text


def test_a_run_records_the_gguf_hash(real_model, tmp_path):
    import thinklens

    model = real_model("smollm2-135m")
    prompts = tmp_path / "p.txt"
    prompts.write_text("The cat sat on the mat\nA story about a dog\n")
    result = thinklens.run_job("capture", model=model, prompts=str(prompts), sites=("resid_post.3",), runs=str(tmp_path),
                               run_id="c", progress=False)
    meta = json.loads((result.run_dir / "meta.json").read_text())
    assert meta["model_sources"]["model"]["gguf_sha256"] == model.source["gguf_sha256"]


def test_models_command_lists_them_converted(capsys):
    from thinklens.cli import main
    from thinklens.engine.real_models import installed

    if not installed("smollm2-135m"):
        pytest.skip("smollm2-135m is not installed: run `make real`")
    assert main(["models", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["smollm2-135m"]["available"] and rows["smollm2-135m"]["where"].endswith(tuple("0123456789abcdef"))
