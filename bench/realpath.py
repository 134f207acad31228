"""The real-model path: every job of the workbench run end to end on `tiny-r1` (Qwen2, byte-level BPE with one
token per digit, a chat template opening `<think>`, `\\boxed{}` answers) with `--prompt-format chat` and local
files in GSM8K's format (`question`, `answer` ending `#### N`) and GSM8k-Aug's (`question`, `cot`, `answer`).

Each job runs through the real CLI with small sizes; a line per job says `ok` or the error; the headline is
`realpath_jobs_ok=N/M`. Needs the trained tiny-r1 (`thinklens run zoo-train --model tiny-r1`).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path


def write_files(root: Path) -> dict[str, str]:
    """Held-out synthetic problems as a GSM8K test file, a GSM8k-Aug file and a prompt file."""
    from thinklens.tasks.protocol import HELD_OUT, gsm8k_record, problems_by_steps

    problems = problems_by_steps(4, 2, 4, seed=HELD_OUT["eval"])
    others = problems_by_steps(4, 2, 4, seed=HELD_OUT["steer_train"])  # disjoint: hybrid's vector traces
    gsm8k, aug, vectors = root / "gsm8k_test.jsonl", root / "gsm8k_aug.jsonl", root / "vectors.jsonl"
    for path, items in ((gsm8k, problems), (vectors, others)):
        with path.open("w") as g:
            for p in items:
                g.write(json.dumps(gsm8k_record(p)) + "\n")
    with aug.open("w") as a:
        for p in problems:
            a.write(json.dumps({"question": p.question, "cot": " ".join(s.equation for s in p.steps),
                                "answer": str(p.answer)}) + "\n")
    prompts = root / "prompts.txt"
    prompts.write_text("\n".join(p.question for p in problems[:4]) + "\n")
    completions = root / "completions.jsonl"
    completions.write_text("".join(json.dumps({"prompt": p.question, "completion": f"So {p.answer}. \\boxed{{{p.answer}}}"})
                                   + "\n" for p in problems[:4]))
    return {"gsm8k": str(gsm8k), "aug": str(aug), "vectors": str(vectors), "prompts": str(prompts),
            "completions": str(completions)}


def commands(f: dict[str, str], runs: str) -> list[tuple[str, list[str]]]:
    m = ["--model", "tiny-r1", "--runs", runs, "--no-progress", "--threads", "1"]
    chat = ["--prompt-format", "chat", "--data", f["gsm8k"]]
    sae = ["--site", "resid_post.0", "--d-sae", "32", "--k", "4", "--training-tokens", "3000", "--train-batch-size-tokens",
           "256", "--store-batch-size-prompts", "4", "--n-batches-in-buffer", "4", "--n-eval-batches", "1"]
    sae_run = f"{runs}/sae/rp"
    return [
        ("capture", ["run", "capture", *m, "--prompts", f["prompts"], "--sites", "resid_post.*"]),
        ("import-traces", ["run", "import-traces", *m, "--data", f["completions"], "--sites", "resid_post.*"]),
        ("eval", ["run", "eval", *m, *chat, "--max-new-tokens", "160", "--batch-size", "6"]),
        ("mi-peaks", ["run", "mi-peaks", *m, *chat, "--n-problems", "6", "--max-new-tokens", "160", "--k", "3",
                      "--suppression", "--n-random", "1", "--recycling", "--ttts", "--ttts-budgets", "0,8"]),
        ("lynx", ["run", "lynx", *m, *chat, "--cue-words", "hmm,wait,therefore", "--n-train", "4", "--n-calibration", "4",
                  "--n-test", "4", "--max-new-tokens", "160", "--hidden-layer-sizes", "16", "--deltas", "0.2,0.3",
                  "--skip-vacuous", "--allow-overlap"]),
        # a budget that cuts the longer answers short, so both outcomes occur for the correctness probe
        ("probe", ["run", "probe", *m, *chat, "--target", "correct", "--n-problems", "12", "--folds", "3",
                   "--n-bootstrap", "20", "--max-new-tokens", "100", "--sites", "resid_post.*"]),
        ("sae", ["run", "sae", *m, *chat, *sae, "--n-texts", "6", "--eval-texts", "2", "--stats-traces", "4",
                 "--max-new-tokens", "32", "--run-id", "rp"]),
        ("sae-eval", ["run", "sae-eval", *m, *chat, "--sae", sae_run, "--n-texts", "4", "--n-batches", "1"]),
        ("steer", ["run", "steer", *m, *chat, "--sae", sae_run, "--n-prompts", "3", "--stats-traces", "2",
                   "--coeffs=-1,0,1", "--max-new-tokens", "32", "--word", "So"]),
        ("hybrid", ["run", "hybrid", *m, "--thinking", "tiny-r1", *chat, "--base-format", "plain", "--vector-data",
                    f["vectors"], "--n-eval", "3", "--n-train", "6", "--max-new-tokens", "32", "--site", "resid_post.0",
                    "--n-categories", "2", "--k", "1", "--sae-steps", "5", "--vector-iters", "2", "--vector-batch", "4",
                    "--strengths", "0.5,1", "--windows", "1", "--modes", "base,thinking,hybrid"]),
        ("reasoning-vector", ["run", "reasoning-vector", *m, "--a", "tiny-r1", "--b", "tiny-r1", "--base", "none", *chat,
                              "--alphas=0,1", "--groups", "all", "--max-new-tokens", "64", "--save-alpha", "none"]),
        ("codi", ["run", "codi", *m, "--data", f["aug"], "--prompt-format", "plain", "--add-tokens", "--lora-r", "4",
                  "--n-latents", "2", "--train-steps", "2", "--batch-size", "2", "--eval-data", f["aug"], "--n-eval", "2"]),
        ("coconut", ["run", "coconut", *m, "--data", f["aug"], "--prompt-format", "plain", "--add-tokens", "--stage-steps",
                     "1", "--final-stage-steps", "1", "--batch-size", "2", "--eval-data", f["aug"], "--n-eval", "2"]),
        ("latent-sft", ["run", "latent-sft", *m, "--data", f["aug"], "--prompt-format", "plain", "--add-tokens",
                        "--encoder-steps", "1",
                        "--decoder-steps", "1", "--joint-steps", "1", "--stage2-steps", "1", "--batch-size", "2",
                        "--eval-data", f["aug"], "--n-eval", "2"]),
        ("latent-seek", ["run", "latent-seek", *m, "--data", f["gsm8k"], "--prompt-format", "chat", "--n-eval", "2",
                         "--reward", "psrm", "--max-iters", "2", "--max-new-tokens", "160", "--baseline-temperatures="]),
        ("latent-eval", ["run", "latent-eval", "--models", "tiny-r1", "--runs", runs, "--no-progress", "--threads", "1",
                         "--data", f["gsm8k"], "--n-eval", "4", "--seek-n", "0"]),
    ]


def main() -> int:
    from thinklens.cli import main as cli
    from thinklens.zoo.registry import zoo_path

    if zoo_path("tiny-r1") is None:
        print("realpath_jobs_ok=skipped (tiny-r1 is not trained: thinklens run zoo-train --model tiny-r1)")
        return 0
    ok = 0
    with tempfile.TemporaryDirectory(prefix="realpath-") as tmp:
        files, runs = write_files(Path(tmp)), str(Path(tmp) / "runs")
        jobs = commands(files, runs)
        for name, argv in jobs:
            t = time.perf_counter()
            err = io.StringIO()
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                    rc = cli(argv)
            except SystemExit as e:
                rc = int(e.code or 0)
            except Exception as e:  # noqa: BLE001 - a bench reports every job's outcome
                rc, err = 1, io.StringIO(f"{type(e).__name__}: {e}")
            last = (err.getvalue().strip().splitlines() or [""])[-1][:160].replace("\n", " ")
            status = "ok" if rc == 0 else f"failed({rc}): {last}"
            ok += rc == 0
            print(f"realpath_{name}={status} ({time.perf_counter() - t:.0f} s)", flush=True)
    print(f"realpath_jobs_ok={ok}/{len(jobs)}")
    return 0 if ok == len(jobs) else 1


if __name__ == "__main__":
    sys.exit(main())
