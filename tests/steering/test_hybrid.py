"""Hybrid base/thinking steering: segmentation, vector training, disagreement-gated generation."""

from __future__ import annotations

import pytest
import torch

from thinklens import ThinklensError
from thinklens.steering.hybrid import HybridConfig, segment_sentences, sentence_activations, train_hybrid_vectors
from thinklens.steering.hybrid_generate import MODES, evaluate_hybrid, hybrid_generate

CFG = HybridConfig(site="resid_post.0", n_categories=2, k=1, sae_steps=30, vector_iters=4, vector_batch=8,
                   strengths=(0.5, 1.0), windows=(1, 2))


def test_segmentation():
    toks = ["hmm", "<<", "7", "+", "5", "=", "12", ">>", "wait", "<<", "7", "+", "5", "=", "13", ">>", "</think>", "so",
            "####", "13", "<eos>"]
    spans = segment_sentences(toks)
    assert [" ".join(toks[a:b]) for a, b in spans] == ["hmm", "<< 7 + 5 = 12 >>", "wait", "<< 7 + 5 = 13 >>", "</think>",
                                                        "so", "#### 13"]
    assert segment_sentences([" The", " cat", " sat", ".", " It", " ran", "!"]) == [(0, 4), (4, 7)]


@pytest.fixture(scope="module")
def pair(tiny_llama, tmp_path_factory):
    from thinklens import HookedModel
    from tools.testing import build_tiny_model

    other = HookedModel.load(str(build_tiny_model("llama", tmp_path_factory.mktemp("think") / "m", d_model=32, n_layers=2, seed=3)))
    prompts = [f"w{i} w{i + 3} w{i + 5}" for i in range(10)]
    traces = other.generate(prompts, max_new_tokens=10)
    return tiny_llama, other, traces


def test_sentence_activations_are_means(pair):
    base, think, traces = pair
    sent = sentence_activations(think, traces[:2], "resid_post.0")
    k, st, en = sent.spans[0]
    a = think.capture(torch.tensor([sent.seqs[k]]), ["resid_post.0"]).acts[think.resolve_site("resid_post.0")][0]
    x = a[st:en].mean(0) - sent.mean
    assert torch.allclose(sent.acts[0], x / x.norm(), atol=1e-5)
    assert torch.allclose(sent.acts.norm(dim=-1), torch.ones(len(sent.acts)), atol=1e-5)


def test_vectors_lower_the_loss(pair):
    base, think, traces = pair
    hv = train_hybrid_vectors(base, think, traces, CFG)
    assert hv.vectors.shape == (2, 32) and sum(hv.counts) == sum(len(segment_sentences(t.tokens)) for t in traces)
    before, after = hv.losses["bias"][0], hv.losses["bias"][-1]
    assert after < before
    assert not any(p.grad is not None for p in base.hf.parameters())
    assert all(p.requires_grad for p in base.hf.parameters())  # restored after training

    # same model as base and thinking: they never disagree, so nothing is steered
    same = hybrid_generate(base, base, hv, ["w1 w2", "w3 w4 w5"], CFG, mode="hybrid", max_new_tokens=6)
    plain = base.generate(["w1 w2", "w3 w4 w5"], max_new_tokens=6)
    assert same.fired == 0 and same.texts == [t.text for t in plain]

    res = evaluate_hybrid(base, think, hv, ["w1 w2", "w3 w4 w5", "w6"], [1, 2, 3], CFG, max_new_tokens=5)
    assert set(res) == set(MODES)
    for row in res.values():  # fractions of counted tokens; accuracy the mean of the graded outcomes
        assert round(row["fired_fraction"] * row["tokens"], 6) == round(row["fired_fraction"] * row["tokens"])
        assert 0 <= row["changed_fraction"] <= row["fired_fraction"] + 1e-9
        assert row["accuracy"] == sum(row["correct"]) / len(row["correct"]) and len(row["correct"]) == 3
    direct = hybrid_generate(base, think, hv, ["w1 w2", "w3 w4 w5", "w6"], CFG, mode="hybrid", max_new_tokens=5)
    assert res["hybrid"]["fired_fraction"] == direct.fired / direct.n_tokens and res["hybrid"]["tokens"] == direct.n_tokens
    assert res["base"]["fired_fraction"] == 0 and res["thinking"]["fired_fraction"] == 0
    assert res["hybrid"]["fired_fraction"] > 0
    think_only = hybrid_generate(base, think, None, ["w1 w2"], CFG, mode="thinking", max_new_tokens=6)
    assert think_only.texts == [think.generate(["w1 w2"], max_new_tokens=6)[0].text]


def test_bad_inputs(pair):
    base, think, _ = pair
    with pytest.raises(ThinklensError, match="hybrid mode"):
        hybrid_generate(base, think, None, ["w1"], CFG, mode="hybird")
    with pytest.raises(ThinklensError, match="hybrid vectors"):
        hybrid_generate(base, think, None, ["w1"], CFG, mode="hybrid")
    with pytest.raises(ThinklensError, match="n_categories"):
        HybridConfig(n_categories=1)


