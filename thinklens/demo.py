"""The main job (`make demo`): every analysis on the embedded zoo, each into its own run folder.

Each step is a `thinklens` CLI call with demo-sized settings, so the demo exercises exactly what a
user scripts. A step whose package is absent is skipped with a note; a failing step is reported
and the demo goes on, exiting non-zero at the end.

Example:
    >>> [s.name for s in DEMO_STEPS][:2]
    ['zoo-eval', 'capture']
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from thinklens.errors import ThinklensError


@dataclass(frozen=True)
class DemoStep:
    """One demo step: a CLI call and the run kind whose summary it prints."""

    name: str
    """Short label."""
    argv: tuple[str, ...]
    """Arguments of `thinklens` ({runs} is filled in; run folders go under $THINKLENS_RUNS)."""
    kind: str | None = None
    """Run kind whose newest summary is printed (None: the step prints its own)."""
    run_id: str = "demo"
    """Run id of the step's run folder (a second run of one kind gets its own, for the app's comparisons)."""


DEMO_STEPS: tuple[DemoStep, ...] = (
    DemoStep("zoo-eval", ("run", "zoo-eval", "--models", "tiny-direct,tiny-cot,tiny-think", "--n", "20", "--steps", "2,3,4,5,6",
                          "--run-id", "demo", "--no-progress")),
    DemoStep("capture", ("run", "capture", "--model", "tiny-think", "--sites", "resid_post.*", "--prompts", "{runs}/demo-prompts.txt",
                         "--run-id", "demo", "--no-progress"), kind="capture"),
    # A second, harder MI run (before the main one, so the app opens the main run first, as the newest):
    # the app overlays both runs (two data sets) on one chart.
    DemoStep("mi-peaks-hard", ("run", "mi-peaks", "--model", "tiny-think", "--compare", "tiny-cot", "--n-problems", "30",
                               "--min-steps", "5", "--max-steps", "6", "--no-suppression", "--no-recycling", "--no-ttts",
                               "--run-id", "demo-hard", "--no-progress"), kind="mi-peaks", run_id="demo-hard"),
    DemoStep("mi-peaks", ("run", "mi-peaks", "--preset", "demo", "--run-id", "demo", "--no-progress"), kind="mi-peaks"),
    # A second LYNX run on longer problems (before the main one): the app draws both Pareto curves on one chart.
    DemoStep("lynx-long", ("run", "lynx", "--model", "tiny-think", "--min-steps", "3", "--max-steps", "6", "--n-train", "150",
                           "--n-calibration", "150", "--n-test", "150", "--skip-vacuous", "--run-id", "demo-long",
                           "--no-progress"), kind="lynx", run_id="demo-long"),
    # 500 calibration rollouts give each class of cue events >= 99 events: every delta of the sweep,
    # 0.01 included, has a defined conformal threshold.
    DemoStep("lynx", ("run", "lynx", "--model", "tiny-think", "--n-train", "150", "--n-calibration", "500", "--n-test", "150",
                      "--skip-vacuous", "--run-id", "demo", "--no-progress"), kind="lynx"),
    DemoStep("probe", ("run", "probe", "--model", "tiny-think", "--target", "intermediate", "--n-problems", "120",
                       "--run-id", "demo"), kind="probe"),
    # A small SAE for the feature browser and live steering (the full-size one is committed in data/saes).
    # 150k activations in steps of 1024 at lr 3e-3: explained variance ~0.99 in about a CPU minute.
    DemoStep("sae", ("run", "sae", "--model", "tiny-think", "--d-sae", "512", "--k", "32", "--training-tokens", "150000",
                     "--train-batch-size-tokens", "1024", "--lr", "0.003", "--n-texts", "1000", "--eval-texts", "100",
                     "--stats-traces", "40", "--n-batches-in-buffer", "16", "--run-id", "demo", "--no-progress"), kind="sae"),
    DemoStep("steer", ("run", "steer", "--sae", "data/saes/tiny-think-resid_post.2-topk32", "--n-prompts", "30",
                       "--coeffs=-1,0,1", "--run-id", "demo"), kind="steer"),
    DemoStep("reasoning-vector", ("run", "reasoning-vector", "--alphas=-1,0,1", "--n-per-steps", "10", "--run-id", "demo"),
             kind="reasoning-vector"),
    DemoStep("hybrid", ("run", "hybrid", "--n-train", "60", "--n-eval", "100", "--sae-steps", "150", "--vector-iters", "20",
                        "--run-id", "demo", "--no-progress"), kind="hybrid"),
    DemoStep("latent-eval", ("run", "latent-eval", "--n", "40", "--seek-n", "8", "--run-id", "demo", "--no-progress"),
             kind="latent-eval"),
)


def _write_prompts(path: Path) -> None:
    from thinklens.tasks import TaskConfig, generate_problems, render_prompt

    probs = generate_problems(16, seed=4242, config=TaskConfig(min_steps=2, max_steps=4))
    path.write_text("\n".join(render_prompt(p, "think") for p in probs) + "\n")


def _summary(runs: Path, kind: str, run_id: str = "demo") -> dict:
    meta = runs / kind / run_id / "meta.json"
    return json.loads(meta.read_text()).get("summary", {}) if meta.is_file() else {}


def run_demo(runs: Path, overrides: Mapping[str, Sequence[str]] | None = None) -> dict[str, tuple[int, float]]:
    """Run every demo step into ``runs``; returns step name -> (exit code, seconds).

    ``overrides`` appends options to a step's command (the last value of an option wins), e.g. smaller
    sizes for a test that wants the demo's runs in seconds: ``{"lynx": ["--n-calibration", "40"]}``.
    """
    from thinklens.cli import main as cli_main

    runs = Path(runs).resolve()
    runs.mkdir(parents=True, exist_ok=True)
    os.environ["THINKLENS_RUNS"] = str(runs)
    _write_prompts(runs / "demo-prompts.txt")  # a fixed path: the capture run's config (and so its resume) stays the same
    steps = list(DEMO_STEPS)
    out: dict[str, tuple[int, float]] = {}
    for k, step in enumerate(steps, 1):
        args = [a.format(runs=runs) for a in step.argv] + list((overrides or {}).get(step.name, ()))
        print(f"\n[{k}/{len(steps)}] {step.name}: thinklens {' '.join(args)}", flush=True)
        t = time.time()
        try:
            rc = cli_main(args)
        except SystemExit as e:  # argparse errors
            rc = int(e.code or 0)
        except ThinklensError as e:
            print(f"error: {e}", file=sys.stderr)
            rc = 2
        out[step.name] = (rc, time.time() - t)
        print(f"[{k}/{len(steps)}] {step.name}: {'ok' if rc == 0 else f'FAILED (exit {rc})'} in {time.time() - t:.0f} s")
        if rc == 0 and step.kind:
            for key, val in _summary(runs, step.kind, step.run_id).items():
                if key != "findings":  # the CLI printed them above, as sentences with their verdicts
                    print(f"    {key}: {val}")
    return out


def main(argv: list[str] | None = None) -> int:
    runs = Path(os.environ.get("THINKLENS_RUNS", "runs")).resolve()
    t0 = time.time()
    results = run_demo(runs)
    failures = [name for name, (rc, _) in results.items() if rc != 0]
    print(f"\ndemo finished in {time.time() - t0:.0f} s; run folders under {runs}")
    print("step times: " + ", ".join(f"{name} {s:.0f} s" for name, (_, s) in results.items()))
    verdicts = [f.get("verdict") for step in DEMO_STEPS if step.kind
                for f in _summary(runs, step.kind, step.run_id).get("findings") or []]
    print("findings: " + ", ".join(f"{verdicts.count(v)} {v}" for v in ("effect", "no effect", "at ceiling", "too few samples"))
          + " (each run's lines above; `python results/collect.py demo_findings` tabulates them)")
    print("open the app:  make app   (or: .venv/bin/thinklens app)  then browse http://127.0.0.1:8501")
    if failures:
        print(f"failed steps: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
