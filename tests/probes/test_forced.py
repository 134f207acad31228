"""One pass per rollout (thinklens.probes.forced) gives the features and labels of the per-event reference functions."""

from __future__ import annotations

import numpy as np
import pytest
from lynx_checks import ZOO_EXIT, one_pass_matches_reference
from zoo_fixtures import reasoner, zooish  # noqa: F401 - fixtures

from thinklens.errors import ThinklensError
from thinklens.probes.datasets import event_features, forced_exit_labels, sampled_think_rollouts
from thinklens.probes.forced import event_features_and_labels, forced_exit_labels_shared
from thinklens.probes.lynx import lynx_sites


@pytest.mark.parametrize("batch_size,max_batch_tokens", [(16, 2048), (3, 60), (1, 1)])
def test_random_model_matches_reference(zooish, batch_size, max_batch_tokens):
    traces, events, gold, ref = one_pass_matches_reference(zooish, batch_size=batch_size, max_batch_tokens=max_batch_tokens,
                                                           atol=1e-5, skip_rollout=3)  # a rollout without events is skipped
    assert sum(len(e) for e in events) > len(traces)  # several events per rollout: prefixes are shared
    assert forced_exit_labels_shared(zooish, traces, events, gold, batch_size=batch_size, **ZOO_EXIT).same_as(ref)


def test_zoo_matches_reference_and_gets_some_right(reasoner):
    traces, events, gold = sampled_think_rollouts(reasoner, 24, max_steps=4, max_new_tokens=64, seed=1)
    kw = dict(exit_string="</think> ####", max_answer_tokens=8)
    ref = forced_exit_labels(reasoner, traces, events, gold, batch_size=1, **kw)
    X, got = event_features_and_labels(reasoner, traces, events, gold, lynx_sites(reasoner.n_layers), **kw)
    assert got.same_as(ref)
    assert 0 < got.label.sum() < len(got.label)
    np.testing.assert_allclose(X, event_features(reasoner, traces, events, lynx_sites(reasoner.n_layers)), atol=1e-4)


def _hooks(model) -> list:
    return [(n, list(m._forward_hooks.values()), list(m._forward_pre_hooks.values())) for n, m in model.hf.named_modules()]


def test_bad_arguments(zooish):
    traces, events, gold = sampled_think_rollouts(zooish, 2, max_steps=1, max_new_tokens=8, every=3)
    before = _hooks(zooish)  # HF's own output-capturing hooks (installed at load) may be there; ours never stay
    with pytest.raises(ThinklensError, match="exit string"):
        forced_exit_labels_shared(zooish, traces, events, gold, exit_string="")
    with pytest.raises(ThinklensError, match="gold answers"):
        forced_exit_labels_shared(zooish, traces, events, gold[:1], exit_string="####")
    with pytest.raises(ThinklensError, match="max_answer_tokens"):
        forced_exit_labels_shared(zooish, traces, events, gold, exit_string="####", max_answer_tokens=0)
    assert _hooks(zooish) == before  # the model is left without hooks of ours
