"""One config rule: every job config is a :class:`~thinklens.runs.configcli.ConfigGroup`, each field group validates its
own fields in ``check``, and ``ConfigGroup.__post_init__`` runs every group's check along the MRO.

The oracle of "this group was checked" is the traceback: a bad value of a group's field must raise from inside that
group's own ``check`` (its code object is on the stack), for every registered job config that has the group. A
mutant that drops one group's check (what a forgotten ``X.__post_init__(self)`` chain did before) is caught."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from thinklens import CAPABILITIES
from thinklens.errors import ThinklensError
from thinklens.runs.configcli import ConfigGroup, group_checks
from thinklens.runs.jobs import all_jobs

ROOT = Path(__file__).resolve().parents[2]

#: One bad value per checking class, keyed by class name: a value its own ``check`` refuses.
BAD: dict[str, dict] = {
    # the shared field groups
    "DataOptions": {"prompt_format": "no-such-format"},
    "StepRange": {"min_steps": 0},
    "OptimOptions": {"lr": 0.0},
    "SamplingOptions": {"top_p": 0.0},
    "ReadOptions": {"sites": ()},
    "LynxConfig": {"fallback_fraction": 1.0},
    "SAETrainConfig": {"d_sae": 0},
    "HybridConfig": {"n_categories": 1},
    "GRPOConfig": {"group_size": 1},
    "TrainConfig": {"ckpt_every": 0},
    "CODISchedule": {"train_steps": 0},
    # the job configs' own fields
    "CaptureConfig": {"positions": "first"},
    "ImportTracesConfig": {"top_k": 0},
    "EvalJobConfig": {"samples": 0},
    "MIPeaksJobConfig": {"n_problems": 1},
    "ProbeJobConfig": {"target": "nothing"},
    "LynxJobConfig": {"n_train": 0},
    "SteerJobConfig": {"word": " "},
    "SteerVectorConfig": {"coeffs": (0.0,)},
    "SAEEvalConfig": {"n_texts": 0},
    "SAEJobConfig": {"n_texts": 0},
    "ReasoningVectorJobConfig": {"select_fraction": 0.0},
    "HybridJobConfig": {"n_seeds": 0},
    "CoconutConfig": {"c": 0},
    "CODIConfig": {"n_latents": 0},
    "LatentSFTConfig": {"top_k": 0},
    "LatentSeekConfig": {"rho": 2.0},
    "EvalConfig": {"decode_examples": -1},
    "ZooEvalConfig": {"n_eval": 0},
    "OrganismEvalConfig": {"n_eval": 0},
    "ZooTrainConfig": {"minutes": 0.0},
    "ValidateConfig": {"seed": -1},
    "TunedLensConfig": {"n_train": 0},
    "ThoughtAnchorsConfig": {"n_rollouts": 1},
    "FaithfulnessConfig": {"fractions": "0.5,1"},
}

#: Values a config needs besides its defaults (eval refuses an empty --data).
MINIMAL: dict[str, dict] = {"EvalJobConfig": {"data": "synthetic:1-2"}}

CONFIGS = sorted({job.config for job in all_jobs()}, key=lambda c: c.__name__)


def _raised_in(config: type, fields: dict, klass: type) -> bool:
    """Whether a valid ``config`` given ``fields`` raises a ThinklensError from inside ``klass.check`` when validated
    (the values are set past ``__init__``, whose runtime type checks under pytest would refuse a bad Literal first)."""
    code = (klass.__dict__.get("check") or ConfigGroup.__post_init__).__code__
    obj = config(**MINIMAL.get(config.__name__, {}))
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    try:
        obj.__post_init__()
    except ThinklensError as e:
        tb = e.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code is code:
                return True
            tb = tb.tb_next
        return False
    return False


def refused_by(config: type) -> list[str]:
    """The checking classes of ``config`` whose bad value raised from their own check (the oracle)."""
    return [k.__name__ for k in reversed(config.__mro__) if "check" in k.__dict__
            and _raised_in(config, BAD[k.__name__], k)]


def test_every_job_config_is_a_config_group_with_no_own_post_init():
    assert len(CONFIGS) >= 20
    for config in CONFIGS:
        assert issubclass(config, ConfigGroup), config.__name__
        owners = [k.__name__ for k in config.__mro__ if "__post_init__" in k.__dict__]
        assert owners == ["ConfigGroup"], (config.__name__, owners)


def test_every_checking_class_has_a_bad_value_in_the_table():
    """A new group (or a job config with a check) gets a row here, so the test below covers it."""
    checking = {name for c in CONFIGS for name in group_checks(c)}
    assert checking <= set(BAD), sorted(checking - set(BAD))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.__name__)
def test_a_bad_value_in_every_group_raises_from_that_groups_check(config):
    config(**MINIMAL.get(config.__name__, {}))  # the defaults are valid
    assert refused_by(config) == group_checks(config)


def test_the_combined_configs_hold_their_groups():
    """The groups a combined config must check (what the hand-chained ``__post_init__`` calls used to cover)."""
    by_name = {c.__name__: c for c in CONFIGS}
    assert group_checks(by_name["LynxJobConfig"]) == ["SamplingOptions", "StepRange", "LynxConfig", "DataOptions",
                                                      "LynxJobConfig"]
    assert group_checks(by_name["CODIConfig"]) == ["OptimOptions", "StepRange", "DataOptions", "TrainConfig",
                                                   "CODISchedule", "CODIConfig"]
    assert group_checks(by_name["HybridJobConfig"]) == ["StepRange", "DataOptions", "HybridConfig", "HybridJobConfig"]


@pytest.mark.parametrize("group", ["DataOptions", "StepRange", "SamplingOptions", "LynxConfig"])
def test_a_mutant_dropping_one_groups_check_is_caught(monkeypatch, group):
    """Remove one group's check (the old bug: a config forgetting ``Group.__post_init__(self)``): the combined config
    no longer refuses that group's bad value, and the refusal oracle above sees it."""
    by_name = {c.__name__: c for c in CONFIGS}
    config = by_name["LynxJobConfig"]
    klass = next(k for k in config.__mro__ if k.__name__ == group)
    assert group in refused_by(config)
    monkeypatch.delattr(klass, "check")
    assert group not in refused_by(config)
    assert not _raised_in(config, BAD[group], ConfigGroup)  # the bad value now goes through silently


