"""Every registered job on each installed real model, at the small settings a user picks for a first
look: one ``thinklens run`` per (model, job) through the CLI, as a user runs it, into ``runs/real-jobs/<job>/<model>`` (the
layout of a runs folder: ``THINKLENS_RUNS=runs/real-jobs thinklens app`` shows them like any other runs).

Each outcome is kept in ``runs/real-jobs/jobs.json`` as it ends (written atomically; a rerun skips the pairs already
there, ``--redo JOB`` runs one again): the exit code, the wall time, and for a finished run its headlines and its
findings' verdicts; for a refusal (exit 2) its one-line reason. A refusal is an outcome, not a failure of this script:
LYNX refuses a model that never writes its cues, for instance, and says so. ``--record`` copies the table into
``results/records/real-jobs/jobs.json``, the input of ``results/collect.py real_jobs``.

    python -m tools.real_jobs [--models smollm2-135m,gemma-3-270m] [--jobs capture,eval] [--redo JOB] [--record]
    python -m tools.real_jobs --models smol-r1      # the reasoning jobs on the real-weight organism
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "runs" / "real-jobs"
TABLE = RUNS / "jobs.json"
INPUTS = RUNS / ".inputs"  # hidden: not a run (run discovery skips dot folders)
RECORD = ROOT / "results" / "records" / "real-jobs" / "jobs.json"
MODELS = ("smollm2-135m", "gemma-3-270m")
#: Layers of each model (the SAE and steering sites sit at mid-depth).
LAYERS = {"smollm2-135m": 30, "gemma-3-270m": 18, "smol-r1": 30}
#: SAE training tokens per model: Gemma's forward pass (18 layers of d 640, a 262k vocabulary) costs about twice
#: SmolLM2's on 2 cores, and 60k tokens took SmolLM2 48 minutes on a shared machine (past the hour on a busier one).
#: Taken in optimizer steps of 512 activations (58 and 39 steps): at sae-lens's default of 4096 they are 7 and 5 steps,
#: after which the SAE has learned little beyond the activations' mean (Gemma: cosine 0.987, explained variance 0)
SAE_TOKENS = {"smollm2-135m": 30000, "gemma-3-270m": 20000}
#: The word steer moves: one each model writes in the SAE's scanned traces (Gemma-3-270M base writes no "so" there;
#: its scanned texts start "the" often, as its top-activating contexts show).
STEER_WORD = {"smollm2-135m": "so", "gemma-3-270m": "the"}
DATA = "synthetic:2-3:4"  # the project's task, 4 problems per step count
TIMEOUT_S = 5400


def out_of(model: str, job: str) -> Path:
    return RUNS / job / model


#: The reasoning organism on real weights: its plan runs every reasoning job with smol-r1 as the subject
#: (``--models smol-r1``; not in the default models, whose plan is every job at a first look's settings).
ORGANISM = "smol-r1"
ORGANISM_BASE = "smollm2-135m"


def organism_plan(model: str = ORGANISM) -> list[tuple[str, list[str]]]:
    """The reasoning jobs on smol-r1: problems of 1-3 steps (its training mix), its own R1 format
    (``--prompt-format auto``: its chat template opens ``<think>``), budgets that hold a think span and its re-checks.

    Hybrid steers the untuned base with smol-r1 as the thinking model; the reasoning vector is smol-r1 minus the base's
    CoT-SFT sibling (both fine-tunes of SmolLM2-Instruct, the lineage the method needs), added to the base. The latent
    trainers start from smol-r1 and are compared with a No-CoT fine-tune of smol-r1 trained as long on the same
    stream (``sft --no-cot``), in latent-eval.
    """
    data = "synthetic:1-3:8"
    budget = ["--max-new-tokens", "192"]
    train = ["--min-steps", "1", "--max-steps", "3", "--batch-size", "4", "--n-eval", "4", "--ckpt-every", "10",
             "--lora-r", "8"]
    sibling = str(out_of(ORGANISM_BASE, "sft") / "model")  # the base's CoT-SFT fine-tune (the default plan's sft row)
    latent = [str(out_of(model, j) / "model") for j in ("codi", "coconut", "latent-sft", "sft")]
    return [
        ("eval", ["--data", data, *budget]),
        ("mi-peaks", ["--data", "synthetic:1-3:12", *budget, "--no-recycling", "--no-ttts"]),
        # right and wrong answers both: smol-r1 is right on nearly every 1-3-step problem and on about half at 6-8
        # (0.50 [0.31, 0.69], n=24, 2026-12-07), so 5-7 steps with a budget that holds their longer traces
        ("probe", ["--data", "synthetic:5-7:12", "--target", "correct", "--max-new-tokens", "320",
                   "--n-bootstrap", "200"]),
        # calibration needs ceil(1/delta) - 1 events of each class (0.01, the default's smallest, needs 99), so deltas
        # of 0.1 and 0.2; smol-r1's wrong forced exits are few (about 0.5 per rollout at 1-4 steps, almost none at 1:
        # 24 rollouts of 1-3 steps held 5), so 1-4 steps and 60 calibration rollouts
        ("lynx", ["--data", "synthetic:1-4:40", "--n-train", "24", "--n-calibration", "60", "--n-test", "24",
                  "--deltas", "0.1,0.2", *budget]),
        # 8 sentences per vector step: smol-r1's traces are 250-token prefixes, a 48-sentence step takes minutes
        # 16 held-out problems: at 8 its findings were below the findings' minimum of 10 units
        ("hybrid", ["--model", ORGANISM_BASE, "--thinking", model, "--data", "synthetic:1-3:8", "--site",
                    f"resid_post.{LAYERS[ORGANISM_BASE] // 2}", "--n-train", "8", "--n-eval", "16", *budget,
                    "--sae-steps", "50", "--vector-iters", "10", "--vector-batch", "8",
                    "--modes", "base,thinking,hybrid,random_vectors"]),
        ("reasoning-vector", ["--model", ORGANISM_BASE, "--a", model, "--b", sibling, "--base", ORGANISM_BASE,
                              "--data", data, *budget, "--alphas=-1,0,1", "--groups", "all", "--save-alpha", "none"]),
        ("codi", [*train, "--add-tokens", "--train-steps", "40"]),
        ("coconut", [*train, "--add-tokens", "--stage-steps", "10", "--final-stage-steps", "20", "--max-stage", "1"]),
        ("latent-sft", [*train, "--add-tokens", "--encoder-steps", "10", "--decoder-steps", "10", "--joint-steps", "10",
                        "--stage2-steps", "10"]),
        ("sft", [*train, "--no-cot", "--train-steps", "40"]),
        ("latent-seek", ["--data", data, "--n-eval", "12", "--max-iters", "2", *budget, "--verifier-max-new-tokens", "64"]),
        ("latent-eval", ["--models", ",".join(latent), "--data", data, "--n-eval", "24", *budget, "--seek-n", "0"]),
    ]


def plan(model: str) -> list[tuple[str, list[str]]]:
    """(job, its arguments) in an order that lets later jobs use earlier runs (sae before steer, sft before hybrid)."""
    if model == ORGANISM:
        return organism_plan(model)
    mid = f"resid_post.{LAYERS[model] // 2}"
    sft = str(out_of(model, "sft") / "model")
    latent = [str(out_of(model, j) / "model") for j in ("codi", "coconut", "latent-sft")]
    sae = str(out_of(model, "sae"))
    # trainers draw fresh synthetic problems (synthetic:... names held-out evaluation problems, which they refuse)
    train = ["--min-steps", "2", "--max-steps", "3", "--batch-size", "4", "--n-eval", "2", "--ckpt-every", "4", "--add-tokens"]
    return [
        ("capture", ["--prompts", str(INPUTS / "prompts.txt"), "--sites", "resid_post.*", "--positions", "last"]),
        ("import-traces", ["--data", str(INPUTS / "traces.jsonl"), "--sites", f"{mid},final_norm"]),
        ("eval", ["--data", DATA, "--max-new-tokens", "96"]),
        ("mi-peaks", ["--data", DATA, "--max-new-tokens", "96", "--no-recycling", "--no-ttts"]),
        ("probe", ["--data", "synthetic:2-3:12", "--target", "correct", "--max-new-tokens", "96", "--n-bootstrap", "200"]),
        ("lynx", ["--data", "synthetic:2-3:12", "--n-train", "8", "--n-calibration", "8", "--n-test", "8",
                  "--max-new-tokens", "96"]),
        ("steer-vector", ["--n-prompts", "12", "--samples", "2", "--max-new-tokens", "24", "--coeffs=-0.2,0.2"]),
        ("sae", ["--data", str(INPUTS / "texts.txt"), "--site", mid, "--d-sae", "1024", "--k", "32", "--n-texts", "120",
                 "--eval-texts", "32", "--training-tokens", str(SAE_TOKENS[model]),
                 "--train-batch-size-tokens", "512", "--context-size", "48", "--stats-traces", "8",
                 "--fidelity-traces", "8", "--max-new-tokens", "32"]),
        ("sae-eval", ["--sae", sae, "--data", str(INPUTS / "texts.txt"), "--n-texts", "64", "--n-batches", "2",
                      "--fidelity-traces", "8", "--max-new-tokens", "32"]),
        ("steer", ["--sae", sae, "--data", DATA, "--word", STEER_WORD[model], "--coeffs=-1,0,1", "--n-prompts", "6",
                   "--stats-traces", "8", "--max-new-tokens", "64"]),
        # no --add-tokens: hybrid and reasoning-vector pair this fine-tune with its base, which needs one vocabulary
        ("sft", [a for a in train if a != "--add-tokens"] + ["--train-steps", "8", "--lora-r", "8"]),
        # hybrid evaluates --n-eval problems and builds its vectors from the rest of --data
        # 16 sentences per vector step, not 48: one step of 48 prefixes is a minute of one thread on a real model
        ("hybrid", ["--thinking", sft, "--data", "synthetic:2-3:8", "--site", mid, "--n-train", "8", "--n-eval", "8",
                    "--max-new-tokens", "64", "--sae-steps", "50", "--vector-iters", "10", "--vector-batch", "16",
                    "--modes", "base,thinking,hybrid,random_vectors"]),
        ("reasoning-vector", ["--a", sft, "--b", model, "--base", "none", "--data", DATA, "--max-new-tokens", "64",
                              "--alphas=-1,0,1", "--groups", "all", "--save-alpha", "none"]),
        ("codi", train + ["--train-steps", "8", "--lora-r", "8"]),
        ("coconut", train + ["--stage-steps", "4", "--final-stage-steps", "4", "--max-stage", "1"]),
        ("latent-sft", train + ["--encoder-steps", "2", "--decoder-steps", "2", "--joint-steps", "2",
                                "--stage2-steps", "2"]),
        # the self-reward's four verifier prompts decode up to 4096 tokens each by default: an hour on 2 cores
        ("latent-seek", ["--data", DATA, "--n-eval", "4", "--max-iters", "2", "--max-new-tokens", "64",
                         "--verifier-max-new-tokens", "64"]),
        ("latent-eval", ["--models", ",".join(latent), "--data", DATA, "--n-eval", "8", "--max-new-tokens", "64",
                         "--seek-n", "0"]),
        ("grpo", ["--train-steps", "2", "--prompts-per-step", "2", "--group-size", "2", "--n-eval", "2"]),
        ("zoo-eval", ["--n-eval", "2", "--step-counts", "2,3"]),
        ("zoo-train", ["--minutes", "1", "--n-eval", "2"]),
        ("validate", ["--quick", "--methods", "induction,readout"]),
    ]


def write_inputs() -> None:
    """The files the plan reads: neutral prompts, a traces file in import-traces' format, texts for the SAE."""
    INPUTS.mkdir(parents=True, exist_ok=True)
    neutral = json.loads((ROOT / "data" / "real" / "neutral_prompts.json").read_text())
    (INPUTS / "prompts.txt").write_text("\n".join(neutral["prompts"][:16]) + "\n")
    sets = json.loads((ROOT / "data" / "real" / "sentiment_sets.json").read_text())
    texts = [*neutral["prompts"], *neutral["held_out"], *sets["positive"], *sets["negative"]]  # 152 short texts
    (INPUTS / "texts.txt").write_text("\n".join(texts) + "\n")
    rows = [{"prompt": f"Ann has {a} apples and buys {b} more. How many apples does she have?",
             "completion": f" She has {a} + {b} = {a + b} apples. The answer is \\boxed{{{a + b}}}.", "answer": str(a + b)}
            for a, b in ((3, 4), (5, 2), (7, 6), (9, 1))]
    (INPUTS / "traces.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def summary_of(out: Path) -> dict[str, Any]:
    """A finished run's status and its findings, each as the sentence the CLI prints for it."""
    from thinklens.calibration.findings import finding_sentence

    meta = json.loads((out / "meta.json").read_text()) if (out / "meta.json").exists() else {}
    found = (meta.get("summary") or {}).get("findings") or []
    keep = ("claim", "statistic", "value", "ci", "n", "control", "control_value", "verdict")
    return {"status": meta.get("status"), "headlines": [f"[{f.get('verdict')}] {finding_sentence(f)}" for f in found],
            "verdicts": [f.get("verdict") for f in found], "n_findings": len(found),
            "findings": [{k: f.get(k) for k in keep} for f in found]}


def reread(table: dict[str, Any]) -> None:
    """Finished runs re-read from their folders (their findings' sentences follow the current code); a row whose run
    folder is gone keeps its record."""
    for row in table.values():
        row["command"] = row["command"].replace("real-jobs/inputs/", "real-jobs/.inputs/")
        if row["outcome"] == "ran" and (out_of(row["model"], row["job"]) / "meta.json").exists():
            row.update(summary_of(out_of(row["model"], row["job"])))


def run_one(model: str, job: str, args: list[str]) -> dict[str, Any]:
    out = out_of(model, job)
    own = [] if "--model" in args else ["--model", model]  # a job whose --model is another (hybrid's base) says so
    cmd = [str(ROOT / ".venv" / "bin" / "thinklens"), "run", job, *own, *args, "--out", str(out),
           "--threads", "1", "--no-progress"]
    if job == "validate":
        cmd = [c for c in cmd if c != "--no-progress"]
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=ROOT,
                              env={**os.environ, "TQDM_DISABLE": "1"})
        rc, err, stdout = proc.returncode, proc.stderr, proc.stdout
    except subprocess.TimeoutExpired as e:
        tail = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc, err, stdout = 124, f"timed out after {TIMEOUT_S} s", tail
    seconds = round(time.perf_counter() - t, 1)
    lines = [x for x in err.strip().splitlines() if x.strip() and not x.startswith(("Loading weights", "Warning"))]
    row = {"model": model, "job": job, "rc": rc, "seconds": seconds, "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "command": " ".join(["thinklens", "run", job, *own, *args]).replace(str(ROOT) + "/", "")
                      .replace("real-jobs/inputs/", "real-jobs/.inputs/"),
           "outcome": "ran" if rc == 0 else "refused" if rc == 2 else "error",
           "reason": (f"killed by signal {-rc}" + (" (SIGKILL: the kernel's out-of-memory killer, or a kill)" if rc == -9 else "")
                      if rc < 0
                      else lines[-1][:400] if rc != 0 and lines else ""),
           "stdout_tail": stdout.strip().splitlines()[-3:]}
    if rc == 0:
        row.update(summary_of(out))
    return row


