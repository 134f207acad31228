"""Model fixtures for the probe-job tests (import them into a test module): a reasoning zoo model, and a
tiny random one with the zoo tokenizer. Not a conftest.py: a second conftest module would shadow the
top-level one that the jaxtyping import hook resolves by name."""

from __future__ import annotations

import pytest

from thinklens.zoo.registry import zoo_path


def zoo_reasoner() -> str | None:
    """tiny-think, or tiny-pre (trained on think traces too) while tiny-think is not trained yet."""
    for name in ("tiny-think", "tiny-pre"):
        if zoo_path(name) is not None:
            return name
    return None


@pytest.fixture(scope="session")
def reasoner():
    """A zoo model that writes <think> traces with hmm / wait (both forced-exit outcomes occur)."""
    from thinklens import HookedModel

    name = zoo_reasoner()
    if name is None:
        pytest.skip("the zoo is not trained (thinklens run zoo-train --model tiny-pre, then --model tiny-think)")
    return HookedModel.load(name)


@pytest.fixture(scope="session")
def zooish(tmp_path_factory):
    """A tiny random llama with the zoo's word-level tokenizer (its forced answers are never right)."""
    from thinklens import HookedModel
    from thinklens.testing import build_tiny_model
    from thinklens.zoo.tokenizer import save_zoo_tokenizer, zoo_vocab

    path = build_tiny_model("llama", tmp_path_factory.mktemp("zooish"), vocab_size=len(zoo_vocab()) + 8, n_ctx=256)
    save_zoo_tokenizer(path)
    return HookedModel.load(str(path))


def tiny_r1_trained() -> bool:
    """Whether the zoo's tiny-r1 is trained (committed under data/zoo)."""
    return zoo_path("tiny-r1") is not None


@pytest.fixture(scope="session")
def r1(tmp_path_factory):
    """tiny-r1 (Qwen2, a byte-level BPE tokenizer that splits digits, a chat template whose generation prompt
    opens <think>, \\boxed{} answers), or, while it is not trained yet, an UNTRAINED model of its shape with
    its tokenizer and chat template, saved as a plain Hugging Face folder (no zoo.json): what a user's own
    model looks like to the jobs."""
    import torch

    from thinklens import HookedModel

    if tiny_r1_trained():
        return HookedModel.load("tiny-r1", dtype=torch.float32)
    from thinklens.tasks import TaskConfig
    from zoo.r1 import build_r1_tokenizer
    from zoo.r1_train import build_r1_model, save_r1_folder
    from zoo.recipes import get_recipe

    tok = build_r1_tokenizer(400, task=TaskConfig(max_steps=3), n_problems=200)
    folder = save_r1_folder(build_r1_model(get_recipe("tiny-r1"), tok, seed=0).eval(), tok,
                            tmp_path_factory.mktemp("r1") / "untrained-r1", meta={})
    (folder / "zoo.json").unlink()
    return HookedModel.load(str(folder), dtype=torch.float32)
