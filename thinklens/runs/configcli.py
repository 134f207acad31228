"""Command-line options generated from a frozen config dataclass: one ``--field-name`` per field, its
help the field's docstring (read from the source, inherited fields included), its default the field's.

Values are parsed by the field's annotation (``int``, ``float``, ``str``, ``Literal`` choices, tuples as
comma-separated lists, ``X | None`` accepting ``none``). Booleans take every usual form: ``--flag``,
``--no-flag`` and ``--flag true|false``. The config's checks (:class:`ConfigGroup`) then validate the values, so
the CLI and the Python API reject the same inputs with the same message. Options not given are absent
from the namespace, so the config keeps its default (or the preset's, or the ``--config`` file's). Used by
``thinklens run <job>`` (:mod:`thinklens.cli`) for every job's config and the common options.

Example:
    >>> import argparse
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Demo:
    ...     n: int = 3
    ...     '''How many.'''
    ...     deltas: tuple[float, ...] = (0.1, 0.2)
    ...     '''Levels.'''
    ...     sample: bool = True
    ...     '''Sample.'''
    >>> p = argparse.ArgumentParser()
    >>> add_config_arguments(p, Demo)
    >>> Demo(**vars(p.parse_args(["--deltas", "0.05,0.3", "--no-sample"])))
    Demo(n=3, deltas=(0.05, 0.3), sample=False)
    >>> vars(p.parse_args(["--sample", "false"]))
    {'sample': False}
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from thinklens.errors import ThinklensError


class ConfigGroup:
    """Base of every config field group: validation is each class's own ``check(self)``, run along the MRO.

    A config is composed of field groups (:class:`~thinklens.data.problemsets.DataOptions`,
    :class:`~thinklens.tasks.StepRange`, :class:`~thinklens.engine.training.OptimOptions`, ...) and its own fields. Each
    class that defines ``check`` validates the fields it declares; ``__post_init__`` (here, and only here) calls
    every class's own ``check`` once, base groups first (reversed MRO), so a group can never be left unchecked by a
    config that forgets to chain to it. A subclass defining ``__post_init__`` is refused at class creation.
    ``check`` has no side effects besides normalising its own fields (``object.__setattr__`` on a frozen config).

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Sizes(ConfigGroup):
        ...     n: int = 1
        ...     def check(self):
        ...         if self.n < 1:
        ...             raise ValueError(f"n={self.n}")
        >>> @dataclass(frozen=True)
        ... class Job(Sizes):
        ...     word: str = "hi"
        ...     def check(self):
        ...         if not self.word:
        ...             raise ValueError("word")
        >>> Job(n=0)
        Traceback (most recent call last):
        ...
        ValueError: n=0
        >>> group_checks(Job)
        ['Sizes', 'Job']
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__post_init__" in cls.__dict__:
            raise TypeError(f"{cls.__qualname__}: a ConfigGroup validates in check(self), not __post_init__ "
                            "(ConfigGroup.__post_init__ runs every group's check along the MRO)")

    def __post_init__(self) -> None:
        for klass in reversed(type(self).__mro__):
            check = klass.__dict__.get("check")
            if check is not None:
                check(self)


def group_checks(cls: type) -> list[str]:
    """The classes whose ``check`` a ``cls(...)`` runs, in order (base groups first)."""
    return [k.__name__ for k in reversed(cls.__mro__) if "check" in k.__dict__]


def renamed_fields(cls: type) -> dict[str, str]:
    """``{old name: field}`` of every deprecated option name of ``cls``: the ``renamed`` class attributes
    (``renamed: ClassVar[dict[str, str]] = {"eval_n": "n_eval"}``) along the MRO, subclasses winning.

    Example:
        >>> from thinklens.latent.config import CODIConfig
        >>> renamed_fields(CODIConfig)["eval_n"], renamed_fields(CODIConfig)["steps"]
        ('n_eval', 'train_steps')
    """
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        out.update(klass.__dict__.get("renamed", {}))
    names = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    return {old: new for old, new in out.items() if new in names and old not in names}


