"""Fixtures of the analyses tests: tiny-r1 (the trained zoo model, else an untrained model of its shape) and a
GSM8K-format JSONL file, for the real-model path (chat template, byte-level BPE, boxed answers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

#: Helpers only the zoo's own formats use: a job prompting tiny-r1 with its chat template must not call them.
ZOO_ONLY = (
    "thinklens.tasks.render.render_prompt", "thinklens.tasks.render_prompt", "thinklens.tasks.render.render_target",
    "thinklens.tasks.render_target", "thinklens.tasks.spaced", "thinklens.tasks.problem.spaced",
    "thinklens.tasks.protocol.model_style", "thinklens.tasks.protocol.token_budget",
    "analyses.mi.problems.stream_problems",
)


@pytest.fixture(scope="session")
def tiny_r1(tmp_path_factory) -> str:
    """``tiny-r1`` when the zoo has it, else the folder of an untrained model of its shape: Qwen2, tiny-r1's
    byte-level BPE tokenizer (digits split) and chat template (generation prompt opening ``<think>``), no
    zoo.json (a plain Hugging Face folder, as a user's model)."""
    from thinklens.zoo.registry import zoo_path

    if zoo_path("tiny-r1") is not None:
        return "tiny-r1"
    from thinklens.zoo.modeling import ZooModelConfig
    from zoo.r1 import build_r1_tokenizer
    from zoo.r1_train import build_r1_model, save_r1_folder
    from zoo.recipes import RECIPES
    from zoo.train import with_overrides

    recipe = with_overrides(RECIPES["tiny-r1"], vocab_size=400,
                            model=ZooModelConfig(d_model=32, n_layers=2, n_heads=2, d_ffn=64, max_positions=512))
    tok = build_r1_tokenizer(400, n_problems=200)
    folder = tmp_path_factory.mktemp("r1") / "tiny-r1-untrained"
    save_r1_folder(build_r1_model(recipe, tok, seed=0), tok, folder, meta={})
    (folder / "zoo.json").unlink()
    return str(folder)


@pytest.fixture
def gsm8k_file(tmp_path) -> Path:
    """Four held-out synthetic problems (2 and 3 steps) written as GSM8K test lines: ``question``, and an
    ``answer`` text with ``<<a+b=c>>`` calculations ending in ``#### N``."""
    from thinklens.tasks.protocol import HELD_OUT, problems_by_steps

    lines = []
    for p in problems_by_steps(2, 2, 3, seed=HELD_OUT["eval"]):
        steps = " ".join(f"{s.left} {s.op} {s.right} = <<{s.left}{s.op}{s.right}={s.result}>>{s.result}." for s in p.steps)
        lines.append(json.dumps({"question": p.question, "answer": f"{steps}\n#### {p.answer}"}))
    path = tmp_path / "gsm8k_test.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def no_zoo_branch(monkeypatch):
    """Make every zoo-only helper raise, so a job that takes a zoo branch for a real-format model fails."""

    def forbidden(*args, **kwargs):
        raise AssertionError("a zoo-only branch was taken for a model prompted in its chat format")

    for target in ZOO_ONLY:
        monkeypatch.setattr(target, forbidden)
