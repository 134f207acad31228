"""Write the committed run summaries that README.md's results blocks quote: ``python results/collect.py NAME ...``.

Each entry of :data:`COLLECTORS` reads the run folder(s) behind one README results block and returns the summary
``{"command", "date", "source", "config", "values"}``; ``main`` writes it to ``results/NAME.json``. With no NAME,
every summary is rewritten. ``tests/core/test_readme_results.py`` checks that each number of a block is in the
summary it names (:mod:`tools.readme_results`).

Inputs: the committed run records ``results/records/`` (``--record RUN NAME``, ``--record-demo``), the zoo's training
records ``data/zoo/*/zoo.json`` and the committed SAE's metrics; run folders not kept as records are read from
``./runs`` (``$THINKLENS_RUNS``). ``python results/collect.py --check`` rebuilds every summary from a copy of the repository's
tracked files only and says, per file, whether it is byte-identical, differs, or has no committed record (with the
command that rebuilds it). To add a summary: write a function returning that dict and register it with
``@collector("NAME")``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
from latent_summary import latent_rows, latent_training, seek_values  # results/ is on sys.path as a script
from lynx_summary import DELTA_SETS, delta_sets, lynx_run_values

from thinklens.runs.folders import to_jsonable

ROOT = Path(__file__).resolve().parents[1]
RUNS = Path(os.environ.get("THINKLENS_RUNS", ROOT / "runs"))
OUT = ROOT / "results"
RECORDS = OUT / "records"
#: The committed record of the last ``make demo``: its log and each step's config.json and meta.json.
DEMO_RECORD = RECORDS / "demo"
DEMO_COMMAND = "make demo 2>&1 | tee runs/demo.log; python results/collect.py --record-demo"
MAX_BYTES = 50_000

COLLECTORS: dict[str, Callable[[], dict[str, Any]]] = {}


def collector(name: str) -> Callable:
    """Register a function returning one summary under ``name`` (written to results/NAME.json)."""
    def register(fn: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
        COLLECTORS[name] = fn
        return fn
    return register


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def run_date(*runs: Path) -> str:
    """The day the latest of the run folders was created (YYYY-MM-DD, from meta.json)."""
    return max(read_json(r / "meta.json")["created"][:10] for r in runs)


def show(path: Path) -> str:
    """A path as the summary names it: relative to the repository when inside it."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def summary(command: str, runs: list[Path], config: Any, values: Any, extra_sources: tuple[str, ...] = ()) -> dict:
    return {"command": command, "date": run_date(*runs), "source": ", ".join([*map(show, runs), *extra_sources]),
            "config": config, "values": values}


def mean(xs: list[float]) -> float:
    return float(np.mean(xs))


# ---------------------------------------------------------------------------------------------- the zoo


ZOO_TABLE = ("tiny-pre", "tiny-direct", "tiny-cot", "tiny-think", "tiny-think-carry", "tiny-r1")
FREE_CORE_MODEL = "tiny-think"  # trained on a free core: its seconds per step estimate the others'


def zoo_record(name: str) -> dict[str, Any]:
    return read_json(ROOT / "data" / "zoo" / name / "zoo.json")


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
    think = {name: {k: v for k, v in r.items() if k not in ("accuracy", "model", "style", "seed", "n_per_steps")}
             for name, r in rows.items() if r["style"] == "think"}
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


# ---------------------------------------------------------------------------------------------- MI peaks


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


# ---------------------------------------------------------------------------------------------- probes


@collector("probe_sweep")
def probe_sweep() -> dict[str, Any]:
    """The probe sweeps on tiny-think: the running value (ridge R^2) and eventual correctness (AUROC), from their committed
    records ``results/records/probe-readme-intermediate`` and ``results/records/probe-readme-correct``."""
    inter, corr = RECORDS / "probe-readme-intermediate", RECORDS / "probe-readme-correct"

    def by_site(sweep: dict[str, Any]) -> dict[str, Any]:
        return {site: {"mean": m, "std": s} for site, m, s in zip(sweep["sites"], sweep["mean"], sweep["std"])}

    a, b = read_json(inter / "results" / "sweep.json"), read_json(corr / "results" / "sweep.json")
    intention = read_json(corr / "results" / "intention.json")["styles"]["think"]
    values = {"intermediate": {"r2": by_site(a["sweeps"]["r2"]), "best_site": a["best_site"], "n_rows": a["n_rows"]},
              "correct": {"auroc": by_site(b["sweeps"]["auroc"]), "best_site": b["best_site"],
                          "model_accuracy": b["model_accuracy"], "steps_only_auroc": b["steps_only_auroc"],
                          "intention_entropy_bits": intention["entropy_bits_mean"]}}
    config = {"intermediate": read_json(inter / "config.json"), "correct": read_json(corr / "config.json")}
    return summary("thinklens run probe --model tiny-think --threads 1 --run-id readme-intermediate && thinklens run "
                   "probe --model tiny-think --target correct --min-steps 1 --max-steps 8 --threads 1 --run-id "
                   "readme-correct; python results/collect.py --record runs/probe/readme-intermediate "
                   "probe-readme-intermediate; python results/collect.py --record runs/probe/readme-correct probe-readme-correct",
                   [inter, corr], config, values)


# ---------------------------------------------------------------------------------------------- LYNX

#: The LYNX records: name -> the command's options after ``thinklens run lynx --model tiny-think``.
LYNX_RECORDS = {
    "lynx-1to4": "--n-train 600 --n-calibration 600 --n-test 600 --threads 1 --run-id after-600",
    "lynx-cue-calibration": "--n-train 600 --n-calibration 600 --n-test 600 --threads 1 --no-calibration-fallbacks "
                            "--skip-vacuous --run-id after-600-cuecal",
    "lynx-4to8": "--min-steps 4 --max-steps 8 --n-train 600 --n-calibration 600 --n-test 600 --skip-vacuous --threads 1 "
                 "--run-id after-4to8",
}


def lynx_summary(name: str, values: dict[str, Any]) -> dict[str, Any]:
    run, options = RECORDS / name, LYNX_RECORDS[name]
    run_id = options.rsplit(" ", 1)[-1]
    return summary(f"thinklens run lynx --model tiny-think {options}; python results/collect.py --record "
                   f"runs/lynx/{run_id} {name}", [run], read_json(run / "config.json"), values)


@collector("lynx_1to4")
def lynx_1to4() -> dict[str, Any]:
    """LYNX on tiny-think, 1-4 step problems: the run with the reference's calibration and its conformal sets per
    delta, from its committed record ``results/records/lynx-1to4``."""
    run = RECORDS / "lynx-1to4"
    return lynx_summary("lynx-1to4", {**lynx_run_values(run), "sets": delta_sets(run)})


@collector("lynx_cue_calibration")
def lynx_cue_calibration() -> dict[str, Any]:
    """LYNX on tiny-think, 1-4 step problems, calibrated on cue events only (``results/records/lynx-cue-calibration``)."""
    return lynx_summary("lynx-cue-calibration", lynx_run_values(RECORDS / "lynx-cue-calibration"))


@collector("lynx_4to8")
def lynx_4to8() -> dict[str, Any]:
    """LYNX on tiny-think, 4-8 step problems (``results/records/lynx-4to8``)."""
    return lynx_summary("lynx-4to8", lynx_run_values(RECORDS / "lynx-4to8"))


# ---------------------------------------------------------------------------------------------- steering


SAE_DIR = ROOT / "data" / "saes" / "tiny-think-resid_post.2-topk32"


