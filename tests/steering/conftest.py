"""Fixtures of the steering tests: a tiny Llama on a word vocabulary and SAEs over it (all in-process)."""

from __future__ import annotations

import random

import pytest
import torch


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory):
    from thinklens import HookedModel
    from thinklens.testing import build_tiny_model

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
def trained_sae(tiny_llama, word_texts, tmp_path_factory):
    """A tiny SAE trained by sae-lens (a few seconds) and its folder."""
    from steering.sae import SAETrainConfig, train_sae

    out = tmp_path_factory.mktemp("sae") / "resid_post.0"
    cfg = SAETrainConfig(site="resid_post.0", d_sae=64, k=4, training_tokens=12_000, train_batch_size_tokens=512,
                         store_batch_size_prompts=8, n_batches_in_buffer=4, n_eval_batches=2)
    sae, metrics = train_sae(tiny_llama, word_texts, cfg, out_dir=out)
    return sae, metrics, out
