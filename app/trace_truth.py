"""A generated trace's ground truth, marked in the trace viewer: a record that says where the answer became known
(``answer_known_at``) and where each cue word was (``cues``, each with its ``start_index``), both counted in the
tokens of the model that wrote it (organism-eval's records: ``thinklens.zoo.smol_r1_eval.trace_records``), is
re-tokenized with that model's tokenizer so that the marks land on its tokens; each cue keeps the construction's value
there and what a forced exit there answers.

Both indices are cuts: the forced exit reads the tokens before them, so the marked token is the first one it did not
read. The tokens are checked against the record before anything is marked (they must join to the text, and each cue's
token must start its word); a trace that fails the check is shown by words, unmarked, with the reason.

Example:
    >>> rec = {"answer_known_at": 2, "cues": [{"word": "wait", "start_index": 3, "value": 7,
    ...        "construction_correct": True, "after_answer": True, "forced": "7", "forced_correct": True}]}
    >>> tokens = ["3 + 4", " = 7", ".", " Wait", ", 7."]
    >>> misplaced(tokens, "".join(tokens), rec)
    ''
    >>> marks, quantities, tables = truth_view(rec, tokens)
    >>> marks, quantities[FORCED], tables[CUES][0]["forced exit answers"]
    ({'answer known (answer_known_at)': [2], 'cue event': [3]}, [None, None, None, 1.0, None], '7')
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from thinklens.engine.model import load_tokenizer, resolve_model_path

FORCED = "forced exit right at cue"
"""The quantity: 1 where a forced exit before the cue answers right, 0 where wrong (None off the cues)."""
KNOWN = "answer known (answer_known_at)"
"""The mark of the first token after the sentence that writes the answer."""
CUES = "cues: what a forced exit answers before each"
"""The table of the trace's cues."""


def has_truth(fields: Mapping[str, Any]) -> bool:
    """Whether a record's fields carry ground truth in token indices (``answer_known_at``, or cues with
    ``start_index``)."""
    cues = fields.get("cues")
    return isinstance(fields.get("answer_known_at"), int) or (
        isinstance(cues, list) and any(isinstance(c, Mapping) and isinstance(c.get("start_index"), int) for c in cues))


@functools.lru_cache(maxsize=4)
def tokenizer_of(model: str) -> Any:
    """The tokenizer of a model name or folder (zoo, packaged real model or organism, local folder), weights not read."""
    return load_tokenizer(resolve_model_path(model))


def model_tokens(text: str, tokenizer: Any) -> tuple[list[str], list[int]]:
    """The text's tokens as the model reads it: each id decoded alone (as the generation's trace was), and the ids."""
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    return [tokenizer.decode([i]) for i in ids], ids


def misplaced(tokens: Sequence[str], text: str, fields: Mapping[str, Any]) -> str:
    """Why the record's token indices cannot be placed on ``tokens`` ('' when they can): the tokens must join to the
    text, the answer's cut lie inside it, and each cue's token start its word."""
    if "".join(tokens) != text:
        return "re-tokenizing the text does not give it back (the model's tokenizer is not the one that wrote it)"
    known = fields.get("answer_known_at")
    if isinstance(known, int) and not 0 <= known <= len(tokens):
        return f"answer_known_at {known} is outside the trace's {len(tokens)} tokens"
    starts = [0]
    for tok in tokens:
        starts.append(starts[-1] + len(tok))
    for k, cue in enumerate(fields.get("cues") or []):
        i, word = cue.get("start_index"), str(cue.get("word", ""))
        if not isinstance(i, int) or not 0 <= i < len(tokens):
            return f"cue {k} ({word!r}) is at {i}, outside the trace's {len(tokens)} tokens"
        if word.lower() not in text[starts[i]:starts[i] + len(word) + 2].lower():
            return f"cue {k} ({word!r}) does not start at token {i} ({tokens[i]!r}): the tokens differ from the generation's"
    return ""


def truth_view(fields: Mapping[str, Any], tokens: Sequence[str]) -> tuple[dict[str, list[int]], dict[str, list[float | None]],
                                                                          dict[str, list[dict[str, Any]]]]:
    """The marks (where the answer is known, each cue), the quantity :data:`FORCED` and the cue table of a record whose
    indices :func:`misplaced` accepted on ``tokens``."""
    marks: dict[str, list[int]] = {}
    known = fields.get("answer_known_at")
    if isinstance(known, int) and known < len(tokens):
        marks[KNOWN] = [known]
    cues = [c for c in fields.get("cues") or [] if isinstance(c.get("start_index"), int)]
    if cues:
        marks["cue event"] = sorted({c["start_index"] for c in cues})
    forced: list[float | None] = [None] * len(tokens)
    rows = []
    for k, c in enumerate(cues):
        i = c["start_index"]
        if c.get("forced_correct") is not None:
            forced[i] = float(bool(c["forced_correct"]))
        rows.append({"cue": k, "word": c.get("word"), "position": i, "token": tokens[i],
                     "after the answer is known": c.get("after_answer"), "value written so far": c.get("value"),
                     "that value is the answer": c.get("construction_correct"), "forced exit answers": c.get("forced"),
                     "forced exit right": c.get("forced_correct")})
    return marks, {FORCED: forced}, {CUES: rows} if rows else {}
