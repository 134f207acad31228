"""Probe folders: safetensors + JSON round trips, and clear errors on mismatched use."""

from __future__ import annotations

import json

import numpy as np
import pytest

from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.probes.estimators import DiffMeanProbe, LinearProbe, LynxMLPProbe, RidgeProbe
from thinklens.probes.io import JSON_NAME, TENSORS_NAME, load_probe, read_probe_meta, save_probe


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 8))
    y = (X[:, 0] - X[:, 3] > 0).astype(int)
    return X, y


PROBE_CASES = [
    LinearProbe(class_weight={0: 2.0, 1: 1.0}),
    DiffMeanProbe(threshold="balanced"),
    LynxMLPProbe(hidden_layer_sizes=(16, 8)),
]


@pytest.mark.parametrize("probe", PROBE_CASES, ids=lambda p: type(p).__name__)
def test_round_trip_predicts_identically(probe, data, tmp_path):
    X, y = data
    probe.fit(X, y)
    folder = save_probe(probe, tmp_path / "p", site=["resid_post.1", "final_norm"], model_name="tiny-think")
    assert sorted(p.name for p in folder.iterdir()) == [JSON_NAME, TENSORS_NAME]  # no pickle anywhere
    loaded = load_probe(folder, expect_site=["resid_post.1", "final_norm"], expect_d_model=4)
    assert type(loaded) is type(probe)
    assert loaded.get_params() == probe.get_params()
    assert np.array_equal(loaded.predict(X), probe.predict(X))
    assert np.array_equal(loaded.decision_function(X), probe.decision_function(X))
    if hasattr(probe, "predict_proba"):
        assert np.array_equal(loaded.predict_proba(X), probe.predict_proba(X))


def test_ridge_and_string_labels_round_trip(data, tmp_path):
    X, y = data
    ridge = RidgeProbe().fit(X, X[:, 0] * 2.0)
    assert np.array_equal(load_probe(save_probe(ridge, tmp_path / "r")).predict(X), ridge.predict(X))
    labels = np.where(y == 1, "right", "wrong")
    lin = LinearProbe().fit(X, labels)
    back = load_probe(save_probe(lin, tmp_path / "s"))
    assert back.classes_.tolist() == ["right", "wrong"]
    assert np.array_equal(back.predict(X), lin.predict(X))


def test_json_records_layout_and_versions(data, tmp_path):
    X, y = data
    save_probe(LinearProbe().fit(X, y), tmp_path, site="resid_post.3", model_name="m")
    meta = read_probe_meta(tmp_path)
    assert meta["class"] == "LinearProbe" and meta["sites"] == ["resid_post.3"] and meta["d_model"] == 8
    assert meta["feature_layout"] == {"kind": "concat", "sites": ["resid_post.3"], "widths": [8]}
    assert meta["sklearn_version"] and meta["model_name"] == "m"


def test_site_objects_are_written_as_edge_strings(data, tmp_path):
    X, y = data
    save_probe(LinearProbe().fit(X, y), tmp_path, site=[Site("resid_post", 2), " final_norm"])
    assert read_probe_meta(tmp_path)["sites"] == ["resid_post.2", "final_norm"]
    with pytest.raises(ThinklensError, match="did you mean 'resid_post'"):
        save_probe(LinearProbe().fit(X, y), tmp_path / "typo", site="resid_pst.2")


def test_mismatched_site_or_width_is_a_clear_error(data, tmp_path):
    X, y = data
    folder = save_probe(LinearProbe().fit(X, y), tmp_path, site="resid_post.3")
    with pytest.raises(ThinklensError, match=r"resid_post\.3.*expected a probe for \['resid_post\.5'\].*fix"):
        load_probe(folder, expect_site="resid_post.5")
    with pytest.raises(ThinklensError, match=r"d_model=8.*expected d_model=16.*fix"):
        load_probe(folder, expect_d_model=16)


def test_bad_folders_and_files(data, tmp_path):
    X, y = data
    with pytest.raises(ThinklensError, match="probe folder"):
        load_probe(tmp_path / "missing")
    with pytest.raises(ThinklensError, match="unfitted"):
        save_probe(LinearProbe(), tmp_path / "u")
    with pytest.raises(ThinklensError, match="divisible"):
        save_probe(LinearProbe().fit(X, y), tmp_path / "d", site=["resid_post.1", "resid_post.2", "resid_post.3"])
    folder = save_probe(LinearProbe().fit(X, y), tmp_path / "ok")
    doc = json.loads((folder / JSON_NAME).read_text())
    doc["class"] = "LinearProbeX"
    (folder / JSON_NAME).write_text(json.dumps(doc))
    with pytest.raises(ThinklensError, match="did you mean 'LinearProbe'"):
        load_probe(folder)
