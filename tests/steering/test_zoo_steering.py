"""The committed zoo artefacts: the tiny-think SAE (sae-lens format) and tiny-grpo; zoo-scale effects are `slow`."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SAE_DIR = ROOT / "data" / "saes" / "tiny-think-resid_post.2-topk32"
WAIT_FEATURE = 633  # most correlated with "next token is wait" on sampled tiny-think traces (see .notes)


def _zoo(name: str):
    from thinklens.zoo.registry import zoo_path

    if zoo_path(name) is None:
        pytest.skip(f"{name} not trained")
    from thinklens import HookedModel

    return HookedModel.load(name)


def test_committed_sae_loads_with_sae_lens_and_fits_tiny_think():
    from sae_lens import SAE

    from thinklens.steering.sae import check_sae

    if not SAE_DIR.is_dir():
        pytest.skip("SAE not committed")
    sae = SAE.load_from_disk(str(SAE_DIR))
    assert sae.cfg.d_sae == 1024 and sae.cfg.k == 32 and sae.cfg.metadata.hook_name == "model.layers.2"
    assert sum(p.stat().st_size for p in SAE_DIR.iterdir()) < 2 * 2**20
    model = _zoo("tiny-think")
    assert str(check_sae(model, sae)) == "resid_post.2"
    x = model.capture(["Tom has 7 apples . Tom buys 5 more . How many apples does Tom have ? <think>"],
                      ["resid_post.2"]).acts[model.resolve_site("resid_post.2")][0, 1:]
    with torch.no_grad():
        rec = sae.decode(sae.encode(x))
    ev = 1 - (x - rec).pow(2).sum() / (x - x.mean(0)).pow(2).sum()
    assert ev > 0.9


def test_tiny_grpo_is_a_sibling():
    folder = ROOT / "data" / "zoo" / "tiny-grpo"
    if not (folder / "config.json").is_file():
        pytest.skip("tiny-grpo not trained")
    assert sum(p.stat().st_size for p in folder.iterdir()) < 5 * 2**20
    from thinklens.steering.reasoning_vectors import lineage_report, load_weights

    _zoo("tiny-pre")
    a, _ = load_weights(str(folder))
    b, _ = load_weights("tiny-cot")
    base, _ = load_weights("tiny-pre")
    assert lineage_report(a, b, base).related


@pytest.mark.slow
def test_wait_feature_makes_tiny_think_say_wait():
    """Greedy tiny-think never says wait; adding the wait feature's direction makes it, a random one does not."""
    from thinklens.steering.corpora import zoo_prompts
    from thinklens.steering.effects import reflection_counts
    from thinklens.steering.feature_steering import add_feature, random_feature
    from thinklens.steering.sae import load_sae

    model = _zoo("tiny-think")
    sae = load_sae(SAE_DIR)
    prompts, _ = zoo_prompts(40, seed=30_000, style="think", min_steps=2, max_steps=5)
    coeff = 0.5 * 150.0  # half the mean residual norm at resid_post.2

    def waits(iv):
        return reflection_counts([t.text for t in model.generate(prompts, max_new_tokens=75, interventions=iv)])["wait"]

    assert waits([]) == 0
    assert waits([add_feature("resid_post.2", sae, WAIT_FEATURE, coeff, unit=True)]) > 1.0
    other = random_feature(sae, (WAIT_FEATURE,), seed=0)
    assert waits([add_feature("resid_post.2", sae, other, coeff, unit=True)]) < 0.2
