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


def test_topk_sae_keeps_k_features(trained_sae):
    """Mutant killed (bench/mutants.py, "SAE top-k keeping k-1"): the training config built with k - 1. The folder
    sae-lens saves states the k asked for, and the SAE keeps exactly that many features on inputs large enough that
    every kept pre-activation is positive (a top-k SAE's L0 is k, not at most k)."""
    sae, _, out = trained_sae
    from sae_lens import SAE

    assert SAE.load_from_disk(str(out)).cfg.k == 4
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 32, generator=g) * 50.0  # [rows, d]
    with torch.no_grad():
        active = (sae.encode(x) > 0).sum(-1)  # [rows]
    assert int(active.max()) == 4 and float(active.float().mean()) > 3.5


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


def _offset_rows(n: int, d: int = 32, offset: float = 1000.0, seed: int = 0) -> torch.Tensor:
    """``[n, d]`` rows of a residual with a large constant part (as Gemma-3's): ``offset`` in dimension 0 plus sparse
    combinations of 64 fixed random unit directions (``seed`` draws the codes)."""
    dirs = torch.nn.functional.normalize(torch.randn(64, d, generator=torch.Generator().manual_seed(0)), dim=-1)  # [feature, d]
    g = torch.Generator().manual_seed(seed + 1)
    codes = torch.rand(n, 64, generator=g) * (torch.rand(n, 64, generator=g) < 0.06)  # [n, feature]
    rows = codes @ dirs * 50.0  # [n, d]
    rows[:, 0] += offset
    return rows


def test_sae_on_rows_with_a_large_mean_explains_them(tmp_path):
    """Regression (Gemma-3-270M resid_post.9: mean norm ~6500, spread ~1500): sae-lens starts the decoder bias at
    zero, and a TopK SAE never learned the offset in its budget (explained variance -11, 90% dead latents); started
    at the mean it explains the held-out rows (started at zero: explained variance about -300)."""
    from thinklens.steering.configs import SAETrainConfig
    from thinklens.steering.sae import train_sae_on_rows

    rows, held = _offset_rows(6000), _offset_rows(1000, seed=1)
    cfg = SAETrainConfig(site="resid_post.0", d_sae=128, k=4, training_tokens=24_576, train_batch_size_tokens=512)
    sae, m = train_sae_on_rows(rows, cfg, out_dir=tmp_path / "sae", held_out=held)
    assert m["explained_variance"] > 0.05, m
    assert sae.b_dec[0].item() == pytest.approx(1000.0, rel=0.05)


def test_sae_from_a_model_with_a_large_residual_mean_starts_at_it(tmp_path, word_texts):
    """The same through sae-lens's runner (train_sae): a tiny GPT-2 whose first block writes a constant 1000 into
    dimension 0 of the residual (as Gemma-3's massive activation does) gets an SAE whose decoder bias sits at the
    residual's mean, and explains the activations as well as on the same model without the offset (started at zero:
    explained variance far below 0)."""
    from thinklens import HookedModel
    from thinklens.steering.configs import SAETrainConfig
    from thinklens.steering.sae import row_metrics, train_sae
    from tools.testing import build_tiny_model

    cfg = SAETrainConfig(site="resid_post.0", d_sae=64, k=4, training_tokens=8_192, train_batch_size_tokens=512,
                         store_batch_size_prompts=8, n_batches_in_buffer=4, n_eval_batches=2)
    path = build_tiny_model("gpt2", tmp_path / "m", d_model=32, n_layers=2)
    ev = {}
    for offset in (0.0, 1000.0):
        model = HookedModel.load(str(path))
        with torch.no_grad():
            model.hf.transformer.h[0].mlp.c_proj.bias[0] += offset
        acts = model.capture(word_texts[:32], sites=["resid_post.0"])
        rows = acts["resid_post.0"][acts.attention_mask.bool()]  # [token, d]
        sae, _ = train_sae(model, word_texts, cfg, out_dir=tmp_path / f"sae-{offset:g}")
        assert sae.b_dec[0].item() == pytest.approx(rows[:, 0].mean().item(), abs=0.05 + 0.01 * offset)
        ev[offset] = row_metrics(sae, rows)["explained_variance"]
    assert ev[1000.0] == pytest.approx(ev[0.0], abs=0.1) and ev[0.0] > 0, ev
