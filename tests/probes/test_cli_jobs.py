"""``thinklens run lynx`` / ``thinklens run probe``: runs, resumes, and bad input exits 2 with one line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from zoo_fixtures import reasoner, zooish  # noqa: F401 - fixtures

from probes.estimators import LinearProbe
from probes.io import save_probe
from thinklens.cli import build_parser, main


def _one_line_error(capsys, argv: list[str], needle: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: ")


def test_jobs_are_mounted_with_config_options():
    args = build_parser().parse_args(["run", "lynx", "--model", "tiny-think", "--cue-words", "hmm,wait",
                                      "--deltas", "0.05,0.1", "--skip-vacuous", "--max-events-test", "none"])
    assert (args.cue_words, args.deltas, args.skip_vacuous, args.max_events_test) == (("hmm", "wait"), (0.05, 0.1),
                                                                                      True, None)
    args = build_parser().parse_args(["run", "probe", "--sites", "embed,resid_post.*", "--target", "correct"])
    assert args.sites == ("embed", "resid_post.*") and args.target == "correct"


@pytest.mark.parametrize("extra,needle", [
    (["--deltas", "0.05,1.2"], "bad delta: received 1.2"),
    (["--deltas", "0"], "bad delta: received 0.0"),
    (["--n-calibration", "5", "--max-events-calibration", "2"], "at least 99 events of each class"),
    (["--cue-words", "wa/it"], "bad cue word"),
])
def test_lynx_config_errors_before_any_work(capsys, tmp_path, extra, needle):
    _one_line_error(capsys, ["run", "lynx", "--model", "tiny-think", "--runs", str(tmp_path), *extra], needle)
    assert not (tmp_path / "lynx").exists()  # nothing was created


def test_argparse_errors_are_one_line(capsys):
    res = subprocess.run([sys.executable, "-m", "thinklens.cli", "run", "lynx", "--n-train", "many"],
                         capture_output=True, text=True, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert "expected int, received 'many'" in res.stderr
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "probe", "--target", "values"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "invalid choice" in err and len(err.strip().splitlines()) == 1


def test_model_side_errors_exit_2(capsys, zooish, tmp_path):
    base = ["run", "lynx", "--model", zooish.name, "--runs", str(tmp_path), "--no-progress", "--n-train", "4",
            "--n-calibration", "4", "--n-test", "4", "--max-steps", "1", "--max-new-tokens", "10", "--skip-vacuous"]
    _one_line_error(capsys, [*base, "--cue-words", "hmm,alternatively"], "bad cue word: received 'alternatively'")
    _one_line_error(capsys, [*base, "--cue-words", "Tom has 7", "--run-id", "nocue"], "bad cue events")
    probe_dir = tmp_path / "probe"
    X = np.random.default_rng(0).normal(size=(20, zooish.d_model))
    save_probe(LinearProbe().fit(X, np.arange(20) % 2), probe_dir, site="resid_post.0")
    _one_line_error(capsys, [*base, "--probe", str(probe_dir), "--run-id", "p"], "bad probe site")
    _one_line_error(capsys, [*base, "--probe", str(tmp_path / "nothing"), "--run-id", "q"], "bad probe folder")


def test_probe_job_cli_runs_and_resumes(capsys, zooish, tmp_path):
    argv = ["run", "probe", "--model", zooish.name, "--n-problems", "12", "--folds", "2", "--max-steps", "1",
            "--runs", str(tmp_path), "--run-id", "r", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "r2: embed=" in out and "best site:" in out
    assert main(argv) == 0  # same config and id: the folder is reused
    _one_line_error(capsys, [*argv, "--n-problems", "13"], "bad run folder")  # same id, other config


def test_lynx_cli_on_the_zoo(capsys, reasoner, tmp_path):
    out_dir = tmp_path / "lynx" / "cli"
    argv = ["run", "lynx", "--model", reasoner.name, "--out", str(out_dir), "--no-progress", "--n-train", "30",
            "--n-calibration", "30", "--n-test", "30", "--max-steps", "2", "--hidden-layer-sizes", "16",
            "--deltas", "0.2,0.3", "--skip-vacuous", "--threads", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"run: {out_dir}" in out and "first_cue" in out and "P(S={1}|y=0)" in out
    assert (out_dir / "results" / "per_delta.json").is_file()
