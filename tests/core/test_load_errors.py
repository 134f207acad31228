"""Load errors that name the cause: a T5 folder, a broken config.json, an unknown model_type, missing weights and a
missing tokenizer each get a headline saying so, and the CLI exits 2 with that one line and no traceback."""

from __future__ import annotations

import json
import shutil

import pytest

from thinklens.cli import main
from thinklens.engine.model import HookedModel
from thinklens.errors import ThinklensError
from tools.testing import build_tiny_model, word_tokenizer


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    return build_tiny_model("llama", tmp_path_factory.mktemp("ok") / "llama")


def _copy(llama_dir, tmp_path, name):
    return shutil.copytree(llama_dir, tmp_path / name)


def _t5(tmp_path):
    from transformers import T5Config, T5ForConditionalGeneration

    path = tmp_path / "t5"
    cfg = T5Config(vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=1, num_heads=2, decoder_start_token_id=0)
    T5ForConditionalGeneration(cfg).save_pretrained(path)
    word_tokenizer().save_pretrained(path)
    return path


def _broken_json(llama_dir, tmp_path):
    path = _copy(llama_dir, tmp_path, "broken")
    text = (path / "config.json").read_text()
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.endswith(","))
    lines[i] = lines[i][:-1]  # one comma dropped: JSON breaks at the start of the next line (line i + 2, 1-based)
    (path / "config.json").write_text("\n".join(lines))
    with pytest.raises(json.JSONDecodeError) as e:
        json.loads((path / "config.json").read_text())
    assert e.value.lineno == i + 2
    return path, f"config.json is not valid JSON at line {i + 2} column {e.value.colno}"


def _unknown_type(llama_dir, tmp_path):
    path = _copy(llama_dir, tmp_path, "unknown")
    cfg = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**cfg, "model_type": "lama"}))
    return path


def _no_weights(llama_dir, tmp_path):
    path = _copy(llama_dir, tmp_path, "noweights")
    (path / "model.safetensors").unlink()
    return path


def _no_tokenizer(llama_dir, tmp_path):
    path = _copy(llama_dir, tmp_path, "notok")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        (path / f).unlink()
    return path


def _cases(llama_dir, tmp_path):
    broken, broken_line = _broken_json(llama_dir, tmp_path)
    return [
        (_t5(tmp_path), "encoder-decoder models are not supported: t5"),
        (broken, broken_line),
        (_unknown_type(llama_dir, tmp_path), "unknown model_type 'lama'"),
        (_no_weights(llama_dir, tmp_path), "no weights in the model folder"),
        (_no_tokenizer(llama_dir, tmp_path), "no tokenizer in the model folder"),
    ]


def test_each_broken_folder_gets_its_cause_in_the_headline(llama_dir, tmp_path):
    for path, headline in _cases(llama_dir, tmp_path):
        with pytest.raises(ThinklensError) as e:
            HookedModel.load(str(path))
        msg = str(e.value)
        assert msg.startswith(headline), msg
        assert "expected a zoo name" not in msg and str(path) in msg and "fix: " in msg
    assert "did you mean 'llama'" in str(pytest.raises(ThinklensError, HookedModel.load,
                                                       str(tmp_path / "unknown")).value)
    assert HookedModel.load(str(llama_dir)).n_layers == 2  # a sound folder still loads


def test_cli_exits_2_with_the_cause_and_no_traceback(llama_dir, tmp_path, capsys):
    cases = _cases(llama_dir, tmp_path)
    capsys.readouterr()  # the progress bars of save_pretrained
    for path, headline in cases:
        assert main(["info", str(path)]) == 2
        err = capsys.readouterr().err
        assert headline in err and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- weights that do not fit their config


def _config_edit(llama_dir, tmp_path, name, **fields):
    path = _copy(llama_dir, tmp_path, name)
    cfg = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**cfg, **fields}))
    return path


def test_weights_that_do_not_fit_the_config_are_refused_in_one_line(llama_dir, tmp_path, capsys):
    wider = _config_edit(llama_dir, tmp_path, "wider", hidden_size=64)  # the weights are 32 wide
    deeper = _config_edit(llama_dir, tmp_path, "deeper", num_hidden_layers=3)  # the weights hold 2 blocks
    cases = [(wider, "the weights do not fit config.json: lm_head.weight is [64, 32] in the weights but "
                     "[64, 64] by the config"),
             (deeper, "config.json asks for tensors the weights lack: model.layers.2.")]
    for path, headline in cases:
        with pytest.raises(ThinklensError) as e:
            HookedModel.load(str(path))
        assert str(e.value).startswith(headline) and "fix: " in str(e.value), str(e.value)
    capsys.readouterr()
    for path, headline in cases:
        assert main(["info", str(path)]) == 2
        err = capsys.readouterr().err
        assert headline in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_weights_the_config_has_no_place_for_load_with_a_warning(llama_dir, tmp_path):
    shallower = _config_edit(llama_dir, tmp_path, "shallower", num_hidden_layers=1)
    with pytest.warns(UserWarning, match=r"tensors of .* have no place in its config.json and are ignored \(model.layers.1."):
        assert HookedModel.load(str(shallower)).n_layers == 1
