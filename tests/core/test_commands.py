"""Every `thinklens ...` command the README, the docs and the app suggest parses with the real CLI parser.

Commands are taken from code blocks and inline code of README.md and docs/*.md and from the string literals of
app/**/*.py (inline code in them, or a literal that is a command). They are parsed, never run, by
``thinklens.cli.build_parser()`` with every registered job loaded.

Conventions of the suggested text: ``a|b|c`` inside a word and ``{a,b,c}`` are alternatives (each is
checked); ``...`` stands for more options (dropped, with the option it is the value of); a command
holding another placeholder (``<job>``, ``{kind}``) is a template and is not checked.
"""

from __future__ import annotations

import ast
import contextlib
import io
import itertools
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_INLINE = re.compile(r"`([^`]+)`")
_SEPARATORS = re.compile(r"\s(?:&&|\|\||\||;)\s|\(or:\s|\)(?=\s)")
_COMMAND = re.compile(r"[a-z][a-z0-9-]*")
_PROGRAM = re.compile(r"^(?:\S*/)?thinklens$")


def _code_lines(text: str) -> list[str]:
    """The lines of code in a markdown text or a string literal: fenced blocks line by line, indented
    lines, inline code spans (joined when they wrap), and the literal itself when it is a command."""
    rest = _FENCE.sub("\n", text)
    out = [line for m in _FENCE.finditer(text) for line in re.sub(r"\\\n\s*", " ", m.group(1)).splitlines()]
    out += [" ".join(m.group(1).split()) for m in _INLINE.finditer(rest)]
    indented = "\n".join(line for line in _INLINE.sub("", rest).splitlines() if line.startswith("    "))
    out += re.sub(r"\\\n\s*", " ", indented).splitlines()
    if "`" not in text and _PROGRAM.match(text.strip().split(" ", 1)[0]):
        out += re.sub(r"\\\n\s*", " ", text).splitlines()
    return out


def _alternatives(token: str) -> list[str]:
    """``a|b`` and ``x{a,b}y`` -> each alternative; anything else -> itself."""
    brace = re.fullmatch(r"(.*)\{([^{}]*,[^{}]*)\}(.*)", token)
    if brace:
        return [brace.group(1) + part + brace.group(3) for part in brace.group(2).split(",")]
    if "|" in token and not token.startswith("-"):
        return token.split("|")
    return [token]


def extract_commands(text: str) -> list[list[str]]:
    """The thinklens argument lists suggested in ``text`` (alternatives expanded, templates left out).

    Example:
        >>> extract_commands("Run `thinklens run a|b --n 3 ...` or\\n```\\nX=1 thinklens info M  # c\\n```")
        [['info', 'M'], ['run', 'a', '--n', '3'], ['run', 'b', '--n', '3']]
        >>> extract_commands("`thinklens run <job> ...`, `from thinklens import Site`, `thinklens latent {a,b}`")
        [['latent', 'a'], ['latent', 'b']]
    """
    commands: list[list[str]] = []
    for line in _code_lines(text):
        line = re.sub(r"\s#\s.*$", "", line)  # a trailing shell comment
        for segment in _SEPARATORS.split(f" {line} "):
            try:
                words = shlex.split(segment.strip().rstrip(")"))
            except ValueError:
                continue
            while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):  # environment assignments
                words = words[1:]
            if len(words) < 2 or not _PROGRAM.match(words[0]) or not _COMMAND.fullmatch(words[1]):
                continue
            args: list[str] = []
            for w in words[1:]:
                if w in ("...", "\u2026"):  # more options: dropped with the option it is the value of
                    if args and args[-1].startswith("--"):
                        args.pop()
                    continue
                args.append(w)
            expanded = [list(c) for c in itertools.product(*(_alternatives(a) for a in args))]
            commands += [c for c in expanded if not any(re.search(r"[<>{}]", a) for a in c)]
    return sorted(commands)


def _sources() -> list[tuple[str, str]]:
    """(where, text): README.md and docs/*.md, then every string literal of the app (f-strings with ``{...}`` holes)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    out = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in pages]
    for path in sorted((ROOT / "app").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.value))
            elif isinstance(node, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
                out.append((f"{path.relative_to(ROOT)}:{node.lineno}", text))
    return out


def suggested_commands() -> list[tuple[str, list[str]]]:
    """(where, args) of every command suggested by the README, the docs and the app, each once."""
    seen: dict[tuple[str, ...], str] = {}
    for where, text in _sources():
        if "thinklens" in text:
            for args in extract_commands(text):
                seen.setdefault(tuple(args), where)
    return [(where, list(args)) for args, where in seen.items()]


def parse_error(parser, args: list[str]) -> str | None:
    """None when ``thinklens args`` parses (``--help`` counts), else the parser's message."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(args)
    except SystemExit as e:
        if e.code not in (0, None):
            return err.getvalue().strip() or f"exit {e.code}"
    return None


def test_extraction_finds_the_suggested_commands() -> None:
    commands = suggested_commands()
    assert len(commands) >= 10, commands
    assert any(args[:2] == ["run", "mi-peaks"] for _, args in commands)
    assert any(where.startswith("app/") for where, _ in commands)
    assert any(where.startswith("docs/") for where, _ in commands)  # the reference moved to docs/


def test_every_suggested_command_parses() -> None:
    from thinklens.cli import build_parser

    parser = build_parser()  # every registered job loaded
    bad = []
    for where, args in suggested_commands():
        message = parse_error(parser, args)
        if message is not None:
            bad.append(f"{where}: thinklens {shlex.join(args)}\n    {message}")
    assert not bad, f"{len(bad)} suggested command(s) do not parse:\n" + "\n".join(bad)


def test_every_demo_step_parses() -> None:
    from thinklens.cli import build_parser
    from thinklens.runs.demo_plan import DEMO_STEPS

    parser = build_parser()
    bad = [f"{s.name}: {message}" for s in DEMO_STEPS
           if (message := parse_error(parser, [a.format(runs="/tmp/runs") for a in s.argv])) is not None]
    assert not bad, bad
