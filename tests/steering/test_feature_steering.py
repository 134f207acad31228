"""Feature steering: AddVector of a decoder row, clamping with the error term kept, scaling in units of the feature's
own activation (exactness oracles)."""

from __future__ import annotations

import pytest
import torch

from thinklens import Site, ThinklensError
from thinklens.steering.feature_steering import (
    ClampFeature,
    ScaleFeature,
    add_feature,
    clamp_feature,
    equal_norm_arms,
    feature_direction,
)

PROMPTS = ["w1 w2 w3 w4 w5", "w7 w8 w9"]
SITE = Site("resid_post", 0)


def test_clamp_scale_one_changes_nothing(tiny_llama, random_sae):
    base = tiny_llama.forward_with(PROMPTS)
    got = tiny_llama.forward_with(PROMPTS, [clamp_feature(SITE, random_sae, 5, 1.0, mode="scale")])
    assert torch.equal(base, got)


def test_clamp_to_own_value_changes_nothing(tiny_llama, random_sae):
    acts = tiny_llama.capture(PROMPTS[:1], [SITE]).acts[SITE]  # [1, pos, d]
    with torch.no_grad():
        z = random_sae.encode(acts)
    pos = 3
    f = int(z[0, pos].argmax())  # an active feature there
    own = float(z[0, pos, f])
    assert own > 0
    base = tiny_llama.forward_with(PROMPTS[:1])
    got = tiny_llama.forward_with(PROMPTS[:1], [clamp_feature(SITE, random_sae, f, own, positions=[pos])])
    assert (base - got).abs().max() <= 1e-6


def test_clamp_changes_output_and_keeps_error_term(tiny_llama, random_sae):
    acts = tiny_llama.capture(PROMPTS, [SITE]).acts[SITE]
    iv = clamp_feature(SITE, random_sae, 7, 3.0)
    steered = tiny_llama.capture(PROMPTS, [SITE], interventions=[iv]).acts[SITE]
    z = random_sae.encode(acts)
    z2 = z.clone()
    z2[..., 7] = 3.0
    oracle = acts + (random_sae.decode(z2) - random_sae.decode(z))  # hand-written formula
    mask = tiny_llama.tokenize(PROMPTS)["attention_mask"].bool()
    assert torch.allclose(steered[mask], oracle[mask], atol=1e-6)
    assert not torch.equal(steered, acts)


def test_add_feature_is_exact(tiny_llama, random_sae):
    orig = tiny_llama.capture(PROMPTS, [SITE]).acts[SITE]
    iv = add_feature(SITE, random_sae, 11, 2.5)
    steered = tiny_llama.capture(PROMPTS, [SITE], interventions=[iv]).acts[SITE]
    mask = tiny_llama.tokenize(PROMPTS)["attention_mask"].bool()
    v = 2.5 * random_sae.W_dec[11].detach()
    assert torch.equal(steered[mask], (orig + v)[mask])
    assert torch.equal(steered[~mask], orig[~mask])  # padding untouched


def test_steered_generation_differs(tiny_llama, random_sae):
    plain = tiny_llama.generate(PROMPTS, max_new_tokens=6)
    steered = tiny_llama.generate(PROMPTS, max_new_tokens=6, interventions=[add_feature(SITE, random_sae, 3, 50.0)])
    assert [t.token_ids for t in plain] != [t.token_ids for t in steered]
    assert [t.token_ids for t in plain] == [t.token_ids for t in tiny_llama.generate(PROMPTS, max_new_tokens=6)]


@pytest.mark.parametrize("make", [lambda sae: clamp_feature(SITE, sae, 1, 2.0), lambda sae: ScaleFeature(SITE, sae, 1, -1.0)],
                         ids=["clamp", "scale"])
def test_hooks_removed_after_exception(tiny_llama, random_sae, hooks_of, make):
    before = hooks_of(tiny_llama.hf)
    with pytest.raises(RuntimeError):
        with tiny_llama.intervene([make(random_sae)]):
            assert hooks_of(tiny_llama.hf) != before  # the intervention is hooked in here
            raise RuntimeError("boom")
    assert hooks_of(tiny_llama.hf) == before


def _active_feature(tiny_llama, sae):
    """A feature active at some tokens of PROMPTS and off at others (the gate must show both)."""
    acts = tiny_llama.capture(PROMPTS, [SITE]).acts[SITE]  # [batch, pos, d]
    mask = tiny_llama.tokenize(PROMPTS)["attention_mask"].bool()  # [batch, pos]
    with torch.no_grad():
        z = sae.encode(acts)[mask]  # [tokens, feature]
    on = (z > 0).float().mean(0)  # [feature]
    f = int(torch.where((on > 0) & (on < 1), on, torch.zeros_like(on)).argmax())
    assert 0 < float(on[f]) < 1
    return f, acts, mask


