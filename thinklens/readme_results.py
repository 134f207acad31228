"""README results blocks and the committed summaries they quote: every number in a block must be in its summary.

A results block of README.md starts with a line ``<!-- results: results/NAME.json -->`` and ends with a line
``<!-- /results -->``; it holds a table and/or prose whose numbers were computed by a command. The named file
(written by ``python results/collect.py NAME``) holds ``command``, ``date``, ``source``, ``config`` and
``values``. A number of the block matches the summary when it equals a numeric leaf of ``values`` or ``config``
(a dict key that is a number counts too) to the precision it is written with, or that leaf times 100 (a
percentage). Signs and thousands separators are ignored. Skipped: code (inline spans and fenced blocks), digits
that belong to a word or identifier (tiny-r1, k3, GPT-2, resid_post.2, 30x, 1e-5) and exponents (R^2).

Example:
    >>> text = "tiny-think scores **.96** (`--n 50`), 12.7% of 1,812 steps; resid_post.2 is GPT-2's R^2."
    >>> numbers_in(text)
    ['.96', '12.7', '1,812']
    >>> unmatched(text, {"values": {"acc": 0.9612, "iqr": 0.1266, "n": 1812}, "config": {}})
    []
    >>> unmatched("0.97 and 14%", {"values": {"acc": 0.9612, "iqr": 0.1266}, "config": {}})
    ['0.97', '14']
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_BLOCK = re.compile(r"^<!-- results: (\S+) -->[ \t]*\n(.*?)^<!-- /results -->[ \t]*$", re.M | re.S)
_OPEN = re.compile(r"^<!-- results:.*$", re.M)
_FENCE = re.compile(r"```.*?```", re.S)
_INLINE = re.compile(r"`[^`]*`")
# a number not glued to a word, a dot-path or an exponent on its left, nor to a word or a decimal part on its right
_NUMBER = re.compile(r"(?<![\w.^])(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?!\w|\.\d)")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
REQUIRED = ("command", "date", "source", "config", "values")


def blocks(readme_text: str) -> list[tuple[str, str]]:
    """(file named, text between the markers) of every results block, in order.

    Example:
        >>> blocks("a\\n<!-- results: results/x.json -->\\n| m | 0.5 |\\n<!-- /results -->\\nb 7")
        [('results/x.json', '| m | 0.5 |\\n')]
    """
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(readme_text)]


def numbers_in(text: str) -> list[str]:
    """The numbers written in a block's text, as written (code, identifiers and exponents skipped; no sign).

    Example:
        >>> numbers_in("delta 0.01-0.3 saves -1.3% (`top_k=3`), tiny-r1 top-3 class-0 Qwen2 3e-3, 2-4 steps")
        ['0.01', '0.3', '1.3', '2', '4']
    """
    text = _INLINE.sub(" ", _FENCE.sub(" ", text))
    out = []
    for m in _NUMBER.finditer(text):
        i = m.start()
        # a sign glued to a word on its left makes the digits part of an identifier: GPT-2, class-0, 1e-5
        if i >= 2 and text[i - 1] in "+-" and (text[i - 2].isalpha() or text[i - 2] == "_"):
            continue
        out.append(m.group(0))
    return out


def json_numbers(obj: Any) -> list[float]:
    """Every numeric leaf of a JSON value, and every dict key that parses as a number (bools are not numbers).

    Example:
        >>> json_numbers({"acc": {"1": 0.5, "x": [2, None, True, "3"]}})
        [1.0, 0.5, 2.0]
    """
    out: list[float] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            try:
                out.append(float(k))
            except (TypeError, ValueError):
                pass
            out += json_numbers(v)
    elif isinstance(obj, list):
        for v in obj:
            out += json_numbers(v)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        out.append(float(obj))
    return out


def matches(written: str, value: float) -> bool:
    """Whether a number as written equals ``value`` (or 100 x ``value``) to its written precision, signs ignored.

    Example:
        >>> matches("0.983", 0.98333), matches("12.7", 0.1266), matches("1,812", 1812), matches("0.98", 0.9749)
        (True, True, True, False)
    """
    plain = written.replace(",", "")
    decimals = len(plain.split(".")[1]) if "." in plain else 0
    x, v = abs(float(plain)), abs(value)
    tol = 0.5 * 10.0 ** -decimals + 1e-9
    return abs(v - x) <= tol or abs(100 * v - x) <= tol


def unmatched(block_text: str, summary: dict[str, Any]) -> list[str]:
    """The numbers of a block that no numeric leaf of the summary's ``values`` or ``config`` matches."""
    pool = json_numbers(summary.get("values")) + json_numbers(summary.get("config"))
    return [n for n in numbers_in(block_text) if not any(matches(n, v) for v in pool)]


def problems(readme_text: str, root: Path) -> list[str]:
    """Everything wrong with the README's results blocks, one clear sentence each (empty: all good).

    Checks: every opening marker is closed; each named file exists under ``root``, is JSON with non-empty
    command, date (YYYY-MM-DD), source, config and values; each number of the block is in that summary.

    Example:
        >>> print(*problems("<!-- results: results/no.json -->\\nx 1\\n<!-- /results -->\\n", Path("/nowhere")))
        results block 1 names results/no.json, which does not exist: write it with `python results/collect.py no`
    """
    out = []
    found = blocks(readme_text)
    if len(_OPEN.findall(readme_text)) != len(found):
        out.append(f"{len(_OPEN.findall(readme_text))} results blocks open but {len(found)} are closed by "
                   "a line `<!-- /results -->`")
    for i, (name, text) in enumerate(found, 1):
        path = root / name
        if not path.is_file():
            out.append(f"results block {i} names {name}, which does not exist: write it with "
                       f"`python results/collect.py {Path(name).stem}`")
            continue
        try:
            summary = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            out.append(f"results block {i}: {name} is not JSON ({err})")
            continue
        empty = [k for k in REQUIRED if not summary.get(k)]
        if empty:
            out.append(f"results block {i}: {name} lacks a non-empty {', '.join(empty)}")
            continue
        if not _DATE.match(str(summary["date"])):
            out.append(f"results block {i}: {name} has date {summary['date']!r}, expected YYYY-MM-DD")
        missing = unmatched(text, summary)
        if missing:
            out.append(f"results block {i} ({name}): {', '.join(missing)} not in its summary's values or config "
                       "(re-run `python results/collect.py`, or fix the README)")
    return out