@collector("sae")
def sae() -> dict[str, Any]:
    """The committed SAE's held-out metrics (sae-lens's evaluation, written by the sae job beside the weights)."""
    held = read_json(SAE_DIR / "heldout_metrics.json")
    cfg = read_json(SAE_DIR / "thinklens_metrics.json")
    config = {k: cfg[k] for k in ("site", "architecture", "k", "d_sae", "training_tokens", "n_texts")}
    return {"command": "thinklens run sae --model tiny-think --site resid_post.2 --d-sae 1024 --k 32",
            "date": "2026-11-29", "source": show(SAE_DIR), "config": config,
            "values": {k: v for k, v in held.items() if isinstance(v, (int, float))}}


def pruned(obj: Any) -> Any:
    """A result without its texts (sample completions, contexts): only what a README table can quote."""
    if isinstance(obj, dict):
        return {k: pruned(v) for k, v in obj.items() if k not in ("samples", "top_contexts", "texts", "examples")}
    if isinstance(obj, list):
        return [pruned(v) for v in obj if not isinstance(v, str) or len(v) < 40]
    return obj


@collector("steer")
def steer() -> dict[str, Any]:
    """Feature steering against its equal-norm baselines over 3 seeds (the steer job's table and choices), from its
    committed record ``results/records/steer-readme-steer``."""
    run = RECORDS / "steer-readme-steer"
    res = read_json(run / "results" / "steer.json")
    return summary("thinklens run steer --sae data/saes/tiny-think-resid_post.2-topk32 --n-seeds 3 --threads 1 --run-id "
                   "readme-steer; python results/collect.py --record runs/steer/readme-steer steer-readme-steer",
                   [run], read_json(run / "config.json"),
                   {"rows": pruned(res["rows"]), "chosen": pruned(res["chosen"]), "max_new_tokens": res["max_new_tokens"]})


@collector("hybrid")
def hybrid() -> dict[str, Any]:
    """Hybrid steering over 3 seeds: the mean +- std per mode, each seed's accuracies, and the token-choice rule, from
    its committed record ``results/records/hybrid-readme-hybrid``."""
    run = RECORDS / "hybrid-readme-hybrid"
    per_seed = read_json(run / "results" / "hybrid_seeds.json")
    return summary("thinklens run hybrid --n-seeds 3 --n-eval 200 --threads 1 --run-id readme-hybrid; python "
                   "results/collect.py --record runs/hybrid/readme-hybrid hybrid-readme-hybrid", [run],
                   read_json(run / "config.json"),
                   {"summary": read_json(run / "results" / "hybrid_summary.json"),
                    "per_seed": {seed: {mode: {k: v for k, v in r.items() if k != "correct"} if isinstance(r, dict) else r
                                        for mode, r in pruned(modes).items()} for seed, modes in per_seed.items()},
                    "base_own_style": pruned(read_json(run / "results" / "hybrid.json")["base_own_style"]),
                    "info": read_json(run / "results" / "hybrid_info.json")})


GRPO_SEEDS = (10000, 30000, 40000)


@collector("reasoning_vectors")
def reasoning_vectors() -> dict[str, Any]:
    """tiny-grpo against its parent tiny-cot on held-out problems (3 seeds), and v = tiny-grpo - tiny-cot added to
    tiny-think (alpha sweep per tensor group, random-direction control) and to tiny-cot itself (alpha 1 is tiny-grpo); from
    the committed records ``results/records/zoo-eval-grpo-heldout-*`` and ``results/records/reasoning-vector-rv-*``."""
    evals = {s: RECORDS / f"zoo-eval-grpo-heldout-{s}" for s in GRPO_SEEDS}
    by_seed = {s: {r["model"]: r["accuracy"] for r in read_json(run / "results" / "zoo_eval.json")} for s, run in evals.items()}
    steps = [str(k) for k in range(1, 9)]
    pooled = {m: {k: mean([by_seed[s][m][k] for s in GRPO_SEEDS]) for k in steps} for m in ("tiny-cot", "tiny-grpo")}
    for m in pooled:
        pooled[m] |= {"1-4": mean([pooled[m][k] for k in "1234"]), "5": pooled[m]["5"],
                      "6-8": mean([pooled[m][k] for k in "678"]), "1-8": mean([pooled[m][k] for k in steps])}
    gain = {k: pooled["tiny-grpo"][k] - pooled["tiny-cot"][k] for k in pooled["tiny-cot"]}
    sweeps = {}
    for key, rid in (("tiny-think", "rv-think"), ("tiny-cot", "rv-cot")):
        run = RECORDS / f"reasoning-vector-{rid}"
        rows = read_json(run / "results" / "alpha_sweep.json")
        sweeps[key] = {"rows": [{k: r[k] for k in ("group", "alpha", "accuracy", "by_steps")} for r in rows],
                       "vector": read_json(run / "results" / "vector.json"), "config": read_json(run / "config.json")}
    grpo = zoo_record("tiny-grpo")
    training = {k: grpo[k] for k in ("init", "steps", "train_cpu_s", "train_wall_s")} | {
        "grpo": grpo["grpo"], "train_cpu_minutes": grpo["train_cpu_s"] / 60}
    runs = [*evals.values(), RECORDS / "reasoning-vector-rv-think", RECORDS / "reasoning-vector-rv-cot"]
    command = ("thinklens run grpo; thinklens run zoo-eval --models tiny-cot,tiny-grpo --n-eval 100 --seed S --threads 1 --run-id "
               "grpo-heldout-S (S = 10000, 30000, 40000); thinklens run reasoning-vector --threads 1 --run-id rv-think; "
               "thinklens run reasoning-vector --model tiny-cot --groups all --threads 1 --run-id rv-cot; python "
               "results/collect.py --record runs/KIND/ID KIND-ID for each of the five runs")
    return summary(command, runs, {"seeds": list(GRPO_SEEDS), "n_per_steps": 100},
                   {"heldout": {"by_seed": by_seed, "pooled": pooled, "gain": gain}, "sweeps": sweeps,
                    "training": training}, ("data/zoo/tiny-grpo/zoo.json",))


# ---------------------------------------------------------------------------------------------- latent


SEEK_LRS = ("0.03", "0.05", "0.1", "0.2", "0.5", "2.0")
#: The committed record of the latent-seek runs (one sub-folder per run id).
SEEK_RECORD = RECORDS / "latent-seek"


@collector("latent_seek")
def latent_seek() -> dict[str, Any]:
    """LatentSeek(PSRM) at six learning rates with the oracle best-of-N baseline, and the gold-free confidence reward,
    from the committed record ``results/records/latent-seek``."""
    runs = {f"psrm_lr{lr}": SEEK_RECORD / f"seek-psrm-lr{lr}" for lr in SEEK_LRS}
    runs |= {f"confidence_lr{lr}": SEEK_RECORD / f"seek-confidence-lr{lr}" for lr in ("0.05", "0.5")}
    config = read_json(runs["psrm_lr0.5"] / "config.json") | {
        "learning_rates": [float(x) for x in SEEK_LRS], "confidence_learning_rates": [0.05, 0.5],
        "model_context": read_json(ROOT / "data" / "zoo" / "tiny-cot" / "config.json")["max_position_embeddings"]}
    return summary("thinklens run latent-seek --n-eval 30 --seed 20000 --lr LR --threads 1 --run-id seek-psrm-lrLR (LR in "
                   + ", ".join(SEEK_LRS) + "); --reward confidence --lr LR --run-id seek-confidence-lrLR (0.05, 0.5); "
                   "python results/collect.py --record runs/latent-seek latent-seek",
                   list(runs.values()), config, {k: seek_values(r) for k, r in runs.items()})


