"""The demo's plan, read from the job registry: each job declares its demo-sized runs (``Job.demo``, a tuple
of :class:`thinklens.runs.jobs.DemoRun`) and its place in the pipeline (``Job.order``), so a new job joins
the demo (``make demo``, run by the repository's ``tools/demo.py``) and the app's "how to reproduce" hints
by declaring them.

Example:
    >>> [s.name for s in demo_steps()][:4]
    ['zoo-eval', 'capture', 'mi-peaks-hard', 'mi-peaks']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from thinklens.runs.jobs import pipeline_jobs


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


def demo_steps(errors: list[str] | None = None) -> tuple[DemoStep, ...]:
    """The demo's steps: every registered job's ``demo`` runs, jobs in pipeline order (``Job.order``).

    A job whose module fails to import is left out (its error is appended to ``errors``).
    """
    return tuple(DemoStep(run.name(job.name), run.argv(job.name), job.run_kind if run.print_summary else None, run.run_id)
                 for job in pipeline_jobs(errors) for run in job.demo)


def __getattr__(name: str) -> Any:
    if name == "DEMO_STEPS":  # read from the registry each time (a job registered since is in it)
        return demo_steps()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
