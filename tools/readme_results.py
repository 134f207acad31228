"""Results blocks of README.md and docs/*.md: each is rendered from a template whose every measured number names
its summary field.

The checked pages are README.md and every ``docs/*.md`` (:func:`checked_files`). A results block starts with a
line ``<!-- results: results/NAME.json template: results/readme/ID.md -->`` and ends with a line
``<!-- /results -->``. The summary (written by ``python results/collect.py NAME``) holds
``command``, ``date``, ``source``, ``config`` and ``values``. The template is the block's markdown with each
quoted number written as a field of that summary: ``{{values.acc|pct|.1f}}%`` renders ``values["acc"]`` times
100 with one decimal. A field is a dotted path with ``[i]`` for list items and ``["key"]`` for keys that are not
plain names (``values.benches["bench/lynx.py"].label_speedup``). Filters, applied left to right before the format
spec: ``len`` (the number of items of a list or keys of a mapping: ``{{config.seeds|len|.0f}}`` for "3 seeds"),
``pct`` (times 100), ``abs``, ``nolead`` (``0.96`` written ``.96``). The last part is a Python format spec
(``.3f``, ``+.3f``, ``,.0f``); without one a value is written as ``str`` (for text values such as ``19/19``).

A block must equal its rendered template exactly, so a number edited by hand, or a summary that changed without
the page being regenerated (``python -m tools.readme_results --write``), is reported.

Example:
    >>> summary = {"values": {"acc": 0.93612, "n": 1812, "ratio": "19/19"}, "config": {"k": 3}}
    >>> render("acc {{values.acc|pct|.1f}}% of {{values.n|,.0f}} (k = {{config.k}}), `ok={{values.ratio}}`", summary)
    'acc 93.6% of 1,812 (k = 3), `ok=19/19`'
    >>> render("{{values.acc|nolead|.2f}} and {{values.nope|.2f}}", summary)
    Traceback (most recent call last):
    ...
    tools.readme_results.TemplateError: field values.nope: no key 'nope' in values (keys: acc, n, ratio)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any

_BLOCK = re.compile(r"^<!-- results: (\S+)(?: template: (\S+))? -->[ \t]*\n(.*?)^<!-- /results -->[ \t]*$",
                    re.M | re.S)
_OPEN = re.compile(r"^<!-- results:.*$", re.M)
_HOLE = re.compile(r"\{\{([^{}]+)\}\}")
_PART = re.compile(r"""\.?([A-Za-z_][\w-]*)|\[(\d+)\]|\["([^"]*)"\]""")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DIGITS = re.compile(r"\d+")
REQUIRED = ("command", "date", "source", "config", "values")
FILTERS = ("len", "pct", "abs", "nolead")


class TemplateError(ValueError):
    """A template hole that does not name a field of its summary, or a filter that does not exist."""


@dataclasses.dataclass(frozen=True)
class Block:
    """One results block of a checked page (README.md or docs/*.md)."""

    summary: str
    """The summary file it quotes, relative to the repository root (``results/NAME.json``)."""
    template: str | None
    """Its template file (``results/readme/ID.md``); None for a block written before templates."""
    text: str
    """The markdown between the markers, as written."""
    start: int
    """Offset of ``text`` in its page."""


def find_blocks(readme_text: str) -> list[Block]:
    """Every results block, in order.

    Example:
        >>> find_blocks("a\\n<!-- results: results/x.json template: results/readme/x.md -->\\n| m | 0.5 |\\n<!-- /results -->\\n")
        [Block(summary='results/x.json', template='results/readme/x.md', text='| m | 0.5 |\\n', start=65)]
    """
    return [Block(m.group(1), m.group(2), m.group(3), m.start(3)) for m in _BLOCK.finditer(readme_text)]


def blocks(readme_text: str) -> list[tuple[str, str]]:
    """(summary named, text between the markers) of every results block, in order."""
    return [(b.summary, b.text) for b in find_blocks(readme_text)]


