"""``HookedModel.generate`` keeps every prompt and its completion inside the model's context, by the
rule the jobs (and so the CLI) follow: a budget that would run past it is cut with a warning, a prompt that leaves no
room is refused."""

from __future__ import annotations

import warnings

import pytest

from thinklens import HookedModel
from thinklens.errors import ThinklensError
from thinklens.generation.budgets import budgets_for

CTX = 16


@pytest.fixture(scope="module")
def short(tmp_path_factory):
    """A tiny random llama whose context is 16 tokens."""
    from tools.testing import build_tiny_model

    return HookedModel.load(str(build_tiny_model("llama", tmp_path_factory.mktemp("ctx") / "m", n_ctx=CTX)))


def _words(n: int) -> str:
    return " ".join(f"w{i + 1}" for i in range(n))


def test_a_budget_past_the_context_is_cut_to_fit_with_a_warning(short):
    prompts = [_words(CTX - 1), _words(2)]  # 15 tokens: room for 1 new token; 2 tokens: room for 14
    assert short.max_context == CTX
    with pytest.warns(UserWarning, match=rf"1 of 2 prompts would run past .*'s {CTX}-token context with "
                                         r"max_new_tokens=10: .*\(prompt 0: 15 tokens, 1 new\)"):
        traces = short.generate(prompts, max_new_tokens=10)
    assert all(len(t.prompt_ids) + len(t) <= CTX for t in traces)
    assert len(traces[0]) == 1
    # the same budgets the jobs ask for: budgets_for's per-prompt budgets, which generate then takes as they are
    want = budgets_for(short, prompts, 10).per_prompt
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = short.generate(prompts, max_new_tokens=want)
    assert [t.token_ids for t in same] == [t.token_ids for t in traces]
    with pytest.warns(UserWarning, match="2 of 2 prompts would run past"):  # a budget per prompt is cut the same way
        short.generate([_words(12), _words(12)], max_new_tokens=(5, 6))


def test_a_prompt_that_fills_the_context_is_refused_as_the_jobs_refuse_it(short):
    with pytest.raises(ThinklensError, match=rf"bad prompt length: received 'prompt 1: {CTX} tokens.*fewer than the "
                                             rf"model's context \({CTX} tokens\)"):
        short.generate([_words(3), _words(CTX)], max_new_tokens=1)
