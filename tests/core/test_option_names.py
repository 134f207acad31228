"""One name per option across jobs: the naming table below holds, for every registered job's options.

The meaning of an option is read from its help (its field docstring, the CLI help): a help that says "Optimizer
steps." names optimizer steps, whatever the field is called. So a job that names a meaning otherwise, or uses a
table name for another meaning, fails here; a retired name still parses as a hidden alias that prints one line."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shlex
import types
import typing
from pathlib import Path

import pytest

from thinklens.cli import build_parser
from thinklens.runs.configcli import field_docs, rename_deprecated, renamed_fields
from thinklens.runs.jobs import all_jobs, get_job

ROOT = Path(__file__).resolve().parents[2]

#: meaning -> (the one option name, a regex its help starts with). The help is the field docstring.
NAMES: dict[str, tuple[str, str]] = {
    "held-out problems evaluated (per step count, per mode, or the first n of --data)":
        ("n_eval", r"Held-out (zoo )?problems evaluated\b"),
    "optimizer steps of a trainer": ("train_steps", r"Optimizer steps(\.| \()"),
    "step counts of the synthetic problems evaluated": ("step_counts", r"Step counts\b"),
    "field mapping of a data file whose names differ": ("data_fields", r"Field mapping\b"),
}

#: meaning -> the one option name, where the help wording varies (checked by name and type only).
PLAIN: dict[str, str] = {
    "the format prompts are rendered in (chat template, plain, a zoo style)": "prompt_format",
    "problems drawn from --data or the synthetic task": "n_problems",
    "fewest steps of a synthetic problem": "min_steps",
    "most steps of a synthetic problem": "max_steps",
    "new tokens generated per completion": "max_new_tokens",
    "the prompt format of each model compared (model, then compare)": "prompt_formats",
    "the zoo style a synthetic problem's gold solution is rendered in": "gold_format",
    "the sites whose states a job reads (LYNX also takes hidden-state indices)": "sites",
}

#: retired names: each still parses (a hidden alias) in the jobs that used it, to the name of the table.
RETIRED: dict[str, dict[str, str]] = {
    "codi": {"steps": "train_steps", "eval_n": "n_eval"},
    "sft": {"steps": "train_steps", "eval_n": "n_eval"},
    "coconut": {"eval_n": "n_eval"},
    "latent-sft": {"eval_n": "n_eval"},
    "grpo": {"steps": "train_steps", "eval_per_steps": "n_eval", "style": "prompt_format"},
    "zoo-eval": {"n": "n_eval", "steps": "step_counts", "style": "prompt_format"},
    "zoo-train": {"eval_n": "n_eval"},
    "reasoning-vector": {"n_per_steps": "n_eval", "steps": "step_counts", "style": "prompt_format"},
    "latent-eval": {"n": "n_eval"},
    "latent-seek": {"n": "n_eval"},
    "import-traces": {"fields": "data_fields"},
    "mi-peaks": {"styles": "prompt_formats", "gold_style": "gold_format"},
    "lynx": {"layers": "sites"},
}

#: names no job may use as an option: each meant two things, or one thing under several names.
BANNED = {"n", "steps", "style", "styles", "gold_style", "fields", "eval_n", "n_per_steps", "eval_per_steps", "layers"}

JOBS = all_jobs()


def _base(tp) -> object:
    """An annotation without ``| None``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def test_the_table_gives_each_meaning_one_name_and_each_name_one_meaning():
    names = [n for n, _ in NAMES.values()] + list(PLAIN.values())
    assert len(names) == len(set(names))
    assert not set(names) & BANNED
    for job, renamed in RETIRED.items():
        assert set(renamed) <= BANNED and set(renamed.values()) <= set(names), job


@pytest.mark.parametrize("job", JOBS, ids=lambda j: j.name)
def test_each_option_of_a_meaning_has_its_tables_name(job):
    """Both ways: a help of a table meaning belongs to the table's name, and the table's name has that help."""
    docs = field_docs(job.config)
    for f in dataclasses.fields(job.config):
        help_text = docs.get(f.name, "")
        assert f.name not in BANNED, f"{job.name}: --{f.name.replace('_', '-')} is a retired name"
        for meaning, (name, pattern) in NAMES.items():
            if re.match(pattern, help_text):
                assert f.name == name, f"{job.name}: {f.name} means {meaning!r}, the table's name is {name}"
            if f.name == name:
                assert re.match(pattern, help_text), f"{job.name}: {f.name} does not say {meaning!r}: {help_text!r}"


