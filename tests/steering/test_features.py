"""Feature statistics: correlations against numpy, top contexts, per-step activations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from thinklens import Site, ThinklensError
from thinklens.steering.features import FeatureStats, encode, feature_stats, feature_trace, pearson_columns, trace_prompt

SITE = Site("resid_post", 0)


def test_pearson_matches_numpy():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, 6, generator=g)
    x[:, 2] = 1.0  # constant column -> 0
    y = (torch.rand(50, generator=g) > 0.5).float()
    got = pearson_columns(x, y)
    for j in range(6):
        want = 0.0 if j == 2 else np.corrcoef(x[:, j].numpy(), y.numpy())[0, 1]
        assert abs(float(got[j]) - want) < 1e-5


def test_feature_stats(tiny_llama, random_sae):
    prompts = [f"w{i} w{i + 1} w{i + 2}" for i in range(8)]
    traces = tiny_llama.generate(prompts, max_new_tokens=8, capture=[SITE])
    word = traces[0].tokens[2].strip()
    correct = [i % 2 == 0 for i in range(8)]
    st = feature_stats(random_sae, traces, SITE, tokenizer=tiny_llama.tokenizer, correct=correct, words=(word,))
    n = sum(len(t) for t in traces)
    assert st.n_tokens == n and len(st.freq) == 64 and st.word_counts[word] >= 1
    acts = torch.cat([encode(random_sae, t.hidden[SITE]) for t in traces])
    y = torch.tensor([float(tok.strip() == word) for t in traces for tok in t.tokens])
    assert np.allclose(st.corr_words[word], pearson_columns(acts, y).numpy(), atol=1e-6)
    for f, rows in st.top_contexts.items():
        vals = [r["act"] for r in rows]
        assert vals == sorted(vals, reverse=True) and abs(vals[0] - st.max_act[f]) < 1e-4
    assert st.accuracy == 0.5 and len(st.corr_correct) == 64
    again = FeatureStats.from_json(st.to_json())
    assert again.top_contexts.keys() == st.top_contexts.keys()
    best = st.best_for_word(word)
    assert st.corr_words[word][best] == max(st.corr_words[word])
    with pytest.raises(ThinklensError, match="thinking word"):
        st.best_for_word("nope")


def test_feature_trace(tiny_llama, random_sae):
    ft = trace_prompt(tiny_llama, random_sae, "w1 w2 w3", [0, 5], max_new_tokens=5)
    assert len(ft.acts) == len(ft.tokens) and len(ft.acts[0]) == 2
    tr = tiny_llama.generate(["w1 w2 w3"], max_new_tokens=5, capture=[SITE])[0]
    assert feature_trace(random_sae, tr, SITE, [0, 5]).acts == ft.acts
    with pytest.raises(ThinklensError, match="feature index"):
        feature_trace(random_sae, tr, SITE, [99])
    with pytest.raises(ThinklensError, match="capture"):
        feature_trace(random_sae, tiny_llama.generate(["w1"], max_new_tokens=2)[0], SITE, [0])
