"""Why a local model folder cannot load, said in the error's headline.

:meth:`thinklens.engine.model.HookedModel.load` asks :func:`folder_problem` before handing a folder to transformers,
so a broken ``config.json``, an unknown or encoder-decoder ``model_type`` or missing weights get a line that
names the cause instead of transformers' generic failure.

Example:
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "config.json").write_text('{"model_type": "llama",}')
    >>> print(folder_problem(d))  # doctest: +ELLIPSIS
    config.json is not valid JSON at line 1 column 24 (Expecting property name ...); received .../config.json; expected ...
"""

from __future__ import annotations

import json
from pathlib import Path

from thinklens.errors import ThinklensError

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
"""What ``from_pretrained`` reads the weights from (sharded checkpoints start from their index)."""
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "spiece.model")
"""Files any HF tokenizer loads from."""


def _error(headline: str, received: object, expected: str, fix: str) -> ThinklensError:
    return ThinklensError(f"{headline}; received {received}; expected {expected}; fix: {fix}")


def folder_problem(folder: str | Path) -> ThinklensError | None:
    """The first reason ``folder`` (a ``save_pretrained`` folder) cannot load as a decoder-only causal LM, or None.

    Checked in order: ``config.json`` is valid JSON, its ``model_type`` is known to the installed transformers,
    the model is no encoder-decoder, and the weights and a tokenizer are there.
    """
    folder = Path(folder)
    cfg_path = folder / "config.json"
    try:
        cfg = json.loads(cfg_path.read_text())
    except json.JSONDecodeError as e:
        return _error(f"config.json is not valid JSON at line {e.lineno} column {e.colno} ({e.msg})", cfg_path,
                      "the JSON that save_pretrained writes", "repair the file at that place, or save the model again")
    except (OSError, UnicodeDecodeError) as e:
        return _error(f"config.json cannot be read ({type(e).__name__})", cfg_path, "a readable UTF-8 JSON file",
                      "check the file's permissions, or save the model again")
    if not isinstance(cfg, dict):
        return _error("config.json holds no JSON object", cfg_path, "an object of config fields",
                      "save the model again with save_pretrained")
    from transformers import CONFIG_MAPPING

    model_type = cfg.get("model_type")
    if not model_type:
        return _error("config.json names no model_type", cfg_path, "a model_type field (e.g. \"llama\")",
                      "add the model_type of the architecture, or save the model again")
    if model_type not in CONFIG_MAPPING:
        import difflib

        import transformers

        close = difflib.get_close_matches(str(model_type), list(CONFIG_MAPPING.keys()), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return _error(f"unknown model_type {model_type!r} (transformers {transformers.__version__} does not know it)",
                      cfg_path, "a model_type of the installed transformers",
                      f"{hint}upgrade transformers (pip install -U transformers) if the model is newer than it")
    if cfg.get("is_encoder_decoder", getattr(CONFIG_MAPPING[model_type], "is_encoder_decoder", False)):
        return _error(f"encoder-decoder models are not supported: {model_type}", folder,
                      "a decoder-only causal LM (llama, qwen2, gpt2, ...)",
                      "thinklens captures decoder-only models; pick a causal LM")
    if not any((folder / f).is_file() for f in WEIGHT_FILES):
        return _error("no weights in the model folder", folder, f"one of {', '.join(WEIGHT_FILES)}",
                      "save the model with save_pretrained (it writes model.safetensors) or copy the weight files here")
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        return _error("no tokenizer in the model folder", folder, f"one of {', '.join(TOKENIZER_FILES)}",
                      "save the tokenizer into the same folder (tokenizer.save_pretrained(folder))")
    return None
