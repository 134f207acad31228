"""Every notebook under notebooks/ executes top to bottom without an error, within its time budget.

The kernel is this test's own interpreter: a kernel spec pointing at ``sys.executable`` is written to a
temporary Jupyter path, so a fresh clone with only ``pip install -e .[dev]`` (nbclient, ipykernel) runs
the notebooks in the same environment as the tests, whatever kernels the machine has registered.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
KERNEL = "thinklens-test-python"
BUDGET_S = 60.0


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory, monkeypatch_module):
    spec_dir = tmp_path_factory.mktemp("jupyter") / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "thinklens tests", "language": "python",
    }))
    monkeypatch_module.setenv("JUPYTER_PATH", str(spec_dir.parent.parent))
    return KERNEL


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_there_are_notebooks():
    assert any(p.name == "probe_training.ipynb" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, kernel_name):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit notebooks without outputs"
    client = nbclient.NotebookClient(nb, kernel_name=kernel_name, timeout=300,
                                     resources={"metadata": {"path": str(REPO)}})
    t0 = time.perf_counter()
    client.execute()  # raises CellExecutionError with the failing cell's traceback
    seconds = time.perf_counter() - t0
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert seconds < BUDGET_S, f"{path.name} took {seconds:.0f} s (budget {BUDGET_S:.0f} s)"
