"""The main job (`make demo`): every analysis on the embedded zoo, each into its own run folder.

The demo's plan is the job registry's (:mod:`thinklens.runs.demo_plan`): a new job joins the demo by
declaring its demo runs, with no edit here. Each step is a `thinklens` CLI call, so the demo exercises exactly
what a user scripts. A step whose package is absent is skipped with a note; a failing step is reported
and the demo goes on, exiting non-zero at the end.

Example:
    >>> [s.name for s in demo_steps()][:4]
    ['zoo-eval', 'capture', 'mi-peaks-hard', 'mi-peaks']
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from thinklens.calibration.findings import VERDICTS
from thinklens.errors import ThinklensError
from thinklens.runs.demo_plan import DemoStep, demo_steps  # noqa: F401  (DemoStep: the plan's type, for callers)


def _write_prompts(path: Path) -> None:
    from thinklens.tasks import TaskConfig, generate_problems, render_prompt

    probs = generate_problems(16, seed=4242, config=TaskConfig(min_steps=2, max_steps=4))
    path.write_text("\n".join(render_prompt(p, "think") for p in probs) + "\n")


def _summary(runs: Path, kind: str, run_id: str = "demo") -> dict:
    meta = runs / kind / run_id / "meta.json"
    return json.loads(meta.read_text()).get("summary", {}) if meta.is_file() else {}


def run_step(tag: str, name: str, args: list[str]) -> tuple[int, float]:
    """Run one step, ``thinklens ARGS``, in this process, printing its command and its outcome (``[tag] name: ...``);
    returns (exit code, seconds). An argparse error and a :class:`ThinklensError` are exit codes, as in the CLI."""
    from thinklens.cli import main as cli_main

    print(f"\n[{tag}] {name}: thinklens {' '.join(args)}", flush=True)
    t = time.time()
    try:
        rc = cli_main(args)
    except SystemExit as e:  # argparse errors
        rc = int(e.code or 0)
    except ThinklensError as e:
        print(f"error: {e}", file=sys.stderr)
        rc = 2
    seconds = time.time() - t
    print(f"[{tag}] {name}: {'ok' if rc == 0 else f'FAILED (exit {rc})'} in {seconds:.0f} s", flush=True)
    return rc, seconds


def run_demo(runs: Path, overrides: Mapping[str, Sequence[str]] | None = None) -> dict[str, tuple[int, float]]:
    """Run every demo step into ``runs``; returns step name -> (exit code, seconds).

    ``overrides`` appends options to a step's command (the last value of an option wins), e.g. smaller
    sizes for a test that wants the demo's runs in seconds: ``{"lynx": ["--n-calibration", "40"]}``.
    """
    runs = Path(runs).resolve()
    runs.mkdir(parents=True, exist_ok=True)
    os.environ["THINKLENS_RUNS"] = str(runs)
    _write_prompts(runs / "demo-prompts.txt")  # a fixed path: the capture run's config (and so its resume) stays the same
    errors: list[str] = []
    steps = list(demo_steps(errors))
    for e in errors:  # a job that cannot load is reported, the rest of the demo runs
        print(f"skipped (cannot load): {e}", file=sys.stderr)
    out: dict[str, tuple[int, float]] = {}
    for k, step in enumerate(steps, 1):
        args = [a.format(runs=runs) for a in step.argv] + list((overrides or {}).get(step.name, ()))
        rc, _ = out[step.name] = run_step(f"{k}/{len(steps)}", step.name, args)
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
    verdicts = [f.get("verdict") for step in demo_steps() if step.kind
                for f in _summary(runs, step.kind, step.run_id).get("findings") or []]
    print("findings: " + ", ".join(f"{verdicts.count(v)} {v}" for v in VERDICTS)
          + " (each run's lines above; `python results/collect.py demo_findings` tabulates them)")
    print("open the app:  make app   (or: .venv/bin/thinklens app)  then browse http://127.0.0.1:8501")
    if failures:
        print(f"failed steps: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
