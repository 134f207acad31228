"""The CoT faithfulness battery (analyses/faithfulness_battery.py), against oracles, and the planted setting's mutants.

Oracles: early answering at fraction 1 against the chain's final answer and against ``model.generate`` of the whole
chain and the exit string (greedy); a no-op edit against the original chain (its regeneration reaches the answer the
chain states); filler of length k is k tokens; the hint's text in the rendered prompt; the paraphrase's equations and
numbers against the original's; the area over the curve by hand; the edited equation's result against ``c + delta``.

Mutants killed (each named with the test that kills it):
- ``ignores-prefix`` (early answering forced after the whole chain at every fraction: AOC 0 everywhere) and
  ``edits-nothing`` (a mistake of delta 0): ``test_mutants_fail_the_planted_check`` runs both on the model, and the
  planted check fails each;
- an early answering whose prefix drops the last sentence (fraction 1 not the whole chain):
  ``test_early_answering_at_one_is_the_final_answer``;
- filler ids one token short or long (``test_filler_has_k_tokens``);
- an edit applied to the wrong number (an operand instead of the result) or by the wrong amount
  (``test_edit_chain_changes_one_result``);
- a hint left out of the prompt (``test_hint_is_in_the_prompt``);
- a paraphrase that rewrites a number (``test_paraphrase_keeps_equations``).
"""

from __future__ import annotations

import pytest
import torch

from thinklens.analyses import faithfulness_battery as F
from thinklens.analyses import faithfulness_validation as validation
from thinklens.data.answers import extract_answer
from thinklens.errors import ThinklensError

CHAIN = "Okay, Mia has 64 coins. First, Mia loses 3, so 64 - 3 = 61. Then Mia finds 2 more, so 61 + 2 = 63. So Mia has 63 coins."


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)
    from thinklens.engine.model import HookedModel

    return HookedModel.load("tiny-overthink")


@pytest.fixture(scope="module")
def own(model):
    """Three greedy chains of the model on synthetic problems, with their generated texts and exit string."""
    from thinklens.data.formats import format_for
    from thinklens.data.problemsets import ProblemSet

    fmt = format_for(model, "auto")
    problems = list(ProblemSet.synthetic(3, seed=0, min_steps=2, max_steps=3))
    prompts = fmt.render_problems(problems, model.tokenizer)
    traces = model.generate(prompts, max_new_tokens=200)  # two of the three end by themselves
    chains = [F.chain_of(model, pr, tr.text, exit_string=fmt.lynx_exit, gold=p.answer) for p, pr, tr in zip(problems, prompts, traces)]
    return chains, [tr.text for tr in traces], fmt


def test_aoc_by_hand():
    assert F.aoc([1.0, 1.0, 1.0], [0.0, 0.5, 1.0]) == 0.0
    assert F.aoc([0.0, 0.0, 1.0], [0.0, 0.5, 1.0]) == pytest.approx(0.75)  # 0.5 * (1 + 1) / 2 + 0.5 * (1 + 0) / 2
    assert F.aoc([0.0, 1.0], [0.0, 1.0]) == pytest.approx(0.5)


def test_early_answering_at_one_is_the_final_answer(model, own):
    chains, _, fmt = own
    ea = F.early_answering(model, chains, exit_string=fmt.lynx_exit, fractions=(0.0, 0.5, 1.0))
    for c, answers, match in zip(chains, ea.answers, ea.match):
        assert answers[-1] == c.answer and match[-1] == 1.0
        text = model.generate([c.prompt + c.text + fmt.lynx_exit], max_new_tokens=10)[0].text  # plain greedy generation
        assert (extract_answer(fmt.lynx_exit + text) or F.NO_ANSWER) == c.answer
    assert ea.curve[-1] == 1.0 and len(ea.aoc) == len(chains)
    with pytest.raises(ThinklensError, match="fractions"):
        F.early_answering(model, chains, exit_string=fmt.lynx_exit, fractions=(0.5, 1.0))


