"""MI peaks' summaries, and tiny-r1's real-path records (``results/collect.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from collect_core import RECORDS, collector, read_json, summary
from lynx_summary import lynx_run_values

#: What a committed record keeps of an mi-peaks run's trajectories: each trajectory's state norms, by model, in file order.
TRAJECTORY_NORMS = "trajectory_norms.json"


def trajectory_norms(run: Path) -> dict[str, list[list[float]]]:
    """Each model's trajectories' state norms (``trajectories/MODEL/*.json``, sorted by file name) of an mi-peaks run."""
    return {d.name: [read_json(f)["norms"] for f in sorted(d.glob("*.json"))]
            for d in sorted((run / "trajectories").iterdir()) if d.is_dir()}


def mi_model_values(run: Path, model: dict[str, Any]) -> dict[str, Any]:
    """One model's figures of an mi-peaks run: means, peak fractions, controls by estimator, small-scale limit,
    and the state norms at the run's first site (quartiles over every step of every trajectory; from the trajectories,
    or in a committed record from its :data:`TRAJECTORY_NORMS`)."""
    kept = run / TRAJECTORY_NORMS
    by_model = read_json(kept) if kept.is_file() else trajectory_norms(run)
    norms = np.concatenate(by_model[model["key"]])
    controls = {c["estimator"]: {k: v for k, v in c.items() if k != "estimator"} for c in model["controls"]}
    return {"accuracy": model["accuracy"], "mean_tokens": model["mean_tokens"], "mean_mi": model["mean_mi"],
            "mean_max_mi": model["mean_max_mi"], "peak_to_median": model["peak_to_median"],
            "peak_fraction": model["peak_fraction"], "controls": controls, "small_scale": model["small_scale"],
            "state_norm": {"q25": float(np.percentile(norms, 25)), "median": float(np.median(norms)),
                           "q75": float(np.percentile(norms, 75))}}


def enrichment_top(run: Path, model: str, rule: str = "top_k", n: int = 4) -> dict[str, Any]:
    """The ``n`` most frequent tokens at ``rule`` peaks of ``model`` (all tokens), with ratio, CI and counts."""
    table = read_json(run / "results" / "enrichment.json")[model]["all"][rule]
    keep = ("ratio", "ci_low", "ci_high", "peak_count", "total_count")
    return {"level": table["level"], "tokens": {w["word"]: {k: w[k] for k in keep} for w in table["words"][:n]}}


@collector("mi_peaks")
def mi_peaks() -> dict[str, Any]:
    """The MI demo on the zoo: the reasoning model and its siblings at the last block, and after the final norm, from
    their committed records ``results/records/mi-peaks-demo-fidelity`` and ``results/records/mi-peaks-demo-final-norm``."""
    from thinklens.analyses.mi.config import ESTIMATORS

    main, post = RECORDS / "mi-peaks-demo-fidelity", RECORDS / "mi-peaks-demo-final-norm"
    models = {m["key"]: mi_model_values(main, m) for m in read_json(main / "results" / "mi_models.json")["models"]}
    final = {m["key"]: mi_model_values(post, m) for m in read_json(post / "results" / "mi_models.json")["models"]}
    meta = read_json(main / "meta.json")["summary"]
    interventions = {k: meta[k] for k in ("suppression", "recycling", "ttts")}
    reference = ESTIMATORS["reference"]
    config = {"demo-fidelity": read_json(main / "config.json"), "demo-final-norm": read_json(post / "config.json"),
              "reference_estimator": {"sigma": reference.sigma, "eps": reference.eps}}
    values = {"models": models, "final_norm": final, "enrichment": {"tiny-think": enrichment_top(main, "tiny-think")},
              "interventions": interventions}
    return summary("thinklens run mi-peaks --preset demo --threads 1 --run-id demo-fidelity && thinklens run "
                   "mi-peaks --preset demo --sites final_norm --no-suppression --no-recycling --no-ttts --threads 1 "
                   "--run-id demo-final-norm; python results/collect.py --record runs/mi-peaks/demo-fidelity "
                   "mi-peaks-demo-fidelity; python results/collect.py --record runs/mi-peaks/demo-final-norm "
                   "mi-peaks-demo-final-norm", [main, post], config, values)


#: tiny-r1's real-path records: the mi-peaks and the LYNX run on GSM8K-format files (``results/realpath_files.py``).
R1_RECORDS = {"mi-peaks": "tiny-r1-mi-peaks", "lynx": "tiny-r1-lynx"}


@collector("tiny_r1_realpath")
def tiny_r1_realpath() -> dict[str, Any]:
    """MI peaks and LYNX on tiny-r1 through the real path (chat template, GSM8K-format files), from their committed
    records ``results/records/tiny-r1-mi-peaks`` and ``results/records/tiny-r1-lynx``."""
    mi, lynx = (RECORDS / R1_RECORDS[k] for k in ("mi-peaks", "lynx"))
    models = {m["key"]: mi_model_values(mi, m) for m in read_json(mi / "results" / "mi_models.json")["models"]}
    words = read_json(mi / "results" / "enrichment.json")
    reflection = {k: {w["word"]: w["ratio"] for w in words[k]["words"]["top_k"]["words"] if w["peak_count"]}
                  for k in models}  # the thinking words at top-k peaks
    values = {"mi": {"models": models, "enrichment": {k: enrichment_top(mi, k) for k in models},
                     "thinking_words": reflection},
              "lynx": lynx_run_values(lynx)}
    return summary("python results/realpath_files.py DIR; cd DIR; thinklens run mi-peaks --model tiny-r1 --data "
                   "mi.jsonl --prompt-format chat --n-problems 36 --max-new-tokens 160 --k 5 --threads 1 --run-id r1; "
                   "thinklens run lynx --model tiny-r1 --prompt-format chat --data train.jsonl --calibration-data "
                   "cal.jsonl --test-data test.jsonl --n-train 120 --n-calibration 120 --n-test 120 --max-new-tokens 160 "
                   "--skip-vacuous --threads 1 --run-id r1; python results/collect.py --record runs/mi-peaks/r1 "
                   "tiny-r1-mi-peaks; python results/collect.py --record runs/lynx/r1 tiny-r1-lynx",
                   [mi, lynx], {"mi-peaks": read_json(mi / "config.json"), "lynx": read_json(lynx / "config.json")}, values)
