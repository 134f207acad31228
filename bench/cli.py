"""CLI start-up: `thinklens --help` and `thinklens run <job> --help` cold (a fresh interpreter each).

Prints best-of-5 seconds per command; the headline is `thinklens --help` (target: at most 1.0 s).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from bench._targets import print_target

EXE = str(Path(sys.executable).with_name("thinklens"))


def cold(argv: list[str], repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([EXE, *argv], capture_output=True, check=True)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    run_help = cold(["run", "--help"])
    job_help = cold(["run", "mi-peaks", "--help"])
    top = cold(["--help"])
    print(f"cli_run_help_s={run_help:.3f}")
    print(f"cli_job_help_s={job_help:.3f}")
    print_target("cli_help_s")
    print(f"cli_help_s={top:.3f}")


if __name__ == "__main__":
    main()
