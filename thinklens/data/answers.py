r"""THE answer grading of the project: extraction and equivalence (the zoo's integer reader and the GSM8k-Aug
equations are :mod:`thinklens.data.chains`, importable here too).

Every accuracy goes through :func:`extract_answer` and :func:`is_correct`. The policy, measured against
math-verify's own test cases by :mod:`thinklens.data.grading` (``python -m bench.answers``):

- **The last stated answer counts.** That is the last group of ``\boxed{...}`` (or ``\fbox``,
  brace-matched), or what follows an answer marker (``#### N``, ``Final Answer:``, ``The answer is:``;
  ``the answer is`` without a colon only before a number or a math span) written after that group. A
  marker beats an earlier box only with a number or a math span (``Final Answer: The largest $n$ is
  34.`` states 34: the answer after the sentence's last ``is``/``are``, else its only number or math
  span), never with bare words. Never "the last number in the text"; no box and no marker: no answer.
- **Several boxes** form one answer, a list (``\boxed{-2} and \boxed{1}`` states ``-2, 1``, which is
  not the gold ``1``), when only a connector stands between them: a comma, semicolon, ``and``/``or``,
  LaTeX spacing, math delimiters or a few words (``\boxed{1} papers and \boxed{2} bins``), under 70
  characters, with no sentence end, ``</think>`` or revision word (``then``, ``wait``, ``so``...)
  between. A repeated box counts once. ``boxes="last"`` keeps only the last box (the old policy).
- **Commas in numbers.** ``1,024`` and ``1,450,000`` (groups of three, no space) are thousands;
  ``32, 349`` (a comma and a space) is a pair; a comma that cannot be a thousands separator
  (``1000,99``, ``2,74``, ``0,111``) is a decimal comma unless ``decimal_comma=False``.
- **Equality**: plain numbers exactly (``12.0`` == ``12``); a number with a unit or words
  (``18 \text{ dollars}``, ``\$18``, ``18 apples``) as that number, decided without math-verify;
  LaTeX that never changes a value (``\left(``, ``\dfrac``) ignored; anything else through HF's
  math-verify with a time limit (:mod:`thinklens.data.equivalence`).

:func:`~thinklens.data.chains.parse_answer` is the integer reader of the zoo's outputs (the last integer after the last
marker).

Example:
    >>> extract_answer(r"so \boxed{\frac{3}{4}}. Wait, 3"), is_correct(r"\boxed{42}. Wait, 3", 42)
    ('\\frac{3}{4}', True)
    >>> extract_answer(r"\boxed{-2} and \boxed{1}"), is_correct(r"\boxed{5} and \boxed{1}", 1)
    ('-2, 1', False)
    >>> parse_answer("<< 7 + 5 = 12 >> #### 12"), parse_answer(r"so \boxed{1,024}") , parse_answer("no marker 5")
    (12, 1024, None)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from thinklens.data.chains import ANSWER_MARKERS, Equation, extract_cot, parse_answer, parse_equations
from thinklens.data.equivalence import DEFAULT_TIMEOUT, math_equal
from thinklens.errors import ThinklensError

__all__ = [
    "ANSWER_MARKERS", "BOX_POLICIES", "Equation", "Tally", "answers_equal", "extract_answer", "extract_cot", "is_correct",
    "parse_answer", "parse_equations", "states_answer",
]

#: The policies of several boxes in one output (:func:`extract_answer`).
BOX_POLICIES: tuple[str, ...] = ("group", "last")

# A box command: \boxed or \fbox, not a longer command name (\boxedX).
_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
# Answer markers of extract_answer (markdown bold around them allowed: "**Final Answer:** 7").
# "####", "Final Answer:" and "The answer is:" take what follows;
# without a colon ("the answer is 18", "The final answer is $3$") only a number or a math span counts,
# so "whether the answer is right" is no answer.
_MARKER_RE = re.compile(
    r"####|(?:\bthe\s+)?\bfinal\s+answer\b(?:\s+is)?[ \t*]*(?P<c1>:)?|\bthe\s+answer\s+is\b[ \t*]*(?P<c2>:)?",
    re.IGNORECASE,
)
# What makes a leading number part of an expression: a letter, digit or command glued to it ("2x", "2\sqrt3";
# a unit, percent or spacing command does not), or an operator after it ("2 + 3"; markdown "**" is no operator).
_GLUED_RE = re.compile(r"[A-Za-z0-9_^{(]|\\(?!%|\$|[,;! )\]]|text|mbox|mathrm)")
_OPERATOR_RE = re.compile(r"\s*(?:[-+\u2212\u00d7\u00f7=^/\u00b7]|\*(?!\*)|\\(?:times|cdot|div|pm)(?![A-Za-z]))")
# A leading number: sign, digits with optional thousands separators, decimals (point or comma), an optional
# /denominator. "1,2 and 3" reads 1,2 (a decimal comma); "32, 349" reads 32 (a comma and a space ends it).
_LEAD_NUMBER_RE = re.compile(r"[-\u2212]?\d(?:\d|,(?=\d{3}(?!\d)))*(?:[.,]\d+)?(?:/\d+)?")
# Plain numbers of the fast path (after cosmetics are gone): an integer or a decimal with a point; thousands
# grouped by commas or single spaces (the first group 1-3 digits, not starting with 0); a decimal comma.
_POINT_NUMBER_RE = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)")
_THOUSANDS_RE = re.compile(r"-?[1-9]\d{0,2}(?:(?P<sep>[, ])\d{3})(?:(?P=sep)\d{3})*(?:\.\d+)?")
_DECIMAL_COMMA_RE = re.compile(r"-?\d+,\d+")
# LaTeX that never changes a value: sizing, spacing, math-mode delimiters.
_COSMETIC_RE = re.compile(r"\\left(?![a-z])|\\right(?![a-z])|\\[!,;: ]|\\displaystyle|\$|\s+")
_TEXT_WRAP_RE = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
# A number followed by unit words (after \text{} wrappers are unwrapped): "18 dollars", "2.5 km per hour".
_UNIT_RE = re.compile(r"(?P<number>[-\d.,]+?)\s+(?P<words>[A-Za-z][A-Za-z.' ]*)")
# Words after a number that change its value or make a list: these go to math-verify, never the fast path
# (nor does a one-letter word: "3 x" may be a product).
_NOT_UNITS = frozenset(
    "and or to plus minus times over divided by of out pi sqrt cdot squared cubed factorial "
    "percent pct percentage degree degrees hundred hundreds thousand thousands million millions billion "
    "billions trillion dozen dozens half halves third thirds quarter quarters".split()
)
# Between two boxes of one answer: a connector (, ; and or &), nothing, or a few words around one.
_BOX_SEPARATOR_RE = re.compile(r"[,;&]|\band\b|\bor\b", re.IGNORECASE)
# Between two boxes of different answers: a sentence end, a paragraph, the end of thinking, or a revision.
_BOX_BREAK_RE = re.compile(
    r"[.!?:](?:\s|$)|\n\s*\n|</think>|\b(?:then|wait|but|actually|instead|so|therefore|thus|hence|hmm|check)\b",
    re.IGNORECASE,
)
# LaTeX between boxes that is neither a connector nor a break: spacing, delimiters, \text{...} wrappers.
_BOX_NOISE_RE = re.compile(r"\\(?:q?quad|text|mbox|textrm)(?![A-Za-z])|\\[,;:! ()\[\]]|[${}~\s]")
# Math spans and numbers of a sentence after "Final Answer:" ("The volume of $ABC$ is 120").
_SPAN_RE = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|\$([^$]+)\$")
_VERB_RE = re.compile(r"\b(?:is|are|equals|was|were|be)\b\s*:?\s*", re.IGNORECASE)
# The longest text answer a marker's line gives (longer lines are prose, cut here).
_MAX_LINE = 200


def _braced(text: str, start: int) -> int | None:
    r"""Index of the ``}`` closing the ``{`` at ``start`` (``\{`` and ``\}`` are literal braces), or None."""
    depth, i = 0, start
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2  # skip the escaped character (\{ \} \\)
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _box_content(text: str, end: int) -> tuple[str, int] | None:
    """The argument of a box command ending at ``end`` (``{...}`` brace-matched, or one bare token) and
    the index just after it; None for an unclosed box (a truncated answer) or another command."""
    i = end
    while i < len(text) and text[i] in " \t":
        i += 1
    if i >= len(text):
        return None
    if text[i] == "{":
        close = _braced(text, i)
        return None if close is None else (text[i + 1 : close].strip(), close + 1)
    if i == end and text[i].isalnum():
        return None  # "\boxedx" is another command, not a box
    bare = re.match(r"[^\s$]+", text[i:])
    return (bare.group(0).rstrip(".,;"), i + bare.end()) if bare else None


def _boxes(text: str) -> list[tuple[int, int, str]]:
    """Every outermost closed box of ``text``: (start, end, content); a box inside a box is its content's."""
    found: list[tuple[int, int, str]] = []
    for m in _BOX_RE.finditer(text):
        if found and m.start() < found[-1][1]:
            continue  # nested in the previous box
        got = _box_content(text, m.end())
        if got is not None and got[0]:
            found.append((m.start(), got[1], got[0]))
    return found


def _joins(between: str) -> bool:
    """Whether the text between two boxes makes them one answer (a connector, not a new sentence)."""
    if len(between) >= 70 or _BOX_BREAK_RE.search(between):
        return False
    return not _BOX_NOISE_RE.sub("", between) or bool(_BOX_SEPARATOR_RE.search(between))


def _box_answer(text: str, boxes: str) -> tuple[str, int] | None:
    """The answer of the last group of boxes (joined by ``", "``) and the index where the group ends."""
    found = _boxes(text)
    if not found:
        return None
    group = [found[-1]]
    if boxes == "group":
        for prev in reversed(found[:-1]):
            if not _joins(text[prev[1] : group[0][0]]):
                break
            group.insert(0, prev)
    contents: list[str] = []
    for _, _, content in group:
        inner = _box_answer(content, boxes) if _BOX_RE.search(content) else None  # \boxed{\boxed{5}}
        content = inner[0] if inner else content
        if not contents or contents[-1] != content:  # a box repeated at once counts once
            contents.append(content)
    return ", ".join(contents), group[-1][1]


def _standalone(text: str, end: int) -> bool:
    """Whether the number ending at ``end`` is a whole answer, not the start of an expression (``2x``, ``2 + 3``)."""
    return not (_GLUED_RE.match(text, end) or _OPERATOR_RE.match(text, end))


def _lead_answer(rest: str) -> tuple[str | None, bool]:
    """The math span or number at the start of ``rest``; (None, True) when an open span never closes."""
    rest = rest.lstrip()
    for open_, close in (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$")):
        if rest.startswith(open_):
            end = rest.find(close, len(open_))
            if end > len(open_):
                return rest[len(open_) : end].strip() or None, False
            if open_ != "$":
                return None, True
            rest = rest[1:]  # an unmatched "$" is a currency sign: "#### $18.90"
            break
    rest = rest.removeprefix("\\$").removeprefix("**").lstrip()
    number = _LEAD_NUMBER_RE.match(rest)
    if number is None or not _standalone(rest, number.end()):
        return None, False
    return number.group(0).replace("\u2212", "-"), False


def _sentence_answer(line: str) -> str | None:
    """The answer a sentence states: after its last ``is``/``are``, else its only number or math span."""
    verbs = list(_VERB_RE.finditer(line))
    if verbs:
        found, _ = _lead_answer(line[verbs[-1].end() :])
        if found:
            return found
    spans = [next(g for g in m.groups() if g is not None) for m in _SPAN_RE.finditer(line)]
    prose = _SPAN_RE.sub(" ", line)
    found = list(_LEAD_NUMBER_RE.finditer(prose))
    if any(not _standalone(prose, m.end()) for m in found):
        return None  # "2x + 3": an expression, not a number in a sentence
    numbers = [m.group(0) for m in found]
    if len(spans) + len(numbers) == 1:
        return (spans or numbers)[0].strip()
    return None


def _after_marker(rest: str, loose: bool) -> tuple[str, bool] | None:
    """The answer written right after a marker and whether it is math (a span or a number); after a colon
    a sentence gives the answer it states, else the line itself (a text answer: ``Evelyn``)."""
    found, unclosed = _lead_answer(rest)
    if found or unclosed:
        return (found, True) if found else None
    if loose:
        return None
    line = rest.lstrip().removeprefix("\\$").removeprefix("**").split("\n", 1)[0]
    line = re.split(r"\.(?:\s|$)", line, maxsplit=1)[0].strip().strip("*").strip()
    stated = _sentence_answer(line)
    if stated:
        return stated, True
    return (line[:_MAX_LINE], False) if line else None


def extract_answer(text: str, *, boxes: Literal["group", "last"] = "group") -> str | None:
    r"""The final answer of a model's output, as written (the module's policy): the last group of boxes
    (``\boxed{...}``, ``\fbox{...}``, ``\boxed 5``; brace-matched, several joined by ``", "``), unless an
    answer marker written after it states a number or a math span; else what follows the last answer
    marker (``#### N``, ``Final Answer:``, ``The answer is:``; ``the answer is`` without a colon only
    before a number or a math span). Never "the last number in the text".

    Args:
        text: the model's output.
        boxes: ``"group"`` joins boxes that only a connector separates; ``"last"`` keeps the last box.

    Returns None when there is no box and no marker. A box that is never closed (a truncated output)
    does not count.

    Example:
        >>> extract_answer(r"\boxed{\frac{3}{4}}"), extract_answer(r"\boxed{42}. Wait, 3")
        ('\\frac{3}{4}', '42')
        >>> extract_answer(r"\boxed{1} \quad\text{and}\quad \boxed{2}"), extract_answer(r"\boxed{1}\boxed{2}", boxes="last")
        ('1, 2', '2')
        >>> extract_answer("<< 7 + 5 = 12 >> #### 12"), extract_answer("The answer is: Evelyn."), extract_answer("so 5")
        ('12', 'Evelyn', None)
        >>> extract_answer(r"\boxed{200} ... Final Answer: The final answer is $10,455$.")
        '10,455'
        >>> extract_answer("Final Answer: The largest $n$ is 34.")
        '34'
    """
    if not isinstance(text, str):
        raise ThinklensError.of("answer text", type(text).__name__, "a str", "decode the tokens first")
    if boxes not in BOX_POLICIES:
        raise ThinklensError.of("boxes", boxes, f"one of {BOX_POLICIES}", 'pass boxes="group" (the default)')
    boxed = _box_answer(text, boxes)
    start = boxed[1] if boxed else 0
    for m in reversed(list(_MARKER_RE.finditer(text, start))):
        loose = m.group(0) != "####" and not (m.group("c1") or m.group("c2"))
        found = _after_marker(text[m.end() :], loose)
        if found is not None and (boxed is None or found[1]):  # words after a marker never beat a box
            return found[0]
    return boxed[0] if boxed else None


def states_answer(text: str) -> bool:
    r"""Whether a text states an answer the way :func:`extract_answer` reads one: a box or an answer marker.

    Example:
        >>> states_answer(r"so \boxed{5}"), states_answer("Final Answer: 7"), states_answer(r"$\frac{1}{2}$")
        (True, True, False)
    """
    if not isinstance(text, str):
        raise ThinklensError.of("answer text", type(text).__name__, "a str", "decode the tokens first")
    return bool(_BOX_RE.search(text) or _MARKER_RE.search(text))


def _plain_number(answer: str, decimal_comma: bool = True) -> Fraction | None:
    r"""The exact value of a plain number (thousands separators, a decimal comma, ``$``, ``\!``, a final ``.``)."""
    s = re.sub(r"\\!|\\\$|\$|\\[,;]", "", answer).replace("{,}", ",").replace("\u2212", "-").strip().rstrip(".")
    if _POINT_NUMBER_RE.fullmatch(s):
        return Fraction(s)
    if _THOUSANDS_RE.fullmatch(s):
        return Fraction(s.replace(",", "").replace(" ", ""))
    if decimal_comma and _DECIMAL_COMMA_RE.fullmatch(s):
        return Fraction(s.replace(",", "."))
    return None


def _unit_number(answer: str, decimal_comma: bool = True) -> Fraction | None:
    r"""The number of a number with unit words (``18 \text{ dollars}``, ``\text{18 apples}``, ``\$18``), or None."""
    s = re.sub(r"\\[,;:!]", "", _TEXT_WRAP_RE.sub(r" \1 ", answer)).replace("\\ ", " ").replace("~", " ")
    m = _UNIT_RE.fullmatch(s.replace("\\$", " ").replace("$", " ").strip().rstrip("."))
    words = [w.strip(".'").lower() for w in m.group("words").split()] if m else []
    if m is None or any(len(w) < 2 or w in _NOT_UNITS for w in words):
        return None
    return _plain_number(m.group("number"), decimal_comma)


def _cosmetic_form(answer: str) -> str:
    """The answer without LaTeX that never changes a value (sizing, spacing, ``$``, text wrappers)."""
    s = _TEXT_WRAP_RE.sub(r"\1", answer)
    s = re.sub(r"\\[dt]frac(?![a-z])", r"\\frac", s)
    return _COSMETIC_RE.sub("", s).rstrip(".")


def _gold_answer(gold: object) -> str:
    if isinstance(gold, bool) or not isinstance(gold, (str, int, float)):
        raise ThinklensError.of("gold answer", type(gold).__name__, "a str or a number", "pass the data set's answer")
    if not isinstance(gold, str):
        return str(gold)
    if _BOX_RE.search(gold) or "####" in gold:
        return extract_answer(gold) or gold.strip()  # a full solution text: its final answer
    return gold.strip()


def answers_equal(
    pred: str, gold: str | int | float, *, timeout: float = DEFAULT_TIMEOUT, decimal_comma: bool = True
) -> bool:
    r"""Whether an extracted answer equals the gold one: plain numbers exactly (``1,450,000`` ==
    ``1450000``, ``12.0`` == ``12``, ``1000,99`` == ``1000.99``), a number with unit words as that
    number (``18 \text{ dollars}`` == ``18``), then LaTeX that changes nothing (``\left(``, ``\dfrac``,
    ``\text{}``), then math-verify with at most ``timeout`` seconds (a timeout reads as False).

    Args:
        pred: the extracted answer (:func:`extract_answer`).
        gold: the data set's answer, or a full solution ending in ``#### N`` or a box.
        timeout: seconds math-verify may take.
        decimal_comma: read a comma that cannot be a thousands separator (``2,74``) as a decimal point.

    Example:
        >>> answers_equal("1,450,000", 1450000), answers_equal(r"\dfrac{14}{3}", r"\frac{14}{3}"), answers_equal("7", "8")
        (True, True, False)
        >>> answers_equal(r"18 \text{ dollars}", 18), answers_equal("32, 349", 32349), answers_equal("2,74", "2.74")
        (True, False, True)
    """
    gold_text = _gold_answer(gold)
    if not isinstance(pred, str):
        raise ThinklensError.of("predicted answer", type(pred).__name__, "a str", "pass the extracted answer text")
    pred = pred.strip()
    if not pred or not gold_text:
        return False
    gold_value, pred_value = _plain_number(gold_text, decimal_comma), _plain_number(pred, decimal_comma)
    if gold_value is not None and pred_value is not None:
        return gold_value == pred_value
    if gold_value is not None or pred_value is not None:  # the fast path of GSM8K's "18 dollars"
        gold_unit = gold_value if gold_value is not None else _unit_number(gold_text, decimal_comma)
        pred_unit = pred_value if pred_value is not None else _unit_number(pred, decimal_comma)
        if gold_unit is not None and pred_unit is not None:
            return gold_unit == pred_unit
    if _cosmetic_form(gold_text) == _cosmetic_form(pred):
        return True
    return math_equal(gold_text, pred, timeout=timeout)


def is_correct(
    text: str,
    gold: str | int | float,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    boxes: Literal["group", "last"] = "group",
    decimal_comma: bool = True,
) -> bool:
    r"""Whether a model's output states the gold answer: :func:`extract_answer`, then :func:`answers_equal`.

    ``gold`` is the data set's answer: a number, a LaTeX string (MATH-500's ``\frac{14}{3}``) or a
    full solution ending in ``#### N`` or a box (its final answer is used). No answer in the text is
    wrong; a comparison that takes longer than ``timeout`` seconds is wrong. ``boxes`` and
    ``decimal_comma`` choose the policies of the module docstring.

    Example:
        >>> is_correct(r"... so the answer is \boxed{\dfrac{14}{3}}", r"\frac{14}{3}"), is_correct("#### 1,450,000", "1450000")
        (True, True)
        >>> is_correct(r"\boxed{3}", 4), is_correct("I give up", 4), is_correct(r"\boxed{-2} and \boxed{1}", "1,-2")
        (False, False, True)
    """
    pred = extract_answer(text, boxes=boxes)
    return pred is not None and answers_equal(pred, gold, timeout=timeout, decimal_comma=decimal_comma)


@dataclass(frozen=True, kw_only=True)
class Tally:
    """Right answers out of ``n``, for a result row to inherit; ``accuracy`` is derived (0 when n is 0), so it
    cannot disagree with the counts.

    Example:
        >>> Tally(n_correct=3, n=4).accuracy
        0.75
    """

    n_correct: int
    """Answers graded correct."""
    n: int
    """Answers graded."""
    accuracy: float = field(init=False)
    """n_correct / n."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "accuracy", self.n_correct / self.n if self.n else 0.0)
