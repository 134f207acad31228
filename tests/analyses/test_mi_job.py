"""The mi-peaks job end to end on a tiny random model, through the CLI (run folder, resume, errors)."""

from __future__ import annotations

import json

import pytest

from analyses.mi.job import MIPeaksJobConfig
from thinklens.cli import main
from thinklens.errors import ThinklensError


def test_cli_job_writes_a_run_folder_and_resumes(tiny_dirs, tmp_path, capsys) -> None:
    out = tmp_path / "runs" / "mi-peaks" / "t1"
    argv = ["run", "mi-peaks", "--model", str(tiny_dirs["llama"]), "--n-problems", "3", "--max-new-tokens", "6",
            "--k", "2", "--ci", "wilson", "--suppression", "--recycling", "--ttts", "--ttts-budgets", "0,2",
            "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"run: {out}" in printed and "problems: 3" in printed
    traj = json.loads((out / "results" / "trajectories.json").read_text())
    rows = traj["rows"]
    assert len(rows) == 3 and traj["site"] == "resid_post.1"
    for r in rows:
        n = len(r["tokens"])
        assert len(r["mi"]["resid_post.1"]) == n == len(r["shuffled"])
        assert set(r["variants"]) == {"reference", "median_sigma", "l2"}
        assert r["variants"]["reference"] == pytest.approx(r["mi"]["resid_post.1"])
        assert len(r["peaks"]) == min(2, n)
    figures = {p.stem for p in (out / "figures").glob("*.json")}
    assert {"mi_curve_0", "mi_by_site", "mi_vs_shuffled", "enrichment", "ttts"} <= figures
    # the tiny word tokenizer has no alphabetic tokens: suppression and RR say why they were skipped
    sup = json.loads((out / "results" / "suppression.json").read_text())
    assert "skipped" in sup
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "done"
    # same command again: every stage is already done, nothing is recomputed
    before = (out / "results" / "trajectories.json").stat().st_mtime_ns
    assert main(argv) == 0
    assert (out / "results" / "trajectories.json").stat().st_mtime_ns == before


def test_cli_bad_input_exits_2(tmp_path, capsys) -> None:
    assert main(["run", "mi-peaks", "--estimators", "refrence", "--out", str(tmp_path / "x" / "y")]) == 2
    assert "estimators" in capsys.readouterr().err


def test_config_validation() -> None:
    with pytest.raises(ThinklensError, match="peak rule"):
        MIPeaksJobConfig(peak_rule="mad")
    with pytest.raises(ThinklensError, match="n_problems"):
        MIPeaksJobConfig(n_problems=1)
