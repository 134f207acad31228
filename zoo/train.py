"""Train a zoo model: seeded, resumable after a kill, with an atomic final write.

Randomness: the init draws from ``torch.Generator(seed)``; batch ``k`` draws from
``numpy.random.default_rng([seed, k])``. So a resumed run needs no RNG state and continues exactly
where a straight run would be. Checkpoints (every ``ckpt_every_s``) hold the model and AdamW moments
as safetensors plus a JSON state (never pickle).

Example:
    >>> meta = train_zoo_model("tiny-pre", seed=0, out_dir="/tmp/zoo/tiny-pre", max_minutes=25)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import torch

from thinklens.errors import ThinklensError
from thinklens.runs import replace_dir
from thinklens.training import adamw, checkpoint_state, load_checkpoint, save_checkpoint, set_lr, warmup_cosine_lr
from thinklens.zoo.modeling import build_model, load_zoo_model, model_meta, n_params, save_zoo_folder
from thinklens.zoo.registry import zoo_dir, zoo_path
from thinklens.zoo.tokenizer import zoo_vocab
from zoo.data import make_batch
from zoo.recipes import R1Recipe, ZooRecipe, get_recipe


def lr_at(recipe: ZooRecipe, step: int) -> float:
    """Linear warmup to ``lr`` then cosine decay to ``lr * min_lr_ratio`` one step after the last.

    Example:
        >>> from zoo.recipes import RECIPES
        >>> r = RECIPES["tiny-pre"]
        >>> lr_at(r, 0) < lr_at(r, r.warmup_steps) == r.lr
        True
    """
    return warmup_cosine_lr(step, peak=recipe.lr, warmup_steps=recipe.warmup_steps,
                            decay_steps=recipe.steps - recipe.warmup_steps, floor_ratio=recipe.min_lr_ratio)


def default_ckpt_dir(name: str, seed: int) -> Path:
    """``<runs root>/zoo-train/<name>-seed<seed>`` (for Python callers; the job keeps it in its run folder)."""
    from thinklens.runs import default_runs_root

    return default_runs_root() / "zoo-train" / f"{name}-seed{seed}"


# ---------------------------------------------------------------- training


def _init_model(recipe: ZooRecipe, seed: int, out_dir: Path):
    if recipe.init is None:
        return build_model(recipe.model, len(zoo_vocab()), seed=seed), None
    # A parent next to out_dir wins (a private zoo in /tmp); else the committed one in data/zoo.
    parent = out_dir.parent / recipe.init
    if not (parent / "config.json").is_file():
        parent = zoo_path(recipe.init)
    if parent is None:
        raise ThinklensError.of(
            f"parent of {recipe.name}", recipe.init, "a trained model", f"train it first: thinklens run zoo-train --model {recipe.init}"
        )
    model, _ = load_zoo_model(parent)
    model.train()
    return model, parent


def train_zoo_model(
    name: str,
    *,
    seed: int = 0,
    out_dir: str | Path | None = None,
    max_minutes: float = 30.0,
    progress: bool = True,
    recipe: ZooRecipe | None = None,
    ckpt_dir: str | Path | None = None,
    ckpt_every_s: float = 60.0,
    eval_per_steps: int = 25,
    eval_seed: int = 10_000,
    device: str = "cpu",
) -> dict:
    """Train zoo model ``name`` and write its folder atomically; returns the zoo.json metadata.

    Args:
        name: a zoo name with a recipe (see :data:`zoo.recipes.RECIPES`).
        seed: init and data seed.
        out_dir: destination folder (default ``data/zoo/<name>``).
        max_minutes: wall-clock cap over all resumed sessions; a capped run is written anyway and its
            zoo.json says ``"truncated": true``.
        progress: show a tqdm bar.
        recipe: override the registered recipe (experiments, tests).
        ckpt_dir: checkpoint folder (default ``<runs>/zoo-train/<name>-seed<seed>``); a matching checkpoint
            there is resumed.
        ckpt_every_s: seconds between checkpoints.
        eval_per_steps: held-out problems per step count (1..8) for the accuracy in zoo.json; 0 skips.
        eval_seed: seed of the held-out problems (training batches use ``[seed, step]`` streams).
        device: where the model trains (the published weights and the evaluation are on CPU).
    """
    from tqdm.auto import tqdm

    recipe = recipe or get_recipe(name)
    if isinstance(recipe, R1Recipe):  # its own architecture, tokenizer and chat format: zoo.r1_train
        from zoo.r1_train import train_r1_model

        return train_r1_model(name, seed=seed, out_dir=out_dir, max_minutes=max_minutes, progress=progress,
                              recipe=recipe, ckpt_dir=ckpt_dir, ckpt_every_s=ckpt_every_s,
                              eval_per_steps=eval_per_steps, eval_seed=eval_seed, device=device)
    out = Path(out_dir) if out_dir is not None else zoo_dir() / name
    ckpt = Path(ckpt_dir) if ckpt_dir is not None else default_ckpt_dir(name, seed)
    model, parent = _init_model(recipe, seed, out)
    model.to(device).train()
    # AdamW, weight decay on matrices only (norm gains and biases are not pulled to zero).
    opt = adamw(model.named_parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay, betas=(0.9, 0.98))
    identity = {"recipe": recipe.to_json(), "seed": seed}
    state: dict = {"step": 0, "elapsed_s": 0.0, "losses": [], "ema": None}
    if (checkpoint_state(ckpt) or {}).get("identity") == identity:
        state = load_checkpoint(ckpt, model, opt)
    state["identity"] = identity
    start_step, elapsed0 = state["step"], state["elapsed_s"]
    t0, last_ckpt = time.monotonic(), time.monotonic()
    bar = tqdm(total=recipe.steps, initial=start_step, desc=name, disable=not progress, dynamic_ncols=True)
    truncated = False
    ema = state.get("ema")  # the loss average goes on across a resume as in a straight run
    step = start_step
    while step < recipe.steps:
        if elapsed0 + time.monotonic() - t0 > max_minutes * 60:
            truncated = True
            break
        batch = make_batch(np.random.default_rng([seed, step]), recipe.task, recipe.styles,
                           batch_tokens=recipe.batch_tokens)
        batch = {k: v.to(device) for k, v in batch.items()}
        set_lr(opt, lr_at(recipe, step))
        loss = model(**batch).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.grad_clip)
        opt.step()
        step += 1
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        if step % 10 == 0:
            state["losses"].append([step, round(ema, 4)])
        bar.update(1)
        bar.set_postfix(loss=f"{ema:.3f}", lr=f"{lr_at(recipe, step - 1):.1e}")
        if time.monotonic() - last_ckpt > ckpt_every_s and step < recipe.steps:
            state.update(step=step, elapsed_s=elapsed0 + time.monotonic() - t0, ema=ema)
            save_checkpoint(ckpt, model, opt, state)
            last_ckpt = time.monotonic()
    bar.close()
    wall = elapsed0 + time.monotonic() - t0
    model.cpu().eval()
    meta = {
        "name": name, "seed": seed, "steps": step, "planned_steps": recipe.steps, "truncated": truncated,
        "train_wall_s": round(wall, 1), "torch_threads": torch.get_num_threads(), "n_params": n_params(model),
        "init": recipe.init, "parent_dir": str(parent) if parent else None, "recipe": recipe.to_json(),
        "model": model_meta(recipe.model) if recipe.init is None else None, "loss_curve": state["losses"],
        "final_loss_ema": round(ema, 4) if ema is not None else None, "weights_dtype": "float16",
        "retrain": f"thinklens run zoo-train --model {name} --seed {seed}",
    }
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    save_zoo_folder(model, tmp, meta=meta)
    if eval_per_steps > 0:
        from zoo.evaluate import evaluate_zoo_model

        # Evaluate the fp16-rounded weights just written: the numbers describe what is committed.
        result = evaluate_zoo_model(tmp, n_per_steps=eval_per_steps, seed=eval_seed, style=recipe.eval_style)
        meta["eval"] = result.to_json()
        (tmp / "zoo.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    replace_dir(tmp, out)
    shutil.rmtree(ckpt, ignore_errors=True)
    return meta


def with_overrides(recipe: ZooRecipe, **changes) -> ZooRecipe:
    """A copy of a recipe with some fields changed (experiments: shorter runs, other seeds).

    Example:
        >>> from zoo.recipes import RECIPES
        >>> with_overrides(RECIPES["tiny-cot"], steps=5, warmup_steps=1).steps
        5
    """
    return dataclasses.replace(recipe, **changes)
