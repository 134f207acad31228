"""Train a zoo model: seeded, resumable after a kill, with an atomic final write. One trainer for every
architecture of the zoo: the Llama models here, tiny-r1's Qwen2 from :func:`thinklens.zoo.r1_train.r1_training`.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from thinklens.engine.training import adamw, checkpoint_state, load_checkpoint, save_checkpoint, set_lr, warmup_cosine_lr
from thinklens.errors import ThinklensError
from thinklens.runs.folders import default_runs_root, replace_dir
from thinklens.tasks.protocol import HELD_OUT
from thinklens.zoo.accuracy import evaluate_zoo_model
from thinklens.zoo.batches import make_batch
from thinklens.zoo.modeling import build_model, load_zoo_model, model_meta, n_params, save_zoo_folder
from thinklens.zoo.r1_train import r1_training
from thinklens.zoo.recipes import R1Recipe, ZooRecipe, get_recipe, upgrade_recipe_json
from thinklens.zoo.registry import repo_relative, zoo_dir, zoo_path
from thinklens.zoo.tokenizer import zoo_vocab
from thinklens.zoo.training_setup import ZooTraining


def lr_at(recipe: ZooRecipe, step: int) -> float:
    """Linear warmup to ``lr`` then cosine decay to ``lr * min_lr_ratio`` one step after the last.

    Example:
        >>> from thinklens.zoo.recipes import RECIPES
        >>> r = RECIPES["tiny-pre"]
        >>> lr_at(r, 0) < lr_at(r, r.warmup_steps) == r.lr
        True
    """
    return warmup_cosine_lr(step, peak=recipe.lr, warmup_steps=recipe.warmup_steps,
                            decay_steps=recipe.steps - recipe.warmup_steps, floor_ratio=recipe.min_lr_ratio)


def default_ckpt_dir(name: str, seed: int) -> Path:
    """``<runs root>/zoo-train/<name>-seed<seed>`` (for Python callers; the job keeps it in its run folder)."""
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


def llama_training(recipe: ZooRecipe, seed: int, out: Path) -> ZooTraining:
    """The zoo's Llama models: a fresh init (``recipe.init`` None) or a fine-tune of the parent model."""
    model, parent = _init_model(recipe, seed, out)

    def evaluate(folder: Path, n_per_steps: int, eval_seed: int):
        return evaluate_zoo_model(folder, n_per_steps=n_per_steps, seed=eval_seed, prompt_format=recipe.prompt_format)

    return ZooTraining(
        model=model, total_steps=recipe.steps, lr=lambda step: lr_at(recipe, step),
        batch=lambda rng: make_batch(rng, recipe.task, recipe.format_mix, batch_tokens=recipe.batch_tokens),
        identity={"recipe": recipe.to_json(), "seed": seed},
        meta_fields={"init": recipe.init, "parent_dir": repo_relative(parent) if parent else None, "recipe": recipe.to_json(),
                     "model": model_meta(recipe.model) if recipe.init is None else None},
        write_folder=lambda folder, meta: save_zoo_folder(model, folder, meta=meta), evaluate=evaluate,
    )


@dataclasses.dataclass(frozen=True)
class TrainedSteps:
    """What :func:`train_steps` did: the steps reached, whether the time cap cut them, the wall time over all
    resumed sessions, the loss curve (``[step, ema]`` every 10 steps), the final loss average and the run's checks
    (``[step, value]``, when it had a ``check``)."""

    steps: int
    truncated: bool
    wall_s: float
    losses: list
    ema: float | None
    checks: list = dataclasses.field(default_factory=list)

    def meta(self, name: str, seed: int, model: torch.nn.Module, /, *, planned_steps: int, **fields) -> dict:
        """The zoo.json metadata: this run's numbers around ``fields`` (the trainer's own entries)."""
        return {
            "name": name, "seed": seed, "steps": self.steps, "planned_steps": planned_steps, "truncated": self.truncated,
            "train_wall_s": round(self.wall_s, 1), "torch_threads": torch.get_num_threads(), "n_params": n_params(model),
            **fields, **({"checks": self.checks} if self.checks else {}), "loss_curve": self.losses,
            "final_loss_ema": round(self.ema, 4) if self.ema is not None else None,
            "weights_dtype": "float16", "retrain": f"thinklens run zoo-train --model {name} --seed {seed}",
        }


