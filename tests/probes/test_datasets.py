"""Probe datasets on a tiny random model, against raw HF forwards and a naive decoding loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from thinklens import HookedModel, Site
from thinklens.data.answers import answers_equal, extract_answer
from thinklens.errors import ThinklensError
from thinklens.generation.trace import Trace
from thinklens.probes.conformal import MondrianCalibrator
from thinklens.probes.datasets import (
    event_features,
    exit_tables,
    forced_exit_labels,
    layer_sweep,
    prompt_states,
    rollout_events,
    token_separator,
    trace_states_at,
)
from thinklens.probes.exits import evaluate_exit_policies
from thinklens.probes.lynx import LynxConfig, find_cue_events, lynx_sites
from thinklens.zoo.tokenizer import save_zoo_tokenizer, zoo_vocab
from tools.testing import build_tiny_model


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny random llama with the zoo's word-level tokenizer (numbers, ####, wait, hmm)."""
    path = build_tiny_model("llama", tmp_path_factory.mktemp("zooish"), vocab_size=len(zoo_vocab()) + 8)
    save_zoo_tokenizer(path)
    return HookedModel.load(str(path))


def _trace(model, prompt: str, words: str) -> Trace:
    prompt_ids = model.tokenizer(prompt)["input_ids"]
    ids = model.tokenizer(words, add_special_tokens=False)["input_ids"]
    return Trace(prompt=prompt, prompt_ids=prompt_ids, token_ids=ids, tokens=[model.tokenizer.decode([i]) for i in ids],
                 text=model.tokenizer.decode(ids, skip_special_tokens=True), stop_reason="eos")


@pytest.fixture(scope="module")
def traces(model):
    return [
        _trace(model, "Tom has 7 apples . <think>", "hmm << 7 + 5 = 12 >> wait << 7 + 5 = 12 >> #### 12"),
        _trace(model, "Ann has 3 pears . How many pears does Ann have ? <think>", "<< 3 * 2 = 6 >> #### 6"),
        _trace(model, "Bob has 9 eggs . <think>", "wait << 9 - 4 = 5 >> hmm wait #### 5"),
    ]


def test_events_on_word_level_tokens(model, traces):
    assert token_separator(model.tokenizer, traces[0].token_ids) == " "
    events = rollout_events(traces, model.tokenizer, LynxConfig(), "train")
    assert [[(e.token_index, e.cue) for e in evs] for evs in events] == [
        [(0, "hmm"), (8, "wait")],
        [(int(0.7 * 9) - 1, None)],  # no cue: fallback
        [(0, "wait"), (8, "hmm"), (9, "wait")],
    ]
    capped = rollout_events(traces, model.tokenizer, LynxConfig(max_events_calibration=1), "calibration")
    assert [len(e) for e in capped] == [1, 1, 1]
    # test rollouts: real cues only (the cue-less one has no event), uncapped
    test = rollout_events(traces, model.tokenizer, LynxConfig(), "test")
    assert [[(e.token_index, e.cue) for e in evs] for evs in test] == [[(0, "hmm"), (8, "wait")], [],
                                                                     [(0, "wait"), (8, "hmm"), (9, "wait")]]


def test_event_features_match_raw_hf_hidden_states(model, traces):
    events = rollout_events(traces, model.tokenizer, LynxConfig(), "train")
    sites = lynx_sites(model.n_layers)  # 2 layers: hidden_states (1, 2) = resid_post.0, final_norm
    assert [str(s) for s in sites] == ["resid_post.0", "final_norm"]
    X = event_features(model, traces, events, sites, batch_size=2)  # batches mix lengths: left padding
    expected = []
    for tr, evs in zip(traces, events):
        with torch.no_grad():
            hs = model.hf(torch.tensor([tr.prompt_ids + tr.token_ids]), output_hidden_states=True).hidden_states
        for ev in evs:
            col = len(tr.prompt_ids) + ev.token_index
            expected.append(torch.cat([hs[1][0, col], hs[2][0, col]]).numpy())
    assert X.shape == (6, 2 * model.d_model) and X.dtype == np.float32
    np.testing.assert_allclose(X, np.stack(expected), atol=1e-5)