def test_category_reads_the_open_sentence_at_its_own_positions():
    """The state that picks a category at step t is the mean thinking state over the open sentence's tokens, each
    read where it is the input (``states[k]`` is the input whose next token is ``generated[k]``), as
    training averages a sentence's positions. States numbered by step make the positions visible: the open
    sentence ``<< 3 +`` (generated[2:5]) at t=5 is read at steps 3, 4, 5 (mean 4); one position early reads
    2, 3, 4 (mean 3, the mutant 'category from the wrong position'); a closed sentence reads step t alone."""
    from types import SimpleNamespace

    from thinklens.steering.hybrid_generate import HybridChoice

    words = ["a", ".", "<<", "3", "+"]
    tok = SimpleNamespace(decode=lambda ids: words[ids[0]])
    site = "resid_post.1"
    states = {k: torch.full((2, 3), float(k)) for k in range(8)}  # [batch, d] per step
    fake = SimpleNamespace(base=SimpleNamespace(model=SimpleNamespace(tokenizer=tok)), site=site,
                           guide=SimpleNamespace(states={site: states}))
    got = HybridChoice._sentence_state(fake, 1, list(range(5)), 5)
    assert torch.equal(got, torch.full((3,), 4.0))
    words[:] = ["a", ".", "<<", "3", "."]  # the last token closes the sentence: the current position alone
    assert torch.equal(HybridChoice._sentence_state(fake, 0, list(range(5)), 5), torch.full((3,), 5.0))


def test_open_token_labels_the_token_before_each_later_sentence():
    """``open_token``: a sentence's loss also covers the generated token before it (where '.' against '.\\n'
    decides whether it opens), predicted one position earlier; a trace's first sentence keeps its span, since
    the token before it is the prompt's. Mutant killed: steering from start-2 for every sentence."""
    from thinklens.steering.hybrid import Sentences, _sentence_batch

    seqs = [[1, 2, 3, 10, 11, 12, 13, 14]]  # a prompt of 3 tokens, then sentences [3, 4) and [4, 8)
    sent = Sentences(seqs, [(0, 3, 4), (0, 4, 8)], ["a", "b"], torch.zeros(2, 4), torch.zeros(4), prompt_lens=[3])
    plain, opened = (_sentence_batch(sent, [0, 1], pad=0, open_token=o)["steer"] for o in (False, True))
    assert plain[1].nonzero().flatten().tolist() == [3, 4, 5, 6]  # producing tokens 4..7
    assert opened[1].nonzero().flatten().tolist() == [2, 3, 4, 5, 6]  # and token 3, the first generated one
    assert opened[0].tolist() == plain[0].tolist() == [False, False, True] + [False] * 5  # before it: the prompt token


def test_random_vector_control_is_random_directions_with_the_trained_norms(pair, monkeypatch):
    """Every steering vector the ``random_vectors`` mode adds is a row of ``_random_vectors`` (random directions, the
    norms of ``bias + v_c``), never a trained vector; the hybrid adds ``bias + v_c`` itself. Mutant killed: "hybrid's
    random-vector control built from the trained vectors" (bench/mutants.py), whose control equals the hybrid."""
    import thinklens.steering.hybrid_generate as hg

    base, think, traces = pair
    hv = train_hybrid_vectors(base, think, traces, CFG)
    trained = hv.bias[None] + hv.vectors  # [category, d]
    rand = hg._random_vectors(hv, CFG.seed)  # [category, d]
    assert torch.allclose(rand.norm(dim=-1), trained.norm(dim=-1), rtol=1e-5)
    seen: list[torch.Tensor] = []
    real = hg._steer_candidates

    def spy(dec, rows, vecs, cfg, site):
        seen.extend(vecs)
        return real(dec, rows, vecs, cfg, site)

    monkeypatch.setattr(hg, "_steer_candidates", spy)
    for mode, allowed in (("random_vectors", rand), ("hybrid", trained)):
        seen.clear()
        hybrid_generate(base, think, hv, ["w1 w2", "w3 w4 w5", "w6"], CFG, mode=mode, max_new_tokens=5)
        assert seen, f"{mode}: steering never fired"
        for v in seen:
            assert any(torch.equal(v, a) for a in allowed), mode
            assert not any(torch.allclose(v, t, atol=1e-4) for t in (trained if mode == "random_vectors" else rand))


def test_steering_reach_is_zero_only_for_vectors_that_change_nothing(pair):
    """The reach a null needs (steering_reach): trained vectors move the base model's next-token log-probabilities
    through the generation's own steering path; zero vectors do not, exactly."""
    import dataclasses

    from thinklens.steering.hybrid_generate import MIN_REACH, steering_reach

    base, think, traces = pair
    cfg = dataclasses.replace(CFG, vector_iters=20)  # 4 iterations move this tiny model by 0.009 nats, just under
    hv = train_hybrid_vectors(base, think, traces, cfg)
    prompts = ["w1 w2", "w3 w4 w5", "w6"]
    r = steering_reach(base, hv, prompts, cfg)
    assert r["shift"] >= MIN_REACH and r["moves_the_base"] and r["n_prompts"] == 3 and r["strength"] == 1.0
    inert = dataclasses.replace(hv, bias=torch.zeros_like(hv.bias), vectors=torch.zeros_like(hv.vectors))
    z = steering_reach(base, inert, prompts, cfg)
    assert z["shift"] == 0.0 and z["tv"] == 0.0 and z["top_changed"] == 0.0 and not z["moves_the_base"]
