"""Fixtures of every probes test."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    # BLAS thread pools oversubscribe the shared CPUs; these small fits run faster on one thread
    with threadpool_limits(limits=1):
        yield
