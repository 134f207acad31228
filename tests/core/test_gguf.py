"""GGUF files and packaged real models, without the packages: every failure is one line, and nothing half-written stays.

Mutants these tests kill: the magic check dropped (``test_foreign_file_is_one_line``); a missing package raising
transformers' own error instead of naming ``make real`` (``test_missing_package_names_make_real``); the conversion's
temporary folder left behind after a failure (``test_failed_conversion_leaves_no_folder``).
"""

from __future__ import annotations

import struct

import pytest

from thinklens.engine import gguf, real_models
from thinklens.errors import ThinklensError


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("THINKLENS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "real"


def test_cache_is_outside_the_repository(cache):
    from thinklens.zoo.registry import repo_root

    assert gguf.cache_root() == cache and not gguf.cache_root().resolve().is_relative_to(repo_root())


def test_foreign_file_is_one_line(tmp_path):
    f = tmp_path / "model.gguf"
    f.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    with pytest.raises(ThinklensError, match=r"bad GGUF file: received 'model.gguf' \(104 bytes") as e:
        gguf.check_gguf(f)
    assert "\n" not in str(e.value)


def test_missing_file_is_one_line(tmp_path):
    with pytest.raises(ThinklensError, match="expected an existing .gguf file"):
        gguf.check_gguf(tmp_path / "nope.gguf")


def test_header_is_read(tmp_path):
    f = tmp_path / "ok.gguf"
    f.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 12, 30) + b"\0" * 8)
    assert gguf.check_gguf(f) == {"version": 3, "n_tensors": 12, "n_metadata": 30, "bytes": 32}


def test_failed_conversion_leaves_no_folder(tmp_path, cache):
    f = tmp_path / "cut.gguf"  # a valid header, then nothing: transformers (or the missing gguf package) refuses it
    f.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 12, 30))
    with pytest.raises(ThinklensError, match="GGUF"):
        gguf.converted_folder(f, progress=False)
    assert not cache.exists() or not any(cache.iterdir())


def test_missing_package_names_make_real(monkeypatch, cache):
    monkeypatch.setattr(real_models, "_module_dir", lambda module: None)
    for name in real_models.REAL_MODELS:
        assert not real_models.installed(name)
        with pytest.raises(ThinklensError, match="make real") as e:
            real_models.real_model_folder(name)
        assert "\n" not in str(e.value)


def test_load_by_name_without_the_package_is_one_line(monkeypatch, cache):
    from thinklens import HookedModel

    monkeypatch.setattr(real_models, "_module_dir", lambda module: None)
    with pytest.raises(ThinklensError, match="bad real model: received 'gemma-3-270m'.*make real"):
        HookedModel.load("gemma-3-270m")


def test_cli_without_the_package_exits_2(monkeypatch, cache, capsys):
    from thinklens.cli import main

    monkeypatch.setattr(real_models, "_module_dir", lambda module: None)
    assert main(["info", "smollm2-135m"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "make real" in err


def test_models_lists_zoo_and_real(monkeypatch, cache, capsys):
    from thinklens.cli import main

    monkeypatch.setattr(real_models, "_module_dir", lambda module: None)
    assert main(["models", "--json"]) == 0
    import json

    rows = json.loads(capsys.readouterr().out)
    kinds = {r["name"]: r for r in rows}
    assert kinds["tiny-r1"]["kind"] == "zoo" and kinds["smollm2-135m"]["kind"] == "real"
    assert kinds["smollm2-135m"]["available"] is False and "make real" in kinds["smollm2-135m"]["where"]


def test_chunks_that_do_not_match_the_hash_are_refused(tmp_path, monkeypatch, cache):
    parts = []
    for i in range(2):
        d = tmp_path / f"part{i}" / "data"
        d.mkdir(parents=True)
        (d / f"f.part{i}").write_bytes(b"x" * 10)
        parts.append((f"part{i}", f"f.part{i}"))
    model = real_models.RealModel("toy", "toy-dist", "toy", "toy.gguf", "a toy", "none", chunks=tuple(parts), sha256="0" * 64)
    monkeypatch.setattr(real_models, "_module_dir", lambda module: tmp_path / module)
    with pytest.raises(ThinklensError, match="reinstall toy-dist"):
        real_models._assembled(model, progress=False)
    assert not any((cache / "gguf").iterdir())
