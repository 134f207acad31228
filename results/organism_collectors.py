"""Real organisms' summaries: smol-r1's training and its evaluation against its base and the zoo's R1 models
(``results/collect.py``; docs/real-models.md's smol-r1 section)."""

from __future__ import annotations

from typing import Any

from collect_core import RECORDS, ROOT, collector, read_json, summary

#: The committed run of ``thinklens run organism-eval`` (its per-trace ground truth is in its results).
SMOL_R1_EVAL_RECORD = "smol-r1-eval"
SMOL_R1_ADAPTER = ROOT / "data" / "real-organisms" / "smol-r1"
def _rate(row: dict[str, Any]) -> dict[str, Any]:
    return {"k": row["k"], "n": row["n"], "rate": row["rate"], "lo": row["interval"][0], "hi": row["interval"][1]}


@collector("smol_r1")
def smol_r1() -> dict[str, Any]:
    """smol-r1's training record (its adapter's organism.json) and the organism-eval record: per model, accuracy with
    and without thinking by step count (Wilson 95%), and smol-r1's pooled ground truth with its forced exits."""
    run = RECORDS / SMOL_R1_EVAL_RECORD
    doc = read_json(run / "results" / "organism_eval.json")
    meta = read_json(SMOL_R1_ADAPTER / "organism.json")
    rows = []
    for ev in doc["models"]:
        steps = [k for k in ev["think"] if k != "all"]
        rows.append({"model": ev["model"], "opens_think": bool(ev.get("opens_think")),
                     "think": {k: _rate(ev["think"][k]) for k in [*steps, "all"]},
                     "no_think": {k: _rate(ev["no_think"][k]) for k in [*steps, "all"]},
                     "gain": ev["think"]["all"]["rate"] - ev["no_think"]["all"]["rate"]})
    organism = doc["models"][0]
    truth = organism["truth"]
    truth_rows = {k: _rate(v) for k, v in truth.items() if isinstance(v, dict)}
    training = {"steps": meta["steps"], "planned_steps": meta["planned_steps"], "truncated": meta["truncated"],
                "train_minutes": round(meta["train_wall_s"] / 60, 1), "final_loss_ema": meta["final_loss_ema"],
                "trainable_params": meta["trainable_params"], "lr": meta["recipe"]["lr"],
                "lora_rank": meta["recipe"]["lora_rank"], "batch_tokens": meta["recipe"]["batch_tokens"],
                # the adapter's size from its weights.json (sha256 and bytes): --check copies JSON, not weights
                "adapter_mb": round(read_json(SMOL_R1_ADAPTER / "weights.json")["adapter_model.safetensors"]["bytes"] / 1e6, 2),
                "base_gguf": meta["base_gguf"], "base_gguf_sha256": meta["base_gguf_sha256"],
                "torch_threads": meta["torch_threads"]}
    command = ("thinklens run zoo-train --model smol-r1 --minutes 45 & thinklens run organism-eval --threads 1 --out RUN; "
               f"python results/collect.py --record RUN {SMOL_R1_EVAL_RECORD}")
    config = {"organism-eval": read_json(run / "config.json"), "recipe": meta["recipe"]}
    return summary(command, [run], config,
                   {"rows": rows, "organism": organism["model"], "truth": truth_rows, "cues": truth["cues"],
                    "oracle_saving": truth["oracle_saving"], "n_traces": truth["n"], "training": training,
                    "step_counts": doc["task"]["step_counts"], "n_eval": doc["task"]["n_eval"], "gsm8k": doc["gsm8k"]},
                   extra_sources=("data/real-organisms/smol-r1/organism.json",))

