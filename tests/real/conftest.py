"""The real-weight tier (``make test-real``): tests marked ``real`` that load the packaged real models.

Each test asks for a model through :func:`real_model`, which skips it with a reason when ``make real`` has not run
(the packages are absent), and loads each model once per session.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def real_model():
    from thinklens import HookedModel
    from thinklens.engine.real_models import installed

    loaded: dict[str, HookedModel] = {}

    def get(name: str) -> HookedModel:
        if not installed(name):
            pytest.skip(f"{name} is not installed: run `make real`")
        if name not in loaded:
            loaded[name] = HookedModel.load(name)
        return loaded[name]

    return get
