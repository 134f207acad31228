"""What a job module declares: :class:`Job` (its config, its ``run`` and everything the CLI, the demo, the app and the
docs read of it) and :class:`DemoRun` (its runs in ``make demo``). Part of the job contract (:mod:`thinklens.runs.jobs`)."""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thinklens.errors import ThinklensError, did_you_mean
from thinklens.runs.config_files import fields_of, read_config_file
from thinklens.runs.configcli import rename_deprecated
from thinklens.runs.context import RESERVED, JobContext, RunOptions


@dataclass(frozen=True)
class DemoRun:
    """One run of a job in ``make demo``: ``thinklens run <job> <args> --run-id <run_id>``.

    Example:
        >>> DemoRun(("--n-eval", "20"), print_summary=False).argv("zoo-eval")
        ('run', 'zoo-eval', '--n-eval', '20', '--run-id', 'demo', '--no-progress')
    """

    args: tuple[str, ...] = ()
    """The job's options, demo-sized (``{runs}`` is the demo's runs root)."""
    run_id: str = "demo"
    """Run id of its folder (a second run of one job gets its own, for the app's comparisons)."""
    label: str = ""
    """The demo step's name (default: the job's name, then ``-<suffix>`` of a second run id ``demo-<suffix>``)."""
    print_summary: bool = True
    """Print the run's summary after the step (False: the job's report says it all)."""
    progress: bool = False
    """Keep the progress bars (the demo hides them by default)."""

    def argv(self, job: str) -> tuple[str, ...]:
        """The ``thinklens`` arguments of this run."""
        return ("run", job, *self.args, "--run-id", self.run_id, *(() if self.progress else ("--no-progress",)))

    def name(self, job: str) -> str:
        """The step's label."""
        if self.label:
            return self.label
        return job if self.run_id == "demo" else f"{job}-{self.run_id.removeprefix('demo-')}"


