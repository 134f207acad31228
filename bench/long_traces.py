"""Long traces at the speed of the hardware: per-token time of long greedy generations on SmolLM2-135M.

At each length (512, 2,048 and 4,096 new tokens; 8,192 with ``--long``), batch 1, interleaved repeats:
plain transformers ``generate`` (dynamic cache), thinklens generate (logit statistics recorded), thinklens generate
capturing one residual site; at the longest standard length also transformers ``generate`` with a static cache
(the copy-free limit; eager, as the others). Then the peak RSS of thinklens generate with the captured states streamed to an activation
store, in a fresh process per length, and continuous batching against batch after batch on prompts whose budgets
range from 50 to 2,000 tokens (with each candidate's decode steps and its rows x attention width summed over
them: what a step reads). EOS is masked out of the logits (a hook on the LM head, the same for every
candidate), so every run makes exactly its length.

Shorter lengths get more repeats (:func:`repeats_at`). Per-token time is per decode step (:class:`StepClock`:
each step's best interval over the interleaved repeats, so a stall of the shared machine in one repeat drops out
and a cost the loop pays at some step stays in); the whole call's best time per token is printed beside it
(``..._wall_...``).

Prints ``name=value`` lines: per length ``plain_ms_per_token_N``, ``ours_..._N``, ``capture_..._N`` (per step) and
``..._wall_ms_per_token_N`` (the whole call, best of the repeats) with ``..._spread_N`` (the whole call's worst /
best), ``capture_vs_plain_N`` (and ``capture_vs_plain_wall_N``); ``static_ms_per_token_L``,
``vs_static_L`` (capture / static at L, and ``vs_static_wall_L``); ``tokens_equal_hf=1`` when every thinklens run made HF's tokens;
``rss_peak_mb_N``, ``kv_cache_mb_N`` and ``rss_growth_mb`` (peak growth from the shortest to the longest
standard length beyond the KV cache's own growth); ``..._batching_steps``, ``..._batching_row_columns``,
``continuous_batching_speedup``; and the headline
``capture_vs_plain_max`` (the worst length) last.

Usage: ``python -m bench.long_traces [--long] [--lengths 512,2048,4096] [--static-at 4096] [--repeats 3]
[--batching 32,50,2000,8] [--model smollm2-135m|random|tiny] [--threads 2] [--device cuda] [--tiny]``.
Without the real weights (``make real``) a random-weight model of SmolLM2-135M's config runs instead
(``--model random``). ``--quick`` runs short lengths (a check of the script, not the targets).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]

#: SmolLM2-135M's config (the converted model's config.json): the random-weight stand-in's shape.
SMOLLM2_135M = dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                    num_key_value_heads=3, head_dim=64, vocab_size=49152, max_position_embeddings=8192,
                    rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
                    tie_word_embeddings=True, hidden_act="silu", bos_token_id=1, eos_token_id=2, pad_token_id=2)
#: ``--tiny``: the script's logic in seconds on a CPU (a default-tier test runs it through bench/gpu/run.sh).
TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16, vocab_size=512)
PROMPT = "Solve step by step. A train leaves at 9:40 and arrives at 13:05. How long is the trip?"
TARGETS = {"capture_vs_plain_max": 1.05, "vs_static": 1.05, "rss_growth_mb": 100}


def emit(name: str, value: object) -> None:
    print(f"{name}={value:.4g}" if isinstance(value, float) else f"{name}={value}", flush=True)


def load(which: str, device: str):
    """The real SmolLM2-135M when installed (or asked), else a random-weight model of its config."""
    from thinklens import HookedModel
    from thinklens.engine.real_models import installed

    if which == "smollm2-135m" or (which == "auto" and installed("smollm2-135m")):
        return HookedModel.load("smollm2-135m", device=device), "smollm2-135m"
    import transformers as tf

    from tools.testing import word_tokenizer

    cfg = dict(SMOLLM2_135M, **(TINY if which == "tiny" else {}))
    torch.manual_seed(0)
    hf = tf.LlamaForCausalLM(tf.LlamaConfig(**cfg)).eval()
    tok = word_tokenizer(cfg["vocab_size"] - 3)
    return HookedModel(hf.to(device), tok), "tiny-random-llama" if which == "tiny" else "random-smollm2-135m-config"


def mask_eos(model) -> None:
    """Every run makes its full length: EOS ids get -inf logits (the same hook for HF and thinklens)."""
    from thinklens.generation.kv_batch import eos_ids

    ids = sorted(eos_ids(model))
    head = model.hf.get_output_embeddings()

    def hook(mod, args, out):
        out[..., ids] = float("-inf")
        return out
    head.register_forward_hook(hook)


class StepClock:
    """Times every decode step: a hook on the LM head stamps each forward's end (one head call per new token, the
    same for every candidate), so a run of n tokens gives n - 1 step intervals, each a whole step of its loop
    (choice, bookkeeping, capture, the forward). Across repeats, :meth:`per_token` sums each step's best interval:
    a transient stall of the shared machine hits a few steps of one repeat and drops out, while a cost the loop pays
    at some step (a buffer that grows, states handed over) is there in every repeat and stays in."""

    def __init__(self, model):
        self.stamps: list[float] | None = None
        self.sync = model.hf.device.type == "cuda"
        model.hf.get_output_embeddings().register_forward_hook(self._stamp)

    def _stamp(self, mod, args, out) -> None:
        if self.stamps is not None:
            if self.sync:
                torch.cuda.synchronize()
            self.stamps.append(time.perf_counter())

    def run(self, fn):
        """``fn()``'s result, its wall time and its step intervals."""
        self.stamps = []
        t = time.perf_counter()
        try:
            got = fn()
            if self.sync:
                torch.cuda.synchronize()
            wall = time.perf_counter() - t
            steps = [b - a for a, b in zip(self.stamps, self.stamps[1:])]
        finally:
            self.stamps = None
        return got, wall, steps

    @staticmethod
    def per_token(repeats: list[list[float]]) -> float:
        """Seconds per step: each step's best interval over the repeats, averaged over the steps."""
        n = min(len(r) for r in repeats)
        return sum(min(r[k] for r in repeats) for k in range(n)) / n


