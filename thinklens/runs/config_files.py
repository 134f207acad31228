"""A job's config from JSON: a ``--config`` file (a run folder's own config.json reruns that run) or any JSON object,
checked field by field against the config dataclass (unknown keys are an error with a did-you-mean; a renamed option
still reads), values coerced back to the annotation's types (lists to tuples)."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from thinklens.errors import ThinklensError, did_you_mean, in_cli, opt_name
from thinklens.runs.configcli import rename_deprecated


def fields_of(config: Any) -> dict[str, Any]:
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def _coerce(tp: Any, value: Any) -> Any:
    """A JSON value back to the annotation's Python type (lists to tuples, recursively)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if value is None:
        return None
    if origin is tuple and isinstance(value, list):
        inner = args[0] if args else Any
        return tuple(_coerce(inner, v) for v in value)
    if origin in (typing.Union, types.UnionType):
        for a in args:
            if a is not type(None):
                return _coerce(a, value)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def config_from_dict(cls: type, data: Mapping[str, Any], *, source: str = "config") -> dict[str, Any]:
    """Validated field values of ``cls`` from a JSON object (unknown keys are an error with a hint)."""
    if not isinstance(data, Mapping):
        raise ThinklensError.of(source, type(data).__name__, f"a JSON object of {cls.__name__} fields", "write {\"field\": value, ...}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    out = {}
    for k, v in rename_deprecated(cls, data).items():  # a config file written before a rename still reads
        if k not in hints or k not in names:
            raise ThinklensError.of(f"key in {source}", k, f"a field of {cls.__name__}", did_you_mean(k, names))
        out[k] = _coerce(hints[k], v)
    return out


def read_config_file(cls: type, path: str | Path) -> dict[str, Any]:
    """The fields of a JSON config file (e.g. a run folder's config.json)."""
    p = Path(path)
    if not p.is_file():
        raise ThinklensError.of(f"{opt_name('config' if in_cli() else 'config_file')} file", str(p), "an existing JSON file",
                                "pass a run folder's config.json")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ThinklensError.of(f"{opt_name('config' if in_cli() else 'config_file')} file", str(p), "valid JSON",
                                f"fix the file ({e})") from None
    return config_from_dict(cls, data, source=str(p))
