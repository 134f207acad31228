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
    from thinklens.zoo.tokenizer import save_zoo_tokenizer, zoo_vocab
    from tools.testing import build_tiny_model

    path = build_tiny_model("llama", tmp_path_factory.mktemp("zooish"), vocab_size=len(zoo_vocab()) + 8, n_ctx=256)
    save_zoo_tokenizer(path)
    return HookedModel.load(str(path))

