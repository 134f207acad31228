"""The examples in the docstrings of the probe jobs' modules run and print what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["forced", "jobs.lynx", "jobs.probe", "lynx_result", "lynx_splits", "rollouts", "value_dataset"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"thinklens.probes.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
