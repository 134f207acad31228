"""CLI options generated from frozen config dataclasses (one ``--field-name`` per field, help = the field's
docstring), so the CLI and the Python API share one set of defaults and one validation (``__post_init__``).

Example:
    >>> import argparse
    >>> from steering.hybrid import HybridConfig
    >>> p = argparse.ArgumentParser(); add_config_arguments(p, HybridConfig)
    >>> config_from_args(HybridConfig, p.parse_args(["--windows", "1,2", "--k", "2"])).windows
    (1, 2)
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import textwrap
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any


def field_docs(cls: type) -> dict[str, str]:
    """``{field: docstring}`` read from the class source (the string literal after each field)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):  # pragma: no cover - classes defined in a REPL
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    out = {}
    for node, nxt in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            out[node.target.id] = " ".join(nxt.value.value.split())
    return out


def _scalar(tp: Any) -> Callable[[str], Any]:
    if tp is bool:
        def parse_bool(text: str) -> bool:
            low = text.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise argparse.ArgumentTypeError(f"expected true/false, received {text!r}")
        return parse_bool
    if typing.get_origin(tp) is typing.Literal:
        return str

    def parse(text: str) -> Any:
        try:
            return tp(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {tp.__name__}, received {text!r}") from None
    return parse


def _parser(tp: Any) -> Callable[[str], Any]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        inner = _parser(next(a for a in args if a is not type(None)))
        return lambda text: None if text.strip().lower() in ("none", "null", "") else inner(text)
    if origin is tuple:
        item = _scalar(args[0])
        return lambda text: tuple(item(t.strip()) for t in text.split(",") if t.strip())
    return _scalar(tp)


def add_config_arguments(parser: argparse.ArgumentParser, cls: type, *, skip: Iterable[str] = (),
                         group: str | None = None) -> None:
    """``--field-name`` for every field of ``cls`` except ``skip``; options not given keep the default."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    target = parser.add_argument_group(group) if group else parser
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        tp = hints[f.name]
        default = f.default
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
        help_text = f"{docs.get(f.name, '')} (default: {shown})".replace("%", "%%")
        choices = list(typing.get_args(tp)) if typing.get_origin(tp) is typing.Literal else None
        target.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=_parser(tp), default=argparse.SUPPRESS,
                            choices=choices, help=help_text)


def config_from_args(cls: type, args: argparse.Namespace, **overrides: Any) -> Any:
    """Build ``cls`` from the options that were given (others keep the config's defaults)."""
    kw = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    kw.update(overrides)
    return cls(**kw)
