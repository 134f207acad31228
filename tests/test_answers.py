"""Tests of the shared answer parser and the GSM8k loaders, on crafted strings."""

from __future__ import annotations

import json

import pytest

from thinklens.data.answers import extract_cot, parse_answer, parse_equations
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


def test_gsm8k_files_in_every_answer_format_load_as_problems(tmp_path):
    from thinklens.data.problemsets import load_problems

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
    recs = list(load_problems(str(path)))
    assert [r.answer for r in recs] == ["6", "5", "12", "7"]
    assert [extract_cot(r.solution) for r in recs] == ["<<2*3=6>>", "<<1+1=2>> <<2+3=5>>", "", ""]
    assert recs[0].solution.endswith("#### 6") and recs[0].question == "Q1"


def test_malformed_gsm8k_line_names_file_and_line(tmp_path):
    from thinklens.data.problemsets import load_problems

    path = _write(tmp_path, [{"question": "Q", "answer": "#### 1"}, "{not json"])
    with pytest.raises(ThinklensError, match=rf"{path.name}:2"):
        load_problems(str(path))


# --- extraction and grading of real model outputs (MATH-500, GSM8K, AIME formats) ---------------------

import multiprocessing  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from thinklens.data.answers import answers_equal, extract_answer, is_correct  # noqa: E402
from thinklens.data.equivalence import math_equal  # noqa: E402

