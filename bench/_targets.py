"""The benchmarks' headline targets, in one place: each bench prints ``NAME_target=BOUND`` just before its
headline ``NAME=VALUE`` (:func:`print_target`), so a bench log carries the bound it was measured against and
``results/collect.py`` reads it from there (no target is typed into a summary)."""

from __future__ import annotations

#: headline -> bound (at most for overheads, times and memory; at least for speedups)
TARGETS = {"capture_overhead": 1.15, "generate_overhead": 1.3, "store_peak_mb": 500, "mi_speedup": 20,
           "label_speedup": 3, "codi_step_ratio": 3, "steer_overhead": 1.2, "cli_help_s": 1.0, "real_generate_overhead": 1.3,
           "grading_p95_ms": 20}


def print_target(name: str) -> None:
    """Print ``NAME_target=BOUND`` (the line before the headline)."""
    print(f"{name}_target={TARGETS[name]:g}")
