"""Shared fixtures; jaxtyping shape checks (beartype) are active for the core under pytest only."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from jaxtyping import install_import_hook  # noqa: E402

_hook = install_import_hook(["thinklens"], "tl_typecheck.typechecker")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory):
    """One saved tiny random model per family: {family: path}."""
    from thinklens.testing import FAMILIES, build_tiny_model

    root = tmp_path_factory.mktemp("tiny")
    return {fam: build_tiny_model(fam, root / fam) for fam in FAMILIES}


@pytest.fixture(scope="session")
def tiny_models(tiny_dirs):
    from thinklens import HookedModel

    return {fam: HookedModel.load(str(p)) for fam, p in tiny_dirs.items()}


def pytest_collection_modifyitems(config, items):
    """`gpu` tests skip themselves where no accelerator exists (they are deselected by default anyway)."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if item.get_closest_marker("gpu") is not None:  # the marker, not the keyword (tests/gpu/ is one)
            item.add_marker(skip)
