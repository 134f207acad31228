"""The `latent` CLI: parsing from the configs, help from field docstrings, one-line errors, doctests."""

import argparse
import doctest
import importlib

import pytest

from latent.cli import add_latent_parser
from latent.config import CODIConfig
from thinklens.configcli import config_from_args

MODULES = ["latent.config", "latent.data", "latent.lsft_layout", "latent.continuous", "latent.codi", "latent.latent_sft",
           "latent.latentseek", "latent.methods", "latent.train", "latent.evaluate", "latent.figures", "latent.cli",
           "latent.checkpoint", "latent.session"]


def _parser():
    p = argparse.ArgumentParser(prog="thinklens")
    add_latent_parser(p.add_subparsers(dest="command"))
    return p


def test_train_choices_and_options_come_from_the_configs(capsys):
    p = _parser()
    a = p.parse_args(["latent", "train", "codi", "--n-latents", "4", "--no-projection", "--w-kd", "0"])
    cfg = config_from_args(a.config_cls, a)
    assert cfg == CODIConfig(n_latents=4, projection=False, w_kd=0.0)
    for method in ("coconut", "codi", "latent-sft"):
        assert p.parse_args(["latent", "train", method]).method == method
    with pytest.raises(SystemExit):
        p.parse_args(["latent", "train", "codi", "--help"])
    assert "Latent steps between <bot> and <eot>" in capsys.readouterr().out
    a = p.parse_args(["latent", "seek", "--rho", "0.1", "--variant", "sample"])
    assert a.func.__name__ == "cmd_seek" and a.rho == 0.1
    assert p.parse_args(["latent", "eval", "--models", "tiny-cot,tiny-codi"]).models == ("tiny-cot", "tiny-codi")


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    res = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert res.failed == 0
