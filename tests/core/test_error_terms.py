"""Errors name options in the caller's vocabulary: a keyword argument from Python, a flag from the
shell. One mechanism does it: a message names an option by its config field through ``opt``/``opt_name``
(thinklens/errors.py) and the CLI, which runs every command inside ``cli_terms``, turns the field into its flag.
So no error message in the library may spell a flag itself; a shell command quoted in backticks
(`` `thinklens run zoo-train --model X` ``) is a command to run, not an option to pass, and may."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from thinklens.errors import ThinklensError, cli_terms

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("thinklens", "probes", "steering", "latent", "analyses")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+")
COMMAND = re.compile(r"`[^`]*`|thinklens (run|runs|info)\b.*")  # a quoted shell command, or one that ends the message


def _message_texts(call: ast.Call):
    """``(line, text)`` of every string literal in an error's construction; an f-string is one text with ``{}`` for its
    values (the values are checked on their own: ``opt(...)`` there is the rule, a literal flag is not)."""
    parts = {id(v) for node in ast.walk(call) if isinstance(node, ast.JoinedStr) for v in node.values}
    for node in ast.walk(call):
        if id(node) in parts:
            continue
        if isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def _flags_in_error_messages() -> list[str]:
    found = []
    for package in LIBRARY:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "cli.py":  # the shell's own front: argparse's messages are flags by nature
                continue
            for call in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(call, ast.Call) and "Error" in ast.unparse(call.func):
                    for line, text in _message_texts(call):
                        flags = FLAG.findall(COMMAND.sub("", text))
                        if flags:
                            found.append(f"{path.relative_to(ROOT)}:{line}: {', '.join(flags)}")
    return sorted(set(found))


def test_the_scan_sees_a_hard_coded_flag_and_passes_opt_and_quoted_commands():
    """The oracle for the scan itself: hand-written sources, flagged or not."""
    src = '''
raise ThinklensError.of("x", 1, "y", "add problems (--n-calibration) or pass --skip-vacuous")
raise ThinklensError.of("x", 1, "y", f"pass {opt('n_train', 3)} or {opt_name('data')}")
raise ThinklensError.of("x", 1, "y", f"train it: `thinklens run zoo-train --model {name}`")
raise ThinklensError.of("x", 1, "y", f"e.g. --data-fields {field}=<field>")
'''
    texts = [t for call in ast.walk(ast.parse(src)) if isinstance(call, ast.Call) and "Error" in ast.unparse(call.func)
             for _, t in _message_texts(call)]
    assert [FLAG.findall(COMMAND.sub("", t)) for t in texts if FLAG.findall(COMMAND.sub("", t))] == [
        ["--n-calibration", "--skip-vacuous"], ["--data-fields"]]


def test_no_library_error_spells_a_flag():
    """There were once 20 such sites (problemsets near 363, LYNX near 91, probes/config.py near 91, ...)."""
    assert _flags_in_error_messages() == []


def _both(fn) -> tuple[str, str]:
    """The message of ``fn()``'s error from Python and under the CLI's terms."""
    with pytest.raises(ThinklensError) as py:
        fn()
    with pytest.raises(ThinklensError) as cli, cli_terms():
        fn()
    return str(py.value), str(cli.value)


def test_a_missing_field_of_a_data_file_names_data_fields_in_both_terms():
    from thinklens.data.problemsets import problems_from_rows

    py, cli = _both(lambda: problems_from_rows([{"prompt_text": "2+2?", "target": "4"}], "mine.jsonl"))
    assert py.endswith("fix: map it, e.g. data_fields='question=<field>'") and "--" not in py
    assert cli.endswith("fix: map it, e.g. --data-fields question=<field>") and "data_fields" not in cli


def test_lynx_calibration_size_names_n_calibration_and_skip_vacuous_in_both_terms():
    from thinklens.probes.config import LynxJobConfig

    py, cli = _both(lambda: LynxJobConfig(n_calibration=2, max_events_calibration=2))
    assert "(n_calibration; a rollout" in py and py.endswith("or pass skip_vacuous=True") and "--" not in py
    assert "(--n-calibration; a rollout" in cli and cli.endswith("or pass --skip-vacuous") and "_" not in cli.split("fix:")[1]


def test_lynx_calibration_class_size_names_its_options_in_both_terms():
    from thinklens.probes.conformal import MondrianCalibrator
    from thinklens.probes.jobs.lynx import LynxJobConfig, usable_deltas

    cal = MondrianCalibrator.fit(np.r_[np.full(12, 0.9), np.full(30, 0.2)], np.r_[np.ones(12), np.zeros(30)])
    py, cli = _both(lambda: usable_deltas(LynxJobConfig(deltas=(0.05, 0.1)), cal))
    assert "add calibration problems (n_calibration)" in py and py.endswith("pass skip_vacuous=True to drop it")
    assert "add calibration problems (--n-calibration)" in cli and cli.endswith("pass --skip-vacuous to drop it")
    assert "--" not in py and "_" not in cli.split("fix:")[1]


@pytest.mark.parametrize("job", ["codi", "coconut", "latent-sft"])
def test_the_latent_trainers_help_cites_docs_results_for_numbers(job):
    """Their numbers live in docs/results.md "Latent reasoning" (the README is a front page, STYLE.md 20)."""
    from thinklens.latent.config import CoconutConfig, CODIConfig, LatentSFTConfig
    from thinklens.runs.configcli import field_docs

    config = {"codi": CODIConfig, "coconut": CoconutConfig, "latent-sft": LatentSFTConfig}[job]
    docs = " ".join(field_docs(config).values())
    assert 'docs/results.md "Latent reasoning"' in docs and "README" not in docs
    assert re.search(r"^## Latent reasoning$", (ROOT / "docs" / "results.md").read_text(), re.M)
