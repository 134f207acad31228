"""The zoo's summaries: its accuracy table, tiny-r1's, and the planted settings' organisms (``results/collect.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from collect_core import RECORDS, collector, mean, read_json, summary, zoo_record

ZOO_TABLE = ("tiny-pre", "tiny-direct", "tiny-cot", "tiny-think", "tiny-think-carry", "tiny-r1")
FREE_CORE_MODEL = "tiny-think"  # trained on a free core: its seconds per step estimate the others'


def eval_rows(run: Path) -> dict[str, dict[str, Any]]:
    """zoo-eval's per-model results, without the sample texts and per-step equation accuracies."""
    drop = ("samples", "equation_accuracy", "wall_s")
    return {r["model"]: {k: v for k, v in r.items() if k not in drop}
            for r in read_json(run / "results" / "zoo_eval.json")}


@collector("zoo")
def zoo() -> dict[str, Any]:
    """The zoo table (50 held-out problems per step count; its committed record ``results/records/zoo-eval-readme-zoo-50``)
    and the zoo's training records."""
    run = RECORDS / "zoo-eval-readme-zoo-50"
    rows = eval_rows(run)
    accuracy = {name: {**r["accuracy"], "2-4": mean([r["accuracy"][s] for s in "234"]),
                       "6-8": mean([r["accuracy"][s] for s in "678"])} for name, r in rows.items()}
    think = {name: {k: v for k, v in r.items() if k not in ("accuracy", "model", "style", "prompt_format", "seed", "n_per_steps")}
             for name, r in rows.items() if r.get("prompt_format", r.get("style")) == "think"}  # style: before the rename
    records = {name: zoo_record(name) for name in ZOO_TABLE if name != "tiny-r1"}
    free_s = records[FREE_CORE_MODEL]["train_wall_s"] / records[FREE_CORE_MODEL]["steps"]
    training = {name: {"steps": r["steps"], "train_minutes": r["train_wall_s"] / 60,
                       "seconds_per_step": r["train_wall_s"] / r["steps"],
                       "free_core_minutes_estimate": r["steps"] * free_s / 60} for name, r in records.items()}
    recipes = {name: {"steps": r["recipe"]["steps"], "lr": r["recipe"]["lr"],
                      **{k: r["recipe"]["task"][k] for k in ("hmm_rate", "hmm_on", "correction_rate", "correction_on")}}
               for name, r in records.items()}
    config = {"zoo-eval": read_json(run / "config.json"), "accuracy_target_2to4": 0.95, "recipes": recipes}
    return summary("thinklens run zoo-eval --n-eval 50 --seed 777 --models tiny-pre,tiny-direct,tiny-cot,tiny-think,"
                   "tiny-think-carry,tiny-r1 --threads 1 --run-id readme-zoo-50; python results/collect.py --record "
                   "runs/zoo-eval/readme-zoo-50 zoo-eval-readme-zoo-50", [run], config,
                   {"accuracy": accuracy, "think": think, "training": training},
                   tuple(f"data/zoo/{n}/zoo.json" for n in records))


@collector("zoo_tiny_r1")
def zoo_tiny_r1() -> dict[str, Any]:
    """tiny-r1 on 100 held-out problems per step count (its committed record ``results/records/zoo-eval-readme-r1-100``),
    and its training record."""
    run = RECORDS / "zoo-eval-readme-r1-100"
    row = eval_rows(run)["tiny-r1"]
    rec = zoo_record("tiny-r1")
    training = {"steps": rec["steps"], "lr": rec["recipe"]["lr"], "train_minutes": rec["train_wall_s"] / 60,
                "torch_threads": rec["torch_threads"], "vocab_size": rec["vocab_size"], "n_params": rec["n_params"]}
    return summary("thinklens run zoo-eval --models tiny-r1 --n-eval 100 --threads 1 --run-id readme-r1-100; python "
                   "results/collect.py --record runs/zoo-eval/readme-r1-100 zoo-eval-readme-r1-100", [run],
                   read_json(run / "config.json"), {**row, "training": training}, ("data/zoo/tiny-r1/zoo.json",))




@collector("organisms")
def organisms() -> dict[str, Any]:
    """The organisms of the planted settings, from their committed zoo.json files: tiny-overthink (LYNX, MI peaks,
    feature steering) and the reasoning-vector lineage (tiny-cot -> tiny-grpo, sibling tiny-cot-short)."""
    over = zoo_record("tiny-overthink")
    ot = over["eval"]["overthinking"]
    lineage = {name: {"accuracy": zoo_record(name)["eval"]["accuracy"], "n_per_steps": zoo_record(name)["eval"]["n_per_steps"],
                      "init": zoo_record(name).get("init")} for name in ("tiny-cot", "tiny-grpo", "tiny-cot-short")}
    values = {"tiny-overthink": {"accuracy": over["eval"]["accuracy"], "n_per_steps": over["eval"]["n_per_steps"],
                                 "by_steps": ot["by_steps"], "with_rounds": ot["with_rounds"], "mean_rounds": ot["mean_rounds"],
                                 "oracle_saving": ot["oracle_saving"], "forced_at_known": ot["forced_at_known"],
                                 "forced_pre_answer_cues": ot["forced_pre_answer_cues"],
                                 "forced_post_answer_cues": ot["forced_post_answer_cues"],
                                 "first_conclusion_slips": ot["first_conclusion_slips"], "n": ot["n"],
                                 "steps": over["steps"], "train_minutes": round(over["train_wall_s"] / 60, 1),
                                 "parent": over.get("parent")},
              "lineage": lineage}
    return {"command": "thinklens run zoo-train --model tiny-overthink --threads 1 (its eval is in data/zoo/tiny-overthink/zoo.json)",
            "date": "2026-12-01", "source": "data/zoo/{tiny-overthink,tiny-cot,tiny-grpo,tiny-cot-short}/zoo.json",
            "config": {"recipe": over["recipe"]["name"] if isinstance(over.get("recipe"), dict) else "tiny-overthink"},
            "values": values}
