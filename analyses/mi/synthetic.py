"""A synthetic mi-peaks run folder, written without any model, in exactly the job's format.

For app tests and load tests: thousands of trajectories in seconds. Curves are random with bumps
at the zoo's structural and reflection tokens, so peaks, enrichment and controls all have content.
The run's records, index, enrichment and comparison go through the job's own writers and stages;
the intervention results are made-up tables in the job's result format.

Example:
    >>> import tempfile
    >>> run = build_synthetic_run(tempfile.mkdtemp(), n=5, models=("tiny-think",))
    >>> from thinklens.analyses.mi.run_format import read_index
    >>> [m["n"] for m in read_index(run.path)["models"]]
    [5]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from thinklens.analyses.mi.config import MIPeaksJobConfig
from thinklens.analyses.mi.figures_interventions import figure_suppression, figure_ttts
from thinklens.analyses.mi.figures_runs import figure_rr_sweep
from thinklens.analyses.mi.per_model import summarize_model, trajectory_peaks
from thinklens.analyses.mi.pipeline import stage_comparison, stage_enrichment, summary_of
from thinklens.analyses.mi.run_format import TrajectoryRecord, write_index, write_trajectory
from thinklens.analyses.mi.suppression import SuppressionResult, SuppressionRow
from thinklens.analyses.mi.ttts import TTTSResult, TTTSRow
from thinklens.runs.folders import RunFolder, to_jsonable
from thinklens.tasks.protocol import model_style

_BUMP = {"<<": 0.6, "</think>": 1.2, "wait": 0.8, "so": 0.4, "hmm": 0.5}


def _tokens(rng: np.random.Generator, style: str) -> list[str]:
    out: list[str] = []
    if style != "direct":
        for _ in range(int(rng.integers(2, 6))):
            if style == "think" and rng.random() < 0.2:
                out.append("hmm")
            a, b = int(rng.integers(1, 60)), int(rng.integers(1, 10))
            out += ["<<", str(a), "+", str(b), "=", str(a + b), ">>"]
            if style == "think" and rng.random() < 0.2:
                out += ["wait", "<<", str(a), "+", str(b), "=", str(a + b), ">>"]
        if style == "think":
            out += ["</think>", "so"]
    return out + ["####", str(int(rng.integers(0, 99))), "<eos>"]


def synthetic_record(i: int, key: str, style: str, n_problems: int, cfg: MIPeaksJobConfig,
                     rng: np.random.Generator) -> TrajectoryRecord:
    """One fake trajectory record with plausible structure (see the module docstring)."""
    tokens = _tokens(rng, style)
    n = len(tokens)
    bump = np.array([_BUMP.get(t, 0.0) for t in tokens])
    base = 0.15 + 0.05 * rng.standard_normal(n).cumsum() / np.sqrt(np.arange(1, n + 1))
    mi = {s: np.abs(base + bump * (1.0 - 0.2 * j) + 0.03 * rng.random(n)).tolist()
          for j, s in enumerate(cfg.sites)}
    site0 = cfg.sites[0]
    variants = {e: (np.asarray(mi[site0]) * (1.0 + j)).tolist() for j, e in enumerate(cfg.estimators)}
    shuffled = {e: (np.asarray(v) * 0.9 + 0.02 * rng.random(n)).tolist() for e, v in variants.items()}
    peaks = trajectory_peaks(mi[site0], shuffled[cfg.estimators[0]], cfg)
    answer = int(rng.integers(0, 99))
    correct = bool(rng.random() < 0.7)
    return TrajectoryRecord(
        index=i, model=key, prompt=f"Tom has {i % 90} apples . How many apples does Tom have ? <think>",
        solution=f"<< 1 + 1 = 2 >> #### {answer}", answer=answer, parsed=answer if correct else answer + 1,
        correct=correct, tokens=tuple(tokens), token_ids=tuple(range(10, 10 + n)), text=" ".join(tokens[:-1]),
        stop_reason="eos", site=site0, estimator=cfg.estimators[0], mi=mi, variants=variants, shuffled=shuffled,
        shuffled_answer_of=(i + 1) % n_problems, norms=(100 + 50 * bump + rng.random(n)).tolist(),
        peaks={r: list(p.indices) for r, p in peaks.items()}, thresholds={r: p.threshold for r, p in peaks.items()},
    )


def build_synthetic_run(root: str | Path, *, n: int = 1000, models: Sequence[str] = ("tiny-think", "tiny-cot"),
                        run_id: str = "synthetic", seed: int = 0, interventions: bool = True):
    """Write ``<root>/mi-peaks/<run_id>`` with ``n`` fake trajectories per model; returns the RunFolder."""
    cfg = MIPeaksJobConfig(model=models[0], compare=tuple(models[1:]), n_problems=n, seed=seed, k=3,
                           sites=("resid_post.3", "resid_post.1"), ci="wilson", suppression=interventions,
                           recycling=interventions, ttts=interventions)
    run = RunFolder.create("mi-peaks", cfg, root=root, run_id=run_id)
    rng = np.random.default_rng(seed)
    entries = []
    for j, name in enumerate(models):
        style = model_style(name, "think" if j == 0 else "cot")
        records = [synthetic_record(i, name, style, n, cfg, rng) for i in range(n)]
        for rec in records:
            write_trajectory(run.path, rec, durable=False)
        entries.append(summarize_model(records, key=name, name=name, role="reasoning" if j == 0 else "baseline",
                                       style=style, fmt=style, n_layers=4, d_model=128, cfg=cfg, token_separator=" "))
        run.mark_done(f"trajectories:{name}")
    write_index(run.path, to_jsonable(entries), peak_rule=cfg.peak_rule)
    run.write_result("enrichment", to_jsonable(stage_enrichment(cfg, run)))
    run.write_result("comparison", to_jsonable(stage_comparison(run)))
    if interventions:
        _fake_interventions(run)
    run.finish(to_jsonable(summary_of(cfg, run)))
    return run


def _fake_interventions(run) -> None:
    """Made-up suppression / RR / TTTS tables in the job's result format (no model)."""
    rows = (SuppressionRow("none", 0, n_correct=70, n=100), SuppressionRow("thinking", 4, n_correct=40, n=100),
            SuppressionRow("random_0", 4, n_correct=69, n=100))
    sup = SuppressionResult(rows=rows, thinking_words=("wait", "so"), thinking_ids=(1, 2), random_ids=((3, 4),), seed=0)
    run.write_figure("suppression", figure_suppression(sup))
    run.write_result("suppression", {"rows": [r.__dict__ for r in rows], "words": ["wait", "so"],
                                     "word_source": "synthetic", "summary": sup.summary()})
    rr = [{"layer": layer, "accuracy_plain": 0.7, "accuracy_rr": 0.7 + 0.02 * layer, "n": 100,
           "mean_recycled_steps": 0.5, "probability": 0.5, "seed": 0, "main": layer == 3} for layer in (3, 0, 1, 2)]
    run.write_figure("recycling", figure_rr_sweep(rr))
    run.write_result("recycling", {"rows": rr, "words": ["wait", "so"], "word_source": "synthetic",
                                   "summary": {"layer": 3, "plain": 0.7, "rr": 0.76, "best_layer": 3}})
    tr = TTTSResult(rows=(TTTSRow("plain", 0, 0.0, n_correct=70, n=100), TTTSRow("plain", 16, 1.0, n_correct=70, n=100),
                          TTTSRow("ttts:wait", 16, 9.0, n_correct=72, n=100)), answer_prompt=" ####", first_pass_accuracy=0.7)
    run.write_figure("ttts", figure_ttts(tr))
    run.write_result("ttts", {"rows": [r.__dict__ for r in tr.rows], "words": ["wait"], "word_source": "synthetic",
                              "first_pass_accuracy": 0.7, "summary": {"plain@0": 0.7}})
    for stage in ("enrichment", "comparison", "suppression", "recycling", "ttts"):
        run.mark_done(stage)