def deprecation_line(old: str, new: str, *, cli: bool) -> str:
    """The one line a deprecated name prints: the new name in the caller's terms (a flag or a keyword)."""
    if cli:
        return f"thinklens: --{old.replace('_', '-')} is deprecated; use --{new.replace('_', '-')}"
    return f"thinklens: {old}= is deprecated; use {new}="


def rename_deprecated(cls: type, values: Mapping[str, Any], *, cli: bool = False) -> dict[str, Any]:
    """``values`` (keywords or a config file's keys) with deprecated names of ``cls`` renamed, one line on stderr
    for each; an old name given with its new one is an error.

    Example:
        >>> from thinklens.zoo.jobs.zoo_eval import ZooEvalConfig
        >>> rename_deprecated(ZooEvalConfig, {"n": 5, "seed": 1})
        {'n_eval': 5, 'seed': 1}
    """
    renamed = renamed_fields(cls)
    out: dict[str, Any] = {}
    for key, value in values.items():
        new = renamed.get(key)
        if new is None:
            out[key] = value
            continue
        if new in values:
            raise ThinklensError.of(key, value, f"only {new} (the deprecated name {key} was given with it)",
                                    f"drop {key}")
        print(deprecation_line(key, new, cli=cli), file=sys.stderr)
        out[new] = value
    return out


#: The namespace attribute where a parse notes which flag set each field that has a former name, so a field given
#: under both names is refused (:func:`_note_flag`).
GIVEN_AS = "_given_as"


def _note_flag(parser: argparse.ArgumentParser, namespace: argparse.Namespace, field: str, flag: str,
               value: Any) -> None:
    """Note that ``flag`` set ``field`` to ``value``; refuse (exit 2) a field set under two of its names, a renamed
    option's new flag and its former one (argparse would keep whichever came last). The same flag twice is
    argparse's, as for every option: the last wins."""
    given = namespace.__dict__.setdefault(GIVEN_AS, {})
    if field in given and given[field][0] != flag:
        first, first_value = given[field]
        new = "--" + field.replace("_", "-")
        old = ", ".join(sorted({first, flag} - {new}))
        shown = f"{first} {_show(first_value)} and {flag} {_show(value)}"
        fix = (f"drop {old}" if _show(first_value) == _show(value) else
               f"pass one of {new} {_show(first_value)} or {new} {_show(value)}, not both names")
        parser.error(f"bad {new}: received {shown} ({old} is its former name, deprecated); "
                     f"expected {new} once; fix: {fix}")
    given[field] = (flag, value)


class _Deprecated(argparse.Action):
    """A hidden alias of a renamed option: stores under the new field and prints one line naming the new flag;
    given with the new flag, it is an error."""

    def __init__(self, *args: Any, new: str = "", **kwargs: Any) -> None:
        self.new = new
        super().__init__(*args, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        _note_flag(parser, namespace, self.new, option_string or "--" + self.dest.replace("_", "-"), values)
        print(deprecation_line(self.dest, self.new, cli=True), file=sys.stderr)
        setattr(namespace, self.new, values)


class _Renamed(argparse._StoreAction):
    """The flag of a field that has a former name: stores as usual, and notes it (see :func:`_note_flag`)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        _note_flag(parser, namespace, self.dest, option_string or "--" + self.dest.replace("_", "-"), values)
        super().__call__(parser, namespace, values, option_string)


def field_docs(cls: type) -> dict[str, str]:
    """``{field: docstring}`` from the class sources (the string right after each field; subclasses win)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            docs.update(_own_field_docs(klass))
    return docs


@functools.lru_cache(maxsize=None)
def _module_tree(path: str) -> ast.Module:
    """A source file parsed once (every job's parser reads the shared option groups' docstrings)."""
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read())