def field(summary: Any, path: str) -> Any:
    """The value at a dotted path (``values.tables.seed10000[5].accuracy``, ``values.b["bench/x.py"].y``)."""
    obj, pos, where = summary, 0, ""
    for m in _PART.finditer(path):
        if m.start() != pos:
            break
        pos = m.end()
        key: Any = m.group(1) if m.group(1) is not None else m.group(3)
        if m.group(2) is not None:
            i = int(m.group(2))
            if not isinstance(obj, list) or i >= len(obj):
                raise TemplateError(f"field {path}: {where or 'the summary'} has no item {i}")
            obj, where = obj[i], f"{where}[{i}]"
            continue
        if not isinstance(obj, dict) or key not in obj:
            keys = ", ".join(map(str, obj)) if isinstance(obj, dict) else type(obj).__name__
            raise TemplateError(f"field {path}: no key {key!r} in {where or 'the summary'} (keys: {keys})")
        obj, where = obj[key], f"{where}.{key}" if where and m.group(1) else (f'{where}["{key}"]' if where else key)
    if pos != len(path) or not path:
        raise TemplateError(f"field {path!r}: not a path like values.name[0][\"key\"]")
    return obj


def format_value(value: Any, filters: list[str], spec: str) -> str:
    """A value through its filters and format spec, as a page writes it.

    Example:
        >>> format_value(-0.0275, ["pct"], "+.1f"), format_value(0.9612, ["nolead"], ".2f"), format_value(-0.337, ["abs", "pct"], ".1f")
        ('-2.8', '.96', '33.7')
        >>> format_value([10000, 30000, 40000], ["len"], ".0f")
        '3'
    """
    for f in filters:
        if f not in FILTERS:
            raise TemplateError(f"filter {f!r}: expected one of {', '.join(FILTERS)}")
        if f == "len":
            if not isinstance(value, (list, dict)):
                raise TemplateError(f"filter len applied to {value!r}, which is not a list or mapping")
            value = len(value)
            continue
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TemplateError(f"filter {f} applied to {value!r}, which is not a number")
        if f == "pct":
            value = value * 100
        elif f == "abs":
            value = abs(value)
    if value is None:
        raise TemplateError("the field is null in the summary (an undefined metric): quote another field")
    text = format(value, spec) if spec else str(value)
    if "nolead" in filters:
        text = re.sub(r"^([+-]?)0\.", r"\1.", text)
    return text


def _hole(body: str) -> tuple[str, list[str], str]:
    """A hole's field path, filters and format spec."""
    parts = body.strip().split("|")
    path, rest = parts[0].strip(), [p.strip() for p in parts[1:]]
    filters = [p for p in rest if p in FILTERS]
    specs = [p for p in rest if p not in FILTERS]
    if len(specs) > 1 or (specs and rest[-1] != specs[0]):
        raise TemplateError(f"hole {{{{{body}}}}}: the format spec must come last, after the filters {', '.join(FILTERS)}")
    return path, filters, specs[0] if specs else ""


def render(template: str, summary: dict[str, Any]) -> str:
    """The template with every ``{{field|filters|spec}}`` hole replaced by that field of ``summary``."""
    def one(m: re.Match) -> str:
        path, filters, spec = _hole(m.group(1))
        try:
            return format_value(field(summary, path), filters, spec)
        except TemplateError as e:
            raise TemplateError(f"{e}" if str(e).startswith("field") else f"field {path}: {e}") from None
        except (ValueError, TypeError) as e:
            raise TemplateError(f"field {path}: format {spec!r} does not apply to {field(summary, path)!r} ({e})") from None
    return _HOLE.sub(one, template)


def fields_of(template: str) -> list[str]:
    """The field path of every hole, in order."""
    return [_hole(m.group(1))[0] for m in _HOLE.finditer(template)]


