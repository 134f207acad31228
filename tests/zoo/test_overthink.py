"""tiny-overthink's texts and their ground truth: pure functions checked against what the renderer knows while
writing (:func:`thinklens.zoo.overthink.construction_truth`), on problems drawn as training draws them."""

from __future__ import annotations

import numpy as np
import pytest

from thinklens.tasks import Problem, Step, ThinkStep, generate_problem
from thinklens.zoo.overthink import (
    EXIT_STRING,
    ROUND_CUES,
    answer_known_at,
    construction_truth,
    draw_reasoning,
    example_texts,
    ground_truth,
    overthink_reasoning,
    slips,
    stated_value,
    trace_truth,
)
from thinklens.zoo.recipes import RECIPES, OverthinkMix

RECIPE = RECIPES["tiny-overthink"]


def _problems(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [generate_problem(rng, RECIPE.task, n_steps=1 + k % 8) for k in range(n)]


@pytest.mark.parametrize("rounds", [0, 1, 2, 3])
def test_ground_truth_read_from_the_text_is_what_the_renderer_wrote(rounds):
    """Oracle: offsets, cue cuts and forced values found in the text equal those known while writing it."""
    for p in _problems(120, seed=rounds):
        for slip in ([False, True] if slips(p) and rounds else [False]):
            text = overthink_reasoning(p, rounds=rounds, slip=slip)
            built = construction_truth(p, rounds=rounds, slip=slip)
            truth = ground_truth(text, p)
            assert truth.answer_known_at == built["answer_known_at"] == answer_known_at(text, p), text
            assert [c.cut for c in truth.cues] == built["cuts"], text
            assert [c.value for c in truth.cues] == built["values"], text
            assert [c.correct for c in truth.cues] == [v == p.answer for v in built["values"]]
            assert truth.rounds == rounds
            assert truth.first_conclusion == (p.steps[-1].left if slip else p.answer)
            # after a slipped conclusion, round 1's cue is after the answer yet a forced exit there is wrong
            if slip:
                assert [c.correct for c in truth.cues if c.after_answer][0] is False


def test_a_hand_written_chain_with_every_decoration():
    p = Problem(name="Tom", obj="apples", start=45, steps=(Step("+", 45, 8, 53), Step("*", 53, 1, 53)),
                think=(ThinkStep(wrong=43), ThinkStep(hmm=True)), conclusion="therefore")
    text = overthink_reasoning(p, rounds=2)
    assert text == ("Okay, Tom has 45 apples. First, Tom buys 8 more, so 45 + 8 = 43. Wait, 45 + 8 = 53. Hmm, then "
                    "Tom multiplies them by 1, so 53 * 1 = 53. Therefore Tom has 53 apples. Wait, let me double-check. "
                    "53 * 1 = 53. Therefore Tom has 53 apples. Hmm, let me verify. 45 + 8 = 53, 53 * 1 = 53. Therefore "
                    "Tom has 53 apples.")
    truth = ground_truth(text, p)
    assert text[:truth.answer_known_at].endswith("so 53 * 1 = 53.")
    # the hmm before step 2 comes after an intermediate that happens to equal the answer: correct, pre-answer
    assert [(c.word, c.value, c.correct, c.after_answer) for c in truth.cues] == [
        ("wait", 43, False, False), ("hmm", 53, True, False), ("wait", 53, True, True), ("hmm", 53, True, True)]


def test_answer_known_at_reads_generated_texts():
    p = Problem(name="Eva", obj="cards", start=2, steps=(Step("+", 2, 5, 7), Step("-", 7, 3, 4)))
    assert answer_known_at("Okay, Eva has 2 cards. First, so 2 + 5 = 7. Then so 7 - 3 = 5.", p) is None
    # a conclusion counts; the opening sentence does not; the close ends the reasoning
    t = "Okay, Eva has 4 cards. So Eva has 4 cards. Wait"
    assert t[:answer_known_at(t, p)] == "Okay, Eva has 4 cards. So Eva has 4 cards."
    assert answer_known_at("Okay, Eva has 4 cards.\n</think>\n\nSo Eva has 4 cards.", p) is None
    # the last step's equation counts once the steps before it were written right, in order
    assert answer_known_at("Okay. Then 7 - 3 = 4. So 2 + 5 = 7. Then 7 - 3 = 4 and more", p) == len(
        "Okay. Then 7 - 3 = 4. So 2 + 5 = 7. Then 7 - 3 = 4 and more")
    assert stated_value("x = 3, has 9 apples. Wait") == 9


def test_trace_truth_counts_tokens_as_lynx_cuts_them():
    p = Problem(name="Ann", obj="cards", start=3, steps=(Step("+", 3, 4, 7),))
    text = overthink_reasoning(p, rounds=1)
    tokens = [w if i == 0 else " " + w for i, w in enumerate(text.split(" "))] + ["\n", "</think>", "\n\nThe"]
    t = trace_truth(tokens, p)
    assert t.reasoning_tokens == len(tokens) - 2
    assert "".join(tokens[:t.answer_known_at]) == "Okay, Ann has 3 cards. First, Ann buys 4 more, so 3 + 4 = 7."
    (cue,) = t.cues
    assert tokens[cue.start_index] == " Wait," and cue.correct and cue.after_answer
    assert t.saving == pytest.approx((t.reasoning_tokens - t.answer_known_at) / t.reasoning_tokens)


def test_training_texts_mix_rounds_slips_and_forced_exits():
    mix, rng = RECIPE.mix, np.random.default_rng(1)
    problems = _problems(600, seed=2)
    reasonings = [draw_reasoning(rng, p, mix) for p in problems]
    rounds = [ground_truth(r, p).rounds for r, p in zip(reasonings, problems)]
    assert set(rounds) == {1, 2, 3} and 1.9 < np.mean(rounds) < 2.4
    slipped = np.mean([ground_truth(r, p).first_conclusion != p.answer for r, p in zip(reasonings, problems)])
    assert 0.05 < slipped < 0.2
    assert 0.4 < np.mean([ground_truth(r, p).saving for r, p in zip(reasonings, problems)]) < 0.7
    completions = [example_texts(rng, p, mix)[1] for p in problems]
    forced = [c for c in completions if EXIT_STRING in c and "\n" + EXIT_STRING not in c]  # not "Final Answer:"
    assert 0.08 < len(forced) / len(completions) < 0.25
    for c, p in zip(completions, problems):
        head, _, tail = c.partition(EXIT_STRING)
        if c in forced:  # a forced exit answers the last value stated before the cut
            assert tail == f"{stated_value(head)}}}" and head.endswith(".")
        else:
            assert c.rstrip("}.").endswith(str(p.answer)) and any(cue in c for cue in ROUND_CUES)
    with pytest.raises(Exception, match="round_weights"):
        OverthinkMix(round_weights=(0.0, 0.0))


def test_the_recipe_fine_tunes_tiny_r1(tmp_path):
    """The trainer starts from tiny-r1's weights and tokenizer and records the lineage; the recipe's identity
    survives the JSON of a checkpoint (a resumed run must recognise its checkpoint)."""
    import json

    import torch

    from thinklens.errors import ThinklensError
    from thinklens.zoo.r1_train import load_r1_parent, r1_training
    from thinklens.zoo.recipes import R1Recipe
    from thinklens.zoo.registry import zoo_path
    from thinklens.zoo.trainer import with_overrides

    assert isinstance(RECIPE, R1Recipe) and RECIPE.init == "tiny-r1" and isinstance(RECIPE.mix, OverthinkMix)
    with pytest.raises(ThinklensError, match="init"):
        with_overrides(RECIPES["tiny-r1"], init="tiny-pre")
    assert json.loads(json.dumps(RECIPE.to_json())) == RECIPE.to_json()
    setup = r1_training(RECIPE, seed=0, ckpt=tmp_path / "ckpt", label="tiny-overthink")
    parent, tok = load_r1_parent(zoo_path("tiny-r1"))
    assert all(torch.equal(a, b) for a, b in zip(setup.model.state_dict().values(), parent.state_dict().values()))
    assert setup.meta_fields["parent"] == "tiny-r1" and "re-check rounds" in setup.meta_fields["training_data"]
    assert setup.model.config.max_position_embeddings == RECIPE.model.max_positions
    from transformers import AutoTokenizer

    assert AutoTokenizer.from_pretrained(str(tmp_path / "ckpt-tokenizer")).get_vocab() == tok.get_vocab()


def test_trace_truth_finds_a_multi_token_close():
    """In SmolLM2's vocabulary (smol-r1) ``</think>`` is three tokens: the reasoning ends at the first of them."""
    from thinklens.tasks import Problem, Step
    from thinklens.zoo.overthink import trace_truth

    p = Problem(name="Ann", obj="cards", start=3, steps=(Step("+", 3, 4, 7),))
    one = ["Okay, Ann has 3 cards.", " First, so 3 + 4 = 7", ".", "\n", "</think>", "\n\nThe answer is 7."]
    three = one[:4] + ["</", "think", ">"] + one[5:]
    assert trace_truth(one, p).reasoning_tokens == trace_truth(three, p).reasoning_tokens == 4
