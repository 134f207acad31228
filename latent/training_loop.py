"""The training loop of every latent method: phases, Accelerate, checkpoints, resume, LoRA, run folder.

One script runs on one CPU, several CPU processes (gloo) or GPUs: Hugging Face Accelerate sets up
the process group and wraps the trainer module in DDP; the global batch ``k`` is drawn from
``(seed, k)`` and every process takes its contiguous slice, and losses are per-example means, so 1
and 2 processes follow the same curve (tested). Checkpoints (every ``ckpt_every`` steps and at each
phase end) hold the weights and the AdamW state as safetensors plus a JSON state; a killed run re-run
with the same config resumes and ends with the same metrics as an uninterrupted one (tested).

Each method comes from the method table (:mod:`thinklens.latent.methods`): its phases, its trainer module, what a
continued run must keep, its side modules; this loop knows no method by name.

Example:
    >>> # thinklens run codi --train-steps 400 --publish data/zoo/tiny-codi          (the job: latent/jobs/trainers.py)
    >>> # metrics = thinklens.run_job("codi", train_steps=400, run_id="codi-400")   (the same from Python)
    >>> # accelerate launch --cpu --num_processes 2 -m thinklens.cli run codi --steps 400 --run-id codi-2p
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from thinklens.data.formats import format_for
from thinklens.data.problemsets import load_problems
from thinklens.engine.training import (
    adamw,
    checkpoint_state,
    load_checkpoint,
    load_optimizer,
    make_accelerator,
    mean_over_processes,
    prepare_module,
    save_checkpoint,
    set_lr,
    warmup_cosine_lr,
)
from thinklens.errors import ThinklensError, opt, opt_name
from thinklens.latent.config import TrainConfig
from thinklens.latent.examples import ExampleBuilder, ExampleSource, check_chains
from thinklens.latent.latent_model import LatentModel, load_hooked_model, load_side_state, resolve_model, saved_prompt_format
from thinklens.latent.methods import Phase, method_of
from thinklens.latent.saved_model import merge_lora, read_latent_meta, save_latent_model
from thinklens.latent.segments import add_latent_tokens, init_special_embeddings, latent_tokens, shard
from thinklens.runs.folders import RunFolder
from thinklens.tasks.protocol import HELD_OUT, problems_by_steps
from thinklens.zoo.registry import repo_relative


def lr_at(cfg: TrainConfig, step: int, total: int) -> float:
    """Linear warmup then cosine decay to 10% of the peak, within one phase.

    Example:
        >>> cfg = TrainConfig(lr=1.0, warmup_frac=0.1)
        >>> round(lr_at(cfg, 0, 100), 3), lr_at(cfg, 10, 100), round(lr_at(cfg, 99, 100), 2)
        (0.091, 1.0, 0.1)
    """
    warm = math.ceil(cfg.warmup_frac * total)
    return warmup_cosine_lr(step, peak=cfg.lr, warmup_steps=warm, decay_steps=total - warm - 1, floor_ratio=0.1)


def add_lora(hf: nn.Module, cfg: TrainConfig) -> None:
    """Inject LoRA adapters (peft) into an HF model in place; module paths (and so sites) stay valid."""
    try:
        from peft import LoraConfig, inject_adapter_in_model  # lazy: optional dependency (peft)
    except ImportError:
        raise ThinklensError.of("lora_r", cfg.lora_r, "peft installed for LoRA", f"pip install peft, or pass {opt('lora_r', 0)}") from None
    lcfg = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=0.0, target_modules="all-linear")
    inject_adapter_in_model(lcfg, hf)


def _trainable(module: nn.Module, cfg: TrainConfig) -> list[tuple[str, nn.Parameter]]:
    """Parameters this phase trains; with LoRA only adapters (and method extras like CODI's projection)."""
    if cfg.lora_r:
        for name, p in module.named_parameters():
            if name.startswith(("hf.", "encoder.")) and "lora_" not in name:
                p.requires_grad_(False)
    return [(n, p) for n, p in module.named_parameters() if p.requires_grad]


def continued_from(cfg: TrainConfig) -> dict | None:
    """``latent.json`` of the start model when it is a saved latent model (training continues it), else None.

    A CODI or Coconut model can be trained further with the same method: its trained special-token rows
    (and CODI's projection) are kept instead of re-initialised. Other combinations are clear errors.
    """
    folder = Path(resolve_model(cfg.model))
    if not (folder / "latent.json").is_file():
        return None
    meta = read_latent_meta(folder)
    method = method_of(cfg)
    fix = f"start from a CoT model (e.g. {opt('model', 'tiny-cot')}), or continue with the start model's own method"
    if meta["method"] != method.name:
        raise ThinklensError.of("start model", f"{folder} (a {meta['method']} model)", f"a CoT model or a {method.name} model", fix)
    if method.cannot_continue:
        raise ThinklensError.of("start model", f"{folder} (a {method.name} model)", f"a CoT model: {method.cannot_continue}",
                                f"start from a CoT model (e.g. {opt('model', 'tiny-cot')})")
    keep = method.continue_fields
    old, new = tuple(meta["config"][f] for f in keep), tuple(getattr(cfg, f) for f in keep)
    if old != new:
        raise ThinklensError.of("/".join(keep), new, f"the start model's {old}",
                                "pass the start model's " + " / ".join(f"--{f.replace('_', '-')}" for f in keep))
    return meta


def prepare(cfg: TrainConfig, device: torch.device | str = "cpu",
            dtype: torch.dtype = torch.float32) -> tuple[Any, nn.Module, list[Phase]]:
    """Load the start model, check its special tokens, init them (Coconut), add LoRA, build the module.

    A start model saved by a latent trainer with the same method is continued (see :func:`continued_from`).
    """
    method = method_of(cfg)
    start = continued_from(cfg)
    model = load_hooked_model(cfg.model, device=device, dtype=dtype)
    if cfg.add_tokens:
        model = add_latent_tokens(model)
    tokens = latent_tokens(model.tokenizer, method.special_tokens)
    if start is None:
        init_special_embeddings(model, tokens)
    # torch.nn / peft initialise from the global RNG: fork it so the init depends on cfg.seed only
    # (every process and every resumed session builds the same projection and adapters) and the
    # caller's RNG state is untouched.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        module = method.module.build_trainer(cfg, model, tokens)
        if start is not None:
            load_side_state(module, Path(resolve_model(cfg.model)), start)
        if cfg.lora_r:
            add_lora(model.hf, cfg)
            for copy in method.lora_copies:  # LM copies made before the adapters (Latent-SFT's encoder): their own
                add_lora(getattr(module, copy), cfg)
    module.to(device=device, dtype=dtype)
    return model, module, method.module.train_phases(cfg)


def example_builder(model: Any, cfg: TrainConfig, start: dict | None = None) -> ExampleBuilder:
    """How this run's problems become examples: the model's tokenizer and its prompt format (``cfg.prompt_format``
    resolved for the model; a continued latent model keeps the format it was trained in)."""
    prompt_format = cfg.prompt_format
    if start is not None:
        saved = saved_prompt_format(start)
        if prompt_format not in ("auto", saved):
            raise ThinklensError.of("prompt_format", prompt_format, f"the start model's {saved}",
                                    f"pass {opt('prompt_format', saved)}")
        prompt_format = saved
    return ExampleBuilder(model.tokenizer, format_for(model, prompt_format))


def evaluation_problems(cfg: TrainConfig, *, seed: int = HELD_OUT["eval"]) -> dict[Any, list]:
    """The problems evaluated after training, by group: ``n_eval`` held-out synthetic problems per step count, or
    the first ``n_eval`` of ``eval_data`` (one group, ``all``)."""
    if cfg.eval_data:
        return {"all": list(load_problems(cfg.eval_data, limit=cfg.n_eval))}
    return {n: problems_by_steps(cfg.n_eval, n, n, seed=seed) for n in range(cfg.min_steps, cfg.max_steps + 1)}


def evaluate_after(model: Any, module: nn.Module, cfg: TrainConfig, *, builder: ExampleBuilder | None = None,
                   seed: int = HELD_OUT["eval"]) -> dict[str, Any]:
    """Held-out accuracy of the trained module (see :func:`evaluation_problems`), graded by ``is_correct``."""
    method = method_of(cfg)
    builder = builder or example_builder(model, cfg)
    meta = {"method": method.name, "config": method.saved_config(cfg), "prompt_format": builder.format.name}
    lm = LatentModel(model, meta, module, latent_tokens(model.tokenizer, method.special_tokens))
    acc, positions = {}, {}
    for n, problems in evaluation_problems(cfg, seed=seed).items():
        res = lm.infer_problems(problems)
        acc[n] = sum(r["correct"] for r in res) / len(res)
        positions[n] = sum(r["reasoning_positions"] for r in res) / len(res)
    return {"accuracy": acc, "reasoning_positions": positions,
            "mean_accuracy": sum(acc.values()) / len(acc)}


def start_model_id(name: str) -> dict[str, Any]:
    """Which start model a run used: its folder and a hash of its weights (zoo models get retrained)."""
    folder = Path(resolve_model(name))
    files = sorted(folder.glob("*.safetensors")) if folder.is_dir() else []
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16] if files else None
    return {"name": name, "folder": repo_relative(folder), "weights_sha256_16": digest}