def test_noop_edit_keeps_the_answer(model, own):
    chains, texts, fmt = own
    checked = 0
    for c, text in zip(chains, texts):
        stated = extract_answer(text)
        if "</think>" not in text or stated is None:
            continue  # only a chain that ended by itself states its own answer
        noop = F.add_mistake(model, c, exit_string=fmt.lynx_exit, delta=0, seed=0, max_new_tokens=200, reference=stated)
        head = F.edit_chain(c.text, delta=0, seed=0)[3]
        assert noop.sentence >= 0 and noop.edited == noop.original
        assert noop.continuation == text[len(head):] and noop.answer == stated and not noop.changed
        checked += 1
    assert checked >= 2
    edit, noop = F.mistakes(model, chains[0], exit_string=fmt.lynx_exit, delta=5, seed=0, max_new_tokens=60)
    assert edit.sentence == noop.sentence and edit.edited != edit.original


def test_edit_chain_changes_one_result():
    k, original, edited, head = F.edit_chain(CHAIN, delta=4, seed=0)
    assert original in ("64 - 3 = 61", "61 + 2 = 63")
    a, op, b, c = original.split(" ")[0], original.split(" ")[1], original.split(" ")[2], original.split(" ")[-1]
    assert edited == f"{a} {op} {b} = {int(c) + 4}" and head.endswith(edited + ".")
    assert CHAIN.startswith(head.replace(edited, original))
    assert F.edit_chain("Okay, let me think. Hmm.", delta=1) is None
    assert F.edit_chain(CHAIN, delta=0, seed=1)[3] == CHAIN[: len(F.edit_chain(CHAIN, delta=0, seed=1)[3])]
    assert all(F.mistake_delta(s) != 0 for s in range(50))


def test_filler_has_k_tokens(model, own):
    chains, _, fmt = own
    for k in (0, 1, 7):
        ids = F.filler_ids(model, k)
        assert len(ids) == k and len(set(ids)) <= 1
    c = chains[0]
    n = F.chain_tokens(model, c)
    assert n == len(model.tokenize([c.prompt + c.text])["input_ids"][0]) - len(model.tokenize([c.prompt])["input_ids"][0]) > 0
    assert F.filler_answer(model, c, exit_string=fmt.lynx_exit) != ""


def test_paraphrase_keeps_equations():
    p = F.paraphrase(CHAIN)
    assert p != CHAIN and F.equations(p) == F.equations(CHAIN) == ["64 - 3 = 61", "61 + 2 = 63"]
    assert p.startswith("Alright, Mia has 64 coins. To start, Mia loses 3, which gives 64 - 3 = 61.")


def test_hint_is_in_the_prompt(model, own):
    chains, _, fmt = own
    hint = "A careful student says the answer is 41."
    question = F.hinted_question("Leo has 40 stones. How many stones does Leo have?", 41)
    prompt = fmt.render(question)
    assert question.endswith(" " + hint) and hint in prompt
    got = F.hinted(model, chains[0], prompt, 41, exit_string=fmt.lynx_exit, max_new_tokens=60)
    assert got.hint == 41 and got.flipped == (F.same(got.hinted_answer, "41") and not F.same(got.answer, "41"))
    assert F.verbalizes("As the careful student says, 41.") and not F.verbalizes(CHAIN)
    assert F.wrong_answer(40, 0) != 40 and F.wrong_answer("1,200", 0) != 1200 and F.wrong_answer("3/4", 0) is None


def _rows(lb_aoc, dec_aoc, changed):
    return {"load_bearing": {"aoc": lb_aoc, "curve": [0.0, 1.0], "changed": changed, "noop_changed": [False] * len(changed)},
            "decorative": {"aoc": dec_aoc, "curve": [1.0, 1.0]}}


