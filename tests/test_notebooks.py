"""Every notebook under notebooks/ executes top to bottom without an error, within its time budget.

The kernel is this test's own interpreter: a kernel spec pointing at ``sys.executable`` is written to a
temporary Jupyter path, so a fresh clone with only ``pip install -e .[dev]`` (nbclient, ipykernel) runs
the notebooks in the same environment as the tests, whatever kernels the machine has registered.

A notebook in :data:`SMOKE` reads ``THINKLENS_NOTEBOOK_SIZE``: the default tier runs every cell with its sizes cut
(``smoke``), the ``slow`` tier runs it at the sizes it is committed with.
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
#: Seconds a notebook may take in the default tier (on 2 shared cores; the own-model one runs four jobs).
BUDGET_S = {"probe_training": 60.0, "own_model": 150.0}
#: Notebooks whose default-tier run cuts their sizes (full run: slow).
SMOKE = ("own_model",)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


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


def execute(path: Path, kernel_name: str) -> tuple[object, float]:
    """The executed notebook (outputs filled in) and the seconds it took; a failing cell raises with its traceback."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in nb.cells if c.cell_type == "code"), "commit notebooks without outputs"
    client = nbclient.NotebookClient(nb, kernel_name=kernel_name, timeout=600,
                                     resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    client.execute()  # raises CellExecutionError with the failing cell's traceback
    seconds = time.perf_counter() - t0
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    print(f"{path.name}: {seconds:.1f} s")
    return nb, seconds


def stdout_of(nb) -> str:
    """Everything the notebook's code cells printed or displayed, in order."""
    out = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            out.append(o.get("text", "") if o.get("output_type") == "stream" else o.get("data", {}).get("text/plain", ""))
    return "\n".join(out)


def test_there_are_notebooks():
    names = {p.stem for p in NOTEBOOKS}
    assert {"probe_training", "own_model"} <= names
    assert set(BUDGET_S) == names, "give every notebook a budget"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, kernel_name, monkeypatch):
    if path.stem in SMOKE:
        monkeypatch.setenv("THINKLENS_NOTEBOOK_SIZE", "smoke")  # the kernel inherits the environment
    nb, seconds = execute(path, kernel_name)
    assert seconds < BUDGET_S[path.stem], f"{path.name} took {seconds:.0f} s (budget {BUDGET_S[path.stem]:.0f} s)"
    if path.stem == "own_model":
        check_own_model(stdout_of(nb))


def check_own_model(text: str) -> None:
    """What the own-model notebook must have shown: the Qwen3's type, the model's own chat template, and a done
    run of each job in the run table."""
    assert "family=llama (model_type qwen3)" in text
    assert "<|im_start|>assistant\\n<think>\\n" in text  # the repr of the rendered prompt: tiny-r1's template
    table = text[text.index("kind  "):].splitlines()
    done = {line.split()[0] for line in table[1:] if len(line.split()) > 2 and line.split()[2] == "done"}
    assert {"probe", "lynx", "mi-peaks"} <= done, table


@pytest.mark.slow
@pytest.mark.parametrize("name", SMOKE)
def test_notebook_runs_at_full_size(name, kernel_name, monkeypatch):
    monkeypatch.delenv("THINKLENS_NOTEBOOK_SIZE", raising=False)
    nb, _ = execute(REPO / "notebooks" / f"{name}.ipynb", kernel_name)
    if name == "own_model":
        check_own_model(stdout_of(nb))


def test_notebook_extra_and_the_test_kernel_are_declared():
    """``pip install -e .[notebook]`` gives JupyterLab and widgets; the dev extra alone executes the notebooks."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {k: {r.split(">")[0].split("=")[0].split("[")[0].strip().lower() for r in v} for k, v in extras.items()}
    assert {"jupyterlab", "ipywidgets", "ipykernel"} <= names["notebook"]
    assert {"nbclient", "nbformat", "ipykernel"} <= names["dev"]
