"""GPU benchmark: hooked capture, traced generation, the MI estimator and a CODI step at the shapes of real models.

Builds Qwen2.5-1.5B- and Llama-3-8B-shaped models from their config values (random weights in bfloat16, made
on the device: nothing is downloaded) and prints ``name=value`` lines, the headline last:

  <model>_capture_overhead          all-layer resid_post capture / plain HF forward (batch 16 x 1024 tokens)
  <model>_generate_overhead_b<B>    traced generation (512 new tokens, two sites captured, logit statistics)
                                    / plain HF ``generate``, at batch 1 and 32
  <model>_{traced,hf}_tokens_per_s_b<B>, <model>_{traced,hf}_peak_gib_b<B>  throughput and peak device memory
  <model>_greedy_rows_equal_b<B>    rows whose greedy tokens equal HF's (of B)
  <model>_mi_trajectory_s           nHSIC of one 512-step trajectory of last-block states (d = 1536 / 4096),
                                    float64 on the device
  mi_device_vs_cpu_max_abs          the estimator on the device against the CPU (8 steps, d = 1536)
  codi_step_ratio                   one CODI step (6 latents) / one CoT-SFT step, batch 32, Qwen2.5-1.5B shape
  gpu_generate_overhead             headline: the largest generate overhead measured

Runs with only torch, transformers, accelerate, safetensors, jaxtyping and scikit-learn installed (no
nnsight, TransformerLens or sae-lens): the repository on PYTHONPATH, nothing installed (bench/gpu/run.sh).
Stages that would not finish within ``--budget-s`` print ``<stage>=skipped``.

Usage: ``python -m bench.gpu.bench_gpu [--tiny] [--device cuda] [--budget-s 420] [--models qwen,llama]``;
``--tiny``: tiny models of the same families and a few tokens, to check the script's logic on a CPU.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch

# Config values of the released models (config.json of Qwen/Qwen2.5-1.5B and meta-llama/Meta-Llama-3-8B).
QWEN25_1_5B = dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                   num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, rms_norm_eps=1e-6,
                   rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, tie_word_embeddings=True,
                   use_sliding_window=False, hidden_act="silu")
LLAMA3_8B = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                 num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192, rms_norm_eps=1e-5,
                 rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, tie_word_embeddings=False,
                 hidden_act="silu")
TINY_SHAPE = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  vocab_size=512)


@dataclass(frozen=True)
class Sizes:
    """What one run measures."""

    capture_batch: int
    capture_len: int
    prompt_len: int
    new_tokens: int
    batches: tuple[int, ...]
    codi_batch: int
    repeats: int


FULL = Sizes(capture_batch=16, capture_len=1024, prompt_len=64, new_tokens=512, batches=(1, 32), codi_batch=32, repeats=3)
TINY = Sizes(capture_batch=2, capture_len=32, prompt_len=8, new_tokens=8, batches=(1, 2), codi_batch=4, repeats=1)
MODELS = {"qwen": ("qwen2.5-1.5b", "qwen2", QWEN25_1_5B), "llama": ("llama-3-8b", "llama", LLAMA3_8B)}


def emit(name: str, value: object) -> None:
    """One ``name=value`` line, flushed (a run cut short keeps what it printed)."""
    if isinstance(value, float):
        value = "nan" if math.isnan(value) else f"{value:.4g}"
    print(f"{name}={value}", flush=True)


class Clock:
    """Seconds left of the budget; device work is synchronised before every reading."""

    def __init__(self, budget_s: float, device: torch.device):
        self.start, self.budget, self.device = time.monotonic(), budget_s, device
        self.took: dict[str, float] = {}

    def fits(self, kind: str, estimate: float, scale: float = 1.0) -> bool:
        """Whether a stage of ``kind`` fits in the time left: ``estimate`` seconds, or 1.5x the last stage of that
        kind times ``scale`` (a larger model) once one ran."""
        last = self.took.get(kind)
        return self.left() >= max(estimate, 1.5 * scale * last if last is not None else 0.0)

    def run(self, kind: str, fn: Callable[[], object]) -> object:
        """Run a stage and remember how long it took."""
        t = time.monotonic()
        out = fn()
        self.took[kind] = time.monotonic() - t
        return out

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def left(self) -> float:
        return self.budget - (time.monotonic() - self.start)

    def timed(self, fn: Callable[[], object]) -> tuple[float, object]:
        self.sync()
        t = time.perf_counter()
        out = fn()
        self.sync()
        return time.perf_counter() - t, out

    def best_of(self, fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
        """Best-of-N seconds, candidates alternating (drift hits them alike), after one warm-up call each."""
        times: dict[str, list[float]] = {k: [] for k in fns}
        for f in fns.values():
            self.timed(f)
        for _ in range(repeats):
            for k, f in fns.items():
                times[k].append(self.timed(f)[0])
        return {k: min(v) for k, v in times.items()}

    def peak(self, fn: Callable[[], object]) -> tuple[float, object, float]:
        """``(seconds, result, peak GiB allocated during fn)``; peak is nan off CUDA."""
        if self.device.type != "cuda":
            s, out = self.timed(fn)
            return s, out, float("nan")
        self.sync()
        torch.cuda.reset_peak_memory_stats(self.device)
        s, out = self.timed(fn)
        return s, out, torch.cuda.max_memory_allocated(self.device) / 2**30


def word_tokenizer(vocab_size: int):
    """``<pad> <unk> w0 .. w{V-3}``: one token per word, no EOS (random models then generate every new token)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["<pad>", "<unk>"] + [f"w{i}" for i in range(vocab_size - 2)])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>")


