"""MI trajectories, suppression and Representation Recycling on tiny random models (offline, CPU)."""

from __future__ import annotations

import pytest
import torch

from thinklens import RepeatBlock, Site
from thinklens.analyses.mi.estimator import nhsic_trajectory
from thinklens.analyses.mi.figures_interventions import figure_recycling, figure_suppression
from thinklens.analyses.mi.recycling import default_layer, recycle_generate, recycling_eval
from thinklens.analyses.mi.suppression import suppress_tokens, suppression_test
from thinklens.analyses.mi.trajectory import golden_answer_vectors, mi_trajectories
from thinklens.analyses.mi.vocab import random_token_ids, token_ids_for_words
from thinklens.errors import ThinklensError

PROMPTS = ["w1 w2 w3 w4", "w5 w6", "w7 w8 w9", "w10", "w11 w12 w13", "w14 w15", "w16", "w17 w18"]
SOLUTIONS = ["w3 w4 w5", "w6 w7", "w9 w9 w9 w10", "w11", "w12", "w13 w14", "w20 w21", "w30"]


@pytest.fixture(scope="module")
def model(tiny_models):
    return tiny_models["llama"]


def test_golden_answer_vectors_are_last_token_states(model) -> None:
    gold = golden_answer_vectors(model, SOLUTIONS[:3], ["resid_post.-1"], batch_size=2)
    site = Site("resid_post", model.n_layers - 1)
    for i, sol in enumerate(SOLUTIONS[:3]):
        alone = model.capture([sol], [site])[site][0, -1]
        torch.testing.assert_close(gold[site][i], alone, atol=1e-5, rtol=0)


def test_mi_trajectories_score_the_traced_states(model) -> None:
    sites = ["resid_post.-1", "resid_post.0"]
    trajs = mi_trajectories(model, PROMPTS[:3], SOLUTIONS[:3], sites=sites, max_new_tokens=6)
    traces = model.generate(PROMPTS[:3], max_new_tokens=6, capture=sites)
    gold = golden_answer_vectors(model, SOLUTIONS[:3], sites)
    for traj, tr in zip(trajs, traces):
        assert traj.token_ids == tuple(tr.token_ids) and traj.tokens == tuple(tr.tokens)
        assert list(traj.curves) == [Site("resid_post", model.n_layers - 1), Site("resid_post", 0)]
        for site, curve in traj.curves.items():
            assert len(curve) == len(tr)
            i = PROMPTS.index(tr.prompt)
            torch.testing.assert_close(curve.mi, nhsic_trajectory(tr.hidden[site], gold[site][i]).mi)
    assert trajs[0].curve() is trajs[0].curves[Site("resid_post", model.n_layers - 1)]
    with pytest.raises(ThinklensError):
        trajs[0].curve("resid_post.1" if model.n_layers > 2 else "mlp_out.0")
    with pytest.raises(ThinklensError, match="solutions"):
        mi_trajectories(model, PROMPTS[:2], SOLUTIONS[:1])


def test_vocab_helpers(model) -> None:
    table = token_ids_for_words(model.tokenizer, ["w1", "w2"])
    assert table == {"w1": [model.tokenizer.convert_tokens_to_ids("w1")], "w2": [model.tokenizer.convert_tokens_to_ids("w2")]}
    with pytest.raises(ThinklensError, match="thinking words"):
        token_ids_for_words(model.tokenizer, ["Wait"])
    ids = random_token_ids(model.tokenizer, 5, exclude=[3, 4], pool="any", seed=1)
    assert len(set(ids)) == 5 and not {3, 4} & set(ids)
    assert not set(model.tokenizer.all_special_ids) & set(ids)
    assert ids == random_token_ids(model.tokenizer, 5, exclude=[3, 4], pool="any", seed=1)
    with pytest.raises(ThinklensError, match="pool"):
        random_token_ids(model.tokenizer, 5)  # the word tokenizer has no alphabetic tokens


