"""The examples in the probes docstrings run and print what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["numerics", "conformal", "estimators", "exit_gate", "exits", "figures", "intention", "io", "lynx", "lynx_findings",
           "mlp", "validation"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"thinklens.probes.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
