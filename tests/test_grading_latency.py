"""Grading latency without a changed verdict.

The math-verify worker parses LaTeX with latex2sympy made faster (thinklens.data.equivalence.fast_parsing: ANTLR's
two-stage SLL/LL prediction, plain numbers without sympify, a parser warm-up). The oracle: the verdicts of every
math-verify test case recorded with latex2sympy as shipped (tests/fixtures/grading_verdicts.json, written by
``bench/grading.py --record`` in reference mode, with a limit no case reaches) equal today's, under each policy;
in the slow tier the parse of every answer string equals the reference parse, live. ``python -m bench.grading``
measures the latency."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import sympy

from thinklens.data.answers import _gold_answer, answers_equal, extract_answer, is_correct
from thinklens.data.equivalence import WARM_UP, plain_number

ROOT = Path(__file__).resolve().parents[1]
RECORD = json.loads((ROOT / "tests" / "fixtures" / "grading_verdicts.json").read_text(encoding="utf-8"))
CASES = json.loads((ROOT / "tests" / "fixtures" / "math_verify_cases.json").read_text(encoding="utf-8"))["cases"]
LIMIT = 120.0  # the record's limit: no comparison of the fixture reaches it, so load cannot turn a verdict


def test_the_record_covers_the_fixture_in_order():
    assert RECORD["n"] == len(CASES) == len(RECORD["cases"]) == 268
    assert [(r["gold"], r["pred"]) for r in RECORD["cases"]] == [(c["gold"], c["pred"]) for c in CASES]
    assert "THINKLENS_GRADING_PARSE=reference" in RECORD["about"]


def test_verdicts_equal_the_reference_record():
    got, want = [], []
    for r in RECORD["cases"]:
        pred, gold = r["pred"], r["gold"]
        got.append((is_correct(pred, gold, timeout=LIMIT), is_correct(pred, gold, boxes="last", timeout=LIMIT),
                    answers_equal(pred, gold, timeout=LIMIT) if pred.strip() else False))
        want.append((r["is_correct"], r["boxes_last"], r["bare"]))
    differ = [(r["gold"][:60], r["pred"][-60:], g, w) for r, g, w in zip(RECORD["cases"], got, want) if g != w]
    assert differ == []
    assert sum(w[0] for w in want) == 100  # the record is not all False (a dead worker would read so)


def test_the_warm_up_holds_no_answer_of_the_measured_cases():
    """The warm-up builds the parser's tables for common shapes; it must not pre-parse a fixture's own strings (the
    bench would then time cache hits)."""
    answers = set()
    for c in CASES:
        answers |= {c["gold"].strip(), _gold_answer(c["gold"]), c["pred"].strip(), extract_answer(c["pred"]) or ""}
    assert not set(WARM_UP) & answers
    assert len(WARM_UP) == len(set(WARM_UP)) >= 50


@pytest.mark.parametrize("text", ["0", "7", "0042", "1,024", "98765432109876543210", "3.5", "0.1", "12.50", "0.000",
                                  "3.14159265358979323846264338", "100.0", "1,234.5"])
def test_a_plain_number_is_what_sympify_makes_of_it(text):
    """Oracle: latex2sympy's own parse_number (sympy.Number of the digits, leading zeros dropped first)."""
    digits = text.replace(",", "")
    if digits.isdigit():
        digits = digits.lstrip("0") or "0"
    want, got = sympy.Number(digits), plain_number(text)
    assert type(got) is type(want) and sympy.srepr(got) == sympy.srepr(want)
    assert getattr(got, "_prec", None) == getattr(want, "_prec", None)


@pytest.mark.parametrize("text", ["5.", ".5", "1e5", "\u00b2", "3/4", "-2", ""])
def test_anything_else_is_left_to_latex2sympy(text):
    assert plain_number(text) is None


_PARSE_BOTH = r"""
import json, logging, sys
logging.getLogger("math_verify").setLevel(logging.CRITICAL)
import math_verify.parser as mp
from math_verify import parse
from sympy import srepr
from thinklens.data.equivalence import _wrap, fast_parsing
texts = json.loads(sys.stdin.read())
def run():
    for f in (mp.parse_latex_cached, mp.parse_expr_cached):
        f.cache_clear()
    return [[srepr(x) if not isinstance(x, str) else x for x in parse(_wrap(t), parsing_timeout=None)] for t in texts]
reference = run()
fast_parsing()
print(json.dumps({"reference": reference, "fast": run()}))
"""


@pytest.mark.slow  # every answer string parsed twice, once with latex2sympy as shipped (minutes on a busy machine)
def test_every_answer_parses_as_the_reference_parses():
    texts = sorted({t for c in CASES for t in (_gold_answer(c["gold"]), extract_answer(c["pred"]) or c["pred"].strip()) if t})
    out = subprocess.run([sys.executable, "-c", _PARSE_BOTH], input=json.dumps(texts), capture_output=True, text=True,
                         cwd=ROOT, check=True, timeout=3600)
    both = json.loads(out.stdout)
    differ = [(t, r, f) for t, r, f in zip(texts, both["reference"], both["fast"]) if r != f]
    assert len(texts) > 150 and differ == []
