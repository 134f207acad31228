"""Cue events on crafted token lists, the layer table, and the config."""

from __future__ import annotations

import pytest

from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.probes.lynx import (
    DEFAULT_CUES,
    LynxConfig,
    check_cue_words,
    find_cue_events,
    lynx_layers,
    lynx_sites,
)


def _positions(tokens, **kw):
    return [(e.token_index, e.cue) for e in find_cue_events(tokens, **kw)]


def test_word_boundaries_reject_await_and_waiting():
    tokens = ["We", " await", " the", " result", ",", " waiting", " long", ".", " Hmmm", "."]
    # substring matching (the reference) would fire at " await", " waiting" and " Hmmm"
    events = find_cue_events(tokens)
    assert len(events) == 1 and events[0].is_fallback  # no cue: one fallback event
    assert events[0].token_index == max(1, int(0.7 * len(tokens))) - 1 == 6


def test_cues_end_token_case_and_punctuation():
    tokens = ["Wait", ",", " so", " 3", ".", " HMM", "...", " alternatively", " x", " (wait)"]
    assert _positions(tokens) == [(0, "wait"), (5, "hmm"), (7, "alternatively"), (9, "wait")]


def test_cue_split_across_tokens_sits_at_its_last_token():
    tokens = [" no", " W", "ait", "!", " al", "tern", "atively"]
    events = find_cue_events(tokens)
    assert [(e.start_index, e.token_index, e.cue) for e in events] == [(1, 2, "wait"), (4, 6, "alternatively")]
    assert events[0].char_span == (4, 8)


def test_exit_cost_is_the_reference_s_before_cue_plus_exit_string_plus_answer():
    # the reference charges (pos - 1) + len(exit cue) + answer tokens: what the forced exit reads and writes, not the
    # cue itself (it is cut off) and never without the exit string
    (ev,) = find_cue_events([" no", " W", "ait", "!"])  # "wait" spans tokens 1-2: the exit keeps token 0 only
    assert ev.tokens_used(n_answer_tokens=5, n_exit_tokens=4) == 1 + 4 + 5
    with pytest.raises(TypeError):
        ev.tokens_used(5)  # the exit string's length cannot be left out


def test_cue_inside_a_longer_token_and_glued_words():
    # "wait" glued to letters does not fire; glued to digits neither (\\w includes digits)
    assert find_cue_events(["xwait", " wait5", " waited"])[0].is_fallback
    # a cue followed by punctuation inside the same token fires at that token
    assert _positions(["ok", " wait,", " then"]) == [(1, "wait")]


def test_caps_keep_the_first_events():
    tokens = [" wait"] * 250
    assert len(find_cue_events(tokens, max_events=200)) == 200
    assert [e.token_index for e in find_cue_events(tokens, max_events=3)] == [0, 1, 2]
    cfg = LynxConfig()
    assert (cfg.max_events("train"), cfg.max_events("calibration"), cfg.max_events("test")) == (200, 100, None)


def test_fallback_events_build_training_and_calibration_data_only():
    # the reference gives a cue-less rollout an event at 0.7 of its length when it builds probe and calibration
    # data, and scans real cues only when it exits: a test rollout without a cue has no event (keeps its answer)
    cfg = LynxConfig()
    assert (cfg.fallback("train"), cfg.fallback("calibration"), cfg.fallback("test")) == (0.7, 0.7, None)
    tokens = ["a"] * 10
    assert [e.token_index for e in find_cue_events(tokens, fallback_fraction=cfg.fallback("train"))] == [6]
    assert find_cue_events(tokens, fallback_fraction=cfg.fallback("test")) == []
    assert _positions([" a", " wait"], fallback_fraction=None) == [(1, "wait")]  # real cues are kept
    with pytest.raises(ThinklensError, match="split"):
        cfg.fallback("val")