@dataclass(frozen=True)
class Job:
    """A registered job: ``thinklens run <name>`` and ``run_job(<name>, ...)``."""

    name: str
    """CLI name, e.g. ``lynx``."""
    config: type
    """Frozen config dataclass; its field docstrings are the CLI help. Has ``model`` and ``seed`` fields."""
    run: Callable[[Any, JobContext], Any]
    """``run(config, ctx) -> result`` (a typed result; a dict is fine for small jobs)."""
    help: str
    """One line for ``thinklens run --help``."""
    description: str = ""
    """Paragraph for ``thinklens run <name> --help`` (default: the job module's docstring, up to its example)."""
    models: tuple[str, ...] = ("model",)
    """Config fields naming models the runner loads before ``run`` (empty: the job loads its own)."""
    load: Callable[[str, RunOptions], Any] | None = None
    """Loader for those models (default: ``HookedModel.load`` with the device and dtype)."""
    presets: Mapping[str, Any] | None = None
    """Named configs (``--preset NAME``) that options then override."""
    report: Callable[[Any], str] | None = None
    """The lines the CLI prints after the run folder (default: the result as JSON)."""
    summary: Callable[[Any], dict] | None = None
    """The run's summary for meta.json when the job did not call ``run.finish`` itself."""
    kind: str | None = None
    """Run-folder kind (default: ``name``)."""
    page: str | None = None
    """The app page that shows this job's runs (``pages/4_Steering.py``, relative to app/); None: Home only."""
    headline: Callable[[Mapping[str, Any], Path], str] | None = None
    """A run in words, ``headline(summary, run_folder)`` (Home's cards, ``thinklens runs``); default: the
    summary's findings, else its first numbers."""
    order: int | None = None
    """Place in the pipeline (Home's cards, the demo): data 10s, analyses 30s, probes 40s, steering 60-90,
    latent reasoning 100s; None: after those, by name."""
    demo: tuple["DemoRun", ...] = ()
    """The runs ``make demo`` makes of this job, in order (none: the demo skips it)."""
    former_kinds: tuple[str, ...] = ()
    """Run-folder kinds older versions of this job wrote (still shown, as this job's runs)."""
    preflight: Callable[[Any], None] | None = None
    """``preflight(config)``: the checks of its inputs that need no model (data files read and parsed, a word list,
    an SAE folder), run before any model loads or any run folder is made, so bad input costs neither; raises
    ThinklensError. Default: :func:`preflight` reads the config's problem set (``data``) when it has one."""
    # What the rest of the project reads of a job, each named as ``module:name`` and imported only by its reader, so
    # that a job module stays cheap to import and a new job needs no edit anywhere else.
    findings: str | None = None
    """Where its summary's ``findings`` come from: ``module:name`` of the function that makes them, or of the reason a
    data job has none (``thinklens.engine.capture:NO_FINDINGS``)."""
    capability: str = ""
    """The row of the README's capability table that names it (``Steering``; ``tools/job_table.py`` writes the row's
    jobs); "": none."""
    validations: Mapping[str, str] = field(default_factory=dict)
    """Its planted and null settings, run by ``thinklens run validate`` and shown on the app's Validation page: a
    name (unique across jobs; settings run in name order) -> ``module:SETTINGS``, a list of
    :class:`~thinklens.calibration.controls.Setting`."""
    traces: str | None = None
    """How the app's trace viewer reads its runs: ``module:name`` of a :class:`~thinklens.runs.run_views.TraceReader`
    (per-token quantities, marks, tables); None: the generated texts its run folders hold, found by their shape."""
    smallest: tuple[str, ...] = ()
    """Its smallest run: options it runs with in seconds on the committed zoo (``{prompts}`` and ``{completions}``: a
    three-problem prompts file and completions JSONL, ``{out}``: the run folder), which
    ``tests/core/test_job_interrupts.py`` interrupts and resumes; empty: none (that test says so)."""
    compare: str | None = None
    """What the app shows of several of its runs side by side: ``module:name`` of a
    :class:`~thinklens.runs.run_views.Comparison` (a row per run and a chart); None: each run's findings and the numbers
    of its summary."""
    headline_traces: str | None = None
    """The traces behind the numbers its headline states (Home's card, after the link to all its traces):
    ``module:name`` of a function ``(run folder) -> list`` of :class:`~thinklens.runs.run_views.HeadlineTraces`, per
    number (of the findings ``run_views.headline_findings`` reads) a label and the trace viewer's filter of the traces
    it counts; the app makes the links. None: the link to all its traces (and, for generated texts found by their
    shape, to those on each side of their true/false fields)."""

    def __post_init__(self) -> None:
        if not (dataclasses.is_dataclass(self.config) and self.config.__dataclass_params__.frozen):  # type: ignore[attr-defined]
            raise TypeError(f"job {self.name}: config must be a frozen dataclass")
        names = {f.name for f in dataclasses.fields(self.config)}
        missing = {"model", "seed"} - names
        if missing:
            raise TypeError(f"job {self.name}: config {self.config.__name__} lacks the contract fields {sorted(missing)}")
        clash = names & set(RESERVED)
        if clash:
            raise TypeError(f"job {self.name}: config fields {sorted(clash)} clash with the runner's options")
        if set(self.models) - names:
            raise TypeError(f"job {self.name}: models {sorted(set(self.models) - names)} are not config fields")
        refs = {what: getattr(self, what) for what in ("findings", "traces", "compare", "headline_traces")}
        refs.update({f"validations[{k!r}]": v for k, v in dict(self.validations).items()})
        for what, ref in refs.items():
            if ref is not None and (not isinstance(ref, str) or not re.fullmatch(r"[\w.]+:\w+", ref)):
                raise TypeError(f"job {self.name}: {what} = {ref!r} is not a 'module:name' reference")

    @property
    def about(self) -> str:
        """The ``--help`` paragraph: ``description``, else the job module's docstring without its example."""
        if self.description:
            return self.description
        module = sys.modules.get(getattr(self.run, "__module__", ""))
        return plain_text((getattr(module, "__doc__", None) or "").split("Example:")[0]) or self.help

    @property
    def run_kind(self) -> str:
        return self.kind or self.name

    def declared(self, what: str) -> Any:
        """The object a ``module:name`` declaration of this job names (``findings``, ``traces``, ``compare``,
        ``headline_traces``), imported now; None when the job declares none.

        Example:
            >>> from thinklens.runs.jobs import get_job
            >>> get_job("lynx").declared("findings").__name__, get_job("capture").declared("traces")
            ('lynx_findings', None)
        """
        ref = getattr(self, what)
        return None if ref is None else resolve(ref, f"{what} of job {self.name}")

    def make_config(self, *, preset: str | None = None, config_file: str | Path | None = None, **fields: Any) -> Any:
        """Defaults < preset < config file < ``fields``; the config's ``__post_init__`` validates."""
        base: dict[str, Any] = {}
        if preset is not None and preset != "default":
            if not self.presets or preset not in self.presets:
                choices = sorted(self.presets or {"default": None})
                raise ThinklensError.of(f"preset of {self.name}", preset, f"one of {', '.join(choices)}", did_you_mean(preset, choices))
            base = fields_of(self.presets[preset])
        if config_file is not None:
            base.update(read_config_file(self.config, config_file))

        fields = rename_deprecated(self.config, fields)  # an old option name: one line naming the new one
        unknown = set(fields) - {f.name for f in dataclasses.fields(self.config)}
        if unknown:
            word = sorted(unknown)[0]
            names = [f.name for f in dataclasses.fields(self.config)]
            raise ThinklensError.of(f"option of job {self.name}", word, "a field of " + self.config.__name__,
                                    f"{did_you_mean(word, names)} (`thinklens run {self.name} --help` lists the options)")
        base.update(fields)
        return self.config(**base)


def plain_text(rest: str) -> str:
    """A reST docstring as one plain paragraph for ``--help``: inline code and cross-references as plain words.

    Example:
        >>> plain_text("Writes ``results/x.json``,\\n graded by :func:`thinklens.data.answers.is_correct` (:class:`~a.Trace`\\\\ s).")
        'Writes results/x.json, graded by thinklens.data.answers.is_correct (Traces).'
    """
    text = re.sub(r":[a-z]+:`(~?)([^`]+)`", lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2], rest)
    return " ".join(text.replace("``", "").replace("\\ ", "").split())


def resolve(ref: str, what: str = "declaration") -> Any:
    """The object ``module:name`` names (imported now); a TypeError saying which declaration is wrong otherwise.

    Example:
        >>> resolve("thinklens.runs.contract:plain_text").__name__
        'plain_text'
    """
    module, _, name = ref.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as e:
        raise TypeError(f"{what} = {ref!r}: expected 'module:name' of an existing object ({type(e).__name__}: {e})") from e