def save(table: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(table, indent=1) + "\n")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--jobs", default="", help="only these jobs (comma-separated); default: every job of the plan")
    ap.add_argument("--redo", default="", help="run these jobs again even where the table has them")
    ap.add_argument("--record", action="store_true", help="copy the table into results/records/real-jobs/")
    a = ap.parse_args(argv)
    if a.record:
        table = json.loads(TABLE.read_text())
        reread(table)
        save(table, RECORD)
        models = list(dict.fromkeys(r["model"] for r in table.values()))
        save({"kind": "real-jobs", "created": max(r.get("date", "") for r in table.values()),
              "command": "python -m tools.real_jobs; python -m tools.real_jobs --models smol-r1; python -m tools.real_jobs --record",
              # each model's plan, in order: a job of it with no row yet is 'not run yet' in the tables
              "plans": {m: [job for job, _ in plan(m)] for m in models}}, RECORD.parent / "meta.json")
        print(f"recorded {RECORD.relative_to(ROOT)}")
        return 0
    write_inputs()
    table = json.loads(TABLE.read_text()) if TABLE.exists() else {}
    reread(table)
    only, redo = set(filter(None, a.jobs.split(","))), set(filter(None, a.redo.split(",")))
    for model in a.models.split(","):
        for job, args in plan(model):
            key = f"{model}/{job}"
            if (only and job not in only) or (key in table and job not in redo):
                continue
            if job in redo and out_of(model, job).exists():  # a redo starts over: the old folder's code is not today's
                shutil.rmtree(out_of(model, job))
            print(f"{key}: running", flush=True)
            table[key] = run_one(model, job, args)
            # merged into the table on disk: another stream (--models of its own) may have saved rows meanwhile
            save({**(json.loads(TABLE.read_text()) if TABLE.exists() else {}), key: table[key]}, TABLE)
            r = table[key]
            print(f"{key}: {r['outcome']} rc={r['rc']} {r['seconds']} s {r.get('headlines') or r['reason']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
