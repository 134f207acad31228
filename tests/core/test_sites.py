import pytest

from thinklens import Site, ThinklensError, parse_sites
from thinklens.engine.sites import all_sites


def test_parse_roundtrip():
    for s in all_sites(3):
        assert Site.parse(str(s)) == s


def test_negative_layer_and_range():
    assert Site.parse("resid_post.-1", n_layers=4) == Site("resid_post", 3)
    with pytest.raises(ThinklensError, match="0..3"):
        Site.parse("resid_post.4", n_layers=4)


def test_did_you_mean():
    with pytest.raises(ThinklensError, match="did you mean 'resid_post'"):
        Site.parse("resid_pst.2")


def test_bad_forms():
    with pytest.raises(ThinklensError):
        Site.parse("resid_post")  # needs a layer
    with pytest.raises(ThinklensError):
        Site.parse("final_norm.2")  # takes none
    with pytest.raises(ThinklensError):
        Site.parse("resid_post.x")


def test_parse_sites_expands_star():
    assert parse_sites("resid_post.*,final_norm", n_layers=2) == [Site("resid_post", 0), Site("resid_post", 1), Site("final_norm")]