R1_END = "</think>\n\n"  # what a DeepSeek-R1-style output holds between its reasoning and its answer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"\boxed{42}. Wait, 3", "42"),  # never the last number
        (r"\boxed{\frac{3}{4}}", r"\frac{3}{4}"),  # nested braces
        (r"first \boxed{1}, then \boxed{2}", "2"),  # the last box
        (r"$\boxed{\{1, 2\}}$", r"\{1, 2\}"),  # escaped braces are literal
        (r"\boxed 5", "5"),
        (r"so \boxed 5.", "5"),
        (r"\fbox{7}", "7"),
        (r"\boxed{\boxed{9}}", "9"),
        (r"\boxed{12} and then \boxed{\frac{1}{", "12"),  # an unclosed (truncated) box does not count
        (r"\boxed{}", None),
        ("#### 1,450,000", "1,450,000"),
        ("<< 7 + 5 = 12 >> #### 12", "12"),
        ("The answer is: Evelyn.", "Evelyn"),
        ("The answer is 18.", "18"),
        ("I wonder whether the answer is right", None),  # no colon: only a number or math counts
        ("Final Answer: The final answer is $\\frac{1}{2}$. I hope it is correct.", r"\frac{1}{2}"),
        ("Final Answer: 7", "7"),
        ("#### $18.90", "18.90"),
        (r"The answer is \(x = 3\)", "x = 3"),
        ("the last number is 5", None),
        ("**Final Answer:** 42", "42"),  # markdown bold around the marker
        ("The final answer is **17**.", "17"),
        ("The answer is: -7 apples", "-7"),
        ("", None),
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "gold", "expected"),
    [
        # MATH-500 (LaTeX gold answers)
        (R1_END + r"The answer is $\boxed{\frac{14}{3}}$.", r"\frac{14}{3}", True),
        (r"\boxed{\dfrac{14}{3}}", r"\frac{14}{3}", True),
        (r"\boxed{14/3}", r"\frac{14}{3}", True),
        (r"\boxed{4.67}", r"\frac{14}{3}", False),
        (r"\boxed{\frac{3}{14}}", r"\frac{14}{3}", False),
        (r"\boxed{\left( 3, \frac{\pi}{2} \right)}", r"\left( 3, \frac{\pi}{2} \right)", True),
        (r"\boxed{(3,\pi/2)}", r"\left( 3, \frac{\pi}{2} \right)", True),
        (r"\boxed{(3, \pi)}", r"\left( 3, \frac{\pi}{2} \right)", False),
        (r"\boxed{\text{Evelyn}}", r"\text{Evelyn}", True),
        (r"\boxed{Evelyn}", r"\text{Evelyn}", True),
        (r"\boxed{\text{Bob}}", r"\text{Evelyn}", False),
        (r"\boxed{2\sqrt{5}}", r"2\sqrt{5}", True),
        (r"\boxed{\sqrt{20}}", r"2\sqrt{5}", True),
        (r"\boxed{\sqrt{5}}", r"2\sqrt{5}", False),
        (r"\boxed{\{2, 1\}}", r"\{1,2\}", True),
        (r"\boxed{[-2, 7)}", "[-2,7)", True),
        (r"\boxed{(-2, 7)}", "[-2,7)", False),  # open vs half-open interval
        (r"\boxed{10\text{ cm}}", "10", True),  # units
        (r"\boxed{25\%}", "25", True),  # percentages
        (r"\boxed{x=5}", "5", True),  # a leading x=
        (r"\boxed{90^\circ}", "90", True),
        (r"\boxed{10,\!000}", "10000", True),
        (r"\boxed{x(x+2)}", "x^2+2x", True),
        (r"\boxed{2i+3}", "3+2i", True),
        (r"\boxed{\frac{\sqrt{3}}{2}}", r"\frac{\sqrt3}{2}", True),
        (r"\boxed{-\frac{1}{2}}", r"-\frac12", True),
        (r"\boxed{\frac{1}{2}}", r"-\frac12", False),
        (r"\boxed{\text{(C)}}", r"\text{(C)}", True),
        (r"\boxed{D}", r"\text{(C)}", False),
        (r"\boxed{180}", r"\pi", False),
        (r"\boxed{\begin{pmatrix} 1 \\ 2 \end{pmatrix}}", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", True),
        ("Final Answer: The final answer is $\\frac{7}{2}$. I hope it is correct.", "3.5", True),
        # GSM8K (integer gold, "#### N", thousands separators)
        ("Natalia sold 48/2 = <<48/2=24>>24 clips.\n#### 72", "72", True),
        ("#### 1,450,000", "1450000", True),
        ("#### 1450000", "1,450,000", True),
        ("The answer is 18.", "Janet sells 16 - 3 - 4 = 9 eggs ... #### 18", True),  # a full solution as gold
        ("#### 17", 18, False),
        (r"\boxed{\$18.90}", "18.90", True),
        (r"\boxed{42}. Wait, 3", 42, True),
        (r"\boxed{42}. Wait, 3", 3, False),
        ("So she has 5 apples left.", 5, False),  # no box and no marker: not graded by the last number
        (r"\boxed{12.0}", 12, True),
        # AIME (integers 0-999)
        (R1_END + r"**Final Answer**\n\boxed{033}", "33", True),
        (R1_END + r"\boxed{204}", "204", True),
        (R1_END + r"\boxed{240}", "204", False),
        (r"\boxed{2^{10}}", "1024", True),
        ("<think>\nHmm, maybe \\boxed{5}... Wait, no.\n</think>\n\n\\boxed{6}", 6, True),
        ("<think>\nHmm, maybe \\boxed{5}... Wait, no.\n</think>\n\n\\boxed{6}", 5, False),
    ],
)
def test_is_correct_on_real_output_formats(text, gold, expected):
    assert is_correct(text, gold, timeout=10.0) is expected


def test_answers_equal_and_math_equal_agree_on_extracted_answers():
    assert answers_equal("1,024", 1024) and answers_equal(r"\tfrac{1}{2}", "0.5")
    assert math_equal(r"\frac{1}{2}", "0.5") and not math_equal("1", "2")
    assert not answers_equal("", "5") and not math_equal("", "5")


@pytest.mark.parametrize("bad", [None, 3, b"#### 3"])
def test_is_correct_needs_text(bad):
    with pytest.raises((ThinklensError, TypeError)):  # under pytest the runtime type checker answers first
        is_correct(bad, "3")


def test_is_correct_rejects_bad_gold_and_timeout():
    with pytest.raises((ThinklensError, TypeError)):
        is_correct(r"\boxed{3}", None)
    with pytest.raises(ThinklensError, match="timeout"):
        is_correct(r"\boxed{x}", "y", timeout=0)


