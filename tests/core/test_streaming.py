"""Long traces: per-step states stream into an ActivationStore during generation (``stream_to``), the
decoder holds at most ``stream_every`` steps, and the traces read back exactly the states of an
in-memory run. The slow test measures peak memory at 1x and 4x the trace length in a fresh process."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from thinklens import HookedModel, ThinklensError
from thinklens.engine.activation_store import ActivationStore, StoredStates
from thinklens.generation.decode_loop import Greedy, decode
from thinklens.generation.kv_batch import Decoder

PROMPTS = ["w1 w2 w3 w4", "w5 w6", "w7", "w9 w9 w9 w9 w9 w9 w9 w9"]
SITES = ["embed", "resid_pre.1", "attn_out.0", "mlp_out.1", "resid_post.1", "final_norm"]


@pytest.fixture(scope="module")
def stopping_model(tiny_dirs):
    """The tiny llama with an EOS that rows 0 and 3 reach early: rows of one batch stop at different steps."""
    m = HookedModel.load(str(tiny_dirs["llama"]))
    free = m.generate(PROMPTS, max_new_tokens=12)
    m.hf.generation_config.eos_token_id = [free[0].token_ids[4], free[3].token_ids[6]]
    return m


@pytest.mark.parametrize("backend", ["hooks", "nnsight"])
def test_streamed_states_equal_the_in_memory_run(stopping_model, tmp_path, backend):
    m = stopping_model
    kept = m.generate(PROMPTS, max_new_tokens=12, capture=SITES, backend=backend)
    store = ActivationStore(tmp_path / "acts")
    writer = store.writer(shard_mb=0.002)  # a few rows per shard: each trace spans several shards
    streamed = m.generate(PROMPTS, max_new_tokens=12, capture=SITES, stream_to=writer, stream_every=3, backend=backend)
    assert len({len(t) for t in kept}) > 1  # rows stopped at different steps
    assert len(store) == sum(len(t) for t in kept) and len(store.shards()) > 4
    for a, b in zip(kept, streamed):
        assert a.token_ids == b.token_ids and a.stop_reason == b.stop_reason
        assert isinstance(b.hidden, StoredStates) and list(b.hidden) == list(a.hidden)
        for s in a.hidden:
            assert torch.equal(a.hidden[s], b.hidden[s])
        torch.testing.assert_close(a.entropy, b.entropy, atol=0, rtol=0)
    # rows carry the trace id, the step and the token; a writer fed in-memory traces reads back the same
    rows = [m for b in store.iter_batches(10_000, with_meta=True) for m in b["meta"]]
    tid = streamed[2].hidden.trace_id
    assert sorted(r["step"] for r in rows if r["trace"] == tid) == list(range(len(kept[2])))
    other = ActivationStore(tmp_path / "after")
    with other.writer() as w:
        w.add_traces(kept, trace_ids=["a", "b", "c", "d"])
    torch.testing.assert_close(other.trace_states("d")[m.resolve_site("final_norm")], kept[3].hidden[m.resolve_site("final_norm")])


def test_decoder_holds_at_most_stream_every_steps(stopping_model, tmp_path):
    m = stopping_model
    held: list[int] = []

    class Watching(Greedy):
        def choose(self, logits, state):
            held.append(max(len(v) for v in state.decoder.states.values()))
            return super().choose(logits, state)

    dec = Decoder(m, PROMPTS)
    with ActivationStore(tmp_path / "a").writer() as w:
        from thinklens.engine.activation_store import TraceStream

        out = decode(dec, Watching(), max_new_tokens=12, capture=SITES, sink=TraceStream(w, list("abcd")), sink_every=4)
    assert out.hidden == {} and max(held) == 4 and all(len(v) == 0 for v in dec.states.values())


def test_stream_to_errors(tiny_models, tmp_path):
    m = tiny_models["llama"]
    with pytest.raises(ThinklensError, match="ActivationStore"):
        m.generate(["w1"], max_new_tokens=2, capture=["resid_post.0"], stream_to="acts/")
    with pytest.raises(ThinklensError, match="stream_every"):
        m.generate(["w1"], max_new_tokens=2, stream_every=0)
    store = ActivationStore(tmp_path)
    with store.writer() as w:
        w.add({m.resolve_site("resid_post.0"): torch.zeros(2, m.d_model)}, meta=[{"trace": "t", "step": i} for i in range(2)])
    assert store.trace_states("t")[m.resolve_site("resid_post.0")].shape == (2, m.d_model)
    with pytest.raises(ThinklensError, match="trace id"):
        store.trace_states("u")


# A model whose states dominate its memory: 10 sites x d=256 per token against a one-head KV cache
# of 64 numbers per token and layer. MALLOC_MMAP_THRESHOLD_ makes glibc map large blocks, so that the
# resident size counts live memory rather than the heap fragmentation that the KV cache's per-step
# torch.cat leaves in any HF decode loop (the report gives both).
MEASURE = textwrap.dedent('''
    import json, sys, tempfile, threading, time, torch
    torch.set_num_threads(1)
    import psutil
    from thinklens import HookedModel
    from thinklens.engine.activation_store import ActivationStore
    from tools.testing import build_tiny_model
    steps, batch = int(sys.argv[1]), int(sys.argv[2])
    root = tempfile.mkdtemp()
    m = HookedModel.load(str(build_tiny_model("gemma", root + "/m", d_model=256, n_heads=8, n_ctx=4 * steps + 16)))
    with torch.no_grad():
        m.hf.get_output_embeddings().weight[m.tokenizer.eos_token_id] = 0  # never the argmax of 63 random logits
    sites = ["embed", "resid_pre.*", "attn_out.*", "mlp_out.*", "resid_post.*", "final_norm"]
    prompts = [f"w{i} w{i + 1} w{i + 2}" for i in range(batch)]
    proc = psutil.Process()

    def peak_mb(fn):
        base, peak, stop = proc.memory_info().rss, [0], threading.Event()
        def watch():
            while not stop.is_set():
                peak[0] = max(peak[0], proc.memory_info().rss)
                time.sleep(0.002)
        th = threading.Thread(target=watch)
        th.start()
        try:
            fn()
        finally:
            stop.set()
            th.join()
        return round((max(peak[0], proc.memory_info().rss) - base) / 2**20, 2)

    def gen(n, stream):
        kw = {"stream_to": ActivationStore(tempfile.mkdtemp(dir=root)).writer(shard_mb=1), "stream_every": 16} if stream else {}
        traces = m.generate(prompts, max_new_tokens=n, capture=sites, top_k_stats=1, **kw)
        assert all(len(t) == n for t in traces)

    gen(8, False), gen(8, True)
    print(json.dumps({f"{'stream' if s else 'memory'}_{k}x": peak_mb(lambda: gen(k * steps, s)) for s in (True, False) for k in (1, 4)}))
''')


def measure_peak_memory(steps: int = 128, batch: int = 4, mmap_threshold: bool = True) -> dict[str, float]:
    """Peak resident-memory growth (MB) while generating ``steps`` and ``4 * steps`` tokens, streamed and not."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if mmap_threshold:
        env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    out = subprocess.run([sys.executable, "-c", MEASURE, str(steps), str(batch)], env=env, capture_output=True, text=True,
                         check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_streaming_peak_memory_is_flat_in_trace_length():
    mb = measure_peak_memory()
    print(mb)
    states_4x = 4 * 128 * 4 * 10 * 256 * 4 / 2**20  # steps x rows x sites x d x bytes: 20 MB
    assert mb["memory_4x"] > mb["memory_1x"] + 0.75 * states_4x  # in memory: grows with the length
    assert mb["stream_4x"] < mb["stream_1x"] + 0.25 * states_4x  # streamed: about flat (the KV cache grows)