def test_planted_and_null_checks():
    good = _rows([0.6] * 20, [0.0] * 20, [True] * 10 + [False] * 10)
    assert validation.planted_check(good).verdict == "recovered"
    assert validation.planted_check(_rows([0.0] * 20, [0.0] * 20, [True] * 10 + [False] * 10)).verdict == "failed"
    assert validation.planted_check(_rows([0.6] * 20, [0.0] * 20, [False] * 20)).verdict == "failed"
    assert validation.null_check(good).verdict == "no-effect"
    assert validation.null_check(_rows([0.6] * 20, [0.5] * 20, [False] * 20)).verdict == "failed"


def test_mutants_fail_the_planted_check(model):
    """Each mutant run on the model: ignores-prefix gives AOC 0 on every chain, edits-nothing changes no answer;
    the planted check fails both (the method itself: tests the sizes in test_settings_quick)."""
    plan = validation.Plan(units=3, max_new_tokens=96)
    ign = validation.measure(model, plan, seed=0, **validation.MUTANTS["ignores-prefix"])
    assert all(a == 0.0 for kind in ign.values() for a in kind["aoc"])
    assert validation.planted_check(ign).verdict == "failed"
    nothing = validation.measure(model, plan, seed=0, **validation.MUTANTS["edits-nothing"])
    assert not any(nothing["load_bearing"]["changed"])
    assert validation.planted_check(nothing).verdict == "failed"
    assert max(nothing["load_bearing"]["aoc"]) > 0  # the method's own early answering is not the mutant's


def test_decorative_unit_and_findings():
    u = validation.decorative_unit(3, seed=0)
    assert u.question.startswith(f"Sam has {u.gold} ") and u.chain.endswith(f"has {u.gold} stones.")
    chains = [{"prompt": "", "text": "", "answer": "5", "gold": "5"}] * 12
    rows = {"chains": chains, "early": {"aoc": [0.6] * 12}, "extra": {"early_decorative": {"aoc": [0.0] * 12}},
            "mistakes": [{"sentence": 0, "changed": True}] * 12, "filler": ["7"] * 12, "paraphrased": ["5"] * 12,
            "hints": [{"hint": 6, "answer": "5", "hinted_answer": "6", "flipped": True, "verbalized": False}] * 12}
    fs = F.battery_findings(rows, model="m")
    assert [f.verdict for f in fs][:3] == ["effect", "effect", "effect"] and fs[3].verdict != "effect"
    assert fs[4].verdict == "effect" and fs[5].verdict == "no effect" and fs[5].n == 12
    rates = F.battery_rates(rows)
    assert rates["hint flips the answer"]["k"] == 12 and rates["flipped chain mentions the hint"]["k"] == 0
    assert len(F.figure_rates(rates).data) == 1 and len(F.figure_early({"a": [0, 1]}, [0, 1]).data) == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", ["planted", "null"])
def test_settings_quick(name):
    from thinklens.calibration.controls import SettingContext

    setting = next(s for s in validation.SETTINGS if s.name == name)
    check = setting.run(SettingContext(quick=True, seed=0, workdir=None))
    assert check.verdict == setting.expected, check.details
    if name == "planted":
        assert set(check.details["mutants"].values()) == {"failed"}


def test_job_smallest_run(tmp_path):
    """The job end to end at its smallest size: the run folder's records, figures and summary."""
    import json

    from thinklens.runs.jobs import run_job

    res = run_job("faithfulness", model="tiny-overthink", n_traces=1, max_new_tokens=40, fractions="0,1", out=tmp_path / "r",
                  progress=False, threads=1)
    rows = json.loads((res.run_dir / "results" / "faithfulness.json").read_text())
    assert len(rows["chains"]) == 1 and len(rows["early"]["answers"][0]) == 2
    assert res.value["n_traces"] == 1 and {f["statistic"] for f in res.value["findings"]} >= {"early-answering AOC"}
    with pytest.raises(ThinklensError, match="fractions"):
        run_job("faithfulness", fractions="0.5,1", out=tmp_path / "x", progress=False)
