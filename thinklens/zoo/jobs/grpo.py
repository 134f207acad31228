"""``thinklens run grpo``: GRPO from the SFT model (tiny-cot) on the zoo task; publishes ``tiny-grpo``, the
reasoning-vector donor.

Group-relative policy optimisation with a verifiable reward (:func:`thinklens.data.answers.is_correct`) on tiny-cot's
prompts, from ``--model`` (tiny-cot: the SFT model, as Zbeeb et al.'s GRPO starts from their SFT checkpoint), so
tiny-grpo - tiny-cot is the RL update alone: the reasoning vector. The runner loads ``--model`` with ``--device``
and ``--dtype``; GRPO trains it in place (:mod:`thinklens.zoo.grpo`; sampling from local seeded generators) and writes
a zoo-format folder (fp16 weights, tokenizer, zoo.json with its parent as ``init``, the reward curve and held-out
accuracy) to ``--publish`` (default ``data/zoo/tiny-grpo``). ``--max-minutes`` caps the CPU time (the model is
published anyway, marked truncated); the same ``--run-id`` resumes a killed run. The run folder keeps the
metadata in ``results/grpo.json``, with the findings (:func:`findings`: the trained model against its start on the
same held-out problems, the reward's change).

Example:
    >>> JOB.name, GRPOJobConfig().model, GRPOJobConfig().train_steps
    ('grpo', 'tiny-cot', 150)
    >>> # thinklens run grpo --seed 0
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thinklens.calibration.findings import accuracy_finding, findings_doc, window_change_finding
from thinklens.runs.jobs import Job, JobContext
from thinklens.zoo.grpo_config import GRPOConfig
from thinklens.zoo.registry import zoo_dir


@dataclass(frozen=True)
class GRPOJobConfig(GRPOConfig):
    """``thinklens run grpo``: the GRPO settings, plus where the trained model is published."""

    publish: str | None = None
    """Folder the trained model is written to (default data/zoo/tiny-grpo)."""


def run(config: GRPOJobConfig, ctx: JobContext) -> dict[str, Any]:
    """Train, publish, and return the zoo.json metadata (with ``published_to``)."""
    import torch  # lazy: CLI start-up (torch: `thinklens run --help` imports every job's config)

    from thinklens.zoo.accuracy import evaluate_zoo_model  # lazy: CLI start-up (torch)
    from thinklens.zoo.grpo import train_grpo  # lazy: CLI start-up (torch)

    if ctx.options.threads is None:
        torch.set_num_threads(1)  # one thread by default, as the zoo trainer: shared CPUs stall 2-thread barriers
    out = Path(config.publish) if config.publish else zoo_dir() / "tiny-grpo"
    start = None
    if config.n_eval > 0:  # the starting point, graded as train_grpo grades the trained model (same problems)
        start = evaluate_zoo_model(config.model, n_per_steps=config.n_eval, prompt_format=config.prompt_format).to_json()
    meta = train_grpo(config, out_dir=out, progress=ctx.progress.enabled, log=ctx.progress.log, model=ctx.model,
                      ckpt_dir=ctx.run.path / "checkpoint")  # the same --run-id resumes a killed run
    meta = {**meta, "published_to": str(out), "start_eval": start}
    meta["findings"] = findings(meta)
    ctx.run.write_result("grpo", meta)
    return meta


def findings(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The trained model's held-out accuracy against its starting point's on the same problems (all step counts
    pooled; per-problem outcomes are not kept: an unpaired Wilson comparison, conservative), when both were
    evaluated; and the reward's change over training (last window of steps against the first).

    Example:
        >>> ev = lambda a: {"n_per_steps": 25, "accuracy": {"1": a, "2": a}}
        >>> meta = {"init": "tiny-cot", "eval": ev(0.96), "start_eval": ev(0.6), "reward_curve": [[1, 0.5], [2, 0.5]]}
        >>> [(f["statistic"], f["verdict"]) for f in findings(meta)]
        [('accuracy', 'effect'), ('reward change (last - first window)', 'too few samples')]
    """
    found = []
    trained, start = meta.get("eval"), meta.get("start_eval")
    if trained and start:
        def counts(ev: dict[str, Any]) -> tuple[int, int]:
            return sum(round(a * ev["n_per_steps"]) for a in ev["accuracy"].values()), ev["n_per_steps"] * len(ev["accuracy"])

        (k, n), (k0, n0) = counts(trained), counts(start)
        f = accuracy_finding(f"GRPO lifts {meta['init']}'s held-out accuracy", k, n,
                             control=f"{meta['init']} before GRPO (same problems, unpaired)", control_k=k0, control_n=n0)
        f.extra["otherwise"] = f"GRPO not shown to lift {meta['init']}'s held-out accuracy"
        found.append(f)
    curve = [r for _, r in meta.get("reward_curve") or []]
    if curve:
        found.append(window_change_finding("the GRPO reward rises over training", curve,
                                           statistic="reward change (last - first window)", higher_is_effect=True,
                                           otherwise="the GRPO reward not shown to rise over training"))
    return findings_doc(found)


def report(meta: dict[str, Any]) -> str:
    acc = meta.get("eval", {}).get("accuracy", {})
    return (f"tiny-grpo: {meta['steps']} steps in {meta['train_wall_s']:.0f}s" + (" (TRUNCATED by --max-minutes)"
            if meta["truncated"] else "") + f"; published to {meta['published_to']}"
            + ("; accuracy " + " ".join(f"{k}:{v:.2f}" for k, v in acc.items()) if acc else ""))


def summary(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: meta.get(k) for k in ("steps", "truncated", "train_wall_s", "train_cpu_s", "published_to")} | {
        "accuracy": meta.get("eval", {}).get("accuracy"), "findings": meta.get("findings", [])}


JOB = Job("grpo", GRPOJobConfig, run, report=report, summary=summary,
          help="GRPO on the zoo task from tiny-cot; publishes tiny-grpo (the reasoning-vector donor)",
          findings="thinklens.zoo.jobs.grpo:findings", capability="Steering",
          smallest=("--train-steps", "2", "--prompts-per-step", "2", "--group-size", "4", "--n-eval", "0", "--publish", "{out}/model"))