def _first_difference(got: str, want: str) -> str:
    for i, (a, b) in enumerate(zip(got.splitlines(), want.splitlines()), 1):
        if a != b:
            return f"line {i} reads {a.strip()[:160]!r} where the template renders {b.strip()[:160]!r}"
    return f"it has {len(got.splitlines())} lines where the template renders {len(want.splitlines())}"


def block_problems(block: Block, root: Path, number: int, *, _cache: dict | None = None) -> list[str]:
    """What is wrong with one block (empty: its text is exactly its template rendered from its summary)."""
    where = f"results block {number} ({block.summary})"
    cache = _cache if _cache is not None else {}
    path = root / block.summary
    if not path.is_file():
        return [f"results block {number} names {block.summary}, which does not exist: write it with "
                f"`python results/collect.py {Path(block.summary).stem}`"]
    if path not in cache:
        try:
            cache[path] = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            cache[path] = err
    summary = cache[path]
    if isinstance(summary, json.JSONDecodeError):
        return [f"results block {number}: {block.summary} is not JSON ({summary})"]
    empty = [k for k in REQUIRED if not summary.get(k)]
    if empty:
        return [f"results block {number}: {block.summary} lacks a non-empty {', '.join(empty)}"]
    out = []
    if not _DATE.match(str(summary["date"])):
        out.append(f"results block {number}: {block.summary} has date {summary['date']!r}, expected YYYY-MM-DD")
    if block.template is None:
        return out + [f"{where} names no template: write the marker `<!-- results: {block.summary} template: "
                      "results/readme/ID.md -->` and the template, each quoted number as {{field|spec}}"]
    tpath = root / block.template
    if not tpath.is_file():
        return out + [f"{where} names the template {block.template}, which does not exist"]
    key = (tpath, path)
    if key not in cache:
        try:
            cache[key] = render(tpath.read_text(), summary)
        except TemplateError as e:
            cache[key] = e
    rendered = cache[key]
    if isinstance(rendered, TemplateError):
        return out + [f"{where}: {block.template}: {rendered}"]
    if rendered != block.text:
        out.append(f"{where} differs from {block.template} rendered from its summary: "
                   f"{_first_difference(block.text, rendered)} (fix the template, then "
                   "`python -m tools.readme_results --write`)")
    return out


def problems(readme_text: str, root: Path) -> list[str]:
    """Everything wrong with one page's results blocks, one clear sentence each (empty: all good).

    Checks: every opening marker is closed; each named summary exists under ``root`` and is JSON with
    non-empty command, date (YYYY-MM-DD), source, config and values; each block names a template whose every
    hole is a field of that summary, and the block's text is exactly that template rendered.

    Example:
        >>> print(*problems("<!-- results: results/no.json -->\\nx 1\\n<!-- /results -->\\n", Path("/nowhere")))
        results block 1 names results/no.json, which does not exist: write it with `python results/collect.py no`
    """
    found = find_blocks(readme_text)
    out = []
    if len(_OPEN.findall(readme_text)) != len(found):
        out.append(f"{len(_OPEN.findall(readme_text))} results blocks open but {len(found)} are closed by "
                   "a line `<!-- /results -->`")
    cache: dict = {}
    for i, b in enumerate(found, 1):
        out += block_problems(b, root, i, _cache=cache)
    return out


def write(readme_text: str, root: Path) -> str:
    """The page with every templated block replaced by its template rendered from its summary."""
    parts, last = [], 0
    for b in find_blocks(readme_text):
        if b.template is None:
            continue
        summary = json.loads((root / b.summary).read_text())
        parts += [readme_text[last:b.start], render((root / b.template).read_text(), summary)]
        last = b.start + len(b.text)
    return "".join(parts) + readme_text[last:]


# ---------------------------------------------------------------- every checked page

#: The folder of the pages checked beside README.md (every ``*.md`` directly in it).
DOCS = "docs"


