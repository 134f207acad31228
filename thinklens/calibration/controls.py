"""Planted and null settings: how ``thinklens run validate`` checks that each method finds what it looks for.

A capability package declares its settings in a module holding ``SETTINGS`` (a list of :class:`Setting`), and the
job they validate names it among its declarations (``Job(..., validations={"actadd":
"thinklens.steering.actadd_validation:SETTINGS"})``), so the core never imports a capability package; settings of no
one job (induction on any model) and other packages' are entry points of the ``thinklens.validations`` group. A setting
is planted (the effect exists by construction, with a known size and place: the method must report it)
or null (everything kept but the effect: the method must report no effect). Its ``run`` returns a
:class:`Check`: the statistic, its interval and what the method concluded (``recovered``, ``no-effect``,
or ``failed`` when it crashed or landed between the two, e.g. an effect below the planted target).
A row is validated when that verdict is the setting's ``expected`` one (shared/specs/controls.md).

Example:
    >>> def planted(ctx):
    ...     return Check("mean", 1.0, (0.9, 1.1), "recovered", n=20, target="mean > 0.5")
    >>> s = Setting("toy", "planted", "recovered", planted, help="a toy")
    >>> check = s.run(SettingContext(quick=True, seed=0, workdir=None))
    >>> validate_line(s, check), check.verdict == s.expected
    ('validate toy planted kind=planted mean=1 [0.9, 1.1] verdict=recovered', True)
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import torch

from thinklens.calibration.findings import _fmt
from thinklens.engine.model import HookedModel
from thinklens.errors import ThinklensError, did_you_mean, opt
from thinklens.runs.entry_points import entry_points
from thinklens.runs.jobs import all_jobs, pipeline_jobs, run_job

ENTRY_POINT_GROUP = "thinklens.validations"
#: What a setting is (:attr:`Setting.kind`).
KINDS = ("planted", "null", "benchmark")
CheckVerdict = Literal["recovered", "no-effect", "failed"]
CHECK_VERDICTS: tuple[str, ...] = ("recovered", "no-effect", "failed")


@dataclass(frozen=True)
class Check:
    """What one setting measured and what the method concluded."""

    statistic: str
    """Name of the statistic (``saving``, ``mean_best_cosine``, ``mi_gap``); one token, no spaces."""
    value: float
    """Its value."""
    ci: tuple[float, float]
    """Its 95% interval (thinklens.calibration.stats)."""
    verdict: CheckVerdict
    """recovered (the planted effect found, target met), no-effect (the method reports none) or failed."""
    n: int = 0
    """Units the statistic rests on."""
    target: str = ""
    """The criterion the verdict applies, in words (``saving >= 0.30 and accuracy loss <= 0.01``)."""
    details: dict[str, Any] = field(default_factory=dict)
    """Everything else a reader needs: secondary statistics, the sub-run folders, the findings."""

    def __post_init__(self) -> None:
        if self.verdict not in CHECK_VERDICTS:
            raise ThinklensError.of("check verdict", self.verdict, " / ".join(CHECK_VERDICTS), "return one of the three")
        if " " in self.statistic:
            raise ThinklensError.of("check statistic", self.statistic, "one token (a name with no spaces)", "use underscores")


@dataclass
class SettingContext:
    """What a setting's ``run`` receives."""

    quick: bool
    """The small version (seconds per method, the default test tier) instead of the full one."""
    seed: int
    """Seed of everything the setting draws."""
    workdir: Path | None
    """A folder of its own for sub-runs and caches (inside the validate run folder); None: a temporary one."""
    device: str = "cpu"
    dtype: str = "float32"
    threads: int | None = None
    progress: bool = False
    model: str | None = None
    """The model a model-agnostic setting runs on (``validate --model smollm2-135m``); None for the zoo's settings."""
    _models: dict[str, Any] = field(default_factory=dict, repr=False)
    """Models loaded by :meth:`hooked`, shared by every setting of one validate run."""

    def hooked(self) -> Any:
        """The :class:`~thinklens.engine.model.HookedModel` of :attr:`model`, loaded once per validate run."""
        if not self.model:
            raise ThinklensError.of("model", self.model, "a model for this setting", f"pass {opt('model', '<NAME>')}")
        if self.model not in self._models:
            self._models[self.model] = HookedModel.load(self.model, device=self.device, dtype=getattr(torch, self.dtype))
        return self._models[self.model]

    def run_job(self, name: str, sub: str, **fields: Any) -> Any:
        """Run another job into ``<workdir>/<sub>`` (resumed when it is already there) and return its own result
        (:attr:`~thinklens.runs.jobs.JobResult.value`: what a setting records stays plain data)."""
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="thinklens-validate-"))
        return run_job(name, out=self.workdir / sub, device=self.device, dtype=self.dtype, threads=self.threads,
                       progress=self.progress, **fields).value


