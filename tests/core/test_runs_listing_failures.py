"""``thinklens runs`` shows a run that crashed as failed with its error (not "still running"), and a
reader that closes the pipe early (``thinklens runs | head -1``) ends it with exit 0 and no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import run_job
from thinklens.runs.listing import run_table


def test_a_run_that_crashed_is_listed_failed_with_its_error(tiny_models, tmp_path, monkeypatch):
    from thinklens.engine.model import HookedModel

    prompts = tmp_path / "p.txt"
    prompts.write_text("w1 w2\nw3\n")

    def boom(self, *a, **kw):
        raise RuntimeError("CUDA error: device-side assert triggered\nsecond line")

    monkeypatch.setattr(HookedModel, "capture", boom)
    with pytest.raises(RuntimeError, match="device-side assert"):  # the crash itself is not hidden
        run_job("capture", model=tiny_models["llama"], prompts=str(prompts), runs=tmp_path / "runs", run_id="c",
                progress=False)
    meta = RunFolder.open(tmp_path / "runs" / "capture" / "c").meta()
    assert meta["status"] == "failed" and meta["error"] == "RuntimeError: CUDA error: device-side assert triggered"
    rows = run_table(tmp_path / "runs")
    assert rows[1].split()[:3] == ["capture", "c", "failed"]
    assert rows[1].endswith("failed: RuntimeError: CUDA error: device-side assert triggered")


@pytest.mark.parametrize("argv", [["runs"], ["runs", "show", "demo/a"]])
def test_a_closed_pipe_ends_the_listing_quietly(tmp_path, argv):
    for i in range(3):
        RunFolder.create("demo", {"n": i}, root=tmp_path, run_id="abc"[i]).finish({"score": 1.0})
    err = tmp_path / "err.txt"
    with open(err, "w") as e:
        proc = subprocess.Popen([sys.executable, "-m", "thinklens", *argv, "--runs", str(tmp_path)],
                                stdout=subprocess.PIPE, stderr=e)
        proc.stdout.close()  # the reader is gone before the first line: every write meets a broken pipe
        code = proc.wait(timeout=120)
    assert code == 0 and err.read_text() == "", err.read_text()
