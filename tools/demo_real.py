"""The demo on real weights (`make demo-real`, after `make real`): the real-weight results the app draws, at a first
look's sizes, each into a run folder of its own under ``$THINKLENS_RUNS`` (default ``runs/``).

The steps are `thinklens` CLI calls, as a user scripts them:

- ``organism-eval`` of smol-r1 beside smol-r1-once: thinking traces with their ground truth (``answer_known_at``, each
  cue and its forced exit), shown in the trace viewer;
- ``steer-vector`` on SmolLM2-135M-Instruct: the contrast-pair vector's dose-response against its random control,
  each prompt's continuations side by side (Steering page);
- ``validate --model smollm2-135m --methods induction,readout --quick``: the induction heads' layer x head map and
  ablation, the sentiment readout by layer against its shuffled-label control (Validation page);
- ``validate --model smollm2-135m --methods sae-real --quick``: thinklens's SAE against SAELens's on the same
  activations (Features page).

A step whose model is not installed is skipped with the command that installs it; a failing step is reported and
the demo goes on, exiting non-zero at the end. The last line is the demo's wall time against its budget
(:data:`BUDGET_S`: 15 minutes on 2 cores).

Example:
    >>> [s.name for s in STEPS]
    ['organism-eval', 'steer-vector', 'controls', 'sae-real']
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

RUN_ID = "demo-real"
BUDGET_S = 15 * 60
#: Threads per step: the steps run one after the other, each on every core of a 2-core machine.
THREADS = "2"


@dataclasses.dataclass(frozen=True)
class Step:
    name: str
    kind: str
    run_id: str
    argv: tuple[str, ...]
    models: tuple[str, ...]  # the real models (or organisms) the step loads


STEPS: tuple[Step, ...] = (
    Step("organism-eval", "organism-eval", RUN_ID,
         ("--model", "smol-r1", "--models", "smol-r1-once", "--n-eval", "4", "--step-counts", "1,2,3,4"),
         ("smol-r1", "smol-r1-once")),
    Step("steer-vector", "steer-vector", RUN_ID,
         ("--model", "smollm2-135m", "--n-prompts", "16", "--samples", "2", "--coeffs=-0.2,0,0.2"), ("smollm2-135m",)),
    Step("controls", "validate", f"{RUN_ID}-controls",
         ("--model", "smollm2-135m", "--methods", "induction,readout", "--quick"), ("smollm2-135m",)),
    Step("sae-real", "validate", f"{RUN_ID}-sae",
         ("--model", "smollm2-135m", "--methods", "sae-real", "--quick"), ("smollm2-135m",)),
)


def missing_models(step: Step) -> list[str]:
    """The models of ``step`` that cannot be loaded here (not installed by ``make real``), by name."""
    from thinklens.engine.real_models import installed
    from thinklens.engine.real_organisms import adapter_present, is_organism_name

    return [name for name in step.models if not installed(name) or (is_organism_name(name) and not adapter_present(name))]


def run_steps(runs: Path, steps: tuple[Step, ...] = STEPS) -> dict[str, tuple[int, float]]:
    """Run each step into ``runs``; returns step name -> (exit code, seconds); a skipped step has exit code None."""
    from tools.demo import run_step

    runs.mkdir(parents=True, exist_ok=True)
    os.environ["THINKLENS_RUNS"] = str(runs)
    out: dict[str, tuple[int, float]] = {}
    for k, step in enumerate(steps, 1):
        absent = missing_models(step)
        if absent:
            print(f"[{k}/{len(steps)}] {step.name}: skipped: {', '.join(absent)} not installed (run `make real`)")
            continue
        args = ["run", step.kind, *step.argv, "--run-id", step.run_id, "--threads", THREADS]
        out[step.name] = run_step(f"{k}/{len(steps)}", step.name, args)
    return out


def main(argv: list[str] | None = None) -> int:
    runs = Path(os.environ.get("THINKLENS_RUNS", "runs")).resolve()
    t0 = time.time()
    results = run_steps(runs)
    wall = time.time() - t0
    failures = [name for name, (rc, _) in results.items() if rc != 0]
    print("\nstep times: " + ", ".join(f"{name} {s:.0f} s" for name, (_, s) in results.items()))
    print(f"run folders under {runs}; open the app: make app   (or: .venv/bin/thinklens app)")
    if len(results) < len(STEPS):
        print(f"skipped steps: {len(STEPS) - len(results)} (their models are not installed: run `make real`)")
    if failures:
        print(f"failed steps: {', '.join(failures)}", file=sys.stderr)
    print(f"demo_real_seconds={wall:.0f} (budget {BUDGET_S}: {'within' if wall <= BUDGET_S else 'OVER'})")
    return 1 if failures or not results else 0


if __name__ == "__main__":
    raise SystemExit(main())
