"""A small GRPO trainer for the zoo: group-relative advantages, a verifiable integer reward.

It makes ``tiny-grpo`` from the SFT model ``tiny-cot`` on the same task (prompts in the cot format, by default the 6-8
step problems where tiny-cot still fails often), so ``theta_grpo - theta_cot`` is the reasoning vector of Zbeeb et
al.: the RL update alone, as in their code where GRPO starts from the SFT checkpoint.

Per step: ``prompts_per_step`` problems (mixed numbers of steps), ``group_size`` samples each
(temperature sampling from a local generator through :meth:`HookedModel.generate`); reward 1 when
:func:`thinklens.data.answers.is_correct` says the completion answers right, else 0; advantage
``(r - mean_group) / (std_group + eps)``; loss ``-mean over tokens(adv * token_logprob)`` (one on-policy update
per batch, so PPO's ratio is 1 and its clip never binds) plus ``kl_coef`` times the k3 KL estimate to the
init; the loss averages over completion tokens of the batch. Groups whose rewards are all equal carry no
signal and are skipped.

Example:
    >>> cfg = GRPOConfig(train_steps=2, prompts_per_step=2, group_size=2)
    >>> cfg.group_size
    2
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from thinklens.data.answers import is_correct
from thinklens.engine.model import HookedModel
from thinklens.engine.training import adamw, checkpoint_state, load_checkpoint, save_checkpoint
from thinklens.runs.folders import replace_dir
from thinklens.tasks import TaskConfig, generate_problems, render_prompt
from thinklens.zoo.accuracy import evaluate_zoo_model
from thinklens.zoo.grpo_config import GRPOConfig
from thinklens.zoo.modeling import save_zoo_folder


def rewards(texts: list[str], answers: list[int]) -> torch.Tensor:
    """1.0 where the parsed integer answer is right, else 0.0.

    Example:
        >>> rewards(["<< 1 + 1 = 2 >> #### 2", "#### 3", "no answer"], [2, 2, 2]).tolist()
        [1.0, 0.0, 0.0]
    """
    return torch.tensor([float(is_correct(t, a)) for t, a in zip(texts, answers)])


def group_advantages(r: torch.Tensor, group_size: int, eps: float = 1e-4) -> torch.Tensor:
    """``(r - group mean) / (group std + eps)``, groups being consecutive blocks of ``group_size``.

    Example:
        >>> [round(x, 3) for x in group_advantages(torch.tensor([1., 0., 1., 1.]), 2).tolist()]
        [1.0, -1.0, 0.0, 0.0]
    """
    g = r.view(-1, group_size)
    adv = (g - g.mean(1, keepdim=True)) / (g.std(1, keepdim=True, unbiased=False) + eps)
    return adv.flatten()


def _batch(prompt_ids: list[list[int]], completions: list[list[int]], pad: int) -> dict[str, torch.Tensor]:
    """Right-padded prompt+completion ids and a mask of the completion positions (the labels)."""
    seqs = [p + c for p, c in zip(prompt_ids, completions)]
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)  # [batch, pos]
    attn = torch.zeros_like(ids)
    comp = torch.zeros_like(ids, dtype=torch.bool)
    for i, (p, s) in enumerate(zip(prompt_ids, seqs)):
        ids[i, : len(s)] = torch.tensor(s)
        attn[i, : len(s)] = 1
        comp[i, len(p): len(s)] = True
    return {"input_ids": ids, "attention_mask": attn, "completion": comp}


def _token_logprobs(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1]  # [b, pos-1, vocab]
    lp = torch.log_softmax(logits.float(), -1)
    return lp.gather(-1, batch["input_ids"][:, 1:, None])[..., 0]  # [b, pos-1]: logprob of token t+1


def _load(name_or_path: str):
    return HookedModel.load(name_or_path)


def train_grpo(cfg: GRPOConfig, *, out_dir: str | Path, progress: bool = True, log: Any = print,
               model: Any = None, ckpt_dir: str | Path | None = None, ckpt_every_s: float = 60.0) -> dict[str, Any]:
    """Run GRPO from ``cfg.model`` and write a zoo-format folder (fp16 weights, < 5 MB) to ``out_dir``.

    ``model``: that model already loaded (a HookedModel, trained in place), e.g. by the job runner.
    ``ckpt_dir``: checkpoint folder, written every ``ckpt_every_s`` seconds and removed once the model is
    published; a checkpoint of the same settings there is resumed (step ``k`` draws its problems and samples
    from ``(seed, k)``, so a resumed run ends as a straight one). None: no checkpoints.
    Returns the metadata written to ``zoo.json`` (reward curve, accuracy, wall time).
    """
    policy = model if model is not None else _load(cfg.model)
    ref = copy.deepcopy(policy.hf).eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    tok = policy.tokenizer
    hf = policy.hf
    hf.train()
    opt = adamw(hf.named_parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.99))
    task = TaskConfig(min_steps=cfg.min_steps, max_steps=cfg.max_steps)
    sampler = HookedModel(hf, tok, name="grpo-policy")
    # The init is the KL reference (copied above); a checkpoint replaces the policy's weights and moments.
    ckpt = Path(ckpt_dir) if ckpt_dir is not None else None
    identity = {k: v for k, v in asdict(cfg).items() if k not in ("max_minutes", "n_eval", "publish")}
    state: dict[str, Any] = {"step": 0, "curve": [], "wall_s": 0.0, "cpu_s": 0.0}
    if ckpt is not None and (checkpoint_state(ckpt) or {}).get("identity") == identity:
        state = load_checkpoint(ckpt, hf, opt)
    state["identity"] = identity
    t0, c0 = time.monotonic() - state["wall_s"], time.process_time() - state["cpu_s"]
    curve: list[list[float]] = state["curve"]
    step = state["step"]
    truncated = False
    last_ckpt = time.monotonic()
    while step < cfg.train_steps:
        if time.process_time() - c0 > cfg.max_minutes * 60:
            truncated = True
            break
        rng = np.random.default_rng([cfg.seed, step])
        # Mixed step counts in one batch: a batch of only 1-step (all right) or 8-step (all wrong) problems
        # would carry no group-relative signal at all.
        problems = generate_problems(cfg.prompts_per_step, seed=rng, config=task)
        n_steps = max(p.n_steps for p in problems)
        prompts = [render_prompt(p, cfg.prompt_format) for p in problems for _ in range(cfg.group_size)]
        answers = [p.answer for p in problems for _ in range(cfg.group_size)]
        hf.eval()
        traces = sampler.generate(prompts, max_new_tokens=7 * n_steps + 6, do_sample=True,
                                  seed=cfg.seed * 1_000_003 + step, temperature=cfg.temperature, top_k_stats=1)
        hf.train()
        r = rewards([t.text for t in traces], answers)
        adv = group_advantages(r, cfg.group_size)
        keep = adv.view(-1, cfg.group_size).abs().sum(1) > 0  # groups with any reward spread
        step += 1
        curve.append([step, float(r.mean())])
        if bool(keep.any()):
            rows = torch.nonzero(keep.repeat_interleave(cfg.group_size)).flatten().tolist()
            batch = _batch([traces[i].prompt_ids for i in rows], [traces[i].token_ids for i in rows], tok.pad_token_id)
            mask = batch["completion"][:, 1:].float()  # [b, pos-1]
            lp = _token_logprobs(hf, batch)
            # Token-level normalisation (as DAPO): every completion token weighs the same, so a long wrong
            # chain does not push its (mostly right) equations down harder than a short right one pushes up.
            loss = -(adv[rows][:, None] * lp * mask).sum() / mask.sum()
            if cfg.kl_coef > 0:
                with torch.no_grad():
                    ref_lp = _token_logprobs(ref, batch)
                d = ref_lp - lp
                kl = ((d.exp() - d - 1) * mask).sum() / mask.sum()  # k3: unbiased, non-negative
                loss = loss + cfg.kl_coef * kl
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(hf.parameters(), cfg.grad_clip)
            opt.step()
        if progress and (step % 10 == 0 or step == 1):
            recent = np.mean([c[1] for c in curve[-10:]])
            log(f"grpo step {step}/{cfg.train_steps} reward(last10)={recent:.3f} wall={time.monotonic() - t0:.0f}s "
                f"cpu={time.process_time() - c0:.0f}s")
        if ckpt is not None and time.monotonic() - last_ckpt > ckpt_every_s and step < cfg.train_steps:
            state.update(step=step, curve=curve, wall_s=time.monotonic() - t0, cpu_s=time.process_time() - c0)
            save_checkpoint(ckpt, hf, opt, state)
            last_ckpt = time.monotonic()
    hf.eval()
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    meta: dict[str, Any] = {
        "name": "tiny-grpo", "init": cfg.model, "trainer": "thinklens.zoo.grpo", "grpo": asdict(cfg), "steps": step,
        "truncated": truncated, "train_wall_s": round(wall, 1), "train_cpu_s": round(cpu, 1), "reward_curve": curve,
        "weights_dtype": "float16",
        "recipe": {"prompt_format": cfg.prompt_format}, "torch_threads": torch.get_num_threads(),
        "retrain": f"thinklens run grpo --train-steps {cfg.train_steps} --max-minutes {cfg.max_minutes:g} --seed {cfg.seed}",
    }
    out = Path(out_dir)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    save_zoo_folder(hf, tmp, meta=meta)
    if cfg.n_eval > 0:
        res = evaluate_zoo_model(tmp, n_per_steps=cfg.n_eval, prompt_format=cfg.prompt_format)  # the fp16 weights written
        meta["eval"] = res.to_json()
        (tmp / "zoo.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    replace_dir(tmp, out)
    if ckpt is not None:
        shutil.rmtree(ckpt, ignore_errors=True)
    return meta