@pytest.mark.parametrize("name", [n for n, _ in NAMES.values()] + list(PLAIN.values()))
def test_a_table_name_has_one_type_in_every_job(name):
    types_seen = {}
    for job in JOBS:
        hints = typing.get_type_hints(job.config)
        if name in hints and name in {f.name for f in dataclasses.fields(job.config)}:
            types_seen.setdefault(repr(_base(hints[name])), []).append(job.name)
    assert len(types_seen) <= 1, types_seen


def _visible_options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions if a.help != argparse.SUPPRESS for s in a.option_strings}


def test_no_job_shows_a_retired_flag_and_every_retired_flag_is_an_alias(capsys):
    parser = build_parser()
    job_parsers = parser.job_parsers  # type: ignore[attr-defined]
    banned = {"--" + b.replace("_", "-") for b in BANNED}
    for name, sub in job_parsers.items():
        assert not _visible_options(sub) & banned, name
        assert renamed_fields(get_job(name).config) == RETIRED.get(name, {}), name


@pytest.mark.parametrize("job,old,new,value,parsed", [
    ("zoo-eval", "n", "n_eval", "7", 7),
    ("zoo-eval", "steps", "step_counts", "2,3", (2, 3)),
    ("codi", "steps", "train_steps", "40", 40),
    ("grpo", "eval_per_steps", "n_eval", "0", 0),
    ("reasoning-vector", "n_per_steps", "n_eval", "3", 3),
    ("import-traces", "fields", "data_fields", "completion=output", "completion=output"),
    ("latent-eval", "n", "n_eval", "12", 12),
    ("lynx", "layers", "sites", "9,16", ("9", "16")),
])
def test_an_old_flag_still_parses_and_prints_one_line_naming_the_new_one(capsys, job, old, new, value, parsed):
    args = build_parser([job]).parse_args(["run", job, f"--{old.replace('_', '-')}", value])
    assert getattr(args, new) == parsed and not hasattr(args, old)
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"thinklens: --{old.replace('_', '-')} is deprecated; use --{new.replace('_', '-')}"]
    new_args = build_parser([job]).parse_args(["run", job, f"--{new.replace('_', '-')}", value])
    assert getattr(new_args, new) == parsed and capsys.readouterr().err == ""


def test_old_keywords_and_config_files_still_read(capsys, tmp_path):
    from thinklens.runs.jobs import config_from_dict

    zoo_eval = get_job("zoo-eval")
    assert zoo_eval.make_config(n=5, steps=(2,)).n_eval == 5
    assert capsys.readouterr().err.splitlines() == ["thinklens: n= is deprecated; use n_eval=",
                                                    "thinklens: steps= is deprecated; use step_counts="]
    codi = get_job("codi")
    assert config_from_dict(codi.config, {"steps": 3, "eval_n": 0}) == {"train_steps": 3, "n_eval": 0}
    with pytest.raises(Exception, match="drop steps"):
        rename_deprecated(codi.config, {"steps": 3, "train_steps": 4})


def _commands() -> list[tuple[str, str, list[str]]]:
    """``(file, job, argv)`` of every ``thinklens run JOB ...`` in a results file's ``command``."""
    out = []
    for path in sorted((ROOT / "results").glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError:
            continue
        command = data.get("command") if isinstance(data, dict) else None
        if not isinstance(command, str):
            continue
        for part in re.split(r";|&&|\|\||\n", command):
            m = re.search(r"thinklens run ([a-z0-9-]+)(.*)", part)
            if m:
                try:
                    out.append((path.name, m.group(1), shlex.split(m.group(2).split("(")[0])))
                except ValueError:
                    continue
    return out


def test_results_commands_use_known_options_only():
    """Every flag of a committed results command is an option of its job (a retired name through its alias)."""
    commands = _commands()
    assert len(commands) >= 10
    parser = build_parser()
    for file, job, argv in commands:
        sub = parser.job_parsers[job]  # type: ignore[attr-defined]
        known = {s for a in sub._actions for s in a.option_strings}
        flags = [a.split("=")[0] for a in argv if a.startswith("--")]
        assert set(flags) <= known, (file, job, sorted(set(flags) - known))
