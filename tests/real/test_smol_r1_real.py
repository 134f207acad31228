"""smol-r1 on real weights (``make test-real``): the committed adapter merged into the installed SmolLM2-135M-Instruct
thinks in the R1 format, and a forced exit at a trace's recorded ``answer_known_at`` answers what the ground truth
says it knows there (:func:`thinklens.zoo.overthink.trace_truth`)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def smol_r1(real_model):
    from thinklens.engine.real_organisms import adapter_present

    if not adapter_present("smol-r1"):
        pytest.skip("smol-r1's adapter is not in data/real-organisms/smol-r1: thinklens run zoo-train --model smol-r1")
    return real_model("smol-r1")


def test_smol_r1_loads_with_its_provenance(smol_r1):
    assert smol_r1.source["organism"] == "smol-r1" and smol_r1.source["base"] == "smollm2-135m"
    assert len(smol_r1.source["adapter_sha256"]) == 64 and len(smol_r1.source["gguf_sha256"]) == 64
    assert (smol_r1.n_layers, smol_r1.d_model, smol_r1.vocab_size) == (30, 576, 49152)  # SmolLM2's own vocabulary


def test_smol_r1_thinks_and_a_forced_exit_at_answer_known_at_answers_it(smol_r1):
    from thinklens.data.answers import extract_answer
    from thinklens.tasks.protocol import HELD_OUT, problems_by_steps
    from thinklens.zoo.overthink import THINK_CLOSE, trace_truth
    from thinklens.zoo.overthink_eval import forced_answers
    from thinklens.zoo.smol_r1 import SMOL_R1
    from thinklens.zoo.smol_r1_eval import chat_prompts

    problems = problems_by_steps(4, 1, 1, seed=HELD_OUT["eval"], config=SMOL_R1.task)
    prompts = chat_prompts(smol_r1, problems)
    assert prompts[0].endswith("<|im_start|>assistant\n<think>\n")  # its own template opens the span
    traces = smol_r1.generate(prompts, max_new_tokens=SMOL_R1.mix.token_budget(1))
    done = [(p, t) for p, t in zip(problems, traces) if THINK_CLOSE in t.text and extract_answer(t.text) is not None]
    assert len(done) >= 3, [t.text for t in traces]  # a closed <think> span, then a \boxed{} answer
    # it reasons, not only the format: 25/25 one-step problems right in its committed evaluation
    assert sum(extract_answer(t.text) == str(p.answer) for p, t in done) >= 3, [t.text for _, t in done]
    known = [(p, t, truth) for p, t in done if (truth := trace_truth(t.tokens, p)).answer_known_at is not None]
    assert known, [t.text for _, t in done]
    answers = forced_answers(smol_r1, [t.prompt_ids + t.token_ids[:truth.answer_known_at] for _, t, truth in known])
    right = [a == str(p.answer) for (p, _, _), a in zip(known, answers)]
    assert sum(right) >= max(1, len(right) - 1), list(zip(answers, [p.answer for p, _, _ in known]))
