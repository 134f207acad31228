"""The examples in the docstrings of the probe jobs' modules run and print what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["cli", "forced", "lynx_result", "pipeline", "probe_job", "stages"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"probes.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
