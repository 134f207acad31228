"""``thinklens run zoo-train``: train one zoo model from its recipe and publish its folder.

Trains the zoo model named by ``--model`` from its recipe (tiny-pre from scratch; tiny-direct, tiny-cot,
tiny-think and tiny-think-carry fine-tuned from tiny-pre; tiny-r1 from scratch with its own BPE tokenizer and chat
template, its last checkpoint kept for a continuation phase; tiny-overthink fine-tuned from tiny-r1 on chains that
re-check their answer, :mod:`thinklens.zoo.overthink`) on the synthetic task. Seeded: batch k draws from
the stream [seed, k], so a run killed and rerun with the same ``--run-id`` resumes from the checkpoint in its run
folder (model, AdamW moments, JSON state) and ends bit-identical to an uninterrupted one. The fp16 weights,
tokenizer and zoo.json (loss curve, held-out accuracy) are published atomically to ``data/zoo/<model>`` (or
``--publish``); the checkpoint is then removed (tiny-r1 keeps its last one).

Example:
    >>> JOB.name, JOB.models, ZooTrainConfig(model="tiny-cot").minutes
    ('zoo-train', (), 30.0)
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from thinklens.engine.real_organisms import REAL_ORGANISMS, is_organism_name
from thinklens.errors import ThinklensError, opt
from thinklens.runs.configcli import ConfigGroup
from thinklens.runs.jobs import Job, JobContext
from thinklens.zoo.eval_result import ZooEvalResult
from thinklens.zoo.jobs.zoo_eval import zoo_findings
from thinklens.zoo.registry import check_zoo_name, zoo_dir


@dataclass(frozen=True)
class ZooTrainConfig(ConfigGroup):
    """What ``zoo-train`` trains."""

    model: str = "tiny-pre"
    """Zoo model to train, by its recipe name (tiny-pre first: the others fine-tune it), or a real organism (smol-r1)."""
    seed: int = 0
    """Init and data seed."""
    minutes: float = 30.0
    """Wall-clock cap over all resumed sessions; a capped model is published anyway, marked truncated."""
    publish: str | None = None
    """Folder the trained model is published to (default data/zoo/<model>)."""
    n_eval: int = 25
    """Held-out problems evaluated per step count (1..8) for the accuracy stored in zoo.json; 0 skips."""
    renamed: ClassVar[dict[str, str]] = {"eval_n": "n_eval"}

    def check(self) -> None:
        if self.model not in REAL_ORGANISMS:  # smol-r1: a packaged real model's LoRA fine-tune (thinklens/zoo/smol_r1.py)
            near = difflib.get_close_matches(self.model, list(REAL_ORGANISMS), n=1, cutoff=0.8)
            if near:
                raise ThinklensError.of("zoo-train model", self.model, "a zoo model or a real organism "
                                        f"({', '.join(REAL_ORGANISMS)})", f"did you mean {near[0]!r}?")
            check_zoo_name(self.model)
        if not self.minutes > 0:
            raise ThinklensError.of("minutes", self.minutes, "a positive number", f"pass {opt('minutes', 30)}")
        if self.n_eval < 0:
            raise ThinklensError.of("n_eval", self.n_eval, "an integer >= 0", f"pass {opt('n_eval', 25)} (0 skips)")


def run(config: ZooTrainConfig, ctx: JobContext) -> dict[str, Any]:
    """Train (resuming this run's checkpoint), publish, and return the zoo.json metadata."""
    import torch  # lazy: CLI start-up (torch: `thinklens run --help` imports every job's config)

    from thinklens.zoo.smol_r1 import train_real_organism  # lazy: CLI start-up (torch, peft)
    from thinklens.zoo.trainer import train_zoo_model  # lazy: CLI start-up (torch)

    if ctx.options.threads is None:
        # One thread by default: on a shared 2-core machine, 2 OpenMP threads stall at every barrier when
        # another process holds a core (measured: median step 2.2 s with 2 threads vs 0.47 s with 1).
        torch.set_num_threads(1)
    if is_organism_name(config.model):
        meta = train_real_organism(config.model, seed=config.seed, out_dir=config.publish, max_minutes=config.minutes,
                                   progress=ctx.progress.enabled, ckpt_dir=ctx.run.path / "checkpoint",
                                   log_every=0 if ctx.progress.enabled else 10)
        meta = {**meta, "published_to": str(Path(config.publish) if config.publish else meta_folder(config.model))}
        ctx.run.write_result("zoo_train", meta)
        return meta
    meta = train_zoo_model(
        config.model, seed=config.seed, out_dir=config.publish, max_minutes=config.minutes,
        progress=ctx.progress.enabled, ckpt_dir=ctx.run.path / "checkpoint", eval_per_steps=config.n_eval,
        device=ctx.options.device, log_every=0 if ctx.progress.enabled else 10,
    )
    meta = {**meta, "published_to": str(Path(config.publish) if config.publish else zoo_dir() / config.model)}
    ctx.run.write_result("zoo_train", meta)
    return meta


def meta_folder(name: str) -> str:
    """Where an organism's adapter is published by default (``data/real-organisms/<name>``)."""
    return REAL_ORGANISMS[name].adapter


def report(meta: dict[str, Any]) -> str:
    lines = [f"{meta['name']}: {meta['steps']} steps in {meta['train_wall_s']:.0f}s"
             + (" (TRUNCATED by --minutes)" if meta["truncated"] else "") + f"; published to {meta['published_to']}"]
    acc = meta.get("eval", {}).get("accuracy", {})
    if acc:
        lines.append("accuracy by steps: " + " ".join(f"{k}:{v:.2f}" for k, v in acc.items()))
    return "\n".join(lines)


def findings(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The published model's held-out accuracy against the majority guess per step count
    (:func:`thinklens.zoo.jobs.zoo_eval.zoo_findings` on the evaluation stored in zoo.json); none when ``--n-eval 0``."""
    ev = meta.get("eval")
    if not ev or not ev.get("accuracy"):
        return []
    # named as published (eval ran on the temporary publish folder); a zoo.json's ``style`` (the key before the
    # prompt format had one name) still reads
    result = ZooEvalResult.from_json({**ev, "model": meta.get("name", ev.get("model"))})
    return zoo_findings([result])


def summary(meta: dict[str, Any]) -> dict[str, Any]:
    keys = ("name", "steps", "truncated", "train_wall_s", "final_loss_ema", "published_to")
    return {k: meta.get(k) for k in keys} | {"findings": findings(meta)}


JOB = Job("zoo-train", ZooTrainConfig, run, models=(), report=report, summary=summary,
          help="train one zoo model from its recipe (seeded, resumable) and publish it to data/zoo",
          findings="thinklens.zoo.jobs.zoo_train:findings", capability="The embedded zoo",
          smallest=("--model", "tiny-pre", "--seed", "2", "--n-eval", "0", "--publish", "{out}/model"))