def _class_body(klass: type) -> list[ast.stmt]:
    """The statements of ``klass``'s definition: found by its qualified name in its module's parsed source (one parse
    per file), else from :func:`inspect.getsource` (a class defined in a REPL has neither)."""
    try:
        path = inspect.getsourcefile(klass)
        nodes: list[ast.stmt] = _module_tree(path).body if path else []
        for name in klass.__qualname__.split("."):
            node = next((n for n in nodes if isinstance(n, ast.ClassDef) and n.name == name), None)
            if node is None:
                raise LookupError(klass.__qualname__)
            nodes = node.body
        return nodes
    except (OSError, TypeError, SyntaxError, LookupError):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):  # pragma: no cover - classes defined in a REPL
            return []
        return tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []


@functools.lru_cache(maxsize=None)
def _own_field_docs(klass: type) -> dict[str, str]:
    docs = {}
    body = _class_body(klass)
    for node, nxt in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def parse_bool(text: str) -> bool:
    """``true/false`` in the usual spellings; anything else is an argparse error naming what was received."""
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, received {text!r}")


def _scalar_parser(tp: Any) -> Callable[[str], Any]:
    if tp is bool:
        return parse_bool
    if tp in (int, float, str):
        def parse(text: str, tp=tp) -> Any:
            try:
                return tp(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected {tp.__name__}, received {text!r}") from None
        return parse
    if typing.get_origin(tp) is typing.Literal:
        return str
    raise TypeError(f"no CLI parser for {tp!r}")  # a programming error in a config, not user input


def _parser_for(tp: Any) -> tuple[Callable[[str], Any], str]:
    """A string -> value function for annotation ``tp`` and a metavar."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        parse_inner, meta = _parser_for(next(a for a in args if a is not type(None)))

        def parse_optional(text: str) -> Any:
            return None if text.strip().lower() in ("none", "null", "") else parse_inner(text)
        return parse_optional, f"{meta}|none"
    if origin is tuple:
        item = _scalar_parser(args[0])

        def parse_tuple(text: str) -> tuple:
            return tuple(item(t.strip()) for t in text.split(",") if t.strip())
        return parse_tuple, f"{getattr(args[0], '__name__', 'x').upper()},..."
    return _scalar_parser(tp), getattr(tp, "__name__", "value").upper()


def _show(value: Any) -> str:
    return ",".join(str(v) for v in value) if isinstance(value, tuple) else str(value)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return None


def add_config_arguments(parser: "argparse._ActionsContainer", cls: type, *, skip: Iterable[str] = (),
                         group: str | None = None) -> None:
    """Add ``--field-name`` options for every field of dataclass ``cls`` except ``skip``.

    Args:
        parser: a parser or an argument group.
        group: put the options in a new argument group of that title (sections in ``--help``).
    """
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    target = parser.add_argument_group(group) if group else parser
    skip = set(skip)
    renamed = renamed_fields(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        tp = hints[f.name]
        flag = "--" + f.name.replace("_", "-")
        help_text = f"{docs.get(f.name, '')} (default: {_show(_default(f))})".replace("%", "%%")
        if tp is bool:
            target.add_argument(flag, dest=f.name, nargs="?", const=True, type=parse_bool, default=argparse.SUPPRESS,
                                metavar="true|false", help=help_text)
            target.add_argument("--no-" + f.name.replace("_", "-"), dest=f.name, action="store_false",
                                default=argparse.SUPPRESS, help=f"same as {flag} false")
            continue
        parse, metavar = _parser_for(tp)
        choices = list(typing.get_args(tp)) if typing.get_origin(tp) is typing.Literal else None
        target.add_argument(flag, dest=f.name, type=parse, default=argparse.SUPPRESS,
                            metavar=None if choices else metavar, choices=choices, help=help_text,
                            **({"action": _Renamed} if f.name in renamed.values() else {}))
    # deprecated names (results commands and scripts written before a rename still run); hidden from --help
    for old, new in renamed.items():
        if new in skip:
            continue
        parse, _ = _parser_for(hints[new])
        choices = list(typing.get_args(hints[new])) if typing.get_origin(hints[new]) is typing.Literal else None
        target.add_argument("--" + old.replace("_", "-"), dest=old, new=new, action=_Deprecated, type=parse,
                            choices=choices, default=argparse.SUPPRESS, help=argparse.SUPPRESS)