def build(family: str, shape: dict, device: torch.device, tiny: bool):
    """A random-init bf16 model of ``shape`` made on ``device``, as a HookedModel (site parity checked)."""
    import transformers as tf

    from thinklens.engine.model import HookedModel
    from thinklens.engine.parity import check_site_parity

    fields = {**shape, **(TINY_SHAPE if tiny else {}), "pad_token_id": 0, "bos_token_id": None, "eos_token_id": None}
    cfg = (tf.Qwen2Config if family == "qwen2" else tf.LlamaConfig)(**fields)
    torch.manual_seed(0)
    with torch.device(device):
        hf = tf.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    hf.eval()
    hf.generation_config.eos_token_id = None
    hf.generation_config.pad_token_id = 0
    model = HookedModel(hf, word_tokenizer(cfg.vocab_size), name=f"random-{family}")
    check_site_parity(model)
    return model


def word_prompts(model, n: int, length: int, seed: int) -> list[str]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.vocab_size - 2, (n, length), generator=g)
    return [" ".join(f"w{int(i)}" for i in row) for row in ids]


def bench_capture(tag: str, model, sizes: Sizes, clock: Clock) -> None:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(2, model.vocab_size, (sizes.capture_batch, sizes.capture_len), generator=g).to(model.device)
    mask = torch.ones_like(ids)
    sites = model.resolve_sites("resid_post.*")

    @torch.no_grad()
    def plain():
        model.hf(input_ids=ids, attention_mask=mask, use_cache=False)

    def capture():
        model.capture(ids, sites)

    t = clock.best_of({"plain": plain, "capture": capture}, sizes.repeats)
    emit(f"{tag}_forward_s", t["plain"])
    emit(f"{tag}_capture_s", t["capture"])
    emit(f"{tag}_capture_overhead", t["capture"] / t["plain"])