def train_steps(
    model: torch.nn.Module,
    recipe: ZooRecipe,
    *,
    seed: int,
    total_steps: int,
    batch: Callable[[np.random.Generator], dict[str, torch.Tensor]],
    lr: Callable[[int], float],
    ckpt: Path,
    identity: dict,
    max_minutes: float,
    ckpt_every_s: float,
    keep_last_checkpoint: bool,
    progress: bool,
    desc: str,
    device: str = "cpu",
    log_every: int = 0,
    check: Callable[[], dict] | None = None,
    check_every: int = 0,
) -> TrainedSteps:
    """The zoo's training loop: AdamW (decay on matrices only) with ``lr(step)``, gradient clipping, batch ``k``
    from ``batch(numpy.random.default_rng([seed, k]))``, resumed from the checkpoint in ``ckpt`` when its
    ``identity`` matches (and it is not past ``total_steps``), checkpointed every ``ckpt_every_s``.

    Args:
        model: the model to train, on ``device`` (trained in place).
        recipe: its learning rate, weight decay and gradient clip.
        keep_last_checkpoint: also checkpoint the last step (a later phase resumes from it); else the last
            checkpoint is the one before the end (the caller removes it once the model is published).
        log_every: > 0 also prints the loss every that many steps (a log file when the progress bar is off).
        check: measured every ``check_every`` steps (and at the last step; e.g. per-operation accuracy), kept as
            ``[step, check()]`` in :attr:`TrainedSteps.checks` and in the checkpoint, so a resumed run keeps its curve.
    """
    opt = adamw(model.named_parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay, betas=(0.9, 0.98))
    state: dict = {"step": 0, "elapsed_s": 0.0, "losses": [], "ema": None, "checks": []}
    saved = checkpoint_state(ckpt) or {}
    if _upgrade_identity(saved.get("identity")) == identity and saved.get("step", 0) <= total_steps:
        state = load_checkpoint(ckpt, model, opt)
    state["identity"] = identity
    start_step, elapsed0 = state["step"], state["elapsed_s"]
    t0 = last_ckpt = time.monotonic()
    bar = tqdm(total=total_steps, initial=start_step, desc=desc, disable=not progress, dynamic_ncols=True)
    truncated, ema, step = False, state.get("ema"), start_step  # the loss average goes on across a resume
    while step < total_steps:
        if elapsed0 + time.monotonic() - t0 > max_minutes * 60:
            truncated = True
            break
        inputs = {k: v.to(device) for k, v in batch(np.random.default_rng([seed, step])).items()}
        step_lr = lr(step)
        set_lr(opt, step_lr)
        loss = model(**inputs).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.grad_clip)
        opt.step()
        step += 1
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        if step % 10 == 0:
            state["losses"].append([step, round(ema, 4)])
        if log_every and step % log_every == 0:
            print(f"step {step} loss_ema {ema:.4f} lr {step_lr:.2e} elapsed_s {elapsed0 + time.monotonic() - t0:.0f}",
                  flush=True)
        if check is not None and check_every > 0 and (step % check_every == 0 or step == total_steps):
            state.setdefault("checks", []).append([step, check()])
            print(f"step {step} check {json.dumps(state['checks'][-1][1])}", flush=True)
        bar.update(1)
        bar.set_postfix(loss=f"{ema:.3f}", lr=f"{step_lr:.1e}")
        due = time.monotonic() - last_ckpt > ckpt_every_s
        if (due and step < total_steps) or (keep_last_checkpoint and step == total_steps):
            state.update(step=step, elapsed_s=elapsed0 + time.monotonic() - t0, ema=ema)
            save_checkpoint(ckpt, model, opt, state)
            last_ckpt = time.monotonic()
    bar.close()
    return TrainedSteps(step, truncated, elapsed0 + time.monotonic() - t0, state["losses"], ema, state.get("checks", []))


def _upgrade_identity(identity: Any) -> Any:
    """A checkpoint's identity with its recipe's keys of before the prompt format had one name renamed
    (:func:`thinklens.zoo.recipes.upgrade_recipe_json`), so a checkpoint written before the rename still resumes."""
    if isinstance(identity, dict) and isinstance(identity.get("recipe"), dict):
        return {**identity, "recipe": upgrade_recipe_json(identity["recipe"])}
    return identity


