"""The examples in the core's docstrings run and print what they claim (every thinklens module)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import thinklens

# the core only: thinklens/probes etc. are links to the capability folders (for editors), tested by their own suites
MODULES = sorted(m.name for m in pkgutil.walk_packages(thinklens.__path__, "thinklens.")
                 if m.name.split(".")[1] not in thinklens.CAPABILITIES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_every_core_module_is_checked():
    assert {"thinklens.engine.capture", "thinklens.runs.jobs", "thinklens.runs.folders", "thinklens.engine.sites",
        "thinklens.tasks.protocol"} <= set(MODULES)
