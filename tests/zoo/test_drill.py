"""The arithmetic drill of real organisms (thinklens/zoo/drill.py) and smol-r1's loss on labelled positions, against
oracles: the labelled tokens decode to the results; teacher-forced accuracy equals greedy generation of each result;
the loss equals the causal LM's own on the same batch.

Mutants these tests kill: labels on the operands or the separator (result text check); the prediction of token t
read at t instead of t - 1 (greedy oracle); "any result token right" for "all" (greedy oracle on two-digit results);
the context's results scored with the checked one (greedy oracle);
the loss's targets not shifted by one (HF loss equality); a drill row overwriting the batch's rows (with_rows check).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from thinklens.errors import ThinklensError
from thinklens.tasks import TaskConfig
from thinklens.tasks.problem import Step
from thinklens.zoo.batches import IGNORE
from thinklens.zoo.drill import (
    CONTEXT,
    OP_KINDS,
    DrillMix,
    draw_equation,
    drill_rows,
    encode_equations,
    equation_accuracy,
    held_out_equations,
    op_kind,
    with_rows,
)


@pytest.fixture(scope="module")
def tiny_r1():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from thinklens.zoo.registry import zoo_path

    folder = zoo_path("tiny-r1")
    return AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval(), AutoTokenizer.from_pretrained(str(folder))


def test_kinds_and_draws_stay_in_the_task():
    assert [op_kind(Step(*s)) for s in [("+", 45, 8, 53), ("+", 41, 8, 49), ("-", 52, 7, 45), ("-", 58, 7, 51),
                                        ("*", 23, 4, 92)]] == ["+ carry", "+", "- borrow", "-", "*"]
    rng, task = np.random.default_rng(1), TaskConfig()
    for kind in OP_KINDS:
        for _ in range(50):
            s = draw_equation(rng, task, kind[0], hard=" " in kind)
            assert op_kind(s) == kind and 0 <= s.result <= task.max_value and 0 <= s.left <= task.max_value
            assert (1 <= s.right <= task.max_operand) if s.op in "+-" else (2 <= s.right <= task.max_factor)
    with pytest.raises(ThinklensError, match="one of"):
        draw_equation(rng, task, "/", hard=False)
    with pytest.raises(ThinklensError, match="hard_rate"):
        DrillMix(hard_rate=1.5)


def test_only_the_results_are_labelled(tiny_r1):
    _, tok = tiny_r1
    steps = [Step("-", 52, 7, 45), Step("+", 3, 9, 12), Step("*", 20, 3, 60)]
    ids, labels = encode_equations(tok.backend_tokenizer, steps)
    assert tok.decode(ids) == "52 - 7 = 45, 3 + 9 = 12, 20 * 3 = 60"
    assert tok.decode([x for x in labels if x != IGNORE]) == "451260"
    assert all(x in (IGNORE, i) for i, x in zip(ids, labels))


def test_drill_rows_fit_and_are_appended_after_the_batch(tiny_r1):
    _, tok = tiny_r1
    drill = DrillMix(rows=2, row_tokens=64)
    rows = drill_rows(np.random.default_rng(0), TaskConfig(), drill, tok.backend_tokenizer)
    assert len(rows) == 2 and all(48 <= len(ids) <= 64 for ids, _ in rows)
    batch = {"input_ids": torch.tensor([[5, 6, 0]]), "attention_mask": torch.tensor([[1, 1, 0]]),
             "labels": torch.tensor([[IGNORE, 6, IGNORE]])}
    out = with_rows(batch, rows, pad=0)
    assert out["input_ids"].shape == (3, max(len(ids) for ids, _ in rows))
    assert out["input_ids"][0, :3].tolist() == [5, 6, 0] and out["labels"][0, 1] == 6 and out["attention_mask"][0].sum() == 2
    for r, (ids, labels) in enumerate(rows, start=1):
        assert out["input_ids"][r, : len(ids)].tolist() == ids and out["labels"][r, : len(ids)].tolist() == labels
        assert out["attention_mask"][r].sum() == len(ids)


def test_teacher_forced_accuracy_is_greedy_generation_of_each_result(tiny_r1):
    model, tok = tiny_r1
    equations = held_out_equations(TaskConfig(), n_per_kind=6, seed=3)
    got = equation_accuracy(model, tok.backend_tokenizer, equations, pad=tok.pad_token_id)
    context = ", ".join(f"{c.left} {c.op} {c.right} = {c.result}" for c in CONTEXT)
    for kind, steps in equations.items():
        right = 0
        for s in steps:
            prompt = tok(f"{context}, {s.left} {s.op} {s.right} = ", add_special_tokens=False)["input_ids"]
            want = tok(str(s.result), add_special_tokens=False)["input_ids"]
            out = model.generate(torch.tensor([prompt]), max_new_tokens=len(want), do_sample=False,
                                 pad_token_id=tok.pad_token_id)
            right += out[0, len(prompt):].tolist() == want
        assert got[kind] == [right, len(steps)]


def test_loss_on_labels_is_the_causal_lm_loss(tiny_r1):
    from thinklens.zoo.smol_r1 import LossOnLabels

    model, tok = tiny_r1
    rows = drill_rows(np.random.default_rng(2), TaskConfig(), DrillMix(rows=2, row_tokens=48), tok.backend_tokenizer)
    batch = with_rows({"input_ids": torch.zeros((0, 1), dtype=torch.long), "attention_mask": torch.zeros((0, 1), dtype=torch.long),
                       "labels": torch.zeros((0, 1), dtype=torch.long)}, rows, pad=tok.pad_token_id)
    with torch.no_grad():
        ours = LossOnLabels(model)(**batch).loss
        theirs = model(**batch).loss
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)
