"""Grading latency: ``is_correct`` per output on GSM8K-style outputs and on math-verify's own test cases.

Each output is graded once, timed alone (wall clock), on a fresh math-verify worker started outside the timings
(its start-up, the parser warm-up included, is printed on its own line) and with the comparison cache emptied
before every call, so no time comes from an earlier call on the same pair. Also printed: the CPU time of each call
(this process plus the worker), which other load on a shared machine does not inflate.

- GSM8K-style: outputs ending in ``#### N``, ``The answer is: N``, ``\\boxed{N}``, with thousands separators, units
  (``\\boxed{18 \\text{ dollars}}``), half of them wrong (``--n-gsm8k`` outputs, seeded).
- math-verify: the 268 cases of ``tests/fixtures/math_verify_cases.json`` (the reference's own tests).

``--reference`` grades with latex2sympy as shipped (``THINKLENS_GRADING_PARSE=reference``: no two-stage parse, no
warm-up), the path before the fast parse. ``--record FILE`` writes the reference verdicts of the fixture cases (the oracle
of tests/test_grading_latency.py) instead of timing.

Prints name=value lines; last: grading_p95_ms= (the larger of the two sets' p95, milliseconds; target <= 20).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

from bench._targets import print_target

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "math_verify_cases.json"
#: is_correct's comparison limit when verdicts are recorded: long enough that no case of the fixture times out on a
#: busy machine (a timeout reads as "not equal", which would make the record depend on the load).
RECORD_TIMEOUT = 120.0

# GSM8K-style outputs, each formatted with an answer; {n} is the number as written.
GSM8K_FORMS = (
    "Natalia sold {a} clips in April and half as many in May. {a} + {b} = <<{a}+{b}={n}>>{n}\n#### {n}",
    "She pays {a} per hour for {b} hours. The answer is: {n}",
    "So the total is $\\boxed{{{n}}}$.",
    "Altogether they have \\boxed{{{n} \\text{{ dollars}}}}",
    "Final Answer: The final answer is ${n}$. I hope it is correct.",
    "so she earns \\boxed{{\\${n}}}",
    "the answer is {n} apples",
)


def gsm8k_outputs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``(output, gold)`` pairs: half right, half off by one; large numbers with thousands separators."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        gold = rng.choice([rng.randint(2, 99), rng.randint(100, 9999), rng.randint(10_000, 2_000_000)])
        said = gold if i % 2 == 0 else gold + 1
        written = f"{said:,}" if said >= 10_000 and rng.random() < 0.5 else str(said)
        form = GSM8K_FORMS[i % len(GSM8K_FORMS)]
        pairs.append((form.format(a=rng.randint(2, 50), b=rng.randint(2, 50), n=written), str(gold)))
    return pairs


def math_verify_cases() -> list[tuple[str, str]]:
    """``(prediction, gold)`` of every fixture case, in the fixture's order."""
    return [(c["pred"], c["gold"]) for c in json.loads(FIXTURE.read_text(encoding="utf-8"))["cases"]]


def _worker_cpu_s() -> float:
    """CPU seconds the math-verify worker has used so far (Linux /proc; 0 where there is none)."""
    from thinklens.data import equivalence

    worker = equivalence._worker
    if worker is None:
        return 0.0
    try:
        fields = Path(f"/proc/{worker.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def time_each(pairs: list[tuple[str, str]]) -> tuple[list[float], list[float], list[bool]]:
    """Wall ms, CPU ms and the verdict of ``is_correct`` on each pair, the comparison cache emptied before each."""
    from thinklens.data.answers import is_correct
    from thinklens.data.equivalence import _compare

    wall, cpu, verdicts = [], [], []
    for text, gold in pairs:
        _compare.cache_clear()
        c0, w0, t0 = _worker_cpu_s(), time.process_time(), time.perf_counter()
        verdicts.append(is_correct(text, gold))
        t1, w1, c1 = time.perf_counter(), time.process_time(), _worker_cpu_s()
        wall.append((t1 - t0) * 1000)
        cpu.append((w1 - w0 + c1 - c0) * 1000)
    return wall, cpu, verdicts


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (the smallest value with at least q% of the values at or below it)."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, -(-len(ordered) * q // 100) - 1))]


def record(path: Path) -> None:
    """Write the reference verdicts of every fixture case under each policy the oracle test checks."""
    from thinklens.data.answers import answers_equal, is_correct

    t = RECORD_TIMEOUT
    rows = []
    for pred, gold in math_verify_cases():
        rows.append({"gold": gold, "pred": pred, "is_correct": is_correct(pred, gold, timeout=t),
                     "boxes_last": is_correct(pred, gold, boxes="last", timeout=t),
                     "bare": answers_equal(pred, gold, timeout=t) if pred.strip() else False})
    about = ("Verdicts of thinklens.data.answers on tests/fixtures/math_verify_cases.json with latex2sympy as shipped "
             f"(THINKLENS_GRADING_PARSE=reference) and a {RECORD_TIMEOUT:g} s limit: is_correct(pred, gold), with "
             "boxes='last', and answers_equal(pred, gold) (the prediction as a bare answer). Written by "
             "`THINKLENS_GRADING_PARSE=reference python -m bench.grading --record tests/fixtures/grading_verdicts.json`.")
    path.write_text(json.dumps({"about": about, "n": len(rows), "cases": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"recorded={len(rows)} cases -> {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-gsm8k", type=int, default=300, help="GSM8K-style outputs to grade")
    parser.add_argument("--reference", action="store_true", help="latex2sympy as shipped (the path before the fast parse)")
    parser.add_argument("--record", type=Path, help="write the reference verdicts of the fixture cases to this file")
    args = parser.parse_args()
    if args.reference or args.record:
        os.environ["THINKLENS_GRADING_PARSE"] = "reference"  # read by the worker, which starts below
    from thinklens.data.equivalence import math_equal

    start = time.perf_counter()
    math_equal("1", "1")  # start the worker outside the timings
    if args.record:
        record(args.record)
        return
    print(f"grading_parse={'reference' if args.reference else 'two-stage'}")
    print(f"grading_worker_start_s={time.perf_counter() - start:.2f}")
    p95 = {}
    for name, pairs in (("gsm8k", gsm8k_outputs(args.n_gsm8k)), ("math_verify", math_verify_cases())):
        wall, cpu, verdicts = time_each(pairs)
        print(f"{name}_n={len(pairs)}")
        print(f"{name}_correct={sum(verdicts)}/{len(pairs)}")
        print(f"{name}_p50_ms={percentile(wall, 50):.3f}")
        print(f"{name}_over_20ms={sum(w > 20 for w in wall)}/{len(wall)}")
        print(f"{name}_max_ms={max(wall):.1f}")
        print(f"{name}_cpu_p95_ms={percentile(cpu, 95):.3f}")
        p95[name] = percentile(wall, 95)
        print(f"{name}_p95_ms={p95[name]:.3f}")
    print_target("grading_p95_ms")
    print(f"grading_p95_ms={max(p95.values()):.3f}")


if __name__ == "__main__":
    main()
