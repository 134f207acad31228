"""The benchmarks' and the demo's summaries (``results/collect.py``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
from collect_core import DEMO_COMMAND, DEMO_RECORD, RECORDS, collector, read_json, show, summary

#: The committed record of one dated ``make bench`` (its logs and the date it ran; ``BENCH_COMMAND``).
BENCH_RECORD = RECORDS / "bench"
BENCH_COMMAND = ("mkdir -p runs/bench; date -I > runs/bench/date.txt; make bench > runs/bench/make-bench.log 2>&1; "
                 "for i in 1 2; do for b in capture generate lynx; do echo \"== bench/$b.py\"; .venv/bin/python -m "
                 "bench.$b; done > runs/bench/repeat-$i.log 2>&1; done; mkdir -p results/records/bench; "
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


#: Repeated runs of ``bench/real.py`` on SmolLM2-135M, each log headed ``== bench/real.py``.
BENCH_REAL_RECORD = RECORDS / "bench-real"
BENCH_REAL_COMMAND = ("(echo '== bench/real.py'; .venv/bin/python -m bench.real) > results/records/bench-real/run-N.log, "
                      "one N per run on a quiet machine; date -I > results/records/bench-real/date.txt")


@collector("real_bench")
def real_bench() -> dict[str, Any]:
    """Capture and traced generation on SmolLM2-135M against plain transformers (``bench/real.py``): every numeric line
    of each repeated run, with its median, min and max, from the committed record ``results/records/bench-real``
    (``conditions.txt`` says what else the machine ran)."""
    runs = [bench_lines(p)["bench/real.py"] for p in sorted(BENCH_REAL_RECORD.glob("run-*.log"))]
    if not runs:
        raise ValueError(f"{show(BENCH_REAL_RECORD)} holds no run-*.log")
    lines = {name: [r[name] for r in runs] for name in runs[0] if all(isinstance(r.get(name), float) for r in runs)}
    return {"command": BENCH_REAL_COMMAND, "date": (BENCH_REAL_RECORD / "date.txt").read_text().strip(),
            "source": show(BENCH_REAL_RECORD),
            "config": {"model": runs[0].get("real_model"), "conditions": (BENCH_REAL_RECORD / "conditions.txt").read_text().strip()},
            "values": {name: {"runs": v, "median": float(np.median(v)), "min": min(v), "max": max(v)} for name, v in lines.items()}
            | {"n_runs": len(runs)}}


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




@collector("demo_findings")
def demo_findings() -> dict[str, Any]:
    """Every finding of every ``make demo`` run (its summary's ``findings``), with its verdict: what the CLI, the Home
    card and the pages state. Read from the runs' meta.json in the committed demo record ``results/records/demo``, the
    steps as its log names them (the demo the record holds, whatever the plan is now)."""
    rows, runs, steps = [], [], recorded_steps()
    for _name, kind, run_id in steps:
        run = DEMO_RECORD / kind / run_id
        if not (run / "meta.json").is_file():
            continue
        runs.append(run)
        for f in read_json(run / "meta.json").get("summary", {}).get("findings") or []:
            rows.append({"run": f"{kind}/{run_id}", "claim": f["claim"], "statistic": f["statistic"],
                         "value": f["value"], "ci": f["ci"], "n": f["n"], "control": f["control"],
                         "control_value": f["control_value"], "verdict": f["verdict"]})
    if not runs:
        raise FileNotFoundError(2, "no demo run recorded", str(DEMO_RECORD))
    from thinklens.calibration.findings import VERDICTS

    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    return summary(DEMO_COMMAND, runs, {"steps": [name for name, _, _ in steps]},
                   {"rows": rows, "n_findings": len(rows), "verdicts": counts,
                    "runs_without_findings": sorted({f"{r.parent.name}/{r.name}" for r in runs} - {r["run"] for r in rows})})


def recorded_steps() -> list[tuple[str, str, str]]:
    """``(step name, run kind, run id)`` of every step the recorded demo ran, from its log's step lines
    (``[3/12] mi-peaks-hard: thinklens run mi-peaks ... --run-id demo-hard ...``)."""
    from thinklens.runs.jobs import get_job

    out = []
    for line in (DEMO_RECORD / "demo.log").read_text().splitlines():
        m = re.match(r"\[\d+/\d+\] (\S+): thinklens run (\S+) (.*)$", line)
        if m:
            args = m.group(3).split()
            run_id = args[args.index("--run-id") + 1] if "--run-id" in args else "demo"
            out.append((m.group(1), get_job(m.group(2)).run_kind, run_id))
    return out


#: ``bench/long_traces.py``: each committed log of ``results/records/long-traces`` (``conditions.txt`` says
#: what each is: SmolLM2-135M at 512, 2,048 and 4,096 new tokens, its batching, 512-token reruns, a tiny random llama).
LONG_TRACES_RECORD = RECORDS / "long-traces"
LONG_TRACES_COMMAND = ("python -m bench.long_traces --threads 1 --repeats 2 --skip batching > smollm2-2.log, and at the same "
                       "time python -m bench.long_traces --threads 1 --skip timing,rss --batching-repeats 2 > "
                       "smollm2-batching-2.log; python -m bench.long_traces --threads 1 --lengths 512 --static-at 512 "
                       "--repeats 2 --skip rss,batching > smollm2-512-N.log for N in 1, 2; python -m bench.long_traces --threads 1 "
                       "--lengths 512,8192 --static-at 8192 --repeats 1 --skip batching > smollm2-long-1.log; the same with "
                       "--skip timing,batching > smollm2-long-rss-1.log (SmolLM2-135M, after make real); "
                       "python -m bench.long_traces --model tiny --threads 1 --repeats 3 --batching-repeats 2 > tiny-2.log; "
                       "each log's first line is its command; all in results/records/long-traces")


def name_values(log: Path) -> dict[str, float]:
    """The numeric ``name=value`` lines of a bench log (the last value of a name wins)."""
    out: dict[str, float] = {}
    for line in log.read_text().splitlines():
        name, eq, value = line.partition("=")
        if eq and name.replace("_", "").isalnum():
            try:
                out[name] = float(value)
            except ValueError:
                continue
    return out


@collector("long_traces")
def long_traces() -> dict[str, Any]:
    """Long traces at the speed of the hardware: every log's lines, from the committed record."""
    logs = {p.stem: name_values(p) for p in sorted(LONG_TRACES_RECORD.glob("*.log"))}
    if not logs:
        raise FileNotFoundError(2, "no long-traces log recorded", str(LONG_TRACES_RECORD))
    return {"command": LONG_TRACES_COMMAND, "date": (LONG_TRACES_RECORD / "date.txt").read_text().strip(),
            "source": show(LONG_TRACES_RECORD), "config": {"conditions": (LONG_TRACES_RECORD / "conditions.txt").read_text().strip()},
            "values": logs}


#: ``bench/grading.py``: five runs and one of the parse as shipped, ``results/records/grading``.
GRADING_RECORD = RECORDS / "grading"
GRADING_COMMAND = ("(echo '== bench/grading.py'; .venv/bin/python -m bench.grading) > results/records/grading/run-N.log "
                   "for N in 1..5; the same with --reference > results/records/grading/reference.log")


@collector("grading")
def grading() -> dict[str, Any]:
    """Grading latency per output (``is_correct``) on GSM8K-style outputs and math-verify's 268 cases: each numeric
    line's median, min and max over the runs, and the same lines of one run with latex2sympy as shipped (the parse
    before the two-stage parse), from the committed record ``results/records/grading``."""
    runs = [bench_lines(p)["bench/grading.py"] for p in sorted(GRADING_RECORD.glob("run-*.log"))]
    if not runs:
        raise FileNotFoundError(2, "no grading run recorded", str(GRADING_RECORD))
    lines = {name: [r[name] for r in runs] for name in runs[0] if all(isinstance(r.get(name), float) for r in runs)}
    reference = bench_lines(GRADING_RECORD / "reference.log")["bench/grading.py"]
    return {"command": GRADING_COMMAND, "date": (GRADING_RECORD / "date.txt").read_text().strip(),
            "source": show(GRADING_RECORD), "config": {"conditions": (GRADING_RECORD / "conditions.txt").read_text().strip()},
            "values": {name: {"runs": v, "median": float(np.median(v)), "min": min(v), "max": max(v)} for name, v in lines.items()}
            | {"n_runs": len(runs), "over_20ms": {k: runs[0][k] for k in ("gsm8k_over_20ms", "math_verify_over_20ms")},
               "reference": {k: v for k, v in reference.items() if isinstance(v, float)}}}
