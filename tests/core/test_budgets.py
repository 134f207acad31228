"""Budgets per prompt inside the context (thinklens.generation.budgets): the arithmetic against a hand count, per-row budgets
in the decode loop against one-prompt runs, and ``eval`` whose completions do not depend on ``--batch-size`` while
a prompt near the context is cut and counted."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS

import pytest
import torch

from thinklens.cli import main
from thinklens.errors import ThinklensError
from thinklens.generation.budgets import budget_note, budgets_for, context_length, prompt_budgets, token_lengths


def test_prompt_budgets_cut_each_prompt_by_its_own_length():
    b = prompt_budgets([5, 100, 120], 50, context=128, reserve=3)
    assert b.per_prompt == (50, 25, 5)  # min(50, 128 - n - 3) by hand
    assert b.n_capped == 2 and b.summary() == {"max_new_tokens": 50, "context": 128, "capped_prompts": 2, "min_budget": 5}
    assert prompt_budgets([5, 100], 50, context=None).per_prompt == (50, 50)
    assert budget_note(prompt_budgets([5], 50, context=128).summary()) == ""
    with pytest.raises(ThinklensError, match="prompt 1: 126 tokens"):
        prompt_budgets([5, 126], 50, context=128, reserve=2)


def test_context_length_trusts_the_config_then_a_set_tokenizer_limit():
    assert context_length(NS(max_position_embeddings=131072), NS(model_max_length=16384)) == 131072
    assert context_length(NS(n_positions=64)) == 64
    assert context_length(NS(), NS(model_max_length=300)) == 300
    assert context_length(NS(), NS(model_max_length=int(1e30))) is None
    assert context_length(NS(max_position_embeddings=None), None) is None


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    """A learned-position model (GPT-2, 64 positions): a position past the context would fail to index."""
    from thinklens import HookedModel
    from tools.testing import build_tiny_model

    return HookedModel.load(str(build_tiny_model("gpt2", tmp_path_factory.mktemp("gpt2") / "m", n_ctx=64)))


def test_per_row_budgets_equal_one_prompt_runs_and_stay_inside_the_context(gpt2):
    torch.set_num_threads(1)
    prompts = ["a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d e f g h i j k l m n o p", "a b", "c d e"]
    lengths = token_lengths(gpt2, prompts)
    assert lengths == [len(gpt2.tokenizer(p)["input_ids"]) for p in prompts]  # no BOS template: the plain count
    budgets = budgets_for(gpt2, prompts, 40)
    assert budgets.per_prompt == tuple(min(40, 64 - n) for n in lengths) and budgets.n_capped == 1
    batch = gpt2.generate(prompts, max_new_tokens=list(budgets.per_prompt), capture=["resid_post.-1"])
    for p, n, tr in zip(prompts, budgets.per_prompt, batch):
        (alone,) = gpt2.generate([p], max_new_tokens=n, capture=["resid_post.-1"])
        assert tr.token_ids == alone.token_ids and tr.stop_reason == alone.stop_reason
        assert len(tr.token_ids) <= n and len(tr.prompt_ids) + len(tr.token_ids) <= 64
        torch.testing.assert_close(tr.hidden[gpt2.resolve_site("resid_post.-1")],
                                   alone.hidden[gpt2.resolve_site("resid_post.-1")], atol=1e-4, rtol=1e-4)
    assert batch[0].stop_reason == "max_new_tokens" or len(batch[0].token_ids) < budgets.per_prompt[0]
    with pytest.raises(ThinklensError, match="one such integer per row"):
        gpt2.generate(prompts, max_new_tokens=[4, 4])


def _long_problem(tokenizer, room: int) -> dict:
    """A GSM8K-format problem whose question leaves about ``room`` tokens of tiny-r1's context."""
    words = []
    while len(tokenizer(" ".join(words))["input_ids"]) < 512 - room - 40:
        words.append("Tom has 3 apples and buys 2 more.")
    return {"question": " ".join(words) + " How many apples does Tom have?", "answer": "3 + 2 = 5\n#### 5"}


