"""``thinklens run grpo``: GRPO from the SFT model (tiny-cot) on the zoo task; publishes ``tiny-grpo``, the
reasoning-vector donor.

Group-relative policy optimisation with a verifiable reward (:func:`thinklens.answers.is_correct`) on tiny-cot's
prompts, from ``--model`` (tiny-cot: the SFT model, as Zbeeb et al.'s GRPO starts from their SFT checkpoint), so
tiny-grpo - tiny-cot is the RL update alone: the reasoning vector. The runner loads ``--model`` with ``--device``
and ``--dtype``; GRPO trains it in place (:mod:`steering.grpo`; sampling from local seeded generators) and writes
a zoo-format folder (fp16 weights, tokenizer, zoo.json with its parent as ``init``, the reward curve and held-out
accuracy) to ``--publish`` (default ``data/zoo/tiny-grpo``). ``--max-minutes`` caps the CPU time (the model is
published anyway, marked truncated); the same ``--run-id`` resumes a killed run. The run folder keeps the
metadata in ``results/grpo.json``.

Example:
    >>> JOB.name, GRPOJobConfig().model, GRPOJobConfig().steps
    ('grpo', 'tiny-cot', 150)
    >>> # thinklens run grpo --seed 0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from steering.configs import GRPOConfig
from thinklens.jobs import Job, JobContext


@dataclass(frozen=True)
class GRPOJobConfig(GRPOConfig):
    """``thinklens run grpo``: the GRPO settings, plus where the trained model is published."""

    publish: str | None = None
    """Folder the trained model is written to (default data/zoo/tiny-grpo)."""


def run(config: GRPOJobConfig, ctx: JobContext) -> dict[str, Any]:
    """Train, publish, and return the zoo.json metadata (with ``published_to``)."""
    from pathlib import Path

    import torch

    from steering.grpo import train_grpo
    from thinklens.zoo.registry import zoo_dir

    if ctx.options.threads is None:
        torch.set_num_threads(1)  # one thread by default, as the zoo trainer: shared CPUs stall 2-thread barriers
    out = Path(config.publish) if config.publish else zoo_dir() / "tiny-grpo"
    meta = train_grpo(config, out_dir=out, progress=ctx.progress.enabled, log=ctx.progress.log, model=ctx.model,
                      ckpt_dir=ctx.run.path / "checkpoint")  # the same --run-id resumes a killed run
    meta = {**meta, "published_to": str(out)}
    ctx.run.write_result("grpo", meta)
    return meta


def report(meta: dict[str, Any]) -> str:
    acc = meta.get("eval", {}).get("accuracy", {})
    return (f"tiny-grpo: {meta['steps']} steps in {meta['train_wall_s']:.0f}s" + (" (TRUNCATED by --max-minutes)"
            if meta["truncated"] else "") + f"; published to {meta['published_to']}"
            + ("; accuracy " + " ".join(f"{k}:{v:.2f}" for k, v in acc.items()) if acc else ""))


def summary(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: meta.get(k) for k in ("steps", "truncated", "train_wall_s", "train_cpu_s", "published_to")} | {
        "accuracy": meta.get("eval", {}).get("accuracy")}


JOB = Job("grpo", GRPOJobConfig, run, report=report, summary=summary,
          help="GRPO on the zoo task from tiny-cot; publishes tiny-grpo (the reasoning-vector donor)")