def test_custom_cues_and_fallback():
    assert _positions([" on", " second", " thought", " no"], cue_words=("on second thought",)) == \
        [(2, "on second thought")]
    assert _positions([" hmmm"], cue_words=("hmmm",)) == [(0, "hmmm")]
    assert [e.token_index for e in find_cue_events(["a"] * 3)] == [1]  # int(2.1) = 2 -> index 1
    assert [e.token_index for e in find_cue_events(["a"])] == [0]
    assert find_cue_events([]) == []


@pytest.mark.parametrize("bad", [(), [], "wait", ("",), ("wait", "  "), ("wa!t",), (3,)])
def test_unknown_or_empty_cue_words_are_errors(bad):
    with pytest.raises(ThinklensError, match="cue word"):
        check_cue_words(bad)
    with pytest.raises(ThinklensError):
        LynxConfig(cue_words=bad)


def test_config_validation():
    assert LynxConfig().cue_words is None and LynxConfig().resolved().cue_words == DEFAULT_CUES
    with pytest.raises(ThinklensError, match="deltas"):
        LynxConfig(deltas=(0.0, 0.1))
    with pytest.raises(ThinklensError, match="fallback_fraction"):
        LynxConfig(fallback_fraction=1.0)
    with pytest.raises(ThinklensError, match="split"):
        LynxConfig().max_events("val")


def test_layer_table_and_rule():
    assert lynx_layers(28) == (9, 16, 28)
    assert lynx_layers(32) == (8, 16, 24, 32)
    assert lynx_layers(36) == (12, 18, 24, 36)
    assert lynx_layers(64) == (16, 32, 48, 64)
    assert {n: lynx_layers(n) for n in range(1, 9)} == {
        1: (1,), 2: (1, 2), 3: (1, 2, 3), 4: (1, 2, 3, 4), 5: (1, 3, 4, 5), 6: (2, 3, 5, 6),
        7: (2, 4, 5, 7), 8: (2, 4, 6, 8),
    }
    assert lynx_layers(48) == (12, 24, 36, 48)
    with pytest.raises(ThinklensError, match="n_layers"):
        lynx_layers(0)


def test_hidden_state_indices_map_to_sites():
    assert [str(s) for s in lynx_sites(4, range(5))] == \
        ["resid_pre.0", "resid_post.0", "resid_post.1", "resid_post.2", "final_norm"]
    assert lynx_sites(32) == (Site("resid_post", 7), Site("resid_post", 15), Site("resid_post", 23),
                              Site("final_norm"))
    with pytest.raises(ThinklensError, match="LYNX layer"):
        lynx_sites(4, (5,))
    with pytest.raises(ThinklensError, match="LYNX layer"):
        lynx_sites(4, (-1,))  # LYNX layers are hidden-state indices, never counted from the end


def test_word_level_tokens_need_a_separator():
    tokens = ["so", "wait", "<<", "hmm", ">>"]  # the zoo tokenizer decodes each word without spaces
    assert _positions(tokens, separator=" ") == [(1, "wait"), (3, "hmm")]
    # glued, "sowait<<hmm>>" loses the "wait" (inside a word) and keeps "hmm" (between symbols)
    assert _positions(tokens) == [(3, "hmm")]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_train_lynx_probe_split_and_errors():
    import numpy as np

    from thinklens.probes.estimators import LynxMLPProbe
    from thinklens.probes.lynx import train_lynx_probe

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + 0.2 * rng.normal(size=200) > 0.5).astype(int)
    probe, val = train_lynx_probe(X, y, probe=LynxMLPProbe(hidden_layer_sizes=(8,), early_stopping=False, max_iter=200))
    assert probe.n_features_in_ == 3
    assert (val.n_train, val.n_val) == (160, 40) and val.auroc > 0.9
    # stratified: the training share keeps the base rate
    assert val.n_pos_train == round(y.mean() * 160) or abs(val.n_pos_train / 160 - y.mean()) < 0.01
    with pytest.raises(ThinklensError, match="at least 2 events of each class"):
        train_lynx_probe(X, np.zeros(200, int))