def bench_generate(tag: str, model, b: int, sizes: Sizes, clock: Clock, overheads: list[float]) -> list:
    """Traced generation against HF ``generate`` at batch ``b``; returns the traces (for the MI stage)."""
    prompts = word_prompts(model, b, sizes.prompt_len, seed=b)
    sites = [f"resid_post.{model.n_layers // 2}", "resid_post.-1"]
    enc = model.tokenize(prompts)
    n = sizes.new_tokens

    def hf(k: int):
        return model.hf.generate(**enc, max_new_tokens=k, do_sample=False, pad_token_id=model.tokenizer.pad_token_id)

    def ours(k: int):
        return model.generate(prompts, max_new_tokens=k, capture=sites)

    clock.timed(lambda: hf(4))  # warm-up: kernels, allocator
    clock.timed(lambda: ours(4))
    t_hf, ref, peak_hf = clock.peak(lambda: hf(n))
    t_ours, traces, peak_ours = clock.peak(lambda: ours(n))
    width = enc["input_ids"].shape[1]
    equal = sum(tr.token_ids == ref[r, width:].tolist() for r, tr in enumerate(traces))
    emit(f"{tag}_new_tokens_b{b}", min(len(tr) for tr in traces))
    emit(f"{tag}_hf_generate_s_b{b}", t_hf)
    emit(f"{tag}_traced_generate_s_b{b}", t_ours)
    emit(f"{tag}_hf_tokens_per_s_b{b}", b * n / t_hf)
    emit(f"{tag}_traced_tokens_per_s_b{b}", b * n / t_ours)
    emit(f"{tag}_hf_peak_gib_b{b}", peak_hf)
    emit(f"{tag}_traced_peak_gib_b{b}", peak_ours)
    emit(f"{tag}_greedy_rows_equal_b{b}", f"{equal}/{b}")
    emit(f"{tag}_generate_overhead_b{b}", t_ours / t_hf)
    overheads.append(t_ours / t_hf)
    return traces


def bench_mi(tag: str, model, traces: list | None, sizes: Sizes, clock: Clock):
    """nHSIC of one trajectory of last-block states (512 steps at full size) on the device; returns (states, answer)."""
    from thinklens.analyses.mi.estimator import nhsic_trajectory
    from thinklens.engine.sites import Site

    site = Site("resid_post", model.n_layers - 1)
    if traces is not None and len(traces) > 1:
        states, answer = traces[0].hidden[site], traces[1].hidden[site][-1]  # [step, d], [d] (bf16, CPU)
    else:  # the generation stage was skipped: Gaussian states of the model's width
        g = torch.Generator().manual_seed(0)
        states = torch.randn(sizes.new_tokens, model.d_model, generator=g)
        answer = torch.randn(model.d_model, generator=g)
    dev = clock.device
    clock.timed(lambda: nhsic_trajectory(states[:4], answer, device=dev))  # warm-up (kernels, solver)
    seconds, curve = clock.timed(lambda: nhsic_trajectory(states, answer, device=dev))
    emit(f"{tag}_mi_d", int(states.shape[1]))
    emit(f"{tag}_mi_steps", int(states.shape[0]))
    emit(f"{tag}_mi_trajectory_s", seconds)
    emit(f"{tag}_mi_fallback_steps", curve.n_fallback)
    return states, answer


def bench_mi_device_vs_cpu(states: torch.Tensor, answer: torch.Tensor, clock: Clock) -> None:
    from thinklens.analyses.mi.estimator import nhsic_trajectory

    dev = nhsic_trajectory(states[:8], answer, device=clock.device).mi
    cpu = nhsic_trajectory(states[:8], answer, device="cpu").mi
    emit("mi_device_vs_cpu_max_abs", float((dev - cpu).abs().max()))
    emit("mi_max_score", float(cpu.abs().max()))


def bench_codi(model, sizes: Sizes, clock: Clock) -> None:
    """One CODI step (teacher + student with 6 latents + distillation) against one CoT-SFT step on one batch."""
    from bench._latent_steps import codi_and_cot_steps
    from thinklens.engine.model import HookedModel
    from thinklens.latent.segments import example_from_problem
    from thinklens.tasks import generate_problems
    from thinklens.zoo.tokenizer import build_zoo_tokenizer

    zoo = HookedModel(model.hf, build_zoo_tokenizer(), name=model.name)  # the zoo's task, the big model's body
    rows = [example_from_problem(p, zoo.tokenizer) for p in generate_problems(sizes.codi_batch, seed=0, n_steps=3)]
    t = clock.best_of(codi_and_cot_steps(zoo, rows, lr=1e-5, dtype=torch.bfloat16), sizes.repeats)
    emit("codi_batch", sizes.codi_batch)
    emit("cot_step_s", t["cot"])
    emit("codi_step_s", t["codi"])
    emit("codi_step_ratio", t["codi"] / t["cot"])


