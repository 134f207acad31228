"""Tests of the reasoning task generator and renderers, against arithmetic oracles."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from thinklens.data.answers import parse_answer, parse_equations
from thinklens.errors import ThinklensError
from thinklens.tasks import (
    STYLES,
    Problem,
    Step,
    TaskConfig,
    align_target,
    apply_op,
    generate_problem,
    generate_problems,
    reflection_stats,
    render_example,
    render_prompt,
    render_target,
    spaced,
    words,
)

RICH = TaskConfig(ops=("+", "-", "*", "/"), distractor_rate=0.3, correction_rate=0.4, hmm_rate=0.3)


@pytest.fixture(scope="module")
def problems() -> list[Problem]:
    return generate_problems(300, seed=123, config=RICH)


def test_same_seed_same_problems_and_no_global_state():
    np.random.seed(1)
    a = generate_problems(20, seed=7, config=RICH)
    np.random.seed(2)  # the global numpy state must not matter
    b = generate_problems(20, seed=7, config=RICH)
    assert a == b
    assert [p.question for p in a] == [p.question for p in b]
    assert a != generate_problems(20, seed=8, config=RICH)
    rng = np.random.default_rng(7)
    assert generate_problems(20, seed=rng, config=RICH) == a


def test_cot_equations_are_right_and_chain(problems):
    for p in problems:
        eqs = re.findall(r"<<(\d+)([-+*/])(\d+)=(\d+)>>", p.cot)
        assert len(eqs) == p.n_steps
        running = p.start
        for (a, op, b, c), step in zip(eqs, p.steps):
            a, b, c = int(a), int(b), int(c)
            # Oracle: Python's own arithmetic.
            assert c == {"+": a + b, "-": a - b, "*": a * b, "/": a // b}[op]
            if op == "/":
                assert a % b == 0
            assert a == running and step.result == c
            running = c
        assert running == p.answer
        assert all(0 <= v <= RICH.max_value for v in p.values)


def test_steps_range_and_operands_bounded(problems):
    assert {p.n_steps for p in problems} == set(range(1, 9))
    for p in problems:
        for s in p.steps:
            if s.op in "+-":
                assert 1 <= s.right <= RICH.max_operand
            else:
                assert 2 <= s.right <= RICH.max_factor


def test_question_states_every_operand_in_order(problems):
    for p in problems:
        q = words(p.question)
        assert q[:4] == [p.name, "has", str(p.start), p.obj]
        # Sentences about the protagonist carry the operands, in step order; distractors do not.
        own = [s for s in " ".join(q).split(" . ") if s.startswith(p.name)][1:]
        nums = [int(w) for s in own for w in s.split() if w.isdigit()]
        assert nums == [s.right for s in p.steps]


def test_distractors_appear_and_do_not_change_the_answer():
    cfg = dataclasses.replace(RICH, distractor_rate=1.0)
    p = generate_problem(3, cfg, n_steps=3)
    assert len(p.distractors) == 4
    for d in p.distractors:
        assert f"{d.name} has {d.value} {d.obj}." in p.question and d.name != p.name
    plain = dataclasses.replace(p, distractors=(), question="")
    assert plain.answer == p.answer and len(plain.question) < len(p.question)


def test_render_styles_parse_to_the_answer(problems):
    for p in problems[:100]:
        for style in STYLES:
            prompt, target = render_example(p, style)
            assert parse_answer(target) == p.answer
            assert prompt == render_prompt(p, style) and target == render_target(p, style)
            assert spaced(target) == target  # canonical: one word per token
        assert render_target(p, "direct") == f"#### {p.answer}"
        assert render_prompt(p, "think").endswith("<think>")


def test_think_traces_have_corrections_that_end_right(problems):
    n_wrong = 0
    for p in problems:
        target = render_target(p, "think")
        eqs = parse_equations(target)
        wrong = [e for e in eqs if not e.correct]
        n_wrong += len(wrong)
        assert len(wrong) == sum(t.wrong is not None for t in p.think)
        assert reflection_stats(target)["wait"] == len(wrong)
        # Every wrong equation is followed by "wait" and the right one.
        for i, e in enumerate(eqs):
            if not e.correct:
                assert eqs[i + 1].correct and eqs[i + 1].lhs == e.lhs
        assert "</think>" in target
    assert n_wrong > 50


def test_alignment_tracks_the_true_running_value(problems):
    for p in problems[:150]:
        for style in STYLES:
            a = align_target(p, style)
            assert list(a.words) == render_target(p, style).split()
            assert len({len(a.words), len(a.step), len(a.running), len(a.target), len(a.kind)}) == 1
            for i, (w, k) in enumerate(zip(a.words, a.kind)):
                if k == "step" and i >= 1 and a.words[i - 1] == "=":
                    # The result word of a correct equation: the running value becomes it.
                    assert int(w) == a.running[i] == p.steps[a.step[i]].result == a.target[i]
                if k == "error" and i >= 1 and a.words[i - 1] == "=":
                    assert int(w) != a.target[i]
            assert a.running[-1] == p.answer and a.kind[-1] == "answer"
        # Equation words of step i carry step i's true result as the probe target.
        a = align_target(p, "cot")
        for i, s in enumerate(a.step):
            if s < p.n_steps:
                assert a.target[i] == p.values[s + 1]


def test_fixed_n_steps_and_hand_built_problem():
    assert {p.n_steps for p in generate_problems(30, seed=0, n_steps=5)} == {5}
    p = Problem(name="Tom", obj="apples", start=7, steps=(Step("+", 7, 5, 12), Step("*", 12, 3, 36)))
    assert p.question == ("Tom has 7 apples. Tom buys 5 more. Tom multiplies them by 3. "
                          "How many apples does Tom have?")
    assert render_target(p, "cot") == "<< 7 + 5 = 12 >> << 12 * 3 = 36 >> #### 36"


@pytest.mark.parametrize(
    "kwargs",
    [{"min_steps": 0}, {"min_steps": 5, "max_steps": 4}, {"ops": ("+", "^")}, {"ops": ()},
     {"hmm_rate": 1.5}, {"max_operand": 0}, {"max_factor": 1}],
)
def test_config_validation_raises_thinklens_error(kwargs):
    with pytest.raises(ThinklensError, match="bad TaskConfig"):
        TaskConfig(**kwargs)


def test_bad_inputs_raise_thinklens_error():
    with pytest.raises(ThinklensError):
        Step("+", 1, 1, 3)
    with pytest.raises(ThinklensError):
        Problem(name="T", obj="a", start=1, steps=(Step("+", 2, 1, 3),))
    with pytest.raises(ThinklensError, match="did you mean 'cot'"):
        render_target(generate_problem(0), "cto")
    with pytest.raises(ThinklensError):
        generate_problems(-1, seed=0)
    with pytest.raises(ThinklensError):
        apply_op("/", 7, 2)
    # Only multiplication from large values can get stuck: the generator retries, then explains.
    with pytest.raises(ThinklensError, match="admitting"):
        generate_problem(0, TaskConfig(ops=("*",), max_value=9, max_operand=5, max_factor=3), n_steps=8)


def test_carry_mode_slips_are_forgotten_carries_and_hmm_precedes_multiplication():
    from thinklens.tasks.generator import forgotten_carry

    cfg = TaskConfig(correction_rate=1.0, correction_on="carry", hmm_rate=1.0, hmm_on="mul")
    for p in generate_problems(200, seed=9, config=cfg):
        for s, t in zip(p.steps, p.think):
            assert t.wrong == forgotten_carry(s)  # every carry step slips, no other step does
            assert t.hmm == (s.op in "*/")
            if t.wrong is not None:
                assert abs(t.wrong - s.result) == 10
                assert {"+": (s.left % 10 + s.right % 10) >= 10, "-": s.left % 10 < s.right % 10}[s.op]


def test_decoration_modes_do_not_change_the_questions():
    # The rng draws are the same whatever the modes, so one seed gives the same questions.
    plain = generate_problems(50, seed=4)
    carry = generate_problems(50, seed=4, config=TaskConfig(correction_on="carry", hmm_on="mul"))
    assert [p.question for p in plain] == [p.question for p in carry]
    with pytest.raises(ThinklensError, match="correction_on"):
        TaskConfig(correction_on="sometimes")