LATENT_TABLES = {"seed10000": "table-matched", "seed40000": "table-matched-40000"}
#: The matched SFT baselines of the latent table (trained from tiny-cot on tiny-codi's schedule: 12000 steps, then 3000
#: at lr 5e-4, seed 1): their run records hold each model's latent.json and its weights' SHA-256, not the weights.
LATENT_BASELINES = {"sft-cot-matched": "sft-cot-12k-plus3k", "sft-nocot-matched": "sft-nocot-12k-plus3k"}
LATENT_TABLE_COMMAND = (
    "thinklens run sft --train-steps 12000 --threads 1 --run-id sft-cot-12k; thinklens run sft --model "
    "runs/sft/sft-cot-12k/model --train-steps 3000 --lr 5e-4 --seed 1 --threads 1 --run-id sft-cot-12k-plus3k; the same "
    "two with --no-cot and sft-nocot-* run ids; thinklens run latent-eval --models {models} --explicit tiny-codi "
    "--n-eval 100 --seek-n 0 --threads 1 --run-id table-matched; the same with --n-eval 500 --seed 40000 --run-id "
    "table-matched-40000; python results/collect.py --record RUN latent-NAME for runs/sft/sft-cot-12k-plus3k, "
    "runs/sft/sft-nocot-12k-plus3k, runs/latent-eval/table-matched and runs/latent-eval/table-matched-40000")


@collector("latent_table")
def latent_table() -> dict[str, Any]:
    """The latent comparison on 3-4 step problems: 200 held-out problems (seed 10000) and 1000 more (seed 40000),
    with the CoT-SFT and No-CoT baselines trained on tiny-codi's schedule and CODI's explicit-CoT mode; the first
    problem's latents decoded. From the committed records ``results/records/latent-table-matched*`` and
    ``results/records/latent-sft-*-12k-plus3k``."""
    runs = {k: RECORDS / f"latent-{v}" for k, v in LATENT_TABLES.items()}
    baselines = {k: RECORDS / f"latent-{v}" for k, v in LATENT_BASELINES.items()}
    decoding = read_json(runs["seed10000"] / "results" / "decoding.json")[0]
    models = {k: f"runs/sft/{v}/model" for k, v in LATENT_BASELINES.items()}  # their names in the tables
    training = {k: latent_training(show(r / "model")) | {"weights": read_json(r / "model" / WEIGHTS_RECORD)}
                for k, r in baselines.items()}
    training |= {k: latent_training(k) for k in ("tiny-codi", "tiny-coconut", "tiny-latent-sft")}
    for name in ("tiny-cot", "tiny-direct", "tiny-pre"):
        rec = zoo_record(name)
        training[name] = {"steps": rec.get("steps"), "own_train_s": rec.get("train_wall_s"), "parent": rec.get("init")}
    tables = {k: latent_rows(r) for k, r in runs.items()}
    command = LATENT_TABLE_COMMAND.format(models=",".join(r["model"] for r in tables["seed10000"] if r["method"] != "explicit"))
    acc = {r["model"] + (" explicit" if r["method"] == "explicit" else ""): r["accuracy"] for r in tables["seed40000"]}
    nocot, cot = models["sft-nocot-matched"], models["sft-cot-matched"]
    checks = {"fraction_of_matched_cot": acc["tiny-codi"] / acc[cot], "points_above_matched_nocot":
              100 * (acc["tiny-codi"] - acc[nocot]), "points_above_tiny_direct": 100 * (acc["tiny-codi"] - acc["tiny-direct"])}
    for m in decoding["methods"].values():  # the latents' numeric top tokens, as numbers
        m["latent_numbers"] = [[int(t) for t in lat["tokens"] if t.isdigit()] for lat in m["latents"]]
    from thinklens.latent import codi_validation as cv

    codi = read_json(ROOT / "data" / "zoo" / "tiny-codi" / "latent.json")  # 12000 steps, continued 3000 at lr 5e-4
    config = {k: read_json(r / "config.json") for k, r in runs.items()} | {
        "baselines": {k: read_json(r / "config.json") for k, r in baselines.items()},
        "codi_recipe_steps": [codi["continued"]["steps"], codi["config"].get("train_steps", codi["config"].get("steps"))],
        "targets": cv.TABLE_TARGETS}
    return summary(command, [*runs.values(), *baselines.values()], config,
                   {"tables": tables, "checks": checks, "training": training, "decoding_first_problem": decoding})


# ---------------------------------------------------------------------------------------------- benchmarks


#: The committed record of one dated ``make bench`` (its logs and the date it ran; ``BENCH_COMMAND``).
BENCH_RECORD = RECORDS / "bench"
BENCH_COMMAND = ("mkdir -p runs/bench; date -I > runs/bench/date.txt; make bench > runs/bench/make-bench.log 2>&1; "
                 "for i in 1 2; do for b in capture generate lynx; do echo \"== bench/$b.py\"; .venv/bin/python "
                 "bench/$b.py; done > runs/bench/repeat-$i.log 2>&1; done; mkdir -p results/records/bench; "
                 "cp runs/bench/*.log runs/bench/date.txt results/records/bench/")


def bench_lines(log: Path) -> dict[str, dict[str, Any]]:
    """``name=value`` lines of a ``make bench`` log, by bench (``== bench/x.py`` headers); numbers parsed, ``a/b``
    kept as text with its parts."""
    out: dict[str, dict[str, Any]] = {}
    bench = "?"
    for line in log.read_text().splitlines():
        if line.startswith("== bench/"):
            bench = line[3:].strip()
            out[bench] = {}
            continue
        name, eq, value = line.partition("=")
        if not eq or not name.replace("_", "").isalnum() or name != name.strip():
            continue
        try:
            out[bench][name] = float(value)
        except ValueError:
            parts = value.split("/")
            out[bench][name] = ({"text": value, "ok": float(parts[0]), "of": float(parts[1])}
                                if len(parts) == 2 and all(x.strip().isdigit() for x in parts) else value)
    return out


@collector("bench")
def bench() -> dict[str, Any]:
    """One dated ``make bench`` run, and the spread of the headlines that sit near their target over repeated runs of
    their bench, from the committed record ``results/records/bench``. Each bench prints its headline's target
    (``NAME_target=BOUND``, bench/_targets.py) before the headline, so the targets come from the log too."""
    values = bench_lines(BENCH_RECORD / "make-bench.log")
    targets = {name[: -len("_target")]: v for lines in values.values() for name, v in lines.items()
               if name.endswith("_target")}
    repeats = [bench_lines(p) for p in sorted(BENCH_RECORD.glob("repeat-*.log"))]
    spread: dict[str, list[float]] = {}
    for run in [values, *repeats]:
        for lines in run.values():
            for name, v in lines.items():
                if name in targets and isinstance(v, float):
                    spread.setdefault(name, []).append(v)
    spread_summary = {k: {"runs": v, "min": min(v), "max": max(v)} for k, v in spread.items() if len(v) > 1}
    return {"command": BENCH_COMMAND, "date": (BENCH_RECORD / "date.txt").read_text().strip(),
            "source": show(BENCH_RECORD), "config": {"targets": targets, "machine": "2 cores, no GPU, shared"},
            "values": {"benches": values, "spread": spread_summary}}


# ---------------------------------------------------------------------------------------------- the demo