PATHOLOGICAL = r"\boxed{9^{9^{9^{9}}}}"  # SymPy runs for minutes on this


def test_pathological_answer_times_out_within_the_limit():
    assert is_correct(r"\boxed{\frac{2}{6}}", "1/3")  # the worker is started (start-up is not part of a limit)
    start = time.perf_counter()
    assert is_correct(PATHOLOGICAL, "7", timeout=1.0) is False
    assert time.perf_counter() - start < 3.0
    assert is_correct(r"\boxed{\sqrt{8}}", r"2\sqrt{2}")  # a fresh worker after the kill


def test_time_limit_works_outside_the_main_thread():
    results: list = []

    def grade():
        start = time.perf_counter()
        results.append((is_correct(PATHOLOGICAL.replace("9}", "8}"), "7", timeout=1.0), time.perf_counter() - start))
        results.append(is_correct(r"\boxed{\frac{6}{8}}", "0.75"))

    thread = threading.Thread(target=grade)
    thread.start()
    thread.join(60)
    assert results[0][0] is False and results[0][1] < 15.0 and results[1] is True


def _grade_in_pool(args):
    text, gold = args
    return is_correct(text, gold, timeout=2.0)


def test_grading_works_in_daemonic_pool_workers():
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        job = pool.map_async(_grade_in_pool, [(r"\boxed{\frac{6}{8}}", "3/4"), (r"\boxed{\frac{6}{8}}", "1/2")])
        assert job.get(timeout=120) == [True, False]  # a worker that dies at start is respawned forever: fail, not hang


def test_is_correct_agrees_with_parse_answer_on_zoo_renderings():
    from thinklens.tasks import STYLES, render_target, spaced
    from thinklens.tasks.protocol import problems_by_steps

    for p in problems_by_steps(5, 1, 4, seed=3):
        for style in STYLES:
            for text in (render_target(p, style), spaced(render_target(p, style))):
                assert parse_answer(text) == p.answer and is_correct(text, p.answer)
                assert not is_correct(text, p.answer + 1)


# --- several boxes, pairs, sentences after "Final Answer:", decimal commas, units --------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"\boxed{-2} and \boxed{1}", "-2, 1"),  # a connector: one answer, a list
        (r"$\boxed{1}\boxed{2}$", "1, 2"),
        (r"\boxed{1} papers and \boxed{2} bins", "1, 2"),
        (r"\[ \boxed{-2} \quad \text{and} \quad \boxed{1}. \]", "-2, 1"),
        (r"\boxed{(1, 2)}, \boxed{(2, 1)}", "(1, 2), (2, 1)"),
        (r"\boxed{1} no no no no no \boxed{2}", "2"),  # no connector: the last box
        (r"\boxed{1}. Then \boxed{2}", "2"),  # a new sentence
        ("maybe \\boxed{5}, or... Wait, no.\n</think>\n\n\\boxed{6}", "6"),  # a revision and the end of thinking
        (r"\boxed{5} and \boxed{5}", "5"),  # a repeated box counts once
        (r"\boxed{32, 349}", "32, 349"),
        ("Final Answer: The largest $n$ is 34.", "34"),
        ("Final Answer: The volume of $ABCDEFGH$ is 120. I hope it is correct.", "120"),
        ("Final Answer: Jane started growing Sphere 3 hours ago. I hope it is correct.", "3"),
        (r"$= \boxed{200}$ ... Final Answer: The final answer is $10,455$. I hope it is correct.", "10,455"),  # later marker
        ("\\boxed{7}\n\nFinal Answer: I hope it is correct", "7"),  # words after a marker never beat a box
        (r"The answer is $\boxed{9}$", "9"),  # a marker before its own box
        ("The answer is: 2,74", "2,74"),
        ("Final Answer: 2x+3", "2x+3"),  # a number glued to more is an expression, not the number
        ("The answer is 2 + 3 = 5", None),
        (r"The answer is 3\sqrt{2}", None),
        ("The answer is 12\\% of them", "12"),
    ],
)
def test_extract_answer_issue_26(text, expected):
    assert extract_answer(text) == expected