def test_eval_completions_do_not_depend_on_the_batch_size_and_a_long_prompt_is_cut_and_counted(
        tiny_r1, gsm8k_file, tmp_path, capsys):
    from thinklens.engine.model import HookedModel

    model = HookedModel.load(tiny_r1)
    lines = gsm8k_file.read_text().splitlines()[:3]
    data = tmp_path / "mixed.jsonl"
    data.write_text("\n".join([lines[0], json.dumps(_long_problem(model.tokenizer, 60)), *lines[1:]]) + "\n")
    runs = {}
    for bs in (1, 16):
        out = tmp_path / f"bs{bs}"
        assert main(["run", "eval", "--model", tiny_r1, "--data", str(data), "--prompt-format", "chat",
                     "--max-new-tokens", "120", "--batch-size", str(bs), "--threads", "1", "--out", str(out),
                     "--no-progress"]) == 0
        rows = [r for f in sorted((out / "completions").glob("batch-*.json")) for r in json.loads(f.read_text())]
        runs[bs] = (rows, json.loads((out / "results" / "eval.json").read_text()))
    assert [r["text"] for r in runs[1][0]] == [r["text"] for r in runs[16][0]]
    assert [r["budget"] for r in runs[1][0]] == [r["budget"] for r in runs[16][0]]
    from thinklens.data.formats import format_for
    from thinklens.data.problemsets import load_problems

    fmt = format_for(model, "chat")
    prompts = fmt.render_problems(load_problems(str(data)), model.tokenizer)
    n_long = int(model.tokenize([prompts[1]])["input_ids"].shape[1])  # as generation reads it
    budgets = [r["budget"] for r in runs[16][0]]
    assert budgets[1] == 512 - n_long < 120 and budgets[0] == budgets[2] == budgets[3] == 120  # batch-mates keep 120
    for rows, summary in runs.values():
        assert summary["budgets"] == {"max_new_tokens": 120, "context": 512, "capped_prompts": 1,
                                      "min_budget": 512 - n_long}
        assert all(r["n_tokens"] <= r["budget"] for r in rows)
    assert "budgets: 1 prompt cut below 120 new tokens by the 512-token context" in capsys.readouterr().out


def test_mi_peaks_caps_each_trajectory_at_the_context_and_counts_it(tiny_r1, gsm8k_file, tmp_path, capsys):
    from thinklens.analyses.mi.run_format import read_index, read_trajectory
    from thinklens.engine.model import HookedModel

    model = HookedModel.load(tiny_r1)
    lines = gsm8k_file.read_text().splitlines()[:2]
    data = tmp_path / "mixed.jsonl"
    data.write_text("\n".join([lines[0], json.dumps(_long_problem(model.tokenizer, 30)), lines[1]]) + "\n")
    out = tmp_path / "mi"
    assert main(["run", "mi-peaks", "--model", tiny_r1, "--data", str(data), "--prompt-format", "chat",
                 "--max-new-tokens", "100", "--k", "2", "--batch-size", "3", "--threads", "1", "--out", str(out),
                 "--no-progress"]) == 0
    (entry,) = read_index(out)["models"]
    lengths = []
    for row in entry["index"]:
        rec = read_trajectory(out, entry["key"], row["i"])
        n_prompt = int(model.tokenize([rec.prompt])["input_ids"].shape[1])
        assert n_prompt + len(rec.token_ids) <= 512  # inside tiny-r1's context
        lengths.append(n_prompt)
    assert entry["budgets"] == {"max_new_tokens": 100, "context": 512, "capped_prompts": 1,
                                "min_budget": 512 - lengths[1]}
    assert "budgets: 1 prompt cut below 100 new tokens" in capsys.readouterr().out


def test_the_nnsight_backend_gives_each_prompt_its_budget_as_the_hook_loop_does(gpt2):
    prompts = ["a b c", "d e", "f g h i", "j"]
    budgets = [2, 5, 2, 3]
    hooks = gpt2.generate(prompts, max_new_tokens=budgets, backend="hooks")
    nn = gpt2.generate(prompts, max_new_tokens=budgets, backend="nnsight")
    assert [t.token_ids for t in nn] == [t.token_ids for t in hooks]
    assert [t.stop_reason for t in nn] == [t.stop_reason for t in hooks]
    assert all(len(t.token_ids) <= n for t, n in zip(hooks, budgets))
