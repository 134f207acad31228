"""No job's ``--help`` states a measured number: a time, an accuracy or a speed-up of some past run belongs in a
README results block and the summary it is rendered from (results/*.json), where a rerun can update it; a help text
says where to find it instead. Defaults, bounds and units of configuration (``(default: 30.0)``, ``95% bounds``,
``90% variance``, ``seconds``) are allowed."""

from __future__ import annotations

import re

import pytest

from thinklens.cli import build_parser
from thinklens.runs.jobs import job_names

#: A number with a unit of time or a percentage, an ``Nx`` ratio, a ``±`` spread or a ``metric_name=value``.
MEASURED = re.compile(
    r"(?<![\w.\-])~?(?:\d+(?:\.\d+)?|\.\d+)\s?(?:(?:CPU |wall |GPU )?(?:secs?|seconds?|s|ms|mins?|minutes?|h|hours?)\b"
    r"|%|x\b)|±\s?\d|\+-\s?\d|\b[a-z][a-z0-9]*_[a-z0-9_]*=\d", re.I)
#: What may follow a percentage that configures something rather than reports it: a confidence level, a share of
#: variance to keep.
CONFIGURATION = re.compile(r"\s*(?:bounds?|intervals?|confidence|CI\b|variance|quantile|coverage)", re.I)


def measured_numbers(text: str) -> list[str]:
    """The measured-looking numbers of a help text, each with its surroundings."""
    flat = " ".join(text.split())
    out = []
    for m in MEASURED.finditer(flat):
        if m.group(0).endswith("%") and CONFIGURATION.match(flat, m.end()):
            continue
        if re.search(r"\(default: [^)]*$", flat[:m.end()]):
            continue
        out.append(flat[max(0, m.start() - 60):m.end() + 30])
    return out


def test_the_scan_finds_measurements_and_allows_configuration():
    assert measured_numbers("Optimizer steps (150 took 15 CPU minutes for tiny-grpo).") != []
    assert measured_numbers("Steps (12000: 88% on 3-4 steps, 94 min on one core).") != []
    assert len(measured_numbers("the reference's gain, about 10x larger; speed_up=3.1")) == 2
    assert measured_numbers("binomial 95% bounds; effective dimensionality (90% variance); time budget in "
                            "minutes (default: 30.0); a 1-8 step problem; lr 5e-4") == []


def test_no_job_help_holds_a_measured_number():
    parser_jobs = build_parser()._subparsers._group_actions[0].choices["run"]._subparsers._group_actions[0].choices
    found = {name: measured_numbers(parser_jobs[name].format_help()) for name in job_names()}
    found = {k: v for k, v in found.items() if v}
    assert not found, ("measured numbers in --help (move them to a README results block and name it): "
                       + "; ".join(f"{k}: {v}" for k, v in found.items()))


@pytest.mark.parametrize("text", ["(default: 0.5)", "--max-minutes FLOAT time budget (default: 30.0)"])
def test_defaults_are_not_measurements(text):
    assert measured_numbers(text) == []