@dataclass(frozen=True)
class Setting:
    """One planted or null setting of one method."""

    method: str
    """The method validated (``lynx``, ``mi-peaks``, ``sae``, ``steer``, ...)."""
    name: str
    """``planted``, ``null``, or a named variant of them (``null-word``)."""
    expected: Literal["recovered", "no-effect"]
    """The verdict a working method gives here."""
    run: Callable[[SettingContext], Check]
    """Measures the setting (quick or full, as the context says)."""
    help: str = ""
    """One line: what is planted or removed, and the target."""
    on_model: bool = False
    """Runs on any model given to ``validate --model`` (needs only a model and its tokenizer: an effect known from the
    literature, such as induction); False: the setting brings its own zoo organism and runs without ``--model``."""
    precondition: Callable[[SettingContext], str | None] | None = None
    """Checked before :attr:`run` on ``validate --model M`` (seconds to a minute): None when M can meet the setting,
    else the one line that refuses it (then the setting is not run: ``failed``, that line in its details)."""
    kind: Literal["planted", "null", "benchmark"] | None = None
    """What the setting is: ``planted`` (the effect was placed in the subject by construction, its size known),
    ``benchmark`` (a positive control: an effect expected from the literature or from how the subject was trained,
    not placed), ``null`` (the effect removed; expects ``no-effect``). None: ``null`` for a ``no-effect`` expectation,
    else ``planted``."""

    def __post_init__(self) -> None:
        if self.expected not in ("recovered", "no-effect"):
            raise ThinklensError.of("setting expected verdict", self.expected, "recovered or no-effect", "pick one")
        if self.kind is None:
            object.__setattr__(self, "kind", "null" if self.expected == "no-effect" else "planted")
        if (self.kind == "null") != (self.expected == "no-effect") or self.kind not in KINDS:
            raise ThinklensError.of(f"setting {self.key}'s kind", f"{self.kind} expecting {self.expected}",
                                    "a null expecting no-effect, or a planted or benchmark setting expecting recovered",
                                    "a setting that expects no effect is a null; say so with kind='null'")

    @property
    def key(self) -> str:
        """``method/name``."""
        return f"{self.method}/{self.name}"


def validate_line(setting: Setting, check: Check) -> str:
    """``validate <method> <setting> kind=<planted|null|benchmark> <statistic>=<value> [<lo>, <hi>] verdict=<...>``."""
    return (f"validate {setting.method} {setting.name} kind={setting.kind} {check.statistic}={_fmt(check.value)} "
            f"[{_fmt(check.ci[0])}, {_fmt(check.ci[1])}] verdict={check.verdict}")


def refused_check(reason: str) -> Check:
    """The check of a setting whose precondition the model does not meet (:attr:`Setting.precondition`): ``failed``,
    not run, the one line in details (``precondition_met`` False: its finding shows neither claim)."""
    return Check("precondition", float("nan"), (float("nan"), float("nan")), "failed", n=0,
                 details={"precondition_met": False, "precondition": reason}, target="the setting's precondition")


def failed_check(error: BaseException, *, statistic: str = "error") -> Check:
    """The check of a setting whose run raised: verdict ``failed``, the error kept in details."""
    return Check(statistic, float("nan"), (float("nan"), float("nan")), "failed",
                 details={"error": f"{type(error).__name__}: {error}"})