def publish_folder(out: Path, meta: dict, save: Callable[[Path], object],
                   evaluate: Callable[[Path], object] | None = None) -> None:
    """Write a trained model's folder next to ``out`` with ``save(folder)``, add ``evaluate(folder).to_json()`` to
    its zoo.json as ``meta["eval"]`` (the fp16-rounded weights just written: the numbers describe what is
    published), then swap it in for ``out`` (a kill never leaves half a folder)."""
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    save(tmp)
    if evaluate is not None:
        meta["eval"] = evaluate(tmp).to_json()
        (tmp / "zoo.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    replace_dir(tmp, out)


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
    eval_seed: int = HELD_OUT["eval"],
    device: str = "cpu",
    log_every: int = 0,
    tokenizer: Any = None,
) -> dict:
    """Train zoo model ``name`` and write its folder atomically; returns the zoo.json metadata.

    Args:
        name: a zoo name with a recipe (see :data:`thinklens.zoo.recipes.RECIPES`).
        seed: init and data seed.
        out_dir: destination folder (default ``data/zoo/<name>``).
        max_minutes: wall-clock cap over all resumed sessions; a capped run is written anyway and its
            zoo.json says ``"truncated": true``.
        progress: show a tqdm bar.
        recipe: override the registered recipe (experiments, tests); an :class:`~thinklens.zoo.recipes.R1Recipe` trains
            tiny-r1's architecture (:func:`thinklens.zoo.r1_train.r1_training`), whose last checkpoint stays, so a
            continuation phase added to the recipe later (``more_steps``) trains on from it.
        ckpt_dir: checkpoint folder (default ``<runs>/zoo-train/<name>-seed<seed>``); a matching checkpoint
            there is resumed.
        ckpt_every_s: seconds between checkpoints.
        eval_per_steps: held-out problems per step count (1..8) for the accuracy in zoo.json; 0 skips.
        eval_seed: seed of the held-out problems (training batches use ``[seed, step]`` streams).
        device: where the model trains (the published weights and the evaluation are on CPU).
        log_every: > 0 also prints the loss every that many steps (a log file when the progress bar is off).
        tokenizer: tiny-r1 only: replaces the tokenizer learned from the recipe (tests: a smaller corpus).
    """
    recipe = recipe or get_recipe(name)
    out = Path(out_dir) if out_dir is not None else zoo_dir() / name
    ckpt = Path(ckpt_dir) if ckpt_dir is not None else default_ckpt_dir(name, seed)
    if isinstance(recipe, R1Recipe):  # its own architecture, tokenizer and chat format
        setup = r1_training(recipe, seed=seed, ckpt=ckpt, label=name, tokenizer=tokenizer, out=out)
    elif tokenizer is not None:
        raise ThinklensError.of("tokenizer", type(tokenizer).__name__, "None for a word-level zoo model",
                                "pass a tokenizer only with a tiny-r1 recipe")
    else:
        setup = llama_training(recipe, seed, out)
    model = setup.model.to(device).train()
    trained = train_steps(
        model, recipe, seed=seed, total_steps=setup.total_steps, batch=setup.batch, lr=setup.lr, ckpt=ckpt,
        identity=setup.identity, max_minutes=max_minutes, ckpt_every_s=ckpt_every_s,
        keep_last_checkpoint=setup.keep_last_checkpoint, progress=progress, desc=name, device=device,
        log_every=log_every,
    )
    model.cpu().eval()
    meta = trained.meta(name, seed, model, planned_steps=setup.total_steps, **setup.meta_fields)
    publish_folder(out, meta, lambda folder: setup.write_folder(folder, meta),
                   (lambda folder: setup.evaluate(folder, eval_per_steps, eval_seed)) if eval_per_steps > 0 else None)
    if not setup.keep_last_checkpoint:
        shutil.rmtree(ckpt, ignore_errors=True)
    return meta


def with_overrides(recipe: ZooRecipe, **changes) -> ZooRecipe:
    """A copy of a recipe with some fields changed (experiments: shorter runs, other seeds).

    Example:
        >>> from thinklens.zoo.recipes import RECIPES
        >>> with_overrides(RECIPES["tiny-cot"], steps=5, warmup_steps=1).steps
        5
    """
    return dataclasses.replace(recipe, **changes)
