"""Why a local model folder cannot load, said in the error's headline.

:meth:`thinklens.engine.model.HookedModel.load` asks :func:`folder_problem` before handing a folder to transformers,
so a broken ``config.json``, an unknown or encoder-decoder ``model_type`` or missing weights get a line that
names the cause instead of transformers' generic failure; after loading, :func:`weights_problem` reads transformers'
loading report: weights whose shapes differ from the config's, or tensors of the config the weights lack (which
transformers would start at random), refuse the model in one line; weights the config has no place for are
ignored with a warning (:func:`unused_weights_warning`; a checkpoint may carry extra heads, e.g. a multi-token
prediction layer).

Example:
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "config.json").write_text('{"model_type": "llama",}')
    >>> print(folder_problem(d))  # doctest: +ELLIPSIS
    config.json is not valid JSON at line 1 column 24 (Expecting property name ...); received .../config.json; expected ...
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import transformers
from transformers import CONFIG_MAPPING

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

    model_type = cfg.get("model_type")
    if not model_type:
        return _error("config.json names no model_type", cfg_path, "a model_type field (e.g. \"llama\")",
                      "add the model_type of the architecture, or save the model again")
    if model_type not in CONFIG_MAPPING:
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


def _some(names: Sequence[str], k: int = 2) -> str:
    """The first ``k`` of sorted tensor names, and how many more."""
    names = sorted(names)
    more = f" and {len(names) - k} more" if len(names) > k else ""
    return ", ".join(names[:k]) + more


def weights_problem(folder: str | Path, info: Mapping[str, Any]) -> ThinklensError | None:
    """The reason weights loaded from ``folder`` do not fit its ``config.json``, or None.

    ``info``: transformers' loading report (``from_pretrained(..., output_loading_info=True)``): ``mismatched_keys``
    (name, shape in the weights, shape the config builds) and ``missing_keys`` (tensors the weights lack).

    Example:
        >>> info = {"mismatched_keys": [("model.norm.weight", (128,), (256,))], "missing_keys": []}
        >>> print(weights_problem("m", info))  # doctest: +ELLIPSIS
        the weights do not fit config.json: model.norm.weight is [128] in the weights but [256] by the config (1 tensor); ...
    """
    folder = Path(folder)
    mismatched = sorted(info.get("mismatched_keys") or [], key=lambda m: str(m[0]))
    if mismatched:
        name, have, want = mismatched[0]
        n = len(mismatched)
        return _error(f"the weights do not fit config.json: {name} is {list(have)} in the weights but {list(want)} by the "
                      f"config ({n} tensor{'s' if n > 1 else ''})", folder / "config.json",
                      "the sizes the weights were saved with (hidden_size, intermediate_size, vocab_size, heads)",
                      "restore the config.json saved with these weights (save_pretrained writes both), or point at the "
                      "folder they came from")
    missing = list(info.get("missing_keys") or [])
    if missing:
        return _error(f"config.json asks for tensors the weights lack: {_some(missing)} ({len(missing)} would start at "
                      "random)", folder / "config.json", "weights for every tensor the config builds",
                      "check num_hidden_layers and the architecture in config.json against the weights, or save the "
                      "model again with save_pretrained")
    return None


def unused_weights_warning(folder: str | Path, info: Mapping[str, Any]) -> str | None:
    """A line about tensors of the weights that the config has no place for (ignored by the loaded model), or None."""
    unexpected = list(info.get("unexpected_keys") or [])
    if not unexpected:
        return None
    return (f"{len(unexpected)} tensors of {Path(folder)} have no place in its config.json and are ignored "
            f"({_some(unexpected)}): fewer layers in the config than in the weights, or heads it does not build")


@contextmanager
def quiet_load_report() -> Iterator[None]:
    """transformers' loading report (a table logged as a warning) silenced while loading: :func:`weights_problem`
    says what matters in one line."""
    log = logging.getLogger("transformers.modeling_utils")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)