# Seconds a stage needs at full size: first estimates; then 1.5x what the last stage of its kind took, scaled by
# the model's size. A stage that would end past the budget is skipped.
NEED = {"capture": 20, "generate": 90, "mi": 20, "codi": 30, "llama": 200}


def bench_model(key: str, device: torch.device, sizes: Sizes, clock: Clock, overheads: list[float], *, tiny: bool):
    """Every stage on one model (and the CODI step on the Qwen shape); returns the MI stage's (states, answer)."""
    tag, family, shape = MODELS[key]
    scale = 1.0 if key == "qwen" else 2.5  # Llama-3-8B against Qwen2.5-1.5B: more layers, 2.7x the width
    model = build(family, shape, device, tiny)
    emit(f"{tag}_params_b", sum(p.numel() for p in model.hf.parameters()) / 1e9)
    emit(f"{tag}_d_model", model.d_model)
    traces_by_b: dict[int, list] = {}
    stages: list[tuple[str, Callable[[], object]]] = [("capture", lambda: bench_capture(tag, model, sizes, clock))]
    for b in sorted(sizes.batches, reverse=True):  # the large batch first: its traces feed the MI stage
        stages.append((f"generate_b{b}", lambda b=b: traces_by_b.__setitem__(
            b, bench_generate(tag, model, b, sizes, clock, overheads))))
    stages.append(("mi", lambda: bench_mi(tag, model, traces_by_b.get(max(sizes.batches)), sizes, clock)))
    mi_inputs = None
    for name, run in stages:
        kind = name.split("_")[0]
        if not tiny and not clock.fits(kind, NEED[kind], scale):
            emit(f"{tag}_{name}", "skipped")
            continue
        out = clock.run(kind, run)
        if name == "mi":
            mi_inputs = out
    traces_by_b.clear()
    if key == "qwen":
        if tiny or clock.fits("codi", NEED["codi"]):
            with torch.enable_grad():
                clock.run("codi", lambda: bench_codi(model, sizes, clock))
        else:
            emit("codi", "skipped")
    return mi_inputs


def free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="tiny models and a few tokens (checks the logic, on a CPU too)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--budget-s", type=float, default=420.0, help="stages that would end past this are skipped")
    ap.add_argument("--models", default="qwen,llama", help="comma-separated: qwen, llama")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    if device.type != "cuda" and not args.tiny:
        sys.exit("bench_gpu: the full sizes need a CUDA device; pass --tiny to check the logic on a CPU")
    sizes = TINY if args.tiny else FULL
    clock = Clock(args.budget_s, device)
    import transformers

    emit("bench_mode", "tiny" if args.tiny else "full")
    emit("device", torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu")
    emit("torch", torch.__version__)
    emit("transformers", transformers.__version__)
    torch.set_grad_enabled(False)  # every stage but the CODI steps (which enable it) is inference

    overheads: list[float] = []
    mi_inputs = None
    for key in [k.strip() for k in args.models.split(",") if k.strip()]:
        tag = MODELS[key][0]
        if not args.tiny and key == "llama" and clock.left() < NEED["llama"]:
            emit(tag, "skipped")
            continue
        states = bench_model(key, device, sizes, clock, overheads, tiny=args.tiny)
        mi_inputs = mi_inputs or states
        free(device)
    if mi_inputs is not None:
        bench_mi_device_vs_cpu(*mi_inputs, clock)
    emit("elapsed_s", clock.budget - clock.left())
    emit("gpu_generate_overhead", max(overheads) if overheads else float("nan"))


if __name__ == "__main__":
    main()