def kv_bytes_per_token(model) -> int:
    c = model.config
    heads = getattr(c, "num_key_value_heads", None) or c.num_attention_heads
    d_head = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    return 2 * c.num_hidden_layers * heads * d_head * model.hf.dtype.itemsize


def repeats_at(n: int, repeats: int) -> int:
    """Repeats at ``n`` new tokens: ``repeats`` at 2,048 and above, more at shorter lengths (up to 8; as many tokens
    as ``repeats`` at 2,048), where a run is short beside the shared machine's slow and fast phases of a minute or so."""
    return max(repeats, min(8, repeats * 2048 // n))


def timing(model, lengths: list[int], static_at: int, repeats: int, site: str) -> dict[str, float]:
    from thinklens.generation.generate import GenerateConfig, generate

    enc = model.tokenize([PROMPT])
    width = enc["input_ids"].shape[1]
    equal = True
    clock = StepClock(model)

    def plain(n: int, static: bool = False):
        # eager like the others: on CUDA, transformers would otherwise torch.compile the static-cache forward
        kw = {"cache_implementation": "static", "disable_compile": True} if static else {}
        with torch.no_grad():
            return model.hf.generate(**enc, max_new_tokens=n, do_sample=False, pad_token_id=model.tokenizer.pad_token_id, **kw)

    def ours(n: int, capture: bool):
        return generate(model, [PROMPT], GenerateConfig(max_new_tokens=n), capture=[site] if capture else [])

    out: dict[str, float] = {}
    for n in lengths:
        fns = {"plain": lambda: plain(n), "ours": lambda: ours(n, False), "capture": lambda: ours(n, True)}
        if n == static_at:
            fns["static"] = lambda: plain(n, True)
        walls: dict[str, list[float]] = {k: [] for k in fns}
        steps: dict[str, list[list[float]]] = {k: [] for k in fns}
        ref = None
        order = list(fns.items())
        emit(f"repeats_{n}", repeats_at(n, repeats))
        for r in range(repeats_at(n, repeats)):  # interleaved, the order reversed each repeat: drift hits all alike
            for k, f in (order if r % 2 == 0 else order[::-1]):
                got, wall, intervals = clock.run(f)
                walls[k].append(wall)
                steps[k].append(intervals)
                if k == "plain":
                    ref = got[0, width:].tolist()
                elif k in ("ours", "capture"):
                    equal &= got[0].token_ids == ref and len(got[0]) == n
        for k in fns:
            out[f"{k}_{n}"] = StepClock.per_token(steps[k])
            out[f"{k}_wall_{n}"] = min(walls[k])
            emit(f"{k}_ms_per_token_{n}", 1000 * out[f"{k}_{n}"])
            emit(f"{k}_wall_ms_per_token_{n}", 1000 * out[f"{k}_wall_{n}"] / n)
            emit(f"{k}_spread_{n}", max(walls[k]) / min(walls[k]))
        for a, b in [("capture", "plain"), ("ours", "plain")] + ([("capture", "static")] if n == static_at else []):
            name = f"vs_static_{n}" if b == "static" else f"{a}_vs_plain_{n}"
            emit(name.replace(f"_{n}", f"_wall_{n}"), out[f"{a}_wall_{n}"] / out[f"{b}_wall_{n}"])
            emit(name, out[f"{a}_{n}"] / out[f"{b}_{n}"])
    emit("tokens_equal_hf", int(equal))
    return out


RSS_CHILD = """
import json, tempfile, threading, time, torch
torch.set_num_threads({threads})
import psutil
from bench.long_traces import PROMPT, load, mask_eos
from thinklens.engine.activation_store import ActivationStore
from thinklens.generation.generate import GenerateConfig, generate
model, _ = load({which!r}, {device!r})
mask_eos(model)
generate(model, [PROMPT], GenerateConfig(max_new_tokens=8), capture=[{site!r}])  # warm: lazy imports, allocator
proc = psutil.Process()
base, peak, stop = proc.memory_info().rss, [0], threading.Event()
def watch():
    while not stop.is_set():
        peak[0] = max(peak[0], proc.memory_info().rss)
        time.sleep(0.005)
th = threading.Thread(target=watch); th.start()
try:
    store = ActivationStore(tempfile.mkdtemp())
    tr = generate(model, [PROMPT], GenerateConfig(max_new_tokens={n}, stream_every=64), capture=[{site!r}],
                  stream_to=store.writer(shard_mb=4))
finally:
    stop.set(); th.join()
print(json.dumps({{"base_mb": base / 2**20, "peak_mb": peak[0] / 2**20, "tokens": len(tr[0]), "rows": len(store)}}))
"""


#: The longest length of the memory target (``rss_growth_mb``: peak RSS growth from 512 to 4,096 tokens).
RSS_SPAN = 4096


def rss_lengths(lengths: list[int], span: int = RSS_SPAN) -> tuple[int, list[int]]:
    """The shortest length and the longer ones whose peak RSS is measured against it: the longest within the target's
    span (its ``rss_growth_mb``) and the longest of all, when they differ; none when there is one length.

    Example:
        >>> rss_lengths([512, 2048, 4096]), rss_lengths([512, 2048, 4096, 8192]), rss_lengths([512, 8192]), rss_lengths([512])
        ((512, [4096]), (512, [4096, 8192]), (512, [8192]), (512, []))
    """
    ordered = sorted(lengths)
    within = [n for n in ordered if n <= span]
    ends = {within[-1] if within else ordered[0], ordered[-1]}
    return ordered[0], sorted(n for n in ends if n > ordered[0])


def rss(which: str, device: str, lengths: list[int], threads: int, site: str, per_token: int) -> None:
    """Peak RSS of streamed-capture generation, a fresh process per length (glibc maps large blocks, so RSS counts
    live memory rather than heap fragments): ``rss_growth_mb`` from the shortest length to the longest within
    ``RSS_SPAN``, ``rss_growth_mb_N`` to each longer one measured (``rss_lengths``)."""
    lo, longer = rss_lengths(lengths)
    if not longer:
        emit("rss", f"skipped (one length, {lo}: the growth needs a longer one)")
        return
    peaks = {}
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    for n in (lo, *longer):
        code = RSS_CHILD.format(threads=threads, which=which, device=device, site=site, n=n)
        # run in the repository's root, so that the child imports bench.long_traces (and tools/) from its path
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=ROOT)
        got = json.loads(res.stdout.strip().splitlines()[-1])
        peaks[n] = got["peak_mb"] - got["base_mb"]
        emit(f"rss_peak_mb_{n}", peaks[n])
        emit(f"kv_cache_mb_{n}", per_token * n / 2**20)
    for n in longer:
        growth = peaks[n] - peaks[lo] - per_token * (n - lo) / 2**20
        emit(f"rss_growth_mb_{n}", growth)
        if n <= RSS_SPAN:
            emit("rss_growth_mb", growth)


def batching(model, n_prompts: int, shortest: int, longest: int, slots: int, repeats: int = 1) -> None:
    """32 prompts whose traces run from 50 to 2,000 tokens (budgets evenly spread, shuffled): continuous batching
    against batch after batch, ``slots`` rows at a time."""
    from thinklens.generation.generate import GenerateConfig, generate

    g = torch.Generator().manual_seed(0)
    budgets = torch.linspace(shortest, longest, n_prompts).round().long()[torch.randperm(n_prompts, generator=g)].tolist()
    prompts = [f"{PROMPT} (case {i})" for i in range(n_prompts)]
    times: dict[str, list[float]] = {"continuous": [], "batched": []}
    toks = {}
    counts = {"steps": 0, "row_columns": 0}  # decode steps and rows x attention width summed over them

    def count(mod, args, kw):
        ids, mask = kw.get("input_ids"), kw.get("attention_mask")
        if ids is not None and ids.shape[1] == 1:
            counts["steps"] += 1
            counts["row_columns"] += ids.shape[0] * (mask.shape[1] if mask is not None else 0)
    handle = model.hf.register_forward_pre_hook(count, with_kwargs=True)
    for k in range(repeats):  # alternating, the first candidate swapped each repeat: drift hits both alike
        order = (("continuous", True), ("batched", False))
        for name, cont in (order if k % 2 == 0 else order[::-1]):
            counts.update(steps=0, row_columns=0)
            t = time.perf_counter()
            got = generate(model, prompts, GenerateConfig(max_new_tokens=tuple(budgets), batch_size=slots, continuous=cont,
                                                         top_k_stats=5))
            times[name].append(time.perf_counter() - t)
            toks[name] = [tr.token_ids for tr in got]
            if k < 2:
                emit(f"{name}_batching_steps", counts["steps"])
                emit(f"{name}_batching_row_columns", counts["row_columns"])
    handle.remove()
    for name, v in times.items():
        emit(f"{name}_batching_s", min(v))
        emit(f"{name}_batching_spread", max(v) / min(v))
    times = {name: min(v) for name, v in times.items()}
    emit("batching_prompts", n_prompts)
    emit("batching_tokens", sum(budgets))
    emit("batching_slots", slots)
    emit("batching_tokens_equal", int(toks["continuous"] == toks["batched"]))
    emit("continuous_batching_speedup", times["batched"] / times["continuous"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="auto", choices=["auto", "smollm2-135m", "random", "tiny"])
    ap.add_argument("--lengths", default="512,2048,4096")
    ap.add_argument("--long", action="store_true", help="add 8,192 new tokens")
    ap.add_argument("--static-at", type=int, default=4096, help="the length timed against HF generate with a static cache")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batching", default="32,50,2000,8", help="prompts,shortest,longest,slots")
    ap.add_argument("--batching-repeats", type=int, default=1, help="alternating runs of each batching candidate")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--quick", action="store_true", help="lengths 64,256 (static at 256), batching 8,10,120,4, 2 repeats")
    ap.add_argument("--skip", default="", help="comma-separated stages to skip: timing,rss,batching")
    ap.add_argument("--tiny", action="store_true", help="a tiny random model, lengths 8,16, no RSS stage: the logic only")
    args = ap.parse_args()
    if args.quick:
        args.lengths, args.static_at, args.batching, args.repeats = "64,256", 256, "8,10,120,4", 2
    if args.tiny:
        args.model, args.lengths, args.static_at, args.batching, args.repeats = "tiny", "8,16", 16, "4,2,10,2", 1
        args.skip = ",".join(filter(None, [args.skip, "rss"]))
    lengths = [int(x) for x in args.lengths.split(",")] + ([8192] if args.long else [])
    skip = set(filter(None, args.skip.split(",")))
    torch.set_num_threads(args.threads)
    model, name = load(args.model, args.device)
    mask_eos(model)
    site = f"resid_post.{model.n_layers // 2}"
    emit("model", name)
    emit("params", sum(p.numel() for p in model.hf.parameters()))
    emit("threads", args.threads)
    emit("lengths", ",".join(map(str, lengths)))
    emit("capture_site", site)
    ratios = {}
    if "timing" not in skip:
        t = timing(model, lengths, args.static_at, args.repeats, site)
        ratios = {n: t[f"capture_{n}"] / t[f"plain_{n}"] for n in lengths}
    if "rss" not in skip and importlib.util.find_spec("psutil") is None:
        emit("rss", "skipped (no psutil)")
    elif "rss" not in skip:
        rss({"smollm2-135m": "smollm2-135m", "tiny-random-llama": "tiny"}.get(name, "random"), args.device, lengths, args.threads, site,
            kv_bytes_per_token(model))
    if "batching" not in skip:
        n, lo, hi, slots = (int(x) for x in args.batching.split(","))
        batching(model, n, lo, hi, slots, args.batching_repeats)
    if ratios:
        emit("capture_vs_plain_wall_max", max(t[f"capture_wall_{n}"] / t[f"plain_wall_{n}"] for n in lengths))
        emit("capture_vs_plain_max_target", TARGETS["capture_vs_plain_max"])
        emit("capture_vs_plain_max", max(ratios.values()))


if __name__ == "__main__":
    main()
