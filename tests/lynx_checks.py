"""Checks shared by the CPU and the device tests of LYNX's one-pass labelling (a module at the tests root, so
test folders import it without a second conftest)."""

from __future__ import annotations

import numpy as np

#: The forced exit and answer length of the zoo's think format, as the labelling tests use them.
ZOO_EXIT = dict(exit_string="</think> ####", max_answer_tokens=5)


def one_pass_matches_reference(model, *, batch_size: int, max_batch_tokens: int, atol: float, skip_rollout: int | None = None):
    """Sample 10 think rollouts on ``model`` and check that the one-pass features and labels
    (:func:`thinklens.probes.forced.event_features_and_labels`) equal the per-event reference functions; returns the
    rollouts and the reference labels for further checks. ``skip_rollout``: a rollout whose events are dropped."""
    from thinklens.probes.datasets import event_features, forced_exit_labels, sampled_think_rollouts
    from thinklens.probes.forced import event_features_and_labels
    from thinklens.probes.lynx import lynx_sites

    traces, events, gold = sampled_think_rollouts(model, 10, max_steps=2, max_new_tokens=20, every=4)
    if skip_rollout is not None:
        events[skip_rollout] = []
    sites = lynx_sites(model.n_layers)
    ref = forced_exit_labels(model, traces, events, gold, batch_size=4, **ZOO_EXIT)
    X, got = event_features_and_labels(model, traces, events, gold, sites, batch_size=batch_size,
                                       max_batch_tokens=max_batch_tokens, **ZOO_EXIT)
    assert got.same_as(ref)
    np.testing.assert_allclose(X, event_features(model, traces, events, sites), atol=atol)
    return traces, events, gold, ref
