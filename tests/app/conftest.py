"""Fixtures of the app's tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """An empty runs folder the app reads (``THINKLENS_RUNS``); a test module may define its own, filled one."""
    monkeypatch.setenv("THINKLENS_RUNS", str(tmp_path))
    return tmp_path