@collector("demo")
def demo() -> dict[str, Any]:
    """``make demo``'s step times (its log) and the demo SAE's figures (its run folder), from the committed demo record
    ``results/records/demo`` (``python results/collect.py --record-demo`` after ``make demo 2>&1 | tee runs/demo.log``)."""
    log = (DEMO_RECORD / "demo.log").read_text().splitlines()
    total = next(float(x.split()[3]) for x in log if x.startswith("demo finished in"))
    steps = {}
    for item in next(x for x in log if x.startswith("step times: "))[len("step times: "):].split(", "):
        name, secs, _ = item.rsplit(" ", 2)
        steps[name] = float(secs)
    sae_run = DEMO_RECORD / "sae" / "demo"
    sae_summary = read_json(sae_run / "meta.json")["summary"]
    sae_config = read_json(sae_run / "config.json")
    return summary(DEMO_COMMAND, [sae_run], {"sae": sae_config, "n_steps": len(steps)},
                   {"total_s": total, "steps_s": steps, "sae": sae_summary}, (show(DEMO_RECORD / "demo.log"),))


# ---------------------------------------------------------------------------------------------- records

#: What a committed run record keeps of a run folder: its config, meta and JSON results (no tensors, caches or figures).
RECORD_FILES = ("config.json", "meta.json", "results/*.json", "latent.json")
#: Beside a recorded model folder: the SHA-256 of its weights, which the record does not hold (its command rebuilds them).
WEIGHTS_RECORD = "weights.json"


def sha256_of(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def keep_record(run: Path, name: str) -> Path:
    """Copy the pruned run folder ``run`` (and its sub-runs' pruned folders: a model folder keeps its latent.json and
    the SHA-256 of its weights, :data:`WEIGHTS_RECORD`) to ``results/records/NAME``: the record a summary is rebuilt
    from in a fresh clone. ``python results/collect.py --record RUN NAME``."""
    import shutil

    dest = RECORDS / name
    if dest.exists():
        shutil.rmtree(dest)
    for sub in [run, *sorted(p.parent for p in run.glob("**/config.json") if p.parent != run)]:
        for pattern in RECORD_FILES:
            for f in sub.glob(pattern):
                target = dest / f.relative_to(run)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, target)
        weights = sorted(sub.glob("*.safetensors"))
        if weights:  # a model folder: what its weights were, so a rebuilt model can be checked against it
            (dest / sub.relative_to(run)).mkdir(parents=True, exist_ok=True)
            (dest / sub.relative_to(run) / WEIGHTS_RECORD).write_text(json.dumps(
                {f.name: {"sha256": sha256_of(f), "bytes": f.stat().st_size} for f in weights}, indent=1) + "\n")
    if (run / "trajectories").is_dir():  # an mi-peaks run: its state norms, not the trajectories (MBs of tokens)
        (dest / TRAJECTORY_NORMS).write_text(json.dumps(trajectory_norms(run)) + "\n")
    if (run / "arrays" / "test_events.safetensors").is_file():  # a LYNX run: its prediction sets, not its arrays
        (dest / DELTA_SETS).write_text(json.dumps(delta_sets(run)) + "\n")
    return dest


def keep_demo_record(runs: Path = RUNS) -> Path:
    """Copy what the demo summaries read of the last ``make demo`` (its log ``runs/demo.log``, and each step's run
    folder's config.json and meta.json, which holds its findings) to ``results/records/demo``."""
    import shutil

    from thinklens.runs.demo_plan import DEMO_STEPS

    if DEMO_RECORD.exists():
        shutil.rmtree(DEMO_RECORD)
    DEMO_RECORD.mkdir(parents=True)
    shutil.copyfile(runs / "demo.log", DEMO_RECORD / "demo.log")
    for step in DEMO_STEPS:
        if step.kind is None:
            continue
        for f in ("config.json", "meta.json"):
            src = runs / step.kind / step.run_id / f
            if src.is_file():
                (DEMO_RECORD / step.kind / step.run_id).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, DEMO_RECORD / step.kind / step.run_id / f)
    return DEMO_RECORD


# ---------------------------------------------------------------------------------------------- validation


#: The full validation table's records, each with the settings taken from it (the ``--methods`` of the command that
#: reproduces those rows; runs side by side, one per core). validate-latent-hybrid also holds the hybrid pair's row
#: from before it became the skill-gap boundary, superseded by validate-hybrid-skill-gap.
VALIDATION_RECORDS = {"validate-steering": "steer,sae", "validate-rest": "findings,lynx,mi-peaks,reasoning-vector",
                      "validate-latent-hybrid": "latent-seek,hybrid/null", "validate-hybrid-skill-gap": "hybrid/skill-gap",
                      "validate-hybrid-absent-behaviour": "hybrid/absent-behaviour",
                      "validate-hybrid-latent": "hybrid/planted-latent", "validate-codi": "codi",
                      "validate-coconut": "coconut"}
#: Threads of a record's run where it was not 1.
VALIDATION_THREADS = {"validate-hybrid-latent": 2, "validate-codi": 2}
VALIDATION_ORDER = ("lynx", "mi-peaks", "sae", "steer", "reasoning-vector", "hybrid", "latent-seek", "codi", "coconut",
                    "findings")