def test_a_group_defining_post_init_is_refused_at_class_creation():
    with pytest.raises(TypeError, match="validates in check"):
        @dataclasses.dataclass(frozen=True)
        class Chained(ConfigGroup):
            n: int = 1

            def __post_init__(self) -> None:
                pass


def test_checks_run_once_each_base_groups_first():
    calls: list[str] = []

    @dataclasses.dataclass(frozen=True)
    class A(ConfigGroup):
        a: int = 0

        def check(self) -> None:
            calls.append("A")

    @dataclasses.dataclass(frozen=True)
    class B(A):
        b: int = 0

        def check(self) -> None:
            calls.append("B")

    @dataclasses.dataclass(frozen=True)
    class C(A):
        c: int = 0

    @dataclasses.dataclass(frozen=True)
    class D(B, C):
        def check(self) -> None:
            calls.append("D")

    D()
    assert calls == ["A", "B", "D"]  # A once although two paths lead to it; C has no check of its own
# ---------------------------------------------------------------- library code never imports a job module


def _package_modules() -> list[Path]:
    out = []
    for pkg in ("thinklens", "analyses", "probes", "steering", "latent"):
        out += sorted((ROOT / pkg).rglob("*.py"))
    return out


def _imported(path: Path) -> list[str]:
    """Every module name an ``import``/``from`` statement of ``path`` names (TYPE_CHECKING and function bodies too)."""
    tree = ast.parse(path.read_text(), str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def is_job_module(name: str) -> bool:
    """``<package>.jobs`` and everything under it (``thinklens.runs.jobs``, the job contract, is a module, not a package)."""
    parts = name.split(".")
    if len(parts) > 1 and parts[0] == "thinklens" and parts[1] in CAPABILITIES:
        parts = parts[1:]  # thinklens.probes is the repository's probes/ folder (pyproject's package-dir)
    return "jobs" in parts[1:] and (ROOT / "/".join(parts[:parts.index("jobs", 1) + 1])).is_dir()


def test_is_job_module():
    assert is_job_module("thinklens.probes.jobs.lynx") and is_job_module("thinklens.analyses.jobs")
    assert not is_job_module("thinklens.runs.jobs") and not is_job_module("thinklens.probes.lynx_splits")
    assert is_job_module("thinklens.zoo.jobs.grpo") and not is_job_module("thinklens.zoo.grpo")


def test_no_library_module_imports_a_job_module():
    offenders = []
    for path in _package_modules():
        rel = path.relative_to(ROOT)
        if "jobs" in rel.parts[:-1] or rel.as_posix() in ("thinklens/cli.py",):
            continue
        offenders += [f"{rel}: {name}" for name in _imported(path) if is_job_module(name)]
    assert not offenders, offenders
