"""Python and Jupyter: every capability package exports its public names lazily (``from thinklens.probes import
LinearProbe``), ``dir()`` lists them (tab completion), importing a package loads none of its heavy modules,
and ``thinklens info`` shows the model's own type beside the adapter family."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import types

import pytest

PACKAGES = ("thinklens.probes", "thinklens.steering", "thinklens.latent", "thinklens.analyses")


def _exports(package: str) -> dict[str, str]:
    return importlib.import_module(package)._EXPORTS


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves_to_its_module(package):
    pkg = importlib.import_module(package)
    table = _exports(package)
    assert len(table) >= 5 and pkg.__all__ == sorted(table)
    for name, target in table.items():
        module = importlib.import_module(target)
        # oracle: the defining module's own attribute (or the submodule itself for a module export)
        expected = module if target == f"{package}.{name}" else getattr(module, name)
        assert getattr(pkg, name) is expected, (package, name)
        assert name in dir(pkg)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        pkg.no_such_name  # noqa: B018


@pytest.mark.parametrize("package", PACKAGES)
def test_no_exported_function_is_named_like_a_submodule(package):
    """A function named like its own module (thinklens.analyses.explore.explore) would be rebound to the module as soon
    as the submodule is imported; such names stay out of the table, submodule exports excepted."""
    import pkgutil

    pkg = importlib.import_module(package)
    submodules = {m.name for m in pkgutil.iter_modules(pkg.__path__)}
    for name, target in _exports(package).items():
        if name in submodules:
            assert target == f"{package}.{name}", (package, name, target)


def test_readme_names_import_from_the_packages():
    from thinklens.analyses import ExploreResult, MIPeaksJobConfig, mi
    from thinklens.latent import CODIConfig, LatentModel, train_latent
    from thinklens.probes import LinearProbe, LynxConfig, RidgeProbe, load_probe, save_probe
    from thinklens.steering import ClampFeature, SteeringVector, add_feature, train_sae

    assert LinearProbe.__module__ == "thinklens.probes.estimators" and RidgeProbe.__module__ == "thinklens.probes.estimators"
    assert (save_probe.__module__, load_probe.__module__, LynxConfig.__module__) == ("thinklens.probes.io",
        "thinklens.probes.io", "thinklens.probes.lynx")
    assert SteeringVector.__module__ == "thinklens.steering.vectors" and add_feature.__module__ == "thinklens.steering.feature_steering"
    assert ClampFeature.__module__ == "thinklens.steering.feature_steering" and train_sae.__module__ == "thinklens.steering.sae"
    assert (CODIConfig.__module__, LatentModel.__module__, train_latent.__module__) == (
        "thinklens.latent.config", "thinklens.latent.latent_model", "thinklens.latent.training_loop")
    assert isinstance(mi, types.ModuleType) and mi.nhsic.__module__ == "thinklens.analyses.mi.estimator"
    assert ExploreResult.__module__ == "thinklens.analyses.explore" and MIPeaksJobConfig.__module__ == "thinklens.analyses.mi.config"


def test_thinklens_dir_lists_the_lazy_names():
    import thinklens

    names = dir(thinklens)
    for name in thinklens._LAZY:
        assert name in names
    assert sorted(thinklens.__all__) == sorted([*thinklens._LAZY, "ThinklensError"])  # `from thinklens import *` too
    for name, module in thinklens._LAZY.items():  # oracle: the defining module's own attribute
        assert getattr(thinklens, name) is getattr(importlib.import_module(module), name), name
    assert {"ThinklensError", "__version__", "run_job", "HookedModel", "Site"} <= set(names)
    assert not {"Any", "Path", "sys", "importlib", "TYPE_CHECKING", "annotations"} & set(names)  # its own imports


def test_importing_the_packages_loads_no_heavy_module():
    """In a fresh interpreter: importing thinklens and the four packages loads neither torch nor numpy nor any
    exported module; the first use of a name loads its module (and only then torch, for a torch-backed one)."""
    code = """
import json, sys
import thinklens, thinklens.probes as probes, thinklens.steering as steering, thinklens.latent, thinklens.analyses
dir(thinklens); dir(probes); dir(steering)
before = {m: m in sys.modules for m in ("torch", "numpy", "sklearn", "transformers", "thinklens.probes.estimators",
    "thinklens.steering.vectors")}