def train_latent(cfg: TrainConfig, run: RunFolder, *, device: str = "cpu", dtype: torch.dtype = torch.float32,
                 progress: bool = True, accelerator: Any = None, on_step: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Train ``cfg`` in ``run`` (every process passes the same folder); resume if it has a checkpoint.

    The trained model goes to ``<run>/model`` and, with ``cfg.publish``, to that folder too.

    Args:
        device: ``cpu`` trains on CPU processes; otherwise each process takes its accelerator.
        accelerator: an ``accelerate.Accelerator`` (default: a new one; multi-process under
            ``accelerate launch`` / torchrun environment variables).
        on_step: called with the global step after each optimizer step (tests use it to simulate a kill).

    Returns the metrics written to ``results/metrics.json``.
    """
    acc = accelerator or make_accelerator(device)
    rank, world = acc.process_index, acc.num_processes
    if cfg.batch_size % world:
        raise ThinklensError.of("batch_size", cfg.batch_size, f"a multiple of the {world} processes",
                                f"pass a divisible {opt_name('batch_size')}")
    method = method_of(cfg).name
    start_meta = continued_from(cfg)  # before any checkpoint: a bad start model is refused first
    problems = None
    if cfg.data:  # read (and checked) before the model loads: a bad file fails fast

        problems = load_problems(cfg.data, mapping=cfg.data_fields or None)
        check_chains(problems, cfg.data)
    model, module, phases = prepare(cfg, acc.device, dtype)
    builder = example_builder(model, cfg, start_meta)
    source = ExampleSource(model.tokenizer, seed=cfg.seed, min_steps=cfg.min_steps, max_steps=cfg.max_steps,
                           problems=problems, builder=builder)
    ckpt = run.path / "checkpoint"
    state: dict[str, Any] = {"phase": 0, "step": 0, "global_step": 0, "history": [], "elapsed_s": 0.0}
    if checkpoint_state(ckpt) is not None:
        state = load_checkpoint(ckpt, module)  # the optimizer state is loaded per phase below
    t0 = time.monotonic()
    total = sum(p.steps for p in phases)
    bar = tqdm(total=total, initial=state["global_step"], desc=f"latent {method}", disable=not progress or not acc.is_main_process,
               dynamic_ncols=True)
    for pi in range(state["phase"], len(phases)):
        phase = phases[pi]
        phase.enter(module)
        params = _trainable(module, cfg)
        # A fresh optimizer per phase (Coconut resets it per stage); weight decay on matrices only.
        opt = adamw(params, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.999))
        start = state["step"] if pi == state["phase"] else 0
        if start > 0:
            load_optimizer(ckpt, module, opt)
        wrapped = prepare_module(acc, module)
        module.train()
        for k in range(start, phase.steps):
            g = sum(p.steps for p in phases[:pi]) + k
            set_lr(opt, lr_at(cfg, k, phase.steps))
            rows = shard(source.batch(g, cfg.batch_size), rank, world)
            batch = module.collate(rows)
            torch.manual_seed(cfg.seed * 1_000_003 + g)  # dropout draws: a resumed step repeats exactly
            losses = wrapped(batch)
            acc.backward(losses["loss"])
            if cfg.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_([p for _, p in params], cfg.grad_clip)
            opt.step()
            opt.zero_grad(set_to_none=True)
            logged = mean_over_processes(acc, losses)
            state["history"].append({"step": g, "phase": phase.name, **{key: round(v, 6) for key, v in logged.items()}})
            bar.update(1)
            bar.set_postfix(phase=phase.name, loss=f"{logged['loss']:.3f}")
            state.update(phase=pi, step=k + 1, global_step=g + 1)
            if ((k + 1) % cfg.ckpt_every == 0 or k + 1 == phase.steps) and acc.is_main_process:
                state["elapsed_s"] = state["elapsed_s"] + time.monotonic() - t0
                t0 = time.monotonic()
                save_checkpoint(ckpt, module, opt, state)
            if on_step is not None:
                on_step(g + 1)
        state.update(phase=pi + 1, step=0)
        acc.wait_for_everyone()
    bar.close()
    state["elapsed_s"] = state["elapsed_s"] + time.monotonic() - t0
    module.eval()
    metrics: dict[str, Any] = {"method": method, "train_wall_s": round(state["elapsed_s"], 1), "steps": state["global_step"],
                               "processes": world, "history": state["history"]}
    if acc.is_main_process:
        if cfg.n_eval:
            metrics["eval"] = evaluate_after(model, module, cfg, builder=builder)
        if cfg.lora_r:
            merge_lora(model.hf)
        meta = {"method": method, "config": method_of(cfg).saved_config(cfg), "prompt_format": builder.format.name,
                "train_wall_s": metrics["train_wall_s"],
                "eval": metrics.get("eval"), "run": repo_relative(run.path), "start_model": start_model_id(cfg.model),
                # the token-level model the first run started from (latent-eval adds its training time to this one's)
                "parent": start_meta.get("parent", start_meta["start_model"]["name"]) if start_meta is not None else cfg.model}
        if start_meta is not None:  # training continued a latent model: keep the totals
            prior_steps = start_meta.get("total_steps", start_meta["config"].get("train_steps", start_meta["config"].get("steps")))
            prior_s = start_meta.get("total_train_wall_s", start_meta["train_wall_s"])
            meta["continued"] = {"from": start_meta["run"], "steps": prior_steps, "train_wall_s": prior_s}
            meta["total_steps"] = (prior_steps or 0) + metrics["steps"]
            meta["total_train_wall_s"] = round(prior_s + metrics["train_wall_s"], 1)
        extra = method_of(cfg).module.side_modules(module, meta["config"])
        save_latent_model(run.path / "model", model, meta, extra)
        if cfg.publish:
            save_latent_model(Path(cfg.publish).expanduser(), model, meta, extra)
        run.write_result("metrics", metrics)
        run.finish({"train_wall_s": metrics["train_wall_s"], "mean_accuracy": metrics.get("eval", {}).get("mean_accuracy")})
    acc.wait_for_everyone()
    return metrics
