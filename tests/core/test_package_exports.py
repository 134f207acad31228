"""Python and Jupyter: every capability package exports its public names lazily (``from probes import
LinearProbe``), ``dir()`` lists them (tab completion), importing a package loads none of its heavy modules,
and ``thinklens info`` shows the model's own type beside the adapter family."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import types

import pytest

PACKAGES = ("probes", "steering", "latent", "analyses")


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
    """A function named like its own module (analyses.explore.explore) would be rebound to the module as soon
    as the submodule is imported; such names stay out of the table, submodule exports excepted."""
    import pkgutil

    pkg = importlib.import_module(package)
    submodules = {m.name for m in pkgutil.iter_modules(pkg.__path__)}
    for name, target in _exports(package).items():
        if name in submodules:
            assert target == f"{package}.{name}", (package, name, target)


def test_readme_names_import_from_the_packages():
    from analyses import ExploreResult, MIPeaksJobConfig, mi
    from latent import CODIConfig, LatentModel, train_latent
    from probes import LinearProbe, LynxConfig, RidgeProbe, load_probe, save_probe
    from steering import ClampFeature, SteeringVector, add_feature, train_sae

    assert LinearProbe.__module__ == "probes.estimators" and RidgeProbe.__module__ == "probes.estimators"
    assert (save_probe.__module__, load_probe.__module__, LynxConfig.__module__) == ("probes.io", "probes.io", "probes.lynx")
    assert SteeringVector.__module__ == "steering.vectors" and add_feature.__module__ == "steering.feature_steering"
    assert ClampFeature.__module__ == "steering.feature_steering" and train_sae.__module__ == "steering.sae"
    assert (CODIConfig.__module__, LatentModel.__module__, train_latent.__module__) == (
        "latent.config", "latent.latent_model", "latent.train")
    assert isinstance(mi, types.ModuleType) and mi.nhsic.__module__ == "analyses.mi.estimator"
    assert ExploreResult.__module__ == "analyses.explore" and MIPeaksJobConfig.__module__ == "analyses.jobs.mi_peaks"


def test_thinklens_dir_lists_the_lazy_names():
    import thinklens

    names = dir(thinklens)
    for name in thinklens._LAZY:
        assert name in names
    assert {"ThinklensError", "__version__", "run_job", "HookedModel", "Site"} <= set(names)


def test_importing_the_packages_loads_no_heavy_module():
    """In a fresh interpreter: importing thinklens and the four packages loads neither torch nor numpy nor any
    exported module; the first use of a name loads its module (and only then torch, for a torch-backed one)."""
    code = """
import json, sys
import thinklens, probes, steering, latent, analyses
dir(thinklens); dir(probes); dir(steering)
before = {m: m in sys.modules for m in ("torch", "numpy", "sklearn", "transformers", "probes.estimators", "steering.vectors")}
from probes import LinearProbe
after = {m: m in sys.modules for m in ("probes.estimators", "steering.vectors")}
print(json.dumps([before, after]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, after = json.loads(out)
    assert not any(before.values()), before
    assert after == {"probes.estimators": True, "steering.vectors": False}


def test_info_shows_the_model_type_beside_the_family(tmp_path, capsys):
    from thinklens.cli import main
    from thinklens.testing import build_tiny_model

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
