"""SAE training through sae-lens, its on-disk format, site mapping and metrics."""

from __future__ import annotations

import math
import signal

import pytest
import torch

from thinklens import Site, ThinklensError
from thinklens.steering.sae import architectures, check_feature, check_sae, evaluate_sae, hook_name, load_sae, output_site, sae_site


def test_trained_folder_is_sae_lens_format(trained_sae):
    from sae_lens import SAE

    sae, metrics, out = trained_sae
    assert (out / "cfg.json").is_file() and (out / "sae_weights.safetensors").is_file()
    again = SAE.load_from_disk(str(out))  # sae-lens's own loader, no thinklens code
    assert again.cfg.d_sae == 64 and again.cfg.d_in == 32
    assert again.cfg.metadata.thinklens_site == "resid_post.0"
    assert again.cfg.metadata.hook_name == "model.layers.0"
    assert torch.equal(again.W_dec, sae.W_dec)


def test_metrics_are_sae_lens_metrics(trained_sae):
    """sae-lens's variance and sparsity metrics; its CE/KL (every position of right-padded rows, prompt and padding
    included: "CE loss recovered 1.387") are not reported -- thinklens.steering.sae_fidelity scores those on generated tokens."""
    _, m, _ = trained_sae
    for key in ("explained_variance", "l0", "dead_features"):
        assert key in m and m[key] is not None and math.isfinite(m[key]), key
    assert not {"ce_loss_recovered", "ce_loss_with_sae", "kl_div_score"} & {k for k, v in m.items() if v is not None}
    assert m["l0"] <= 4 + 1e-6  # topk k=4
    assert 0 <= m["dead_features"] <= 64


def test_evaluate_any_folder(tiny_llama, trained_sae, word_texts):
    _, _, out = trained_sae
    sae = load_sae(out)
    before = sae.cfg.metadata.hook_name
    m = evaluate_sae(tiny_llama, sae, word_texts[:32], n_batches=2, batch_prompts=8)
    assert m["site"] == "resid_post.0" and 0 < m["l0"] <= 4 + 1e-6
    assert sae.cfg.metadata.hook_name == before  # the caller's SAE is left as it was


def test_training_leaves_no_global_state(sae_training):
    # the handlers installed before training, whatever they were (the default one in a terminal; SIG_IGN for
    # SIGINT under `nohup ... &`): sae-lens installs its own and training must put these back
    assert sae_training.handlers_after == sae_training.handlers_before
    assert signal.getsignal(signal.SIGINT) is sae_training.handlers_before[signal.SIGINT]
    assert sae_training.rng_kept  # sae-lens draws from a forked RNG
    assert sae_training.hooks_kept  # sae-lens hooked a copy


def test_site_mapping(tiny_llama, random_sae):
    assert hook_name(tiny_llama, "resid_post.1") == "model.layers.1"
    assert output_site(tiny_llama, "resid_pre.1") == Site("resid_post", 0)
    assert hook_name(tiny_llama, "mlp_out.0") == "model.layers.0.mlp"
    with pytest.raises(ThinklensError, match="resid_pre.0"):
        output_site(tiny_llama, "resid_pre.0")
    random_sae.cfg.metadata.thinklens_site = None
    for name, want in [("blocks.1.hook_resid_post", "resid_post.1"), ("model.layers.0", "resid_post.0"),
                       ("blocks.1.hook_resid_pre", "resid_pre.1"), ("model.layers.1.mlp", "mlp_out.1")]:
        random_sae.cfg.metadata.hook_name = name
        assert str(sae_site(random_sae, tiny_llama)) == want
    random_sae.cfg.metadata.hook_name = "encoder.whatever"
    with pytest.raises(ThinklensError, match="site='resid_post.2'"):  # from Python: the keyword
        sae_site(random_sae, tiny_llama)


def test_bad_inputs(tiny_llama, random_sae, tmp_path):
    from sae_lens import TopKSAE, TopKSAEConfig

    narrow = TopKSAE(TopKSAEConfig(d_in=16, d_sae=8, k=2))
    with pytest.raises(ThinklensError, match=r"SAE width.*d_in=16.*expected 32"):
        check_sae(tiny_llama, narrow, "resid_post.0")
    with pytest.raises(ThinklensError, match=r"feature index.*0\.\.63"):
        check_feature(random_sae, 64)
    with pytest.raises(ThinklensError, match="feature index"):
        check_feature(random_sae, -1)
    with pytest.raises(ThinklensError, match="sae-lens folder"):
        load_sae(tmp_path)
    from thinklens.steering.configs import SAETrainConfig
    from thinklens.steering.sae import training_sae_config

    with pytest.raises(ThinklensError, match="did you mean 'topk'"):
        training_sae_config(SAETrainConfig(architecture="topkk"), 32)
    with pytest.raises(ThinklensError, match="k"):
        SAETrainConfig(k=2048, d_sae=1024)
    assert "topk" in architectures() and "standard" in architectures()
