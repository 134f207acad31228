"""Traced generation through nnsight (the remote path) equals our hook-based decode loop.

The nnsight backend runs here with nnsight's local execution: the same code that a remote (NDIF) model
runs, with ``remote=False``. Greedy and seeded sampled tokens are identical; states, entropy and top-k
probabilities agree to float32 rounding (atol 1e-5); stop reasons (EOS, stop strings, budget) are equal.
"""

import pytest
import torch

from thinklens import HookedModel, Site, ThinklensError
from thinklens.engine.interventions import AddVector
from thinklens.generation.generate import GenerateConfig, generate
from tools.testing import unreachable_ndif

PROMPTS = ["w1 w2 w3 w4", "w5 w6", "w7", "w9 w9 w9 w9 w9 w9 w9 w9"]
SITES = ["embed", "resid_pre.0", "attn_out.0", "mlp_out.1", "resid_post.1", "final_norm", "logits"]


def assert_same_traces(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.token_ids == b.token_ids and a.text == b.text and a.stop_reason == b.stop_reason
        assert a.prompt_ids == b.prompt_ids and set(a.hidden) == set(b.hidden)
        for s in a.hidden:
            assert a.hidden[s].dtype == b.hidden[s].dtype == torch.float32
            torch.testing.assert_close(a.hidden[s], b.hidden[s], atol=1e-5, rtol=0)
        torch.testing.assert_close(a.entropy, b.entropy, atol=1e-5, rtol=0)
        torch.testing.assert_close(a.topk_probs, b.topk_probs, atol=1e-5, rtol=0)
        assert torch.equal(a.topk_ids, b.topk_ids)


@pytest.mark.parametrize("fam", ["llama", "gpt2", "gemma"])
def test_nnsight_greedy_traces_equal_hooks(tiny_models, fam):
    m = tiny_models[fam]
    cfg = GenerateConfig(max_new_tokens=10, top_k_stats=3)
    assert_same_traces(generate(m, PROMPTS, cfg, capture=SITES), generate(m, PROMPTS, cfg, capture=SITES, backend="nnsight"))


@pytest.mark.parametrize("kw", [dict(do_sample=True, seed=3, temperature=1.5),
                                dict(do_sample=True, seed=5, batch_size=3),  # a later batch continues the generator
                                dict(stop=("w3",)),
                                dict(batch_size=2)])
def test_nnsight_sampling_stops_and_batches_equal_hooks(tiny_models, kw):
    m = tiny_models["llama"]
    cfg = GenerateConfig(max_new_tokens=10, **kw)
    ours = generate(m, PROMPTS, cfg, capture=["resid_post.1"])
    assert_same_traces(ours, generate(m, PROMPTS, cfg, capture=["resid_post.1"], backend="nnsight"))
    if "stop" in kw:
        assert "stop_string" in {t.stop_reason for t in ours}


def test_nnsight_eos_and_model_generation_config_ignored(tiny_dirs):
    m = HookedModel.load(str(tiny_dirs["llama"]))
    free = m.generate(PROMPTS, max_new_tokens=10)
    m.hf.generation_config.eos_token_id = [free[0].token_ids[2], free[3].token_ids[4]]  # rows 0 and 3 now stop early
    m.hf.generation_config.repetition_penalty = 5.0  # processors of the model's own config apply to neither path
    m.hf.generation_config.top_k = 2
    for kw in (dict(), dict(do_sample=True, seed=1)):
        cfg = GenerateConfig(max_new_tokens=10, **kw)
        ours = generate(m, PROMPTS, cfg, capture=["resid_post.0"])
        assert_same_traces(ours, generate(m, PROMPTS, cfg, capture=["resid_post.0"], backend="nnsight"))
        if not kw:
            assert ours[0].stop_reason == ours[3].stop_reason == "eos" and len(ours[0]) <= 3 and len(ours[3]) <= 5


def test_remote_generate_goes_through_nnsight_with_remote_true(tiny_dirs, monkeypatch):
    m = HookedModel.load(str(tiny_dirs["llama"]), remote=True)
    calls = unreachable_ndif(monkeypatch, m.to_nnsight(), "generate")
    with pytest.raises(ThinklensError, match="NDIF"):
        m.generate(["w1 w2"], max_new_tokens=3, capture=["resid_post.1"])
    assert calls["remote"] is True and calls["generation_config"].max_new_tokens == 3
    with pytest.raises(ThinklensError, match="nnsight for a remote model"):
        m.generate(["w1"], max_new_tokens=2, backend="hooks")


def test_nnsight_backend_refuses_interventions_and_unknown_backends(tiny_models):
    m = tiny_models["llama"]
    with pytest.raises(ThinklensError, match="interventions"):
        m.generate(["w1"], max_new_tokens=2, backend="nnsight", interventions=[AddVector(Site("resid_post", 0), torch.zeros(m.d_model))])
    with pytest.raises(ThinklensError, match="did you mean|one of"):
        m.generate(["w1"], max_new_tokens=2, backend="nnsite")


def test_the_remote_request_ships_without_thinklens_and_runs_where_only_nnsight_is(tiny_dirs, monkeypatch):
    """What NDIF receives names no thinklens object (the server has torch, transformers and nnsight only), and
    nnsight's local simulation of a server (the request serialized, then run with the user's modules hidden)
    gives the states of the hook loop."""
    from nnsight.intervention.backends.remote import RemoteBackend

    from thinklens.engine.nnsight_backend import capture_with_nnsight, decode_with_nnsight
    from thinklens.generation.decode_loop import Sample, decode
    from thinklens.generation.kv_batch import Decoder

    remote = HookedModel.load(str(tiny_dirs["llama"]), remote=True)
    payloads = []

    def request(self, request, tracer):
        payloads.append(self._serialize(tracer))
        raise ConnectionError("offline")

    monkeypatch.setattr(RemoteBackend, "request", request)
    monkeypatch.setattr(type(remote.to_nnsight()), "_remoteable_model_key", lambda self: "tiny-llama")
    with pytest.raises(ThinklensError, match="NDIF"):
        remote.generate(["w1 w2"], max_new_tokens=3, capture=["resid_post.1", "attn_out.0"], do_sample=True, seed=2)
    with pytest.raises(ThinklensError, match="NDIF"):
        remote.capture(["w1 w2"], ["resid_post.1", "attn_out.0"])
    assert len(payloads) == 2 and all(b"thinklens" not in p for p in payloads)

    m = HookedModel.load(str(tiny_dirs["llama"]))
    sites = m.resolve_sites(["resid_pre.0", "attn_out.0", "resid_post.1"])
    cfg = GenerateConfig(max_new_tokens=6, do_sample=True, seed=4)
    sim = decode_with_nnsight(m, m.tokenize(PROMPTS), cfg, sites, remote="local")
    ours = decode(Decoder(m, PROMPTS), Sample(torch.Generator().manual_seed(4)), max_new_tokens=6, capture=sites, top_k_stats=5)
    assert torch.equal(sim.tokens, ours.tokens)
    for s in sites:
        torch.testing.assert_close(sim.hidden[s], ours.hidden[s], atol=1e-5, rtol=0)
    torch.testing.assert_close(sim.entropy, ours.entropy, atol=1e-5, rtol=0)
    caught = capture_with_nnsight(m, m.tokenize(PROMPTS), sites, remote="local")
    for s in sites:
        torch.testing.assert_close(caught[s], m.capture(PROMPTS, [s])[s], atol=1e-5, rtol=0)


def test_a_whole_job_runs_the_remote_way(tiny_dirs, tmp_path):
    """remote="local": local weights, every call through nnsight's simulation of an NDIF server; mi-peaks writes the
    files of a local run."""
    from thinklens.runs.jobs import run_job

    small = dict(n_problems=2, max_new_tokens=4, k=2, ci="wilson", progress=False, threads=1, runs=tmp_path)
    local = run_job("mi-peaks", model=HookedModel.load(str(tiny_dirs["llama"])), run_id="local", **small)
    sim = HookedModel.load(str(tiny_dirs["llama"]), remote="local")
    assert sim.remote == "local" and sim.device.type == "cpu"
    assert run_job("mi-peaks", model=sim, run_id="sim", **small).value == local.value  # the run folders differ
    a, b = tmp_path / "mi-peaks" / "local", tmp_path / "mi-peaks" / "sim"
    for rel in sorted(p.relative_to(a) for p in a.glob("trajectories/*/*.json")):
        assert (a / rel).read_bytes() == (b / rel).read_bytes()
    with pytest.raises(ThinklensError, match="local weights"):
        sim.forward_with(["w1"])  # as on NDIF


def test_remote_failures_become_one_clear_error_and_local_ones_pass_unchanged():
    from types import SimpleNamespace

    from thinklens.engine.nnsight_backend import remote_errors

    model = SimpleNamespace(name="meta-llama/Llama-3.1-70B")
    with pytest.raises(ThinklensError, match="NDIF key .ConnectionError: refused"):
        with remote_errors(model, True):
            raise ConnectionError("refused")
    for remote in (False, "local"):
        with pytest.raises(ConnectionError):
            with remote_errors(model, remote):
                raise ConnectionError("refused")
    with pytest.raises(ThinklensError, match="ours"):
        with remote_errors(model, True):
            raise ThinklensError("ours")


def test_every_module_imports_after_nnsight():
    """Importing nnsight mounts ``save`` on ``object``: a dataclass field named ``save`` defined afterwards gets that
    method as its default and the class fails to build. Every project module must import in that order."""
    import subprocess
    import sys

    code = ("import importlib, pkgutil, nnsight\n"
            "assert hasattr(object, 'save')\n"
            "for package in ('thinklens', 'thinklens.analyses', 'thinklens.probes', 'thinklens.steering', 'thinklens.latent'):\n"
            "    for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + '.'):\n"
            "        importlib.import_module(info.name)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