def test_scale_feature_adds_c_times_its_own_activation(tiny_llama, random_sae):
    """Oracle: x' = x + c * z_f(x) * W_dec[f], token by token, and exactly x where the feature is off; the same as
    clamping the feature to (1 + c) times its own value with the error term kept. Mutants killed: the gate left out (c *
    W_dec[f] added at every token, as add mode does), the decoder norm dropped (the rows here are not unit)."""
    f, acts, mask = _active_feature(tiny_llama, random_sae)
    for c in (-1.0, 2.5):
        steered = tiny_llama.capture(PROMPTS, [SITE], interventions=[ScaleFeature(SITE, random_sae, f, c)]).acts[SITE]
        with torch.no_grad():
            z = random_sae.encode(acts)[..., f]  # [batch, pos]
            oracle = acts + c * z[..., None] * random_sae.W_dec[f]  # hand-written formula
        assert torch.allclose(steered[mask], oracle[mask], atol=1e-5)
        off = mask & (z == 0)
        assert off.any() and torch.equal(steered[off], acts[off])  # nothing added where the feature is off
        assert not torch.equal(steered[mask], acts[mask])
        clamped = tiny_llama.capture(PROMPTS, [SITE], interventions=[clamp_feature(SITE, random_sae, f, 1 + c, mode="scale")])
        assert torch.allclose(steered[mask], clamped.acts[SITE][mask], atol=1e-5)
    same = tiny_llama.capture(PROMPTS, [SITE], interventions=[ScaleFeature(SITE, random_sae, f, 0.0)]).acts[SITE]
    assert torch.equal(same, acts)


def test_scale_feature_along_another_direction_adds_the_same_norm(tiny_llama, random_sae):
    """An arm's direction gets, at every token, the norm the feature's own steering adds there (the per-token equal-norm
    control). Mutant killed: the control gated by its own feature's activation instead of the steered one's."""
    f, acts, mask = _active_feature(tiny_llama, random_sae)
    u = feature_direction(random_sae, (f + 1) % 64, unit=True)
    own = tiny_llama.capture(PROMPTS, [SITE], interventions=[ScaleFeature(SITE, random_sae, f, 3.0)]).acts[SITE]
    other = tiny_llama.capture(PROMPTS, [SITE], interventions=[ScaleFeature(SITE, random_sae, f, 3.0, u)]).acts[SITE]
    d_own, d_other = (own - acts)[mask], (other - acts)[mask]  # [tokens, d]
    assert torch.allclose(d_own.norm(dim=-1), d_other.norm(dim=-1), atol=1e-5)
    with torch.no_grad():
        z = random_sae.encode(acts)[..., f][mask]  # [tokens]
        oracle = 3.0 * z[:, None] * float(random_sae.W_dec[f].norm()) * u  # [tokens, d]
    assert torch.allclose(d_other, oracle, atol=1e-5)
    with pytest.raises(ThinklensError, match="direction"):
        ScaleFeature(SITE, random_sae, f, 1.0, torch.ones(5))
    with pytest.raises(ThinklensError, match="coeff"):
        ScaleFeature(SITE, random_sae, f, float("nan"))


def test_bad_inputs(tiny_llama, random_sae):
    from sae_lens import TopKSAE, TopKSAEConfig

    with pytest.raises(ThinklensError, match="feature index"):
        add_feature(SITE, random_sae, 64, 1.0)
    with pytest.raises(ThinklensError, match="coeff"):
        add_feature(SITE, random_sae, 1, float("inf"))
    with pytest.raises(ThinklensError, match="clamp value"):
        ClampFeature(SITE, random_sae, 1, float("nan"))
    narrow = TopKSAE(TopKSAEConfig(d_in=16, d_sae=8, k=2))
    with pytest.raises(ThinklensError, match="SAE width"):
        tiny_llama.forward_with(PROMPTS, [clamp_feature(SITE, narrow, 1, 1.0)])
    with pytest.raises(ThinklensError, match="width.*expected 32"):
        tiny_llama.forward_with(PROMPTS, [add_feature(SITE, narrow, 1, 1.0)])


def test_equal_norm_arms(random_sae):
    arms = equal_norm_arms(random_sae, 5, top_feature=9, seed=0)
    assert set(arms) == {"feature", "random_feature", "top_activating", "random_direction"}
    for vec, _ in arms.values():
        assert abs(float(vec.norm()) - 1.0) < 1e-5
    assert arms["feature"][1] == 5 and arms["random_feature"][1] not in (5, 9)
    assert torch.equal(feature_direction(random_sae, 5, unit=True), arms["feature"][0])


def test_scale_sweep_gates_every_arm_by_the_steered_feature(tiny_llama, random_sae, monkeypatch):
    """In the steer sweep's scale mode every arm is gated by the steered feature's activation (same tokens, same norm),
    and coefficient 0 is one unsteered run. Mutant killed: each arm gated by its own feature (the random feature's arm
    then steers where the random feature fires, by its own amounts: not the equal-norm control)."""
    from thinklens.steering import effects

    built = []

    class Recording(ScaleFeature):
        def __post_init__(self) -> None:
            super().__post_init__()
            built.append(self)

    monkeypatch.setattr(effects, "ScaleFeature", Recording)
    arms = equal_norm_arms(random_sae, 5, top_feature=9, seed=0)
    rows = effects.steer_sweep(tiny_llama, PROMPTS, None, SITE, arms, (0.0, 2.0), mode="scale", sae=random_sae,
                               max_new_tokens=2, word="w1")
    assert {iv.feature for iv in built} == {5} and len(built) == len(arms)  # one per arm at c=2, none at c=0
    assert all(torch.equal(iv.direction, arms[r["arm"]][0]) for iv, r in zip(built, [r for r in rows if r["coeff"]]))
    assert len({r["sample"] for r in rows if r["coeff"] == 0}) == 1
    with pytest.raises(ThinklensError, match="scale steering"):
        effects.steer_sweep(tiny_llama, PROMPTS, None, SITE, {"random_direction": arms["random_direction"]}, (1.0,),
                            mode="scale", sae=random_sae, max_new_tokens=2)
