"""Tests of the shared answer parser and the GSM8k loaders, on crafted strings."""

from __future__ import annotations

import json

import pytest

from thinklens.answers import extract_cot, load_gsm8k_jsonl, parse_answer, parse_equations
from thinklens.errors import ThinklensError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("#### 42", 42),
        ("<< 7 + 5 = 12 >> << 12 * 3 = 36 >> #### 36", 36),
        ("#### 3 then #### 4", 4),  # the last marker wins
        ("#### 3 and 5", 5),  # the last integer after it
        ("The answer is: 17", 17),
        ("The answer is: -7 apples", -7),
        ("\\boxed{128}", 128),
        ("so \\boxed{1,024} done", 1024),
        ("#### 1,000,000", 1000000),
        ("#### 12.0", 12),
        ("#### 2.5", None),  # not an integer: no silent truncation
        ("the result is 12", None),  # no marker
        ("", None),
        ("#### ", None),
        ("#### 5 The answer is: 6", 6),
        ("The answer is: 6 #### 5", 5),
        ("\\boxed{3} #### 4 \\boxed{9}", 9),
        ("<think> hmm << 1 + 1 = 3 >> wait << 1 + 1 = 2 >> </think> so #### 2", 2),
    ],
)
def test_parse_answer(text, expected):
    assert parse_answer(text) == expected


def test_parse_equations_compact_and_spaced():
    eqs = parse_equations("<<7+5=12>> << 12 * 3 = 35 >> <<48/2=24>> <<7/2=3>> <<x+1=2>>")
    assert [e.lhs for e in eqs] == ["7+5", "12*3", "48/2", "7/2", "x+1"]
    assert [e.claimed for e in eqs] == [12, 35, 24, 3, 2]
    assert [e.correct for e in eqs] == [True, False, True, False, False]


def test_extract_cot_from_gsm8k_solution():
    sol = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips.\n#### 72"
    assert extract_cot(sol) == "<<48/2=24>> <<48+24=72>>"
    assert extract_cot("no equations") == ""


def _write(tmp_path, rows):
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_load_gsm8k_jsonl_all_formats(tmp_path):
    path = _write(
        tmp_path,
        [
            {"question": "Q1", "answer": "It is <<2*3=6>>6.\n#### 6"},
            {"question": "Q2", "cot": "<<1+1=2>> <<2+3=5>>", "answer": "5"},  # GSM8k-Aug
            {"question": "Q3", "answer": "so \\boxed{12}"},
            {"question": "Q4", "answer": 7},
            "",  # blank lines are skipped
        ],
    )
    recs = load_gsm8k_jsonl(path)
    assert [r.answer for r in recs] == [6, 5, 12, 7]
    assert [r.cot for r in recs] == ["<<2*3=6>>", "<<1+1=2>> <<2+3=5>>", "", ""]
    assert recs[0].solution.endswith("#### 6") and recs[0].question == "Q1"


@pytest.mark.parametrize(
    "bad",
    [
        "{not json",
        json.dumps({"answer": "#### 1"}),
        json.dumps({"question": "Q", "answer": "no number here"}),
        json.dumps({"question": "Q", "answer": "#### 1", "cot": 5}),
        json.dumps(["question", "answer"]),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, bad):
    path = _write(tmp_path, [{"question": "Q", "answer": "#### 1"}, bad])
    with pytest.raises(ThinklensError, match=rf"{path.name}:2"):
        load_gsm8k_jsonl(path)


def test_missing_file(tmp_path):
    with pytest.raises(ThinklensError, match="existing"):
        load_gsm8k_jsonl(tmp_path / "nope.jsonl")
