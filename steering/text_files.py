"""A file of texts: a .txt file's non-empty lines, or the ``text`` fields of a .jsonl file (:func:`read_texts`), and
whether a ``--corpus`` / ``--data`` spec names one rather than a problem set (:func:`is_text_file`); read by the
corpora (:mod:`thinklens.steering.corpora`) and the held-out prompts (:mod:`thinklens.steering.problems`).
"""

from __future__ import annotations

import json
from pathlib import Path

from thinklens.errors import ThinklensError


def read_texts(path: str | Path) -> list[str]:
    """Non-empty lines of a UTF-8 text file (or the ``text`` field of a .jsonl file)."""
    p = Path(path)
    if not p.is_file():
        raise ThinklensError.of("text file", str(p), "an existing .txt or .jsonl file", "check the path")
    lines = [ln for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
    if p.suffix == ".jsonl":
        lines = [json.loads(ln).get("text", "") for ln in lines]
        lines = [t for t in lines if isinstance(t, str) and t.strip()]
    if not lines:
        raise ThinklensError.of("text file", str(p), "at least one non-empty line", "add texts, one per line")
    return lines


def is_text_file(spec: str) -> bool:
    """Whether ``spec`` is a file of texts for :func:`read_texts`: a .txt file, or a .jsonl file whose first row
    has a ``text`` field (any other source is a problem set).

    Example:
        >>> is_text_file("zoo:think"), is_text_file("synthetic:2-4")
        (False, False)
    """
    p = Path(spec)
    if not p.is_file() or p.suffix not in (".txt", ".jsonl"):
        return False
    if p.suffix == ".txt":
        return True
    with p.open(encoding="utf-8") as f:
        first = next((ln for ln in f if ln.strip()), "")
    try:
        row = json.loads(first)
    except json.JSONDecodeError:
        return False
    return isinstance(row, dict) and "text" in row