def test_boxes_last_keeps_the_old_policy_and_a_bad_policy_is_refused():
    assert extract_answer(r"\boxed{-2} and \boxed{1}", boxes="last") == "1"
    assert is_correct(r"\boxed{5} and \boxed{1}", 1, boxes="last") is True  # why "group" is the default
    with pytest.raises((ThinklensError, TypeError), match="boxes"):  # the runtime type checker may answer first
        extract_answer(r"\boxed{1}", boxes="first")


@pytest.mark.parametrize(
    ("text", "gold", "expected"),
    [
        (r"\[ \boxed{-2} \quad \text{and} \quad \boxed{1}. \]", "1,-2", True),
        (r"\boxed{-2} and \boxed{1}", r"so $n = \boxed{1,-2}.$", True),
        (r"\boxed{5} and \boxed{1}", "1", False),  # a hedge is not the answer
        (r"$\boxed{1,2}$", r"$\boxed{1}\boxed{2}$", True),  # a gold with two boxes
        (r"$\boxed{1,2}$", r"\boxed{1} no no no no no \boxed{2}", False),
        (r"is $\boxed{32, 349}$", r"So the answer is: \[ \boxed{32349} \]", False),  # a pair, not thousands
        ("#### 32, 349", 32349, False),
        (r"\boxed{32,349}", 32349, True),  # thousands
        ("Final Answer: The largest $n$ is 34.", "$34$", True),
        (r"$= \boxed{200}$ ... Final Answer: The final answer is $10,455$. I hope it is correct.", "10455", True),
        (r"$= \boxed{10455}$ ... Final Answer: The final answer is $200$.", "10455", False),
        (r"\boxed{2,74}", "2.74", True),  # decimal commas
        (r"\boxed{1000,99}", "1000.99", True),
        (r"\boxed{0,111}", "0.111", True),
        (r"\boxed{1,024}", "1.024", False),  # a comma before three digits is a thousands separator
        (r"\boxed{18 \text{ dollars}}", 18, True),  # GSM8K units, the fast path
        (r"\boxed{18 \text{ dollars}}", 19, False),
        (r"\boxed{\$1,250}", "1250", True),
        (r"\boxed{18 dollars}", "18", True),
        (r"\boxed{\text{18 apples}}", 18, True),
        (r"\boxed{18\,\mathrm{cm}}", 18, True),
        (r"\boxed{2.5 \text{ km per hour}}", "2.5", True),
        (r"\boxed{5 \text{ and } 6}", 5, False),  # a list, not a unit
        (r"\boxed{5 million}", 5, False),  # a word that changes the value
        (r"\boxed{3 x}", 3, False),  # a one-letter word may be a variable
        ("Final Answer: 2x+3", 2, False),
    ],
)
def test_is_correct_issue_26(text, gold, expected):
    assert is_correct(text, gold, timeout=10.0) is expected


def test_decimal_comma_option():
    assert answers_equal("2,74", "2.74") and not answers_equal("2,74", "2.74", decimal_comma=False)
    assert answers_equal("1,024", 1024, decimal_comma=False) and answers_equal("1,024", 1024)


def test_unit_answers_never_reach_math_verify(monkeypatch):
    def slow(*args, **kwargs):
        raise AssertionError("math-verify called on a unit answer")

    monkeypatch.setattr("thinklens.data.answers.math_equal", slow)
    forms = [r"\boxed{{{n} \text{{ dollars}}}}", r"\boxed{{\${n}}}", r"\boxed{{{n} dollars}}", r"\boxed{{\text{{{n} cookies}}}}"]
    for form in forms:
        for n in (7, 1250, 18):
            assert is_correct(form.format(n=n), n) and not is_correct(form.format(n=n + 1), n)


@pytest.mark.parametrize("n", [7, 1250])
def test_unit_fast_path_agrees_with_math_verify(n):
    # naive vs fast: where math-verify reads the unit (\text{}), the fast path says what it says
    for pred in (rf"{n} \text{{ dollars}}", rf"{n + 1} \text{{ dollars}}", rf"\${n}"):
        assert answers_equal(pred, n) is math_equal(str(n), pred, timeout=10.0)
