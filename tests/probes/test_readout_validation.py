"""The sentiment readout settings: adjectives split three ways, and settings that can fail.

Mutants killed: the report split sharing adjectives with train (``test_adjective_splits_are_disjoint``); the planted
verdict ignoring the accuracy target (``test_a_model_that_cannot_read_the_text_fails_the_planted_setting``).
"""

from __future__ import annotations

import numpy as np


def test_adjective_splits_are_disjoint_and_balanced():
    from thinklens.probes.readout_validation import SPLITS, sentences

    texts, y, split, adj = sentences(480, seed=3)
    sets = [set(adj[split == s]) for s in range(3)]
    assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2])
    assert [len(s) for s in sets] == [2 * n for n in SPLITS]
    for s in range(3):
        assert abs(y[split == s].mean() - 0.5) < 1e-9
    assert all(a in t for a, t in zip(adj, texts))
    assert sentences(480, seed=3)[0] == texts and sentences(480, seed=4)[0] != texts


def test_a_model_that_cannot_read_the_text_fails_the_planted_setting(family_model, monkeypatch):
    """The tiny test model's word vocabulary maps every English word to one unknown token: nothing to read."""
    from thinklens.calibration.controls import SettingContext
    from thinklens.probes import readout_validation as rv

    model = family_model("llama")
    monkeypatch.setattr(rv, "QUICK", rv.Plan(n_sentences=96))
    ctx = SettingContext(quick=True, seed=0, workdir=None, model="tiny", _models={"tiny": model})
    planted = rv.SETTINGS[0].run(ctx)
    assert planted.verdict == "failed" and planted.value < rv.MIN_ACCURACY
    assert np.isfinite(planted.details["shuffled_accuracy"])
