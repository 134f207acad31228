"""CLI options generated from a frozen config dataclass: one ``--field-name`` per field, its help the
field's docstring (read from the source, inherited fields included), its default the field's default.

Values are parsed by the annotation; the config's ``__post_init__`` then validates them, so the CLI and
the Python API reject the same inputs with the same message.

Example:
    >>> import argparse
    >>> from latent.config import CODIConfig
    >>> p = argparse.ArgumentParser()
    >>> add_config_arguments(p, CODIConfig)
    >>> config_from_args(CODIConfig, p.parse_args(["--n-latents", "4", "--no-projection"])).n_latents
    4
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import textwrap
import types
import typing
from typing import Any


def field_docs(cls: type) -> dict[str, str]:
    """``{field: docstring}`` from the class sources (subclasses override their bases)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):  # pragma: no cover - REPL classes
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, nxt in zip(body, body[1:]):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                    and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
                docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def _parser_for(tp: Any):
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        inner = _parser_for(next(a for a in args if a is not type(None)))
        return lambda text: None if text.strip().lower() in ("none", "") else inner(text)
    if origin is tuple:
        item = _parser_for(args[0])
        return lambda text: tuple(item(t.strip()) for t in text.split(",") if t.strip())
    if origin is typing.Literal:
        return str
    if tp in (int, float, str):
        def parse(text: str, tp=tp) -> Any:
            try:
                return tp(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected {tp.__name__}, received {text!r}") from None
        return parse
    raise TypeError(f"no CLI parser for {tp!r}")  # a programming error in a config


def add_config_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add ``--field-name`` for every field of ``cls``; absent options keep the config's default."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        default = f.default
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
        help_text = f"{docs.get(f.name, '')} (default: {shown})".replace("%", "%%")
        flag = "--" + f.name.replace("_", "-")
        if tp is bool:
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS,
                                help=help_text)
            continue
        choices = list(typing.get_args(tp)) if typing.get_origin(tp) is typing.Literal else None
        parser.add_argument(flag, dest=f.name, type=_parser_for(tp), default=argparse.SUPPRESS, choices=choices,
                            help=help_text)


def config_from_args(cls: type, args: argparse.Namespace) -> Any:
    """Build ``cls`` from the options given (others keep their defaults)."""
    return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)})
