"""The sae-real settings' parts on a tiny in-process Llama: the row capture against sae-lens's own activation store,
explained variance by text against row_metrics, the random-decoder control, the corpus split, and the verdicts on
numbers put in by hand (the real-weight run is tests/steering/test_sae_real.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from thinklens.calibration.controls import SettingContext
from thinklens.steering import sae_real_validation as srv

ROWS = [[4, 5, 6, 1], [7, 8, 1, 9, 10, 11], [12, 13], [14, 1, 0, 15]]  # eos mid-row and at the end, a pad inside


@pytest.fixture(scope="module")
def llama(family_model):
    return family_model("llama")


@pytest.mark.filterwarnings("ignore::UserWarning")  # sae-lens: "fewer samples than training tokens", a tensor copy
def test_capture_keeps_exactly_the_rows_saelens_trains_on(llama, hooks_of):
    """Oracle: sae-lens's ActivationsStore over the same rows (right-padded, its own forward, its own filter) and a
    hand count. Kills: keeping the special positions (eos, pad), a shifted position, capturing another layer's output,
    leaving the stopping hook on the model. (Keeping left-padding slots is an equivalent mutant: they hold the pad id,
    which is excluded.)"""
    from sae_lens.training.activations_store import ActivationsStore

    from thinklens.steering.corpora import special_ids, token_rows
    from thinklens.steering.sae import _proxy, hook_name

    exclude = special_ids(llama.tokenizer)
    assert exclude == [0, 1]
    hooks = hooks_of(llama.hf)
    got = srv.capture_rows(llama, "resid_post.1", ROWS, exclude, batch_size=3)  # two batches: a ragged one
    assert hooks_of(llama.hf) == hooks
    hand = [(t, p) for t, r in enumerate(ROWS) for p, i in enumerate(r) if i not in exclude]
    assert list(zip(got.text.tolist(), got.pos.tolist())) == hand

    name = hook_name(llama, "resid_post.1")
    ds = token_rows(llama.tokenizer, ROWS)
    store = ActivationsStore(model=_proxy(llama, name, "cpu"), dataset=ds, streaming=False, hook_name=name,
                             hook_head_index=None, context_size=len(ds[0]["input_ids"]), d_in=32, n_batches_in_buffer=2,
                             total_training_tokens=10**6, store_batch_size_prompts=len(ROWS), train_batch_size_tokens=8,
                             prepend_bos=False, normalize_activations="none", device=torch.device("cpu"), dtype="float32",
                             exclude_special_tokens=torch.tensor(exclude))
    theirs = store.get_filtered_llm_batch()  # [rows, d], row-major like ours
    assert theirs.shape == got.acts.shape == (len(hand), 32)
    torch.testing.assert_close(got.acts, theirs, atol=1e-4, rtol=1e-4)


def test_ev_by_text_is_row_metrics_pooled_ev_at_full_resampling(random_sae):
    """Kills: a per-text mean in tot_ss (the texts are offset from each other), a mean of per-text ratios instead of
    the ratio of sums (texts of unequal size and fit), the gap unpaired or of the wrong sign."""
    from thinklens.steering.sae import row_metrics

    g = torch.Generator().manual_seed(0)
    text = torch.randint(0, 7, (90,), generator=g)
    acts = torch.randn(90, 32, generator=g) + 3 * text[:, None].float() / 7  # [rows, d]
    rows = srv.SiteRows(acts, text, torch.zeros(90, dtype=torch.long))
    res, tot = srv.ev_sums(random_sae, rows, 7)
    full = np.arange(7)[None]
    pooled = row_metrics(random_sae, acts)["explained_variance"]
    assert srv.ev_stat(res, tot)(full)[0] == pytest.approx(pooled, rel=1e-5, abs=1e-6)
    value, (lo, hi) = srv._interval(srv.ev_stat(res, tot), 7, seed=0)
    assert lo <= value <= hi and value == pytest.approx(pooled, rel=1e-5, abs=1e-6)
    other = srv.random_decoder(random_sae, seed=3)
    res_b, _ = srv.ev_sums(other, rows, 7)
    gap = srv.gap_stat(res, res_b, tot)(full)[0]
    assert gap == pytest.approx(pooled - row_metrics(other, acts)["explained_variance"], rel=1e-5, abs=1e-6)


def test_random_decoder_keeps_norms_and_everything_but_the_directions(random_sae):
    """Kills: unit rows (norms not restored), rows left as they were, the encoder or bias redrawn too, the original
    SAE edited in place, an unseeded draw."""
    before = random_sae.W_dec.detach().clone()
    rd = srv.random_decoder(random_sae, seed=0)
    assert torch.equal(random_sae.W_dec, before)
    torch.testing.assert_close(rd.W_dec.norm(dim=1), before.norm(dim=1))
    cos = torch.nn.functional.cosine_similarity(rd.W_dec, before, dim=1)
    assert cos.abs().max() < 0.9
    for name in ("W_enc", "b_enc", "b_dec"):
        assert torch.equal(getattr(rd, name), getattr(random_sae, name)), name
    assert torch.equal(srv.random_decoder(random_sae, seed=0).W_dec, rd.W_dec)
    assert not torch.equal(srv.random_decoder(random_sae, seed=1).W_dec, rd.W_dec)


def test_corpus_splits_by_start_and_puts_the_sink_on_an_excluded_token(llama, monkeypatch):
    """Kills: a split by completion (one start's samples on both sides), a first token both paths would train on (the
    tiny tokenizer has no BOS and no chat template: its EOS goes in front)."""
    from thinklens.steering.corpora import special_ids

    monkeypatch.setattr(srv, "neutral_prompts", lambda: [f"w{i} w{i + 1}" for i in range(3, 13)])
    plan = srv.Plan(n_prompts=6, samples=2, max_new_tokens=3, training_tokens=512, batch_tokens=64, lr=1e-3)
    train, held = srv.corpus(llama, plan, seed=0)
    assert len(train) == len(held) == 6
    starts = lambda rows: {tuple(p) for p, _ in rows}  # noqa: E731
    assert len(starts(train)) == len(starts(held)) == 3 and not starts(train) & starts(held)
    assert all(p[0] in special_ids(llama.tokenizer) and len(g) > 0 for p, g in train + held)


def test_top_contexts_show_live_features_with_the_activating_token(llama, random_sae):
    texts = [[1, 4, 5, 6, 7], [1, 8, 9, 10, 11, 12]]
    got = srv.capture_rows(llama, "resid_post.0", texts, [0, 1])
    shown = srv.top_contexts(random_sae, got, texts, llama.tokenizer, seed=0)
    assert 1 <= len(shown) <= srv.N_FEATURES and all(s.startswith("feature ") and "[" in s for s in shown)


GOOD = {"ev_a": (0.80, (0.78, 0.82)), "ev_b": (0.81, (0.79, 0.83)), "gap": (-0.01, (-0.03, 0.01)),
        "ev_random": (-0.7, (-0.8, -0.6)), "details": {"held_out_texts": 48}}


@pytest.mark.parametrize("change, verdict", [
    ({}, "recovered"),
    ({"gap": (-0.04, (-0.07, -0.01))}, "failed"),  # kills: the gap's point estimate compared instead of its interval
    ({"gap": (-0.06, (-0.08, -0.04))}, "failed"),  # kills: a margin of the wrong sign
    ({"ev_a": (0.55, (0.5, 0.6)), "ev_b": (0.55, (0.5, 0.6))}, "failed"),  # kills: the floor dropped (both equally poor)
    ({"ev_random": (0.08, (0.05, 0.12))}, "failed"),  # kills: the control's point estimate instead of its interval
    ({"ev_random": (0.3, (0.2, 0.4))}, "failed"),  # kills: the control not read at all
])
def test_planted_verdict_on_numbers_put_in_by_hand(monkeypatch, change, verdict):
    monkeypatch.setattr(srv, "measure", lambda ctx: GOOD | change)
    check = srv.SETTINGS[0].run(SettingContext(quick=True, seed=0, workdir=None, model="x"))
    assert check.verdict == verdict and check.statistic == "ev_gap" and check.n == 48
    assert check.details["ev_random_decoder"] == (GOOD | change)["ev_random"][0]


@pytest.mark.parametrize("value, ci, verdict", [
    (0.0, (-0.05, 0.05), "no-effect"),
    (-3.0, (-3.5, -2.5), "no-effect"),  # kills: a two-sided equivalence to 0 (a broken decoder adds variance)
    (0.05, (0.0, 0.12), "failed"),  # kills: the point estimate instead of the interval's upper end
    (0.9, (0.85, 0.95), "failed"),
])
def test_null_verdict_is_one_sided(monkeypatch, value, ci, verdict):
    monkeypatch.setattr(srv, "random_scores", lambda ctx: (value, ci, 24, {"model": "x"}))
    check = srv.SETTINGS[1].run(SettingContext(quick=True, seed=0, workdir=None, model="x"))
    assert check.verdict == verdict and check.n == 24 and check.details == {"model": "x"}
