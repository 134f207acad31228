"""Fixtures of the steering tests: a tiny Llama on a word vocabulary and SAEs over it (all in-process)."""

from __future__ import annotations

import random
import signal
from types import SimpleNamespace

import pytest
import torch


def module_hooks(model: torch.nn.Module) -> dict[str, tuple[tuple, tuple]]:
    """The forward (pre-)hooks on each module, by id: what an intervention or a library may leave behind.
    transformers installs output-capturing hooks of its own once ``output_hidden_states`` is used; those
    stay, so tests compare with the hooks present before instead of expecting none."""
    return {n: (tuple(m._forward_hooks), tuple(m._forward_pre_hooks)) for n, m in model.named_modules()
            if m._forward_hooks or m._forward_pre_hooks}


@pytest.fixture(scope="session")
def hooks_of():
    """:func:`module_hooks`, for the tests."""
    return module_hooks


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory):
    from thinklens import HookedModel
    from tools.testing import build_tiny_model

    path = build_tiny_model("llama", tmp_path_factory.mktemp("steer-llama") / "m", d_model=32, n_layers=2)
    return HookedModel.load(str(path))


@pytest.fixture(scope="session")
def word_texts():
    rng = random.Random(0)
    return [" ".join(f"w{rng.randrange(40)}" for _ in range(rng.randrange(4, 16))) for _ in range(160)]


@pytest.fixture()
def random_sae():
    """An untrained sae-lens TopK SAE over the tiny model's 32-wide residual (seeded)."""
    from sae_lens import TopKSAE, TopKSAEConfig

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        sae = TopKSAE(TopKSAEConfig(d_in=32, d_sae=64, k=4))
        sae.b_enc.data.normal_(0, 0.1)
    sae.cfg.metadata.thinklens_site = "resid_post.0"
    return sae.eval()


@pytest.fixture(scope="session")
def sae_training(tiny_llama, word_texts, tmp_path_factory):
    """A tiny SAE trained by sae-lens (a few seconds), its folder, and the process state around training:
    the signal handlers installed before (not the defaults: under ``nohup ... &`` SIGINT is ignored) and
    after, and whether torch's global RNG state and the model's hooks were left as they were."""
    from thinklens.steering.configs import SAETrainConfig
    from thinklens.steering.sae import train_sae

    out = tmp_path_factory.mktemp("sae") / "resid_post.0"
    cfg = SAETrainConfig(site="resid_post.0", d_sae=64, k=4, training_tokens=12_000, train_batch_size_tokens=512,
                         store_batch_size_prompts=8, n_batches_in_buffer=4, n_eval_batches=2)
    handlers = (signal.SIGINT, signal.SIGTERM)
    before = {s: signal.getsignal(s) for s in handlers}
    rng, hooks = torch.get_rng_state(), module_hooks(tiny_llama.hf)
    sae, metrics = train_sae(tiny_llama, word_texts, cfg, out_dir=out)
    return SimpleNamespace(sae=sae, metrics=metrics, out=out, handlers_before=before,
                           handlers_after={s: signal.getsignal(s) for s in handlers},
                           rng_kept=torch.equal(rng, torch.get_rng_state()), hooks_kept=hooks == module_hooks(tiny_llama.hf))


@pytest.fixture(scope="session")
def trained_sae(sae_training):
    """``(sae, metrics, folder)`` of :func:`sae_training`."""
    return sae_training.sae, sae_training.metrics, sae_training.out
