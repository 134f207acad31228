"""A renamed option given under both its names is refused (exit 2, one error line that says what was received, what
is expected and how to fix it), instead of argparse silently keeping whichever came last; the old name alone still
parses (tests/core/test_option_names.py)."""

from __future__ import annotations

import subprocess
import sys
import types
import typing
from pathlib import Path

import pytest

from thinklens.cli import build_parser, main
from thinklens.runs.configcli import GIVEN_AS, renamed_fields
from thinklens.runs.jobs import all_jobs

ROOT = Path(__file__).resolve().parents[2]


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _error_line(err: str) -> str:
    """The error line: the last of stderr (a deprecation notice printed by an old flag given first precedes it)."""
    lines = err.strip().splitlines()
    assert lines and "Traceback" not in err, err
    assert all(line.startswith("thinklens: --") and "is deprecated" in line for line in lines[:-1]), err
    return lines[-1]


@pytest.mark.parametrize("old_first", [True, False], ids=["old-first", "new-first"])
@pytest.mark.parametrize("job,old,new,a,b", [
    ("zoo-eval", "n", "n_eval", "5", "7"),
    ("zoo-eval", "steps", "step_counts", "2,3", "4"),
    ("grpo", "style", "prompt_format", "cot", "think"),
    ("codi", "steps", "train_steps", "40", "50"),
    ("lynx", "layers", "sites", "9,16", "3"),
])
def test_an_option_under_its_old_and_new_name_exits_2_and_says_how_to_fix_it(capsys, old_first, job, old, new, a, b):
    pair = [_flag(old), a, _flag(new), b] if old_first else [_flag(new), b, _flag(old), a]
    with pytest.raises(SystemExit) as e:
        main(["run", job, *pair, "--no-progress"])
    assert e.value.code == 2
    line = _error_line(capsys.readouterr().err)
    first, second = (f"{_flag(old)} {a}", f"{_flag(new)} {b}") if old_first else (f"{_flag(new)} {b}", f"{_flag(old)} {a}")
    assert line.startswith(f"error: thinklens run {job}: bad {_flag(new)}: received {first} and {second}"), line
    assert f"({_flag(old)} is its former name, deprecated)" in line and f"expected {_flag(new)} once" in line
    assert f"fix: pass one of {_flag(new)} " in line and "not both names" in line


def test_the_same_value_under_both_names_is_refused_too_and_the_fix_drops_the_old_name(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "zoo-eval", "--n", "5", "--n-eval", "5"])
    assert e.value.code == 2
    assert _error_line(capsys.readouterr().err).endswith("fix: drop --n (see `thinklens run zoo-eval --help`)")


def test_the_cli_process_exits_2_with_no_traceback():
    res = subprocess.run([sys.executable, "-m", "thinklens", "run", "zoo-eval", "--n-eval", "7", "--n", "5"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stdout == ""
    assert _error_line(res.stderr) == (
        "error: thinklens run zoo-eval: bad --n-eval: received --n-eval 7 and --n 5 (--n is its former name, deprecated); "
        "expected --n-eval once; fix: pass one of --n-eval 7 or --n-eval 5, not both names "
        "(see `thinklens run zoo-eval --help`)")


def test_each_name_alone_still_parses_and_a_repeated_flag_is_argparses():
    parser = build_parser(["zoo-eval"])
    assert parser.parse_args(["run", "zoo-eval", "--n-eval", "7"]).n_eval == 7
    assert parser.parse_args(["run", "zoo-eval", "--n-eval", "7", "--n-eval", "8"]).n_eval == 8  # as every option
    args = parser.parse_args(["run", "zoo-eval", "--n", "5", "--seed", "3"])
    assert args.n_eval == 5 and not hasattr(args, "n") and getattr(args, GIVEN_AS) == {"n_eval": ("--n", 5)}


def _sample(tp) -> str:
    """A value of an option's type that parses (the checks run later, in the config)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    if typing.get_origin(tp) is tuple:
        return ",".join([_sample(typing.get_args(tp)[0])] * 2)
    if typing.get_origin(tp) is typing.Literal:
        return str(typing.get_args(tp)[0])
    return {int: "3", float: "0.5", str: "cot"}[tp]


@pytest.mark.parametrize("job", [j for j in all_jobs() if renamed_fields(j.config)], ids=lambda j: j.name)
def test_every_renamed_option_of_every_job_refuses_both_names(capsys, job):
    parser = build_parser([job.name])
    hints = typing.get_type_hints(job.config)
    for old, new in renamed_fields(job.config).items():
        value = _sample(hints[new])
        with pytest.raises(SystemExit) as e:
            parser.parse_args(["run", job.name, _flag(old), value, _flag(new), value])
        assert e.value.code == 2, (job.name, old)
        assert f"fix: drop {_flag(old)}" in _error_line(capsys.readouterr().err), (job.name, old)