from thinklens.probes import LinearProbe
after = {m: m in sys.modules for m in ("thinklens.probes.estimators", "thinklens.steering.vectors")}
print(json.dumps([before, after]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, after = json.loads(out)
    assert not any(before.values()), before
    assert after == {"thinklens.probes.estimators": True, "thinklens.steering.vectors": False}


def test_info_shows_the_model_type_beside_the_family(tmp_path, capsys):
    from thinklens.cli import main
    from tools.testing import build_tiny_model

    qwen3 = build_tiny_model("qwen3", tmp_path / "qwen3", n_layers=1, d_model=16, n_heads=2)
    assert main(["info", str(qwen3)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "family: llama (model_type qwen3)" in lines
    gpt2 = build_tiny_model("gpt2", tmp_path / "gpt2", n_layers=1, d_model=16, n_heads=2)
    assert main(["info", str(gpt2)]) == 0
    assert "family: gpt2" in capsys.readouterr().out.splitlines()  # the same name: shown once
    assert main(["info", str(qwen3), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["family"], info["model_type"]) == ("llama", "qwen3")
    from thinklens.engine.model import HookedModel

    model = HookedModel.load(str(qwen3))  # in Python (a notebook cell's repr) too
    assert model.model_type == json.loads((qwen3 / "config.json").read_text())["model_type"] == "qwen3"
    assert "family=llama (model_type qwen3)" in repr(model) and model.family == "llama"
    assert "family=gpt2," in repr(HookedModel.load(str(gpt2)))


def test_format_for_renders_with_the_models_own_chat_template():
    """``format_for(model).render(q)`` is the model's own ``apply_chat_template`` (tiny-r1 ships one): no
    tokenizer passed, the same text as the template applied by hand, and the format still compares and
    serialises as plain data."""
    import dataclasses

    from thinklens.data.formats import R1_INSTRUCTION, PromptFormat, format_for
    from thinklens.engine.model import HookedModel
    from thinklens.runs.folders import to_jsonable

    model = HookedModel.load("data/zoo/tiny-r1")
    assert model.tokenizer.chat_template
    fmt = format_for(model)
    q = "What is 7 + 5 ?"
    expected = model.tokenizer.apply_chat_template([{"role": "user", "content": f"{q}\n{R1_INSTRUCTION}"}],
                                                   add_generation_prompt=True, tokenize=False)
    assert fmt.name == "chat" and fmt.render(q) == expected and fmt.render_all([q, q]) == [expected, expected]
    assert expected.startswith("<|im_start|>user\n") and q in expected  # the template applied, not the bare question
    assert fmt.render(q, model.tokenizer) == expected
    assert fmt == PromptFormat("chat", span=fmt.span) and "tokenizer" not in json.dumps(to_jsonable(fmt))
    with pytest.raises(Exception, match="chat template"):  # a copy built from the fields alone has no tokenizer
        dataclasses.replace(fmt, instruction="").render(q)


def test_run_job_returns_a_typed_result(tmp_path):
    """run_job's JobResult: the run folder, the summary meta.json records, its findings and the headline
    ``thinklens runs`` prints for it, and the job's own result, still indexable and comparable as before."""
    from dataclasses import dataclass

    import thinklens
    from thinklens.calibration.findings import accuracy_finding, findings_doc
    from thinklens.runs.jobs import Job, JobResult, run_job
    from thinklens.runs.listing import run_table

    @dataclass(frozen=True)
    class CountConfig:
        model: str = ""
        """Unused."""
        seed: int = 0
        """Seed."""
        k: int = 45
        """Correct answers out of 50."""

    @dataclass
    class Own:
        summary: dict
        extra: int = 7

    def run(config, ctx):
        finding = accuracy_finding("the model beats chance", config.k, 50, control="chance", control_value=0.5)
        ctx.run.finish({"k": config.k, "findings": findings_doc([finding])})
        return Own(summary={"k": config.k, "only_here": 1})

    def run_dict(config, ctx):
        return {"k": config.k, "findings": []}

    result = run_job(Job("count", CountConfig, run, help="count", models=()), runs=tmp_path, run_id="a", progress=False)
    assert isinstance(result, thinklens.JobResult) and thinklens.JobResult is JobResult
    assert result.run_dir == tmp_path / "count" / "a" and result.job == "count"
    meta = json.loads((tmp_path / "count" / "a" / "meta.json").read_text())
    assert meta["status"] == "done"
    assert result.summary == meta["summary"] | {"only_here": 1}  # meta.json's summary, plus the result's own keys
    assert result.findings == meta["summary"]["findings"] and result.findings[0]["verdict"] == "effect"
    row = next(line for line in run_table(tmp_path) if line.split()[:2] == ["count", "a"])
    assert result.headline and row.rstrip().endswith(result.headline)  # the same line as `thinklens runs`
    assert result.extra == 7 and isinstance(result.value, Own)  # the job's own result, attributes included
    assert result["k"] == 45 and "only_here" in result  # no mapping result: the summary is indexed
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        result.nope  # noqa: B018

    plain = run_job(Job("plain", CountConfig, run_dict, help="plain", models=()), runs=tmp_path, run_id="b", progress=False, k=3)
    assert plain == {"k": 3, "findings": []} and dict(plain) == plain.value and plain["k"] == 3
    assert plain.get("missing", "x") == "x" and sorted(plain) == ["findings", "k"] and len(plain) == 2
    assert plain.findings == [] and plain.summary == {"k": 3, "findings": []}
    assert plain != {"k": 4, "findings": []} and plain.headline != result.headline
