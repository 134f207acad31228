"""The figures of latent run folders that the README quotes (used by ``results/collect.py``).

``seek_values``: a latent-seek run's accuracies, oracle baselines and per-problem counts. ``latent_rows``: the rows of
a latent-eval table. ``latent_training``: steps and seconds of a latent model folder and of its parents.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from thinklens.data.answers import is_correct

ROOT = Path(__file__).resolve().parents[1]


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def seek_values(run: Path) -> dict[str, Any]:
    """A latent-seek run: accuracies, the oracle baselines, and per-problem counts (greedy failures fixed by
    LatentSeek and by sampling; chains the reward flags, i.e. scores below the stop threshold, by correctness)."""
    res = read_json(run / "results" / "seek.json")
    s, problems, threshold = res["summary"], res["problems"], res["config"]["threshold"]
    wrong = [p for p in problems if not is_correct(p["original_text"], p["answer"])]
    right_n = len(problems) - len(wrong)
    out = {"n": s["n"], "cot_accuracy": s["cot_accuracy"], "seek_accuracy": s["seek_accuracy"],
           "mean_iterations": s["mean_iterations"], "mean_tokens": s["mean_tokens"], "greedy_failures": len(wrong),
           "greedy_right": right_n, "seek_fixed": sum(is_correct(p["final_text"], p["answer"]) for p in wrong),
           "flagged_wrong": sum(p["original_reward"] <= threshold for p in wrong),
           "flagged_right": sum(p["original_reward"] <= threshold for p in problems if p not in wrong)}
    for t, b in (s.get("baseline") or {}).items():
        if b:
            fixed = sum(any(p["baseline"][t]) for p in wrong)  # per problem: whether each sampled chain was right
            out[f"best_of_n_T{t}"] = {"samples": b["samples"], "accuracy": b["best_of_n"], "fixed": fixed}
    return out


def latent_rows(run: Path) -> list[dict[str, Any]]:
    return [{k: r.get(k) for k in ("model", "method", "label", "problems", "accuracy", "reasoning_positions",
                                   "latent_steps", "compression", "train_s", "n")}
            for r in read_json(run / "results" / "table.json")]


def latent_training(name: str) -> dict[str, Any]:
    """Steps and seconds of a latent-trainer model folder and of its parent (its own run, then the chain)."""
    from thinklens.latent.evaluate import lineage_train_s

    folder = in_checkout(name)
    meta = read_json(folder / "latent.json")
    return {"steps": meta.get("total_steps", meta["config"].get("steps")), "lr": meta["config"].get("lr"),
            "batch_size": meta["config"].get("batch_size"), "own_train_s": meta.get("total_train_wall_s", meta["train_wall_s"]),
            "with_parents_train_s": lineage_train_s(str(folder), in_checkout), "parent": meta.get("parent")}


def in_checkout(name: str) -> Path:
    """A model folder inside this checkout: a path relative to it, else a zoo name (never the installed package's)."""
    return Path(name) if Path(name).is_absolute() else ROOT / name if (ROOT / name).exists() else ROOT / "data" / "zoo" / name
