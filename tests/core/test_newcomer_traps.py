"""Traps a newcomer fell into (issue 43 item 4), each pinned: a problem set's problems render through ``render_all``
like any problem, and an exception from a user's hook says which site it ran on."""

from __future__ import annotations

import pytest
import torch

from thinklens.data.formats import PromptFormat
from thinklens.data.problemsets import ProblemSet, RealProblem
from thinklens.engine.hooks import site_hooks
from thinklens.engine.sites import Site


def test_render_all_takes_a_problem_sets_problems():
    synthetic = list(ProblemSet.synthetic(1, seed=0, min_steps=2, max_steps=2))
    real = RealProblem("r", "What is 2+2?", "4")
    plain = PromptFormat("plain")
    assert plain.render_all([real]) == ["What is 2+2?"] == [plain.render(real)]
    think = PromptFormat("think")
    # a zoo style renders a synthetic problem from its ground truth, as render_problems always did
    assert think.render_all(synthetic) == think.render_problems(synthetic) == [think.render(synthetic[0].ground_truth)]
    assert think.render_all([real])[0].endswith("<think>")


def test_a_hook_that_raises_names_its_site_and_leaves_no_hook(tiny_models):
    m = tiny_models["llama"]
    ids = torch.tensor([[1, 2, 3]])

    def broken(act, ctx):
        raise ValueError("boom")

    n_hooks = sum(len(mod._forward_hooks) + len(mod._forward_pre_hooks) for mod in m.hf.modules())
    with pytest.raises(ValueError, match="boom") as info:
        with site_hooks(m, [(Site("resid_post", 1), broken)]):
            m.hf(ids)
    assert any("resid_post.1" in note and "broken" in note for note in info.value.__notes__), info.value.__notes__
    assert sum(len(mod._forward_hooks) + len(mod._forward_pre_hooks) for mod in m.hf.modules()) == n_hooks
