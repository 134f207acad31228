"""TTTS orchestration against a scripted fake model (exact contexts), and default_layer."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from thinklens.analyses.mi.figures_interventions import figure_ttts
from thinklens.analyses.mi.recycling import default_layer
from thinklens.analyses.mi.ttts import ttts_eval
from thinklens.data.formats import TTTS_CUE, TTTS_TOKENS, PromptFormat
from thinklens.errors import ThinklensError


@dataclass
class _Trace:
    text: str
    n: int

    def __len__(self) -> int:
        return self.n


class ScriptedModel:
    """generate() answers from the prompt text: first pass "so #### 5"; a forced answer (after the zoo's
    " ####" or the boxed cue) is 7 if the context holds " Wait", else 5; continuations produce
    `max_new_tokens` copies of " x"."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], int]] = []

    def generate(self, prompts, *, max_new_tokens, batch_size=None):
        self.calls.append((list(prompts), max_new_tokens))
        out = []
        for p in prompts:
            if p.endswith(" ####"):
                out.append(_Trace(" 7" if " Wait" in p else " 5", 1))
            elif p.endswith(TTTS_CUE):
                out.append(_Trace(" \\boxed{7}" if " Wait" in p else " \\boxed{5}", 4))
            elif p.startswith("Q") and "####" not in p:
                out.append(_Trace(" so #### 5", 3))
            else:
                out.append(_Trace(" x" * max_new_tokens, max_new_tokens))
        return out


def test_ttts_builds_the_right_contexts_and_scores_forced_answers() -> None:
    m = ScriptedModel()
    zoo = PromptFormat("cot")
    res = ttts_eval(m, ["Q1", "Q2"], ["7", "5"], words=("Wait",), budgets=(0, 2), max_new_tokens=16,  # type: ignore[arg-type]
                    answer_prompt=zoo.ttts_cue, answer_tokens=zoo.ttts_tokens)
    assert res.first_pass_accuracy == 0.5
    table = {(r.method, r.budget): (r.n_correct, r.mean_extra_tokens) for r in res.rows}
    assert table == {("plain", 0): (1, 0.0), ("plain", 2): (1, 2.0), ("ttts:Wait", 2): (1, 2.0)}
    prompts = [p for call in m.calls for p in call[0]]
    assert "Q1 so #### 5 ####" in prompts  # budget 0: forced right after the first pass
    assert "Q1 so #### 5 Wait" in prompts  # the word appended as plain text, then a 2-token budget
    assert "Q1 so #### 5 Wait x x ####" in prompts
    assert (["Q1 so #### 5 Wait", "Q2 so #### 5 Wait"], 2) in m.calls
    assert res.curve("ttts:Wait") == [(2, 0.5)]
    assert [t.name for t in figure_ttts(res).data] == ["plain", "ttts:Wait"]


def test_ttts_asks_for_the_answer_with_the_boxed_cue_by_default() -> None:
    m = ScriptedModel()
    res = ttts_eval(m, ["Q1", "Q2"], ["7", "5"], words=("Wait",), budgets=(0, 2), max_new_tokens=16)  # type: ignore[arg-type]
    assert res.answer_prompt == TTTS_CUE == " Final Answer within \\boxed{}:"
    forced = [call for call in m.calls if call[0][0].endswith(TTTS_CUE)]
    assert forced and all(n == TTTS_TOKENS == 16 for _, n in forced)
    table = {(r.method, r.budget): r.n_correct for r in res.rows}
    assert table == {("plain", 0): 1, ("plain", 2): 1, ("ttts:Wait", 2): 1}  # graded by is_correct on the box


def test_ttts_errors() -> None:
    m = ScriptedModel()
    with pytest.raises(ThinklensError, match="answers"):
        ttts_eval(m, ["Q1"], ["1", "2"])  # type: ignore[arg-type]
    with pytest.raises(ThinklensError, match="budgets"):
        ttts_eval(m, ["Q1"], [1], budgets=(-1,))  # type: ignore[arg-type]
    with pytest.raises(ThinklensError, match="words"):
        ttts_eval(m, ["Q1"], [1], words=(" ",))  # type: ignore[arg-type]


def test_default_layer() -> None:
    assert default_layer(32) == 23 and default_layer(2) == 1 and default_layer(1) == 0