def _leaky_rollouts(n_rollouts=250, per=4, dim=10, seed=0):
    """Events of one rollout are near-copies of its state and share its label, drawn at random per rollout: nothing
    generalises across rollouts, so a held-out accuracy above chance can only come from a rollout on both sides."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_rollouts, dim))  # [rollout, dim]
    labels = rng.permutation(np.arange(n_rollouts) % 2)  # [rollout]
    groups = np.repeat(np.arange(n_rollouts), per)  # [event]
    X = centres[groups] + 0.01 * rng.normal(size=(groups.size, dim))  # [event, dim]
    return X, labels[groups], groups


def test_probe_validation_split_is_grouped_by_rollout():
    # kills the ungrouped split mutant (train_test_split over events, the reference's): events of one rollout on both
    # sides report memorised neighbours as a held-out accuracy near 1
    import numpy as np
    from sklearn.model_selection import train_test_split

    from thinklens.probes.lynx import LynxConfig, train_lynx_probe, validation_split
    from thinklens.probes.mlp import LynxMLPProbe

    X, y, groups = _leaky_rollouts()
    tr, va = validation_split(y, groups, 0.2, 42)
    assert not set(groups[tr]) & set(groups[va]) and len(tr) + len(va) == len(y)
    assert set(np.unique(y[va])) == {0, 1} and set(np.unique(y[tr])) == {0, 1}
    assert 0.1 <= len(va) / len(y) <= 0.3

    def mlp():
        return LynxMLPProbe(hidden_layer_sizes=(64,), early_stopping=False, max_iter=300, random_state=42)

    _, val = train_lynx_probe(X, y, LynxConfig(), mlp(), groups=groups)
    assert val.n_val_rollouts == len(set(groups[va])) and val.n_val + val.n_train == len(y)
    assert val.accuracy < 0.7  # chance, up to the noise of ~50 held-out rollouts
    # the same probe on the ungrouped split: the leak this data has (what the mutant would report)
    X_tr, X_va, y_tr, y_va = train_test_split(X, y, test_size=0.2, random_state=42, stratify=y)
    leaked = float(np.mean(mlp().fit(X_tr, y_tr).predict(X_va) == y_va))
    assert leaked > 0.8


def test_probe_validation_split_with_few_rollouts_and_errors():
    import numpy as np

    from thinklens.probes.lynx import validation_split

    y = np.array([0, 1, 0, 1, 0, 1, 1, 0])
    groups = np.array([0, 0, 1, 1, 2, 2, 3, 3])  # 4 rollouts < 5 folds
    tr, va = validation_split(y, groups, 0.2, 0)
    assert not set(groups[tr]) & set(groups[va]) and len(va) > 0
    with pytest.raises(ThinklensError, match="one rollout id per event"):
        validation_split(y, groups[:3], 0.2, 0)


def test_mlp_early_stopping_split_is_grouped_by_rollout():
    # kills the mutant that ignores groups in LynxMLPProbe.fit (scikit-learn's own split is by event): on rollouts
    # whose events are near-copies with a random label per rollout, the score that stops training is a leak
    from thinklens.probes.mlp import LynxMLPProbe

    X, y, groups = _leaky_rollouts(n_rollouts=100, per=10, dim=20)
    grouped = LynxMLPProbe(hidden_layer_sizes=(64,), random_state=0).fit(X, y, groups=groups)
    by_event = LynxMLPProbe(hidden_layer_sizes=(64,), random_state=0).fit(X, y)
    assert grouped.early_stopping_grouped_ and not by_event.early_stopping_grouped_
    assert grouped.best_validation_score_ < 0.75 < by_event.best_validation_score_
    assert grouped.n_iter_ == len(grouped.loss_curve_)
    with pytest.raises(ThinklensError, match="one group"):
        LynxMLPProbe(hidden_layer_sizes=(8,)).fit(X, y, groups=groups[:5])
