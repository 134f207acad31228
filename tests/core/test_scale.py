"""Remote execution (NDIF, via nnsight) as far as it can be tested offline, and device_map pass-through."""

import pytest
import torch

from thinklens import HookedModel, Site, ThinklensError
from tools.testing import unreachable_ndif


def test_remote_builds_meta_model_and_routes_through_nnsight(tiny_dirs, monkeypatch):
    m = HookedModel.load(str(tiny_dirs["llama"]), remote=True)
    assert m.remote and next(m.hf.parameters()).device.type == "meta"  # no weights downloaded
    assert m.n_layers == 2 and Site("resid_post", 1) in m.sites
    calls = unreachable_ndif(monkeypatch, m.to_nnsight(), "trace")
    with pytest.raises(ThinklensError, match="NDIF"):
        m.capture(["w1 w2"], ["resid_post.0"])
    assert calls.get("remote") is True
    with pytest.raises(ThinklensError, match="local weights"):
        m.forward_with(["w1"])  # generate goes through nnsight too (tests/core/test_remote_generate.py)


def test_device_map_passes_through(tiny_dirs):
    a = HookedModel.load(str(tiny_dirs["llama"]))
    b = HookedModel.load(str(tiny_dirs["llama"]), device_map="auto")
    torch.testing.assert_close(a.forward_with(["w1 w2 w3"]), b.forward_with(["w1 w2 w3"]))
