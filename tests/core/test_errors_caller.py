"""Messages in the caller's terms: a fix names the CLI flag under the CLI (``--allow-overlap``) and the keyword from
Python (``allow_overlap=True``). The same errors raised through ``thinklens run`` (exit 2, one line, no traceback) and
through ``run_job``."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from thinklens.cli import main
from thinklens.errors import ThinklensError, cli_terms, in_cli, opt, opt_name
from thinklens.runs import job_registry
from thinklens.runs.jobs import Job, run_job


def test_opt_against_a_hand_written_table():
    cases = [  # (name, value, from Python, under the CLI)
        ("allow_overlap", True, "allow_overlap=True", "--allow-overlap"),
        ("skip_vacuous", False, "skip_vacuous=False", "--no-skip-vacuous"),
        ("prompt_format", "plain", "prompt_format='plain'", "--prompt-format plain"),
        ("steps", (1, 2, 3), "steps=(1, 2, 3)", "--steps 1,2,3"),
        ("alphas", (-1, 0, 0.5), "alphas=(-1, 0, 0.5)", "--alphas=-1,0,0.5"),  # argparse reads a leading '-' whole only after '='
        ("lr", 0.001, "lr=0.001", "--lr 0.001"),
        ("max_new_tokens", None, "max_new_tokens=None", "--max-new-tokens none"),
    ]
    assert [opt(n, v) for n, v, _, _ in cases] == [py for _, _, py, _ in cases]
    assert opt("run_id") == "run_id=" and opt_name("run_id") == "run_id" and not in_cli()
    with cli_terms():
        assert in_cli()
        assert [opt(n, v) for n, v, _, _ in cases] == [cli for _, _, _, cli in cases]
        assert opt("run_id") == "--run-id" and opt_name("run_id") == "--run-id"
    assert not in_cli()


def test_cli_terms_end_with_their_block_even_on_an_error():
    with pytest.raises(ThinklensError), cli_terms():
        raise ThinklensError(opt("n"))
    assert opt("n") == "n="


def test_a_library_check_names_the_keyword_or_the_flag():
    from thinklens.data.problemsets import ProblemSet, check_disjoint, load_problems

    a = load_problems("synthetic:2-2:3")
    sets = {"train": a, "test": ProblemSet("copy", tuple(a))}
    with pytest.raises(ThinklensError, match=r"pass allow_overlap=True to allow it") as py:
        check_disjoint(sets)
    with pytest.raises(ThinklensError, match=r"pass --allow-overlap to allow it") as cli, cli_terms():
        check_disjoint(sets)
    assert "allow_overlap" not in str(cli.value) and "--allow-overlap" not in str(py.value)


# ---------------------------------------------------------------- through the CLI and through run_job


@dataclass(frozen=True)
class CountConfig:
    model: str = ""
    """Unused."""
    seed: int = 0
    """Unused."""
    n: int = 3
    """How many to count (>= 1)."""

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ThinklensError.of(opt_name("n"), self.n, "an integer >= 1", f"pass {opt('n', 3)}")


def _count(config, ctx):
    ctx.run.write_result("count", {"n": config.n})
    return {"n": config.n}


@pytest.fixture
def count_job(monkeypatch):
    job = Job("count-to", CountConfig, _count, help="count to n", models=())
    monkeypatch.setitem(job_registry._entry_points(), "count-to", job)
    monkeypatch.setattr(job_registry, "_JOBS", dict(job_registry._JOBS or {}))
    return job


def _cli(capsys, *argv) -> tuple[int, str]:
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse errors
        code = int(e.code or 0)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == (1 if code else 0) and "Traceback" not in err, err
    return code, err


def test_a_config_check_through_the_cli_and_through_python(count_job, tmp_path, capsys):
    code, err = _cli(capsys, "run", "count-to", "--n", "0", "--runs", str(tmp_path))
    assert code == 2 and "bad --n: received 0" in err and "fix: pass --n 3" in err and "n=" not in err
    with pytest.raises(ThinklensError) as e:
        run_job("count-to", n=0, runs=tmp_path)
    assert "bad n: received 0" in str(e.value) and str(e.value).endswith("fix: pass n=3") and "--n" not in str(e.value)


def test_a_runner_option_through_the_cli_and_through_python(count_job, tmp_path, capsys):
    code, err = _cli(capsys, "run", "count-to", "--threads", "0", "--runs", str(tmp_path))
    assert code == 2 and "fix: pass --threads 1" in err
    with pytest.raises(ThinklensError, match=r"bad threads: received 0; .*fix: pass threads=1$"):
        run_job("count-to", threads=0, runs=tmp_path)


def test_a_reused_run_id_names_the_differing_keys_and_the_fix_in_the_callers_terms(count_job, tmp_path, capsys):
    assert main(["run", "count-to", "--n", "2", "--runs", str(tmp_path), "--run-id", "r", "--no-progress"]) == 0
    own = tmp_path / "count-to" / "r" / "config.json"
    code, err = _cli(capsys, "run", "count-to", "--n", "3", "--runs", str(tmp_path), "--run-id", "r")
    assert code == 2 and "its config differs in n (2 -> 3) (old -> new)" in err
    assert f"pass a new --run-id for this config, or resume with the run's own config (--config {own})" in err
    with pytest.raises(ThinklensError) as e:
        run_job("count-to", n=3, runs=tmp_path, run_id="r", progress=False)
    assert "n (2 -> 3)" in str(e.value) and "pass a new run_id= for this config" in str(e.value)
    assert f"config_file='{own}'" in str(e.value) and "--" not in str(e.value).split("fix:")[1]
    # the fix works: the run's own config resumes, a new id starts over
    assert main(["run", "count-to", "--config", str(own), "--runs", str(tmp_path), "--run-id", "r", "--no-progress"]) == 0
    assert run_job("count-to", n=3, runs=tmp_path, run_id="r3", progress=False)["n"] == 3


def test_an_unknown_option_points_to_the_jobs_help(count_job, tmp_path, capsys):
    code, err = _cli(capsys, "run", "count-to", "--nn", "3", "--runs", str(tmp_path))
    assert code == 2 and "unrecognized arguments: --nn 3" in err
    assert "did you mean '--n'?" in err and "see `thinklens run count-to --help`" in err
    with pytest.raises(ThinklensError) as e:
        run_job("count-to", nn=3, runs=tmp_path)
    assert re.search(r"bad option of job count-to: received 'nn'.*did you mean 'n'\? \(`thinklens run count-to --help`", str(e.value))


def test_a_real_jobs_check_in_both_terms(tmp_path, capsys):
    """The capture job's own batch-size check (before any model loads): flag form from the CLI, keyword from Python."""
    code, err = _cli(capsys, "run", "capture", "--model", "tiny-think", "--batch-size", "0", "--runs", str(tmp_path))
    assert code == 2 and "fix: pass --batch-size 16" in err
    with pytest.raises(ThinklensError, match=r"fix: pass batch_size=16$"):
        run_job("capture", model="tiny-think", batch_size=0, runs=tmp_path)