def validation_rows(records: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Each record's rows of the settings it is listed for (:data:`VALIDATION_RECORDS`), in method order. Every
    registered setting must come from exactly one record: a setting with no record, a listed setting missing from its
    record, or one listed twice is an error."""
    from thinklens.calibration.controls import all_settings, select_settings

    records = VALIDATION_RECORDS if records is None else records
    rows, seen = [], {}
    for name, methods in records.items():
        keys = {s.key for s in select_settings(tuple(methods.split(",")))}
        got = {f"{r['method']}/{r['setting']}": r for r in read_json(RECORDS / name / "results" / "validate.json")["rows"]}
        for key in sorted(keys):
            if key not in got:
                raise ValueError(f"validation record {name} has no row for {key} (it holds {sorted(got)})")
            if key in seen:
                raise ValueError(f"{key} is taken from both {seen[key]} and {name}")
            seen[key] = name
        current = {s.key: s for s in select_settings(tuple(methods.split(",")))}
        # judged by the setting's expectation today, not the one it was recorded under: a setting relabelled to pass
        # (issue 39: the hybrid's skill gap, recorded as a 'boundary' expecting no effect) counts as failed
        rows += [{k: r[k] for k in ("method", "setting", "statistic", "value", "ci", "verdict", "n", "target", "seconds")}
                 | {"expected": current[key].expected, "kind": current[key].kind,
                    "ok": r["verdict"] == current[key].expected, "recorded_expected": r["expected"]}
                 for key, r in got.items() if key in keys]
    missing = sorted({s.key for s in all_settings() if not s.on_model} - seen.keys())  # the real-weight table is its own
    if missing:
        raise ValueError(f"no validation record holds {missing}: run them and list the record in VALIDATION_RECORDS")
    rows.sort(key=lambda r: VALIDATION_ORDER.index(r["method"]) if r["method"] in VALIDATION_ORDER else len(VALIDATION_ORDER))
    return rows


@collector("validation")
def validation() -> dict[str, Any]:
    """The validation table: every method on its planted and null settings (``thinklens run validate``, full size),
    from its committed records ``results/records/validate-*`` (:func:`validation_rows`)."""
    runs = [RECORDS / name for name in VALIDATION_RECORDS]
    rows = validation_rows()
    commands = [f"thinklens run validate --methods {m} --threads {VALIDATION_THREADS.get(name, 1)} --out RUN; "
                f"python results/collect.py --record RUN {name}" for name, m in VALIDATION_RECORDS.items()]
    return summary(" & ".join(commands), runs, {name: read_json(RECORDS / name / "config.json") for name in VALIDATION_RECORDS},
                   {"rows": rows, "validated": sum(r["ok"] for r in rows), "n_settings": len(rows),
                    "failed": [f"{r['method']}/{r['setting']}" for r in rows if not r["ok"]],
                    "minutes": round(sum(r["seconds"] for r in rows) / 60, 1)})


#: The real-weight validation table's records (``thinklens run validate --model M``, full size): record -> (model, the
#: ``--methods`` of the command that reproduces its rows).
REAL_VALIDATION_RECORDS = {"validate-real-smollm2": ("smollm2-135m", "induction,readout"),
                           "validate-real-smollm2-steering": ("smollm2-135m", "actadd,sae-real"),
                           "validate-real-gemma": ("gemma-3-270m", "induction,readout")}


@collector("real_validation")
def real_validation() -> dict[str, Any]:
    """Effects known from the literature, on real pretrained weights (``validate --model``; docs/real-models.md): each
    record's rows with its model and the GGUF it was converted from."""
    from thinklens.calibration.controls import select_settings

    runs = [RECORDS / name for name in REAL_VALIDATION_RECORDS]
    rows, models = [], {}
    for name, (model, methods) in REAL_VALIDATION_RECORDS.items():
        doc = read_json(RECORDS / name / "results" / "validate.json")
        if doc.get("model") != model:
            raise ValueError(f"record {name} validated {doc.get('model')!r}, not {model!r}")
        keys = {s.key for s in select_settings(tuple(methods.split(","))) if s.on_model}
        got = {f"{r['method']}/{r['setting']}": r for r in doc["rows"]}
        if keys - got.keys():
            raise ValueError(f"real validation record {name} has no row for {sorted(keys - got.keys())}")
        src = doc.get("model_source") or {}
        models[model] = {"gguf": src.get("gguf"), "gguf_sha256": src.get("gguf_sha256"), "dequantized": src.get("dequantized")}
        rows += [{"model": model, **{k: got[key][k] for k in ("method", "setting", "expected", "statistic", "value", "ci",
                                                               "verdict", "ok", "n", "target", "seconds")},
                  "minutes": round(got[key]["seconds"] / 60, 1)} for key in sorted(keys, key=lambda k: list(got).index(k))]
    per_model = ", ".join(f"{m} {sum(r['ok'] for r in rows if r['model'] == m)}/{sum(r['model'] == m for r in rows)}" for m in models)
    commands = [f"thinklens run validate --model {model} --methods {methods} --threads 1 --out RUN; "
                f"python results/collect.py --record RUN {name}" for name, (model, methods) in REAL_VALIDATION_RECORDS.items()]
    return summary(" & ".join(commands), runs, {name: read_json(RECORDS / name / "config.json") for name in REAL_VALIDATION_RECORDS},
                   {"rows": rows, "models": models, "validated": sum(r["ok"] for r in rows), "n_settings": len(rows),
                    "per_model": per_model, "failed": [f"{r['model']} {r['method']}/{r['setting']}" for r in rows if not r["ok"]],
                    "minutes": round(sum(r["seconds"] for r in rows) / 60, 1)})


#: The jobs run on each real model (``python -m tools.real_jobs``), in the order of its plan.
REAL_JOBS_RECORD = "real-jobs"
REAL_MODEL_NAMES = ("smollm2-135m", "gemma-3-270m")


@collector("real_jobs")
def real_jobs() -> dict[str, Any]:
    """Every job on each real model at a first look's settings (issue 37 item 3; docs/real-models.md): per (job, model)
    whether it ran or refused, its minutes, and its first finding's sentence or its one-line refusal."""
    run = RECORDS / REAL_JOBS_RECORD
    table = read_json(run / "jobs.json")
    models = sorted({r["model"] for r in table.values()}, key=REAL_MODEL_NAMES.index)
    order = list(dict.fromkeys(r["job"] for r in table.values()))
    rows = []
    for job in order:
        for model in models:
            r = table.get(f"{model}/{job}")
            if r is None:
                raise ValueError(f"record {REAL_JOBS_RECORD} has no run of {job} on {model}")
            said = (r.get("headlines") or ["(no findings: a data job)"])[0] if r["outcome"] == "ran" else r["reason"]
            rows.append({"job": job, "model": model, "outcome": r["outcome"], "minutes": round(r["seconds"] / 60, 1),
                         "n_findings": r.get("n_findings", 0), "said": said.replace("|", "/")[:220]})
    count = {m: {o: sum(r["outcome"] == o for r in rows if r["model"] == m) for o in ("ran", "refused", "error")}
             for m in models}
    from thinklens.runs.jobs import job_names

    registered = job_names()
    return summary(read_json(run / "meta.json")["command"], [run], {"models": models, "jobs": order},
                   {"rows": rows, "count": count, "n_jobs": len(order), "n_registered": len(registered),
                    "not_yet": [j for j in registered if j not in order], "n_models_planned": len(REAL_MODEL_NAMES),
                    "minutes": round(sum(r["minutes"] for r in rows), 1)})


@collector("codi_serial")
def codi_serial() -> dict[str, Any]:
    """CODI on a task that needs serial computation (issue 22 item 5): the codi settings of the validation record
    ``results/records/validate-codi`` (each organism's accuracy with its Wilson interval, CODI's gain over the matched
    No-CoT with its paired interval, the compression; the same CODI with noise latents) and the organisms' training
    from their latent.json files."""
    from dataclasses import fields

    from thinklens.latent import codi_validation as cv
    from thinklens.latent.methods import method_named

    run = RECORDS / "validate-codi"
    rows = {r["setting"]: r for r in read_json(run / "results" / "validate.json")["rows"] if r["method"] == "codi"}
    keep = ("value", "ci", "verdict", "n", "target")
    planted, null = rows["planted-serial"], rows["null-latents"]
    training = {}
    for key, name in cv.ORGANISMS.items():
        meta = read_json(ROOT / "data" / "zoo" / name / "latent.json")
        method = method_named(meta["method"])  # its phases count the steps (Coconut by stage, Latent-SFT by run)
        cfg = method.config(**{k: v for k, v in meta["config"].items() if k in {f.name for f in fields(method.config)}})
        training[key] = {"model": name, "method": meta["method"], "steps": sum(p.steps for p in method.module.train_phases(cfg)),
                         "train_s": meta["train_wall_s"], "n_latents": getattr(cfg, "n_latents", None),
                         "cot": meta["config"].get("cot"), "include_last_step": meta["config"].get("include_last_step")}
    def planted_values(row: dict) -> dict:
        d = row["details"]
        return {k: row[k] for k in keep} | {
            k: d[k] for k in ("precondition_met", "compression", "cot_positions", "codi_positions", "nocot_accuracy",
                              "cot_accuracy", "codi_accuracy", "codi_explicit_accuracy", "latent_hits",
                              "explicit_last_step_misses", "distillation_distance", "p", "problem_seed")}

    def null_values(row: dict) -> dict:
        return {k: row[k] for k in keep} | {k: row["details"][k] for k in ("nocot_accuracy", "noised_codi_accuracy",
                                                                           "latent_hits", "p")}

    values = {"planted": planted_values(planted), "null": null_values(null),
              "planted_full_chain": planted_values(rows["planted-serial-full-chain"]),
              "null_full_chain": null_values(rows["null-latents-full-chain"]), "training": training}
    command = "; ".join(cv.RETRAIN.values()) + ("; thinklens run validate --methods codi --threads 2 --out RUN; "
                                                "python results/collect.py --record RUN validate-codi")
    cont = RECORDS / CODI_CONTINUED
    rows = [{k: r.get(k) for k in ("model", "method", "label", "accuracy", "ci", "reasoning_positions", "n")}
            | {"model": run_relative(r["model"])} for r in read_json(cont / "results" / "table.json")]
    found = read_json(cont / "meta.json")["summary"]["findings"]
    codi_vs_nocot = next(f for f in found if f["claim"].startswith("CODI") and "No-CoT" in f["control"])
    values["continued"] = {"rows": rows, "codi_vs_nocot": {k: codi_vs_nocot[k] for k in ("value", "control_value", "p", "n")}
                           | {"diff": codi_vs_nocot["extra"]["diff"], "diff_ci": codi_vs_nocot["extra"]["diff_ci"]}}
    command += "; " + CODI_CONTINUED_COMMAND
    others = {"coconut": "validate-coconut"}  # the other latent methods' validation records
    for method, record in others.items():
        crows = {r["setting"]: r for r in read_json(RECORDS / record / "results" / "validate.json")["rows"]}
        values[method] = {"planted": {k: crows["planted-serial"][k] for k in keep} | {
            k: crows["planted-serial"]["details"][k] for k in ("compression", f"{method}_positions", "nocot_accuracy",
                                                              f"{method}_accuracy", "latent_hits", "p")},
            "null": {k: crows["null-latents"][k] for k in keep} | {
                k: crows["null-latents"]["details"][k] for k in (f"noised_{method}_accuracy", "latent_hits", "p")}}
        command += (f"; thinklens run validate --methods {record.removeprefix('validate-')} --threads 1 --out RUN; "
                    f"python results/collect.py --record RUN {record}")
    matched = RECORDS / CODI_MATCHED
    values["matched_eval"] = serial_matched(matched, planted["details"]["cot_positions"])
    command += "; " + CODI_MATCHED_COMMAND
    variants = RECORDS / CODI_VARIANTS
    values["variants"] = codi_variants(variants, planted["details"]["cot_positions"])
    command += "; " + CODI_VARIANTS_COMMAND
    cont_config = read_json(cont / "config.json")
    trained = [RECORDS / r for r, _ in CODI_VARIANT_RUNS.values()]
    return summary(command, [run, cont, matched, variants, *trained, *(RECORDS / r for r in others.values())], {
        "steps": [cv.MIN_STEPS, cv.MAX_STEPS], "targets": {
            "max_nocot": cv.MAX_NOCOT, "min_cot": cv.MIN_COT, "min_compression": cv.MIN_COMPRESSION, "min_gain": cv.MIN_GAIN},
        "continued": cont_config | {k: [run_relative(m) for m in cont_config[k]] for k in ("models", "explicit")}},
        values, extra_sources=tuple(f"data/zoo/{n}/latent.json" for n in cv.ORGANISMS.values()))


def run_relative(path: str) -> str:
    """A model path as the checkout names it: a run written with an absolute path (``/srv/x/runs/sft/a/model``) reads
    ``runs/sft/a/model``, whichever folder the checkout was in; other paths are kept.

    Example:
        >>> run_relative("/srv/checkout/runs/sft/a/model"), run_relative("tiny-cot")
        ('runs/sft/a/model', 'tiny-cot')
    """
    parts = Path(path).parts
    return str(Path(*parts[parts.index("runs"):])) if Path(path).is_absolute() and "runs" in parts else path


#: The three serial organisms continued alike (2000 steps at lr 5e-4, seed 1: the continuation tiny-codi had), scored on
#: the validation's problems by latent-eval: whether a longer run widens CODI's gain. The continued models are not
#: committed (the command rebuilds them); their table and findings are the record.
CODI_CONTINUED = "latent-eval-serial-plus2k"
CODI_CONTINUED_COMMAND = (
    "thinklens run codi --model runs/codi/codi-serial-7k/model --n-latents 12 --train-steps 2000 --lr 5e-4 --seed 1 "
    "--min-steps 6 --max-steps 8 --threads 1 --run-id codi-serial-7k-plus2k; thinklens run sft --model "
    "runs/sft/sft-nocot-serial-7k/model --no-cot --train-steps 2000 --lr 5e-4 --seed 1 --min-steps 6 --max-steps 8 "
    "--threads 1 --run-id sft-nocot-serial-7k-plus2k; the same without --no-cot from runs/sft/sft-cot-serial-7k/model "
    "--run-id sft-cot-serial-7k-plus2k; thinklens run latent-eval --models runs/sft/sft-nocot-serial-7k-plus2k/model,"
    "runs/sft/sft-cot-serial-7k-plus2k/model,runs/codi/codi-serial-7k-plus2k/model --explicit "
    "runs/codi/codi-serial-7k-plus2k/model --min-steps 6 --max-steps 8 --n-eval 100 --seed 73000 --seek-n 0 --threads 1 "
    "--run-id serial-plus2k; python results/collect.py --record runs/latent-eval/serial-plus2k " + CODI_CONTINUED)


#: Every latent organism of the serial task scored together by latent-eval on the validation's problems, with the
#: matched No-CoT: Latent-SFT, which has no validation setting (its recipe compresses 2 chain tokens a latent, below the
#: 3x target), is read from here. Its training run's record keeps the config, the losses and the weights' SHA-256.
CODI_MATCHED = "latent-eval-serial-matched"
CODI_MATCHED_COMMAND = (
    "thinklens run latent-sft --min-steps 6 --max-steps 8 --encoder-steps 1000 --decoder-steps 1000 --joint-steps 1000 "
    "--stage2-steps 4000 --threads 1 --run-id lsft-serial-7k --publish data/zoo/tiny-latent-sft-serial; python "
    "results/collect.py --record runs/latent-sft/lsft-serial-7k latent-lsft-serial-7k; thinklens run latent-eval --models "
    "tiny-nocot-serial,tiny-codi-serial-full,tiny-coconut-serial,tiny-latent-sft-serial --min-steps 6 --max-steps 8 "
    "--n-eval 100 --seed 73000 --seek-n 0 --threads 2 --run-id serial-matched2; python results/collect.py --record "
    "runs/latent-eval/serial-matched2 " + CODI_MATCHED)


#: Two changes to the whole-chain CODI's training signal, each trained alike (from tiny-cot, 7000 steps, seed 0): the
#: reference's Llama-1B distillation weight, and the paper's 6 latents. Chosen beforehand: a variant would get a
#: validation setting only if its own held-out evaluation after training (not the settings' problems) beat
#: tiny-codi-serial-full's; neither did. Training records, and their scores on the settings' problems.
CODI_VARIANT_RUNS = {"w_kd=20": ("latent-codi-serial-kd20-7k", "tiny-codi-serial-full-kd20"),
                     "6 latents": ("latent-codi-serial-lat6-7k", "tiny-codi-serial-full-lat6")}
"""Each variant's training record and the folder its model was published to (the latent-eval rows' model)."""
CODI_VARIANTS = "latent-eval-serial-codi-variants"
CODI_VARIANTS_COMMAND = (
    "thinklens run codi --min-steps 6 --max-steps 8 --train-steps 7000 --n-latents 12 --w-kd 20 --include-last-step "
    "--threads 1 --run-id codi-serial-full-kd20 --publish runs/pub/tiny-codi-serial-full-kd20; thinklens run codi "
    "--min-steps 6 --max-steps 8 --train-steps 7000 --n-latents 6 --include-last-step --threads 1 --run-id "
    "codi-serial-full-lat6 --publish runs/pub/tiny-codi-serial-full-lat6; python results/collect.py --record "
    "runs/codi/codi-serial-full-kd20 latent-codi-serial-kd20-7k; python results/collect.py --record "
    "runs/codi/codi-serial-full-lat6 latent-codi-serial-lat6-7k; thinklens run latent-eval --models "
    "tiny-nocot-serial,tiny-codi-serial-full,runs/pub/tiny-codi-serial-full-kd20,runs/pub/tiny-codi-serial-full-lat6 "
    "--explicit runs/pub/tiny-codi-serial-full-kd20,runs/pub/tiny-codi-serial-full-lat6 --min-steps 6 --max-steps 8 "
    "--n-eval 100 --seed 73000 --seek-n 0 --threads 2 --run-id serial-codi-variants; python results/collect.py --record "
    "runs/latent-eval/serial-codi-variants " + CODI_VARIANTS)


def codi_variants(record: Path, cot_positions: float) -> dict[str, Any]:
    """The CODI variants (:data:`CODI_VARIANT_RUNS`) beside the whole-chain CODI and the matched No-CoT, from one
    latent-eval record on the settings' problems: each latent row's accuracy, positions, compression and paired
    difference from the No-CoT (as :func:`serial_matched`), its explicit-CoT row's accuracy, and its training (steps,
    distillation weight, latents, seconds, and its own held-out accuracy after training: the rule that chose)."""
    from thinklens.latent import codi_validation as cv

    table = read_json(record / "results" / "table.json")
    found = read_json(record / "meta.json")["summary"]["findings"]
    nocot = next(r for r in table if r.get("no_cot"))
    out: dict[str, Any] = {"nocot": {k: nocot[k] for k in ("label", "accuracy", "ci", "n")}}
    full = read_json(ROOT / "data" / "zoo" / "tiny-codi-serial-full" / "latent.json")
    trained = {"whole chain": {"config": full["config"], "eval": full["eval"], "train_wall_s": full["train_wall_s"]}}
    trained |= {name: read_json(RECORDS / rec / "model" / "latent.json") for name, (rec, _) in CODI_VARIANT_RUNS.items()}
    by_folder = {"whole chain": cv.ORGANISMS["codi_full"]} | {name: folder for name, (_, folder) in CODI_VARIANT_RUNS.items()}
    for name, folder in by_folder.items():
        latent = next(r for r in table if r["method"] == "codi" and Path(r["model"]).name == folder)
        explicit = next((r for r in table if r["method"] == "explicit" and Path(r["model"]).name == folder), None)
        cfg = trained[name]["config"]
        out[name] = {"label": latent["label"], "accuracy": latent["accuracy"], "ci": latent["ci"],
                     "reasoning_positions": latent["reasoning_positions"],
                     "compression": cot_positions / latent["reasoning_positions"],
                     "vs_nocot": vs_nocot(latent["label"], found, nocot["label"]),
                     "explicit_accuracy": explicit["accuracy"] if explicit else None,
                     "explicit_ci": explicit["ci"] if explicit else None,
                     "training": {"steps": cfg["train_steps"], "w_kd": cfg["w_kd"], "n_latents": cfg["n_latents"],
                                  "include_last_step": cfg["include_last_step"], "train_s": trained[name]["train_wall_s"],
                                  "own_eval_accuracy": trained[name]["eval"]["mean_accuracy"]}}
    return out


def vs_nocot(label: str, found: list[dict], nocot: str) -> dict[str, Any] | None:
    """A latent-eval row's paired finding against the No-CoT row ``nocot`` (both by label): the difference, its
    interval, McNemar p and the verdict; None where the job made no such finding."""
    f = next((f for f in found if f["claim"].startswith(label + " beats") and f["control"] == nocot), None)
    return None if f is None else {"diff": f["extra"]["diff"], "diff_ci": f["extra"]["diff_ci"], "p": f["p"], "verdict": f["verdict"]}


def serial_matched(record: Path, cot_positions: float) -> dict[str, Any]:
    """A latent-eval record of the serial organisms: each row's accuracy (Wilson interval), reasoning positions and own
    training time, keyed by method, and each latent row's paired difference from the No-CoT row on the same problems
    (the job's finding: McNemar p, bootstrap interval, verdict); ``cot_positions``: the matched CoT-SFT's chain length, over
    which a latent row's positions give its compression."""
    table = read_json(record / "results" / "table.json")
    found = read_json(record / "meta.json")["summary"]["findings"]
    nocot = next(r for r in table if r.get("no_cot"))
    rows = {}
    for r in table:
        row = {k: r.get(k) for k in ("method", "label", "accuracy", "ci", "reasoning_positions", "own_train_s", "n")}
        if (diff := vs_nocot(r["label"], found, nocot["label"])) is not None:
            row["vs_nocot"] = diff
        rows[r["method"] if not r.get("no_cot") else "nocot"] = row
        if r.get("reasoning_positions"):
            rows[r["method"] if not r.get("no_cot") else "nocot"]["compression"] = cot_positions / r["reasoning_positions"]
    return {"rows": rows, "nocot": nocot["label"]}


@collector("demo_findings")
def demo_findings() -> dict[str, Any]:
    """Every finding of every ``make demo`` run (its summary's ``findings``), with its verdict: what the CLI, the Home
    card and the pages state. Read from the runs' meta.json in the committed demo record ``results/records/demo``."""
    from thinklens.runs.demo_plan import DEMO_STEPS

    rows, runs = [], []
    for step in DEMO_STEPS:
        if step.kind is None:
            continue
        run = DEMO_RECORD / step.kind / step.run_id
        if not (run / "meta.json").is_file():
            continue
        runs.append(run)
        for f in read_json(run / "meta.json").get("summary", {}).get("findings") or []:
            rows.append({"run": f"{step.kind}/{step.run_id}", "claim": f["claim"], "statistic": f["statistic"],
                         "value": f["value"], "ci": f["ci"], "n": f["n"], "control": f["control"],
                         "control_value": f["control_value"], "verdict": f["verdict"]})
    if not runs:
        raise FileNotFoundError(2, "no demo run recorded", str(DEMO_RECORD))
    from thinklens.calibration.stats import VERDICTS

    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    return summary(DEMO_COMMAND, runs, {"steps": [s.name for s in DEMO_STEPS]},
                   {"rows": rows, "n_findings": len(rows), "verdicts": counts,
                    "runs_without_findings": sorted({f"{s.kind}/{s.run_id}" for s in DEMO_STEPS if s.kind} -
                                                    {r["run"] for r in rows})})


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


# ---------------------------------------------------------------------------------------------- main


def summary_text(name: str) -> str:
    """Summary ``name`` as results/NAME.json holds it (refused when over MAX_BYTES)."""
    text = json.dumps(to_jsonable(COLLECTORS[name]()), indent=1, allow_nan=False) + "\n"
    if len(text.encode()) > MAX_BYTES:
        raise SystemExit(f"results/{name}.json would be {len(text.encode())} bytes (limit {MAX_BYTES}): prune it")
    return text


def write(name: str) -> Path:
    """Collect summary ``name`` and write it to results/NAME.json."""
    path = OUT / f"{name}.json"
    path.write_text(summary_text(name))
    return path


# ---------------------------------------------------------------------------------------------- --check

#: What ``--check`` copies of the tracked files: the folders a collector may read, and the kinds of file it reads.
CHECK_FOLDERS = ("results", "data")
CHECK_SUFFIXES = (".json", ".jsonl", ".md", ".log", ".txt", ".py")
#: Environment variables naming run folders outside the copy; ``--check`` runs without them.
RUN_ENV = ("THINKLENS_RUNS",)
#: Reads that are not inputs: code, the interpreter's own files, the kernel's.
_CODE_SUFFIXES = (".py", ".pyc", ".so", ".pth", ".pyi", ".typed")


def tracked_copy(dest: Path) -> int:
    """Copy the repository's tracked inputs (``git ls-files`` under :data:`CHECK_FOLDERS`, no weights) to ``dest``, as a
    fresh clone has them; how many files."""
    import shutil
    import subprocess

    if (ROOT / ".git").exists():
        names = subprocess.run(["git", "ls-files", "-z", "--", *CHECK_FOLDERS], cwd=ROOT, check=True, capture_output=True,
                               text=True).stdout.split("\0")
    else:  # an unpacked archive: every file there is committed
        names = [str(f.relative_to(ROOT)) for folder in CHECK_FOLDERS for f in sorted((ROOT / folder).rglob("*"))]
    n = 0
    for name in names:
        if name.endswith(CHECK_SUFFIXES) and (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, dest / name)
            n += 1
    return n


def _watch_reads(root: Path) -> list[str]:
    """Record every file opened, and every folder listed, outside ``root`` that is not code or the interpreter's
    (an audit hook: this process only)."""
    outside: list[str] = []
    allowed = tuple({sys.prefix, sys.base_prefix, "/proc", "/sys", "/dev", "/usr", "/etc"})
    here = str(root)

    def hook(event: str, args: tuple) -> None:
        if event not in ("open", "os.scandir", "os.listdir") or not args or not isinstance(args[0], (str, os.PathLike)):
            return
        path = os.path.abspath(os.fspath(args[0]))
        if path.startswith(here) or path.startswith(allowed) or path.endswith(_CODE_SUFFIXES):
            return
        if event == "open" and (len(args) < 2 or not isinstance(args[1], str) or "r" not in args[1]):
            return  # a write (a cache), not an input
        if event != "open" and (os.path.isdir(os.path.join(path, "__pycache__"))
                                or os.path.isfile(os.path.join(path, "__init__.py"))):
            return  # a package folder listed by the import system (in a fresh clone, before its first __pycache__)
        outside.append(path)

    sys.addaudithook(hook)
    return outside


def check_here() -> tuple[list[str], bool, list[dict[str, str]]]:
    """Rebuild every summary from this tree and compare it with the file: one line per summary, whether none
    differs or read outside the tree, and each summary's status. A summary whose inputs are not here is reported as
    having no record, with the command that rebuilds it (from its committed ``command``)."""
    outside = _watch_reads(ROOT)
    lines, same, ok = [], 0, True
    for name in COLLECTORS:
        path = OUT / f"{name}.json"
        committed = path.read_text() if path.is_file() else None
        before = len(outside)
        try:
            text = summary_text(name)
        except FileNotFoundError as e:
            command = json.loads(committed)["command"] if committed else "?"
            lines.append(f"no record: results/{name}.json (rebuild: {command}; python results/collect.py {name}) "
                         f"[missing {show(Path(e.filename)) if e.filename else e}]")
            continue
        except Exception as e:  # noqa: BLE001 - one summary's failure is reported, the others still checked
            ok = False
            lines.append(f"failed: results/{name}.json ({type(e).__name__}: {e})")
            continue
        if len(outside) > before:
            ok = False
            lines.append(f"read outside the repository: results/{name}.json read {', '.join(sorted(set(outside[before:])))}")
        elif text == committed:
            same += 1
            lines.append(f"identical: results/{name}.json")
        else:
            ok = False
            old = (committed or "").splitlines()
            i = next((i for i, (a, b) in enumerate(zip(old, text.splitlines())) if a != b), min(len(old), len(text.splitlines())))
            lines.append(f"differs: results/{name}.json at line {i + 1} (write it with `python results/collect.py {name}`)")
    statuses = [{"summary": m.group(2), "status": m.group(1), "missing": m.group(3) or ""} for m in
                (re.match(r"([a-z ]+): (results/\w+\.json)(?:.*\[missing (.*)\])?", x) for x in lines) if m]
    lines.append(f"summaries_identical={same}/{len(COLLECTORS)}")
    return lines, ok, statuses


#: The README block listing which summaries rebuild from committed records (``--check --write``).
RECORDS_SUMMARY, RECORDS_TEMPLATE = OUT / "records.json", OUT / "readme" / "records.md"


def records_template(n: int) -> str:
    rows = "".join(f"| `{{{{values.summaries[{i}].summary}}}}` | {{{{values.summaries[{i}].status}}}} |\n" for i in range(n))
    return ("Which summaries a fresh clone rebuilds (`python results/collect.py --check`: every collector run on a copy "
            "of the\ntracked files alone, its output compared byte for byte; \"no record\": the run folders are not "
            "in the repository,\nthe summary's `command` rebuilds them):\n\n| summary | rebuilt from committed files "
            "|\n|---|---|\n" + rows + "\n`summaries_identical={{values.identical}}/{{values.total}}`\n")


def write_records_summary(statuses: list[dict[str, str]]) -> None:
    """results/records.json and its README template from a check's statuses."""
    import datetime

    identical = sum(s["status"] == "identical" for s in statuses)
    summary = {"command": "python results/collect.py --check --write", "date": datetime.date.today().isoformat(),
               "source": "results/collect.py --check (a copy of the tracked files under results/ and data/)",
               "config": {"folders": list(CHECK_FOLDERS), "suffixes": list(CHECK_SUFFIXES)},
               "values": {"summaries": statuses, "identical": identical, "total": len(statuses),
                          "no_record": [s["summary"] for s in statuses if s["status"] == "no record"]}}
    RECORDS_SUMMARY.write_text(json.dumps(summary, indent=1) + "\n")
    RECORDS_TEMPLATE.write_text(records_template(len(statuses)))


def check(write: bool = False) -> int:
    """``--check``: rebuild the summaries in a child process without ``$THINKLENS_RUNS``;
    in a git checkout, in a copy of the tracked inputs (so that untracked run folders cannot stand in for a missing
    record), elsewhere (an unpacked archive) here. ``write``: also write results/records.json (each summary's status)
    and its README template."""
    import subprocess
    import tempfile

    env = {k: v for k, v in os.environ.items() if k not in RUN_ENV}
    with tempfile.TemporaryDirectory(prefix="thinklens-check-") as tmp:
        tree = ROOT
        if (ROOT / ".git").exists():
            tree = Path(tmp) / "tree"
            n = tracked_copy(tree)
            print(f"copied {n} tracked files under {', '.join(CHECK_FOLDERS)}/ (no weights)", flush=True)
        status = Path(tmp) / "check-status.json"
        rc = subprocess.call([sys.executable, str(tree / "results" / "collect.py"), "--check-here", str(status)],
                             cwd=tree, env=env)
        if write and status.is_file():
            write_records_summary(json.loads(status.read_text()))
        return rc


def main(argv: list[str]) -> int:
    if argv[:1] == ["--record"]:
        if len(argv) != 3:
            raise SystemExit("usage: python results/collect.py --record RUN_FOLDER NAME")
        print(keep_record(Path(argv[1]), argv[2]))
        return 0
    if argv == ["--record-demo"]:
        print(keep_demo_record())
        return 0
    if argv[:1] == ["--check"] and argv[1:] in ([], ["--write"]):
        return check(write=argv[1:] == ["--write"])
    if argv[:1] == ["--check-here"] and len(argv) <= 2:
        lines, ok, statuses = check_here()
        print("\n".join(lines))
        if len(argv) == 2:  # where the statuses go (--check reads them)
            Path(argv[1]).write_text(json.dumps(statuses))
        return 0 if ok else 1
    names = argv or list(COLLECTORS)
    unknown = [n for n in names if n not in COLLECTORS]
    if unknown:
        raise SystemExit(f"unknown summary {', '.join(unknown)}; known: {', '.join(COLLECTORS)} (or --check [--write], "
                         "--record RUN NAME, --record-demo)")
    for name in names:
        print(f"{write(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
