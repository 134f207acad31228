"""``thinklens run reasoning-vector``: ``v = theta_a - theta_b`` added to a sibling model, with an alpha sweep.

Zbeeb et al. (arXiv 2509.01363): the vector between two fine-tunes of one init on one dataset (GRPO
minus SFT), added to ``--model`` (the target) in tensor groups (all, attention, mlp, no_embeddings)
at several scales and scored on held-out zoo problems. Results: ``results/vector.json`` (norms per
group, cosines, lineage checks), ``results/alpha_sweep.json`` and the figure alpha_sweep; the target
plus ``save_alpha * v`` in HF format under ``merged/``.

Example:
    >>> JOB.name, ReasoningVectorJobConfig().model, ReasoningVectorJobConfig().seed
    ('reasoning-vector', 'tiny-think', 10000)
    >>> # thinklens run reasoning-vector --alphas=-1,0,1 --n-per-steps 10
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from steering.configs import check_finite
from thinklens.jobs import Job, JobContext
from thinklens.tasks.protocol import HELD_OUT


@dataclass(frozen=True)
class ReasoningVectorJobConfig:
    """``thinklens run reasoning-vector``: v = a - b added to a target model with an alpha sweep."""

    model: str = "tiny-think"
    """The target: the sibling that receives alpha * v (zoo name, local model folder or hub id)."""
    a: str = "data/zoo/tiny-grpo"
    """The checkpoint whose behaviour is wanted (paper: the GRPO model)."""
    b: str = "tiny-cot"
    """The checkpoint subtracted (paper: the SFT model of the same init and data)."""
    base: str | None = "tiny-pre"
    """The shared init (lineage check and cosines; none to skip)."""
    alphas: tuple[float, ...] = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0)
    """Scales of v (negative alphas subtract it; write --alphas=-1,0,1)."""
    groups: tuple[str, ...] = ("all", "attention", "mlp", "no_embeddings")
    """Tensor groups v is applied to (all, attention, mlp, no_embeddings)."""
    style: str | None = None
    """Prompt style of the evaluation (None: the target's own, from its zoo.json or name)."""
    n_per_steps: int = 25
    """Held-out problems per step count (0: norms and cosines only)."""
    steps: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)
    """Step counts evaluated."""
    seed: int = HELD_OUT["eval"]
    """Seed of the held-out problems (the zoo evaluator's)."""
    save_alpha: float | None = 1.0
    """Save target + save_alpha * v (group all) in HF format under merged/ (none: do not save)."""

    def __post_init__(self) -> None:
        from steering.reasoning_vectors import check_group

        check_finite("alpha", [*self.alphas, *([self.save_alpha] if self.save_alpha is not None else [])],
                     "--alphas=-1,0,0.5,1")
        for g in self.groups:
            check_group(g)


def run(config: ReasoningVectorJobConfig, ctx: JobContext) -> dict[str, Any]:
    """Vector and lineage checks, the alpha sweep over groups, the merged model; returns the summary."""
    from dataclasses import asdict

    import torch

    from steering import figures
    from steering.reasoning_vectors import alpha_sweep, apply_vector, load_weights, reasoning_vector, save_merged, vector_stats
    from thinklens.model import HookedModel
    from thinklens.tasks.protocol import model_style
    from zoo.evaluate import evaluate_model

    cfg, run, log = config, ctx.run, ctx.progress.log
    v, lineage = reasoning_vector(cfg.a, cfg.b, base=cfg.base)
    target, tok = ctx.model.hf, ctx.model.tokenizer
    tw = load_weights(target)[0]
    bw = load_weights(cfg.base)[0] if cfg.base else None
    stats = vector_stats(v, tw, bw)
    stats["lineage"] = asdict(lineage)
    if bw is not None:
        wa, wb = load_weights(cfg.a)[0], load_weights(cfg.b)[0]
        stats["norm_delta_a"] = float(torch.cat([(wa[n] - bw[n]).flatten() for n in wa]).norm())
        stats["norm_delta_b"] = float(torch.cat([(wb[n] - bw[n]).flatten() for n in wb]).norm())
    run.write_result("vector", stats)
    log(f"|v|={stats['norms']['all']:.3f} ({stats['relative_norm']:.3%} of |target|); lineage {asdict(lineage)}")
    rows: list[dict[str, Any]] = []
    if cfg.n_per_steps > 0:
        style = cfg.style or model_style(cfg.model)

        def evaluate(model) -> dict[str, Any]:
            r = evaluate_model(HookedModel(model, tok), label="merged", style=style, n_per_steps=cfg.n_per_steps, steps=list(cfg.steps),
                               seed=cfg.seed)
            return {"accuracy": r.mean_accuracy(list(cfg.steps)), "by_steps": {str(k): x for k, x in r.accuracy.items()}}

        rows = alpha_sweep(target, v, cfg.alphas, evaluate, groups=cfg.groups, progress=log)
        run.write_result("alpha_sweep", rows)
        run.write_figure("alpha_sweep", figures.figure_alpha_sweep(rows))
    if cfg.save_alpha is not None:
        merged = apply_vector(target, v, cfg.save_alpha, "all")
        save_merged(merged, tok, run.path / "merged", meta={"a": cfg.a, "b": cfg.b, "target": cfg.model,
                                                              "alpha": cfg.save_alpha, "group": "all"})
    best = max(rows, key=lambda r: r["accuracy"]) if rows else None
    return {"norm": stats["norms"]["all"], "related": lineage.related,
            "alpha0_accuracy": next((r["accuracy"] for r in rows if r["alpha"] == 0 and r["group"] == "all"), None),
            "best": {k: best[k] for k in ("group", "alpha", "accuracy")} if best else None}


def report(summary: dict[str, Any]) -> str:
    line = f"|v| = {summary['norm']:.4g}; lineage {'ok' if summary['related'] else 'SUSPICIOUS (see results/vector.json)'}"
    if summary["best"]:
        b = summary["best"]
        line += f"; accuracy at alpha 0: {summary['alpha0_accuracy']:.3f}, best {b['accuracy']:.3f} ({b['group']}, alpha {b['alpha']:+g})"
    return line


JOB = Job(
    "reasoning-vector", ReasoningVectorJobConfig, run, report=report,
    help="weight-space reasoning vector a - b added to a target model; alpha sweep",
    description="Computes v = theta_a - theta_b between two checkpoints of one lineage (lineage checks against "
    "--base), adds alpha * v to --model in each tensor group (all, attention, mlp, no_embeddings; from the model "
    "family's adapter) and scores every (group, alpha) on held-out zoo problems; saves --model + save_alpha * v.",
)
