"""Prompt files: one prompt per line (.txt) or JSON lines with a ``prompt`` or ``question`` field (.jsonl).

Example:
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "p.txt"; _ = f.write_text("a\\n\\nb\\n")
    >>> read_prompts(f)
    ['a', 'b']
"""

from __future__ import annotations

import json
from pathlib import Path

from thinklens.errors import ThinklensError


def read_prompts(path: str | Path) -> list[str]:
    """Prompts from a .txt file (one per line) or .jsonl (field ``prompt`` or ``question``)."""
    p = Path(path)
    if not p.is_file():
        raise ThinklensError.of("prompt file", str(p), "an existing .txt or .jsonl file", "check the path")
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise ThinklensError.of("prompt file", str(p), "UTF-8 text", "save the file as UTF-8") from None
    prompts: list[str] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if p.suffix == ".jsonl":
            try:
                rec = json.loads(line)
                text = rec.get("prompt", rec.get("question")) if isinstance(rec, dict) else None
            except json.JSONDecodeError:
                text = None
            if not isinstance(text, str) or not text.strip():
                raise ThinklensError.of(f"line {n} of {p}", line[:60], 'a JSON object with a "prompt" or "question" string',
                                        "fix that line")
            prompts.append(text)
        else:
            prompts.append(line)
    if not prompts:
        raise ThinklensError.of("prompt file", str(p), "at least one non-empty prompt", "add prompts, one per line")
    return prompts
