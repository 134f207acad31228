"""The job registry: every job by name, loaded on first use (:func:`job_names` imports none), and the orders the CLI,
the demo and the app read them in. Part of the job contract (:mod:`thinklens.runs.jobs`).

Where jobs come from:

- every module of a ``jobs`` package of thinklens (a core layer's, ``thinklens/zoo/jobs/``, or a capability's,
  ``steering/jobs/``) is a job, named after its file (``sae_eval.py`` is ``sae-eval``) and holding it as
  ``JOB`` (or a list ``JOBS``, one job per row of a method table): found by listing those folders, so a new job is
  its file, with no entry point to write and nothing to reinstall (:func:`job_modules`);
- the ``thinklens.jobs`` entry points: the core jobs whose module is also their library (``capture``,
  ``import-traces``, ``validate``: pyproject.toml, read from the checkout when thinklens runs from one) and other
  distributions' jobs (plugins). A name a job module already has is not taken again.

Example:
    >>> scanned = {ep.name: ep.value for ep in job_modules()}
    >>> scanned["sae-eval"], scanned["trainers"]
    ('thinklens.steering.jobs.sae_eval:JOB', 'thinklens.latent.jobs.trainers:JOBS')
"""

from __future__ import annotations

import importlib.util
import re
from importlib import metadata
from pathlib import Path
from typing import Any

from thinklens import lazy
from thinklens.errors import ThinklensError, did_you_mean
from thinklens.runs import entry_points  # the module: its entry_points is looked up per call (tests patch it)
from thinklens.runs.contract import Job

ENTRY_POINT_GROUP = "thinklens.jobs"
_LIST = re.compile(r"^JOBS\s*(?::[^=\n]*)?=", re.M)
"""A module-level ``JOBS = ...`` (or ``JOBS: list[Job] = ...``): the module holds a list of jobs."""

_JOBS: dict[str, Job] | None = None
_ENTRY: dict[str, Any] | None = None


def _entry_points() -> dict[str, Any]:
    """Job name -> its entry point (loaded when the job is first asked for), or the :class:`Job` itself.

    An entry point whose object is named ``JOBS`` (``latent-trainers = "thinklens.latent.jobs:JOBS"``) holds a list of
    jobs, one per row of a method table: it is loaded here, since only its list names its jobs.
    """
    global _ENTRY
    if _ENTRY is None:
        out: dict[str, Any] = {}
        # the job modules first; then a checkout's own pyproject.toml (installed or not) and other distributions'
        for ep in [*job_modules(), *entry_points.entry_points(ENTRY_POINT_GROUP)]:
            if ep.attr is not None and ep.attr.endswith("JOBS"):
                out.update({job.name: job for job in _job_list(ep) if job.name not in out})
            elif ep.name not in out:
                out[ep.name] = ep
        _ENTRY = out
    return _ENTRY


def job_modules() -> list[metadata.EntryPoint]:
    """Every job module, as the entry point that would register it: each ``<name>.py`` of a ``jobs`` package of
    thinklens is ``<name with - for _> = "thinklens.<package>.jobs.<name>:JOB"`` (``:JOBS`` when the module holds a
    list of jobs). The folders are listed and the files read as text: no job module is imported."""
    top = importlib.util.find_spec("thinklens")
    packages = {d.name for loc in top.submodule_search_locations or [] for d in Path(loc).iterdir()
                if d.name.isidentifier() and (d / "__init__.py").is_file()}  # listing package folders only
    packages |= set(lazy.CAPABILITIES)
    out = []
    for package in sorted(packages):
        spec = importlib.util.find_spec(f"thinklens.{package}")  # imports nothing but thinklens itself
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            folder = Path(location) / "jobs"
            if not (folder / "__init__.py").is_file():
                continue
            for f in sorted(folder.glob("*.py")):
                if f.stem.startswith("_"):
                    continue
                attr = "JOBS" if _LIST.search(f.read_text(encoding="utf-8")) else "JOB"
                out.append(metadata.EntryPoint(f.stem.replace("_", "-"), f"thinklens.{package}.jobs.{f.stem}:{attr}",
                                               ENTRY_POINT_GROUP))
            break
    return out


def _job_list(ep: Any) -> list[Job]:
    jobs = ep.load()
    if not isinstance(jobs, (list, tuple)) or not all(isinstance(j, Job) for j in jobs):
        raise TypeError(f"entry point {ep.name} = {ep.value} is not a list of Jobs")
    return list(jobs)


def job_names() -> list[str]:
    """Every registered job, without importing any (cheap)."""
    return sorted(_entry_points())


def get_job(name: str | Job) -> Job:
    """The registered job ``name`` (its module is imported now)."""
    if isinstance(name, Job):
        return name
    global _JOBS
    _JOBS = _JOBS if _JOBS is not None else {}
    if name not in _JOBS:
        eps = _entry_points()
        if name not in eps:
            raise ThinklensError.of("job", name, f"one of {', '.join(sorted(eps))}", did_you_mean(name, sorted(eps)))
        entry = eps[name]
        job = entry if isinstance(entry, Job) else entry.load()
        if isinstance(job, (list, tuple)):  # an entry point returning a list of jobs: the one named here
            job = next((j for j in job if isinstance(j, Job) and j.name == name), None)
        if not isinstance(job, Job) or job.name != name:
            raise TypeError(f"entry point {name} = {getattr(entry, 'value', entry)} is not a Job named {name!r} (a job "
                            f"module's file is named after its job: {name.replace('-', '_')}.py holds Job({name!r}, ...))")
        _JOBS[name] = job
    return _JOBS[name]


def all_jobs() -> list[Job]:
    """Every registered job, loaded."""
    return [get_job(n) for n in job_names()]


def pipeline_jobs(errors: list[str] | None = None) -> list[Job]:
    """Every registered job that loads, in pipeline order (``Job.order``, then by name; no order last).

    A job whose module fails to import is left out (a reader such as the app must still show the rest);
    its error is appended to ``errors``.
    """
    jobs = []
    for name in job_names():
        try:
            jobs.append(get_job(name))
        except Exception as e:  # noqa: BLE001 - one broken job module never hides the others
            if errors is not None:
                errors.append(f"job {name}: {type(e).__name__}: {e}")
    return sorted(jobs, key=lambda j: (j.order is None, j.order or 0, j.name))


def jobs_by_kind(errors: list[str] | None = None) -> dict[str, Job]:
    """Run-folder kind -> the job whose runs it holds (former kinds included; the first job in pipeline order wins).

    Example:
        >>> kinds = jobs_by_kind()
        >>> kinds["mi-peaks"].name, kinds["latent-train"].run_kind == kinds["latent-train"].name
        ('mi-peaks', True)
    """
    out: dict[str, Job] = {}
    jobs = pipeline_jobs(errors)
    for job in jobs:
        out.setdefault(job.run_kind, job)
    for job in jobs:
        for kind in job.former_kinds:
            out.setdefault(kind, job)
    return out
