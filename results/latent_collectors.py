"""The latent trainers' summaries: LatentSeek, the matched latent table, CODI on the serial task (``results/collect.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from collect_core import RECORDS, ROOT, WEIGHTS_RECORD, collector, read_json, show, summary, zoo_record
from latent_summary import latent_rows, latent_training, seek_values

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




@collector("codi_serial")
def codi_serial() -> dict[str, Any]:
    """CODI on a task that needs serial computation: the codi settings of the validation record
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
