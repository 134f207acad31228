"""Small run folders in the formats the jobs write, for the lab-notebook tests (issue 40): eval runs with their
completions, a validate run with a failed setting and a setting's own run holding traces, a truncated run."""

from __future__ import annotations

import json
from pathlib import Path

from thinklens.runs.folders import RunFolder

PROBLEMS = [f"synthetic-{i}" for i in range(12)]


def eval_run(root: Path, run_id: str, model: str, correct: list[bool], *, problems: list[str] | None = None,
             max_new_tokens: int = 64, path: Path | None = None) -> RunFolder:
    """An eval run as ``thinklens run eval`` writes it: completions/batch-*.json (with text), results/eval.json and
    eval_problems.json, findings in meta.json."""
    problems = problems or PROBLEMS[:len(correct)]
    run = RunFolder.create("eval", {"model": model, "data": "synthetic:2-3:12", "max_new_tokens": max_new_tokens,
                                    "seed": 0}, **({"path": path} if path else {"root": root, "run_id": run_id}))
    run.write_meta(job="eval")
    rows = [{"i": i, "sample": 0, "id": p, "gold": "7", "extracted": "7" if c else "3", "correct": c, "n_tokens": 9,
             "stop_reason": "eos", "text": f"step one so {'7' if c else '3'} answer {'7' if c else '3'}"}
            for i, (p, c) in enumerate(zip(problems, correct))]
    (run.path / "completions").mkdir()
    (run.path / "completions" / "batch-00000.json").write_text(json.dumps(rows))
    acc = sum(correct) / len(correct)
    run.write_result("eval", {"overall": {"accuracy": acc, "n": len(correct)}})
    run.write_result("eval_problems", [{k: v for k, v in r.items() if k != "text"} for r in rows])
    run.finish({"overall": {"accuracy": acc}, "findings": [
        {"claim": f"{model} beats the majority guess", "statistic": "accuracy", "value": acc, "ci": [0.1, 0.9],
         "n": len(correct), "control": "majority guess", "control_value": 0.2, "verdict": "effect" if acc > 0.5 else "no effect"}]})
    return run


def validate_run(root: Path, run_id: str = "quick") -> RunFolder:
    """A finished validate run with 1 of 2 settings as expected (the null found an effect), one setting's own run
    holding graded texts."""
    run = RunFolder.create("validate", {"model": "", "seed": 0, "quick": True, "methods": ["sae"]}, root=root,
                           run_id=run_id)
    run.write_meta(job="validate")
    rows = [{"method": "sae", "setting": "planted", "kind": "planted", "expected": "recovered", "statistic": "share",
             "value": 0.93, "ci": [0.9, 0.96], "verdict": "recovered", "n": 64, "target": "share >= 0.9",
             "details": {"model": "synthetic dictionary"}, "ok": True, "seconds": 1.0, "line": "", "help": ""},
            {"method": "sae", "setting": "null", "kind": "null", "expected": "no-effect", "statistic": "share",
             "value": 0.41, "ci": [0.35, 0.47], "verdict": "failed", "n": 64, "target": "share within 0.1",
             "details": {"model": "gaussian"}, "ok": False, "seconds": 1.0, "line": "", "help": ""}]
    run.write_result("validate", {"quick": True, "seed": 0, "model": None, "rows": rows, "validated": 1, "n_settings": 2,
                                  "failed": ["sae/null"]})
    from thinklens.calibration.validate import validation_findings

    run.finish({"quick": True, "model": None, "validated": 1, "n_settings": 2, "failed": ["sae/null"],
                "findings": validation_findings(rows)})
    eval_run(root, "", "tiny-think", [True, False, True], path=run.path / "settings" / "sae-planted" / "sub")
    return run


def truncated_run(root: Path, run_id: str = "cut") -> RunFolder:
    """An eval run whose results/eval.json was cut off while being written (meta.json says done)."""
    run = eval_run(root, run_id, "tiny-think", [True, False])
    (run.path / "results" / "eval.json").write_text('{"overall": {"accuracy": 0.')
    return run