def test_trace_rows_agree_with_a_forward_pass(model):
    (tr,) = model.generate(["Tom has 7 apples . <think>"], max_new_tokens=8, capture=["resid_post.1"])
    events = [[find_cue_events(["x"] * len(tr))[0]]]  # fallback event, not at the last token
    idx = events[0][0].token_index
    from_trace = trace_states_at(tr, [idx], ["resid_post.1"])
    np.testing.assert_allclose(from_trace, event_features(model, [tr], events, ["resid_post.1"]), atol=1e-5)
    with pytest.raises(ThinklensError, match="last token"):
        trace_states_at(tr, [len(tr) - 1], ["resid_post.1"])
    with pytest.raises(ThinklensError, match="trace sites"):
        trace_states_at(tr, [0], ["resid_post.0"])


def _naive_forced_exit(model, tr, ev, exit_ids, max_tokens, eos):
    ids = tr.prompt_ids + tr.token_ids[:ev.start_index] + exit_ids
    out = []
    with torch.no_grad():
        for _ in range(max_tokens):
            tok = int(model.hf(torch.tensor([ids + out])).logits[0, -1].argmax())
            out.append(tok)
            if tok in eos:
                break
    return out


def test_forced_exit_matches_a_naive_loop(model, traces):
    from thinklens.probes.datasets import eos_ids

    events = rollout_events(traces, model.tokenizer, LynxConfig(), "train")
    exit_string = "</think> ####"
    exit_ids = model.tokenizer(exit_string, add_special_tokens=False)["input_ids"]
    eos = eos_ids(model)
    naive = [_naive_forced_exit(model, tr, ev, exit_ids, 5, eos) for tr, evs in zip(traces, events) for ev in evs]
    naive_answers = [extract_answer(model.tokenizer.decode(exit_ids + g, skip_special_tokens=True)) for g in naive]
    gold = [naive_answers[0] if naive_answers[0] is not None else "12", "6", 5]  # makes event 0 correct if parsable
    forced = forced_exit_labels(model, traces, events, gold, exit_string=exit_string, max_answer_tokens=5,
                                batch_size=4)
    assert forced.answer == naive_answers
    assert forced.answer_tokens.tolist() == [len(g) for g in naive]
    flat_gold = [gold[i] for i, evs in enumerate(events) for _ in evs]
    assert forced.label.tolist() == [int(a is not None and answers_equal(a, g)) for a, g in zip(naive_answers, flat_gold)]
    assert forced.label[0] == (naive_answers[0] is not None)

    with pytest.raises(TypeError):  # the exit string's tokens are part of an exit's cost: no default
        exit_tables(traces, events, gold, forced, prob=np.linspace(0.1, 0.9, 6))
    table, rollouts = exit_tables(traces, events, gold, forced, prob=np.linspace(0.1, 0.9, 6),
                                  exit_string_tokens=len(exit_ids))
    assert rollouts.correct.tolist() == [int(gold[0] == "12"), 1, 1]
    # tokens before the cue + the exit string + the forced answer (the reference's cost)
    assert len(exit_ids) == 2 and table.exit_tokens.tolist() == [
        ev.start_index + 2 + k for ev, k in zip([e for evs in events for e in evs], forced.answer_tokens)]
    assert table.exit_tokens[0] == 0 + 2 + forced.answer_tokens[0]  # a cue at token 0: nothing before it
    assert table.is_cue.tolist() == [True, True, False, True, True, True]
    cal = MondrianCalibrator.fit(np.r_[np.full(20, 0.95), np.full(20, 0.05)], np.r_[np.ones(20), np.zeros(20)])
    report = evaluate_exit_policies(table, rollouts, cal, deltas=[0.1])
    assert report.get("full").accuracy == pytest.approx(rollouts.correct.mean())


def test_prompt_states_and_layer_sweep(model):
    texts = [f"Tom has {i} apples . <think>" for i in range(40)]
    states = prompt_states(model, texts, ["resid_post.0", "resid_post.1"], batch_size=16)
    assert set(states) == {"resid_post.0", "resid_post.1"} and states["resid_post.0"].shape == (40, model.d_model)
    ref = model.capture(texts[:3], [Site("resid_post", 1)], positions="last")["resid_post.1"][:, -1].numpy()
    np.testing.assert_allclose(states["resid_post.1"][:3], ref, atol=1e-6)
    # the start value (an integer) as a regression target, and a binary label
    sweep = layer_sweep(states, np.arange(40), task="regression", folds=4)
    assert sweep.scoring == "r2" and sweep.scores.shape == (2, 4) and sweep.best in states
    assert layer_sweep(states, np.arange(40) % 2, folds=4).scoring == "roc_auc"
    assert layer_sweep(states, np.arange(40) * 0.5, folds=4).scoring == "r2"  # floats regress under auto
    with pytest.raises(ThinklensError, match="task"):
        layer_sweep(states, np.arange(40), task="ranking")