def test_suppressed_tokens_are_never_emitted(model) -> None:
    plain = model.generate(PROMPTS, max_new_tokens=8)
    emitted = sorted({i for t in plain for i in t.token_ids} - set(model.tokenizer.all_special_ids))[:6]
    blocked = model.generate(PROMPTS, max_new_tokens=8, interventions=[suppress_tokens(emitted)])
    assert not {i for t in blocked for i in t.token_ids} & set(emitted)
    assert all(torch.isfinite(t.entropy).all() for t in blocked)  # no NaN from -inf logits


def test_suppression_test_table(model) -> None:
    words = ["w3", "w5"]
    res = suppression_test(model, PROMPTS[:4], [None] * 4, words, n_random=2, pool="any", max_new_tokens=4)
    assert [r.condition for r in res.rows] == ["none", "thinking", "random_0", "random_1"]
    assert [r.n_ids for r in res.rows] == [0, 2, 2, 2]
    assert not set(res.thinking_ids) & set(res.random_ids[0]) and res.random_ids[0] != res.random_ids[1]
    assert res.summary()["drop_thinking"] == 0.0  # gold answers None: nothing is ever correct
    assert len(figure_suppression(res).data[0].x) == 4


def test_rr_with_probability_zero_is_plain_greedy(model) -> None:
    plain = model.generate(PROMPTS, max_new_tokens=7)
    rr = recycle_generate(model, PROMPTS, thinking_ids=list(range(64)), probability=0.0, max_new_tokens=7)
    assert [t.token_ids for t in rr] == [tuple(t.token_ids) for t in plain]
    assert all(t.recycled_steps == () for t in rr)


def test_rr_cache_holds_one_entry_per_position(model) -> None:
    """Recycling every step: each layer's cache must still grow by exactly one entry per step."""
    for prompt in PROMPTS[:3]:
        (rr,) = recycle_generate(model, [prompt], thinking_ids=list(range(64)), probability=1.0, max_new_tokens=9)
        n_prompt = len(model.tokenize([prompt])["input_ids"][0])
        assert rr.recycled_steps == tuple(range(len(rr.token_ids)))
        assert set(rr.cache_lengths) == {n_prompt + len(rr.token_ids) - 1}
    batch = recycle_generate(model, PROMPTS, thinking_ids=list(range(64)), probability=0.5, seed=1, max_new_tokens=9)
    assert len(set(batch[0].cache_lengths)) == 1


def test_rr_first_recycled_token_matches_a_full_forward_oracle(model) -> None:
    """Before any recycling the cache is the plain one, so at the first recycled step t0 the logits
    must equal a full forward over prompt + g[:t0] with the block repeated at the last position."""
    layer = default_layer(model.n_layers)
    differing = 0
    for prompt in PROMPTS:
        (plain,) = model.generate([prompt], max_new_tokens=8)
        g = plain.token_ids
        t0 = next((t for t in range(1, len(g)) if g[t] not in g[:t]), None)
        if t0 is None:
            continue
        (rr,) = recycle_generate(model, [prompt], thinking_ids=[g[t0]], probability=1.0, max_new_tokens=t0 + 1)
        assert rr.token_ids[:t0] == tuple(g[:t0]) and rr.recycled_steps == (t0,)
        ids = torch.tensor([plain.prompt_ids + g[:t0]])
        last = ids.shape[1] - 1
        logits = model.forward_with(ids, [RepeatBlock(layer, positions=[last])])[0, -1]
        assert rr.token_ids[t0] == int(logits.argmax())
        differing += int(rr.token_ids[t0] != g[t0])
    assert differing >= 1  # the oracle is not vacuous: recycling changed some token


def test_recycling_eval_and_errors(model) -> None:
    res = recycling_eval(model, PROMPTS[:3], [None] * 3, ["w1", "w2"], probability=1.0, max_new_tokens=5)
    assert res.n == 3 and res.layer == default_layer(model.n_layers) and res.accuracy_rr == 0.0
    assert figure_recycling({"tiny": res}).data[1].y == (0.0,)
    with pytest.raises(ThinklensError, match="exactly one"):
        recycle_generate(model, PROMPTS, ["w1"], thinking_ids=[4])
    with pytest.raises(ThinklensError, match="probability"):
        recycle_generate(model, PROMPTS, ["w1"], probability=1.5)