def checked_files(root: Path) -> list[Path]:
    """README.md and every ``docs/*.md`` under ``root`` that exist, README first, the docs sorted by name."""
    docs = sorted((root / DOCS).glob("*.md")) if (root / DOCS).is_dir() else []
    return [p for p in [root / "README.md", *docs] if p.is_file()]


def _named(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def all_blocks(root: Path, files: list[Path] | None = None) -> list[tuple[str, Block]]:
    """(page, block) of every results block of every checked page, in page order (``page`` relative to ``root``)."""
    return [(_named(f, root), b) for f in (checked_files(root) if files is None else files)
            for b in find_blocks(f.read_text(encoding="utf-8"))]


def check_files(root: Path, files: list[Path] | None = None) -> list[str]:
    """:func:`problems` of every checked page, each line starting with its page (``docs/lynx.md: results block 2 ...``).

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp()); (root / "docs").mkdir()
        >>> _ = (root / "README.md").write_text("no blocks here\\n")
        >>> _ = (root / "docs" / "a.md").write_text("<!-- results: results/no.json -->\\nx 1\\n<!-- /results -->\\n")
        >>> check_files(root)
        ['docs/a.md: results block 1 names results/no.json, which does not exist: write it with `python results/collect.py no`']
    """
    out = []
    for f in checked_files(root) if files is None else files:
        out += [f"{_named(f, root)}: {line}" for line in problems(f.read_text(encoding="utf-8"), root)]
    return out


def write_files(root: Path, files: list[Path] | None = None) -> list[str]:
    """Rewrite every templated block of every checked page from its template and summary; the pages changed."""
    changed = []
    for f in checked_files(root) if files is None else files:
        text = f.read_text(encoding="utf-8")
        new = write(text, root)
        if new != text:
            f.write_text(new, encoding="utf-8")
            changed.append(_named(f, root))
    return changed


# ---------------------------------------------------------------- the mutation sweep


def mutation_sweep(readme_text: str, root: Path) -> tuple[int, int, list[str]]:
    """Change the last digit of every number (every run of digits) in every block by one, one at a time.

    Returns (flagged, total, survivors): how many of the edits :func:`block_problems` reports, of how many,
    and each edit it did not report as ``block N: 'before' -> 'after'``.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp()); (root / "results").mkdir()
        >>> s = {"command": "c", "date": "2026-12-01", "source": "s", "config": {"k": 3}, "values": {"a": 0.25}}
        >>> _ = (root / "results" / "s.json").write_text(json.dumps(s))
        >>> _ = (root / "results" / "s.md").write_text("a = {{values.a|.2f}}, k {{config.k}}\\n")
        >>> mutation_sweep("<!-- results: results/s.json template: results/s.md -->\\na = 0.25, k 3\\n<!-- /results -->\\n", root)
        (3, 3, [])
    """
    flagged, total, survivors, cache = 0, 0, [], {}
    for number, b in enumerate(find_blocks(readme_text), 1):
        for m in _DIGITS.finditer(b.text):
            j = m.end() - 1
            d = int(b.text[j])
            mutated = b.text[:j] + str(d + 1 if d < 9 else d - 1) + b.text[j + 1:]
            total += 1
            if block_problems(dataclasses.replace(b, text=mutated), root, number, _cache=cache):
                flagged += 1
            else:
                lo = max(0, m.start() - 20)
                survivors.append(f"block {number}: {b.text[lo:j + 8]!r} -> {mutated[lo:j + 8]!r}")
    return flagged, total, survivors


def sweep_files(root: Path, files: list[Path] | None = None) -> tuple[int, int, list[str]]:
    """:func:`mutation_sweep` over every checked page: (flagged, total, survivors), each survivor named by its page."""
    flagged, total, survivors = 0, 0, []
    for f in checked_files(root) if files is None else files:
        k, n, left = mutation_sweep(f.read_text(encoding="utf-8"), root)
        flagged, total = flagged + k, total + n
        survivors += [f"{_named(f, root)}: {s}" for s in left]
    return flagged, total, survivors


# ---------------------------------------------------------------- measured numbers outside the blocks

# a number with a unit that marks a measurement: %, s, min, x (a ratio) or a +-/± spread; or name=value
_MEASURED = re.compile(
    r"(?<![\w.])(?:\d+(?:\.\d+)?|\.\d+)(?:\s?(?:%|s\b|sec\b|min\b|minutes\b|x\b)|\s?(?:±|\+-)\s?\d)"
    r"|(?<![\w.])(?:±|\+-)\s?\d+(?:\.\d+)?"
    r"|\b[a-z][a-z0-9]*_[a-z0-9_]*=\d+(?:\.\d+)?(?:/\d+)?")
_PAPER = re.compile(r"\bpaper\b|\bet al\b|\breference\b|\bpaper's\b", re.I)
# a bound a test or target sets ("must render in under 3 s", "<= 1.15") is a requirement, not a measurement
_BOUND = re.compile(r"(?:\bunder|\bbelow|\bat most|\bat least|\bwithin|<=|<|>=|>)\s*$")


def outside_numbers(readme_text: str) -> list[str]:
    """Measured-looking numbers of a page outside its results blocks and fenced code, with their sentence.

    A number with %, s, min, x or a +-/± spread, or a ``metric_name=value``, is measured-looking; one whose
    sentence names the paper it quotes (``the paper``, ``et al.``, ``the reference``), and a bound (``under 3 s``,
    ``<= 1.15``), are not reported.

    Example:
        >>> found = outside_numbers("It saves 12% (`tok_speed=3.1`, d=128). The paper's 40-65% savings. Tests take 3 s, under 5 s.")
        >>> found  # doctest: +NORMALIZE_WHITESPACE
        ['12%: It saves 12% (`tok_speed=3.1`, d=128).', 'tok_speed=3.1: It saves 12% (`tok_speed=3.1`, d=128).',
         '3 s: Tests take 3 s, under 5 s.']
    """
    text = _BLOCK.sub(lambda m: "\n" * m.group(0).count("\n"), readme_text)
    text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    out = []
    for para in re.split(r"\n\s*\n", text):
        flat = " ".join(para.split())
        for sentence in re.split(r"(?<=[.:;!?])\s+(?=[A-Z(`*])", flat):
            if _PAPER.search(sentence):
                continue
            out += [f"{m.group(0)}: {sentence}" for m in _MEASURED.finditer(sentence)
                    if not _BOUND.search(sentence[:m.start()])]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.readme_results",
                                description="check the results blocks of README.md and docs/*.md against their "
                                            "templates and summaries")
    p.add_argument("files", nargs="*", help="pages to check (default: README.md and docs/*.md of --root)")
    p.add_argument("--root", default=".", help="the repository root the summaries and templates are under")
    p.add_argument("--write", action="store_true", help="rewrite every templated block from its template and summary")
    p.add_argument("--sweep", action="store_true", help="run the mutation sweep and print flagged/total")
    args = p.parse_args(argv)
    root = Path(args.root).resolve()
    files = [Path(f) for f in args.files] or checked_files(root)
    missing = [str(f) for f in files if not f.is_file()]
    if missing or not files:
        print(f"no such page: {', '.join(missing) or 'README.md'} (expected README.md or docs/*.md under "
              f"{root}; pass --root, the repository root)", file=sys.stderr)
        return 2
    if args.write:
        for page in write_files(root, files):
            print(f"rewrote {page}")
    found = check_files(root, files)
    for line in found:
        print(line, file=sys.stderr)
    print(f"results_blocks={len(all_blocks(root, files))} in {len(files)} pages")
    if args.sweep:
        flagged, total, survivors = sweep_files(root, files)
        print(f"readme_mutations_flagged={flagged}/{total}")
        for s in survivors:
            print(f"  survived: {s}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