def setting_sources(errors: list[str] | None = None) -> dict[str, tuple[Any, tuple[str, ...]]]:
    """Name -> (its ``module:SETTINGS`` as an entry point, the jobs that declare it, in pipeline order): every job's
    ``Job.validations`` (the job registry), then the ``thinklens.validations`` entry points (settings of no one job,
    such as induction on any model, and other packages'); a name already taken is not taken again. Nothing is loaded.

    With ``errors``, a job module that fails to import is left out and its error appended (a reader such as the app
    still shows the rest); without, it raises.

    Example:
        >>> sources = setting_sources()
        >>> sources["lynx"][0].value, sources["lynx"][1], sources["steering"][1], sources["induction"][1]
        ('thinklens.probes.validation:SETTINGS', ('lynx',), ('sae', 'steer'), ())
    """
    out: dict[str, tuple[Any, tuple[str, ...]]] = {}
    jobs = pipeline_jobs(errors) if errors is not None else sorted(all_jobs(), key=lambda j: (j.order is None, j.order or 0, j.name))
    for job in jobs:
        for name, ref in job.validations.items():
            ep, by = out.get(name, (metadata.EntryPoint(name, ref, ENTRY_POINT_GROUP), ()))
            if ep.value != ref:
                clash = f"validations {name!r}: job {job.name} declares {ref}, job {by[0]} declares {ep.value} (rename one)"
                if errors is None:
                    raise TypeError(clash)
                errors.append(clash)
                continue
            out[name] = (ep, (*by, job.name))
    for ep in entry_points(ENTRY_POINT_GROUP):
        out.setdefault(ep.name, (ep, ()))
    return out


def all_settings() -> list[Setting]:
    """Every registered setting (:func:`setting_sources`), in name order, then as each module lists them."""
    out: list[Setting] = []
    for _, (ep, _job) in sorted(setting_sources().items()):
        settings = ep.load()
        for s in settings:
            if not isinstance(s, Setting):
                raise TypeError(f"validations {ep.name} = {ep.value} holds {type(s).__name__}, not a Setting")
        out.extend(settings)
    return out


def method_jobs(errors: list[str] | None = None) -> dict[str, str]:
    """Setting method -> the job whose declared settings hold it (``readout`` -> ``probe``; of several jobs that
    declare one module, the one named like the method, else the first); methods of settings no job declares are
    absent. Loads every settings module (cheap: a setting runs nothing until asked)."""
    out: dict[str, str] = {}
    for _, (ep, jobs) in sorted(setting_sources(errors).items()):
        if not jobs:
            continue
        try:
            settings = ep.load()
        except Exception as e:  # noqa: BLE001 - one broken settings module never hides the others
            if errors is not None:
                errors.append(f"validations {ep.name}: {type(e).__name__}: {e}")
                continue
            raise
        for s in settings:
            out.setdefault(s.method, s.method if s.method in jobs else jobs[0])
    return out


def select_settings(methods: tuple[str, ...] = ()) -> list[Setting]:
    """The settings of ``methods`` (all when empty): a method name selects all its settings, ``method/setting``
    one of them (``hybrid/planted-latent``); an unknown name is an error with a did-you-mean.

    Example:
        >>> [f"{s.method}/{s.name}" for s in select_settings(("findings/null",))]
        ['findings/null']
    """
    settings = all_settings()
    if not methods:
        return settings
    known = sorted({s.method for s in settings})
    one = sorted(f"{s.method}/{s.name}" for s in settings)
    for m in methods:
        if "/" in m and m not in one:
            raise ThinklensError.of("validate setting", m, f"one of {', '.join(one)}", did_you_mean(m, one))
        if "/" not in m and m not in known:
            raise ThinklensError.of("validate method", m, f"one of {', '.join(known)}", did_you_mean(m, known))
    return [s for s in settings if s.method in methods or f"{s.method}/{s.name}" in methods]
