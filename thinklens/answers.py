"""THE answer grading of the project: extraction, equivalence, the integer parser, equations, GSM8k loaders.

Every accuracy goes through :func:`extract_answer` and :func:`is_correct`: the last ``\\boxed{...}``
(brace-matched), else the last answer marker; integers compare directly, anything else through
HF's math-verify with a time limit (:mod:`thinklens.equivalence`). :func:`parse_answer` is the
integer reader of the zoo's outputs and the fast path of :func:`is_correct`.

Example:
    >>> extract_answer(r"so \\boxed{\\frac{3}{4}}. Wait, 3"), is_correct(r"\\boxed{42}. Wait, 3", 42)
    ('\\\\frac{3}{4}', True)
    >>> parse_answer("<< 7 + 5 = 12 >> #### 12")
    12
    >>> parse_answer(r"so \\boxed{1,024}") , parse_answer("no marker 5")
    (1024, None)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction

from thinklens.equivalence import DEFAULT_TIMEOUT, math_equal
from thinklens.errors import ThinklensError

#: Answer markers of :func:`parse_answer`, in no particular order: the LAST occurrence of any of them counts.
ANSWER_MARKERS: tuple[str, ...] = ("####", "The answer is:", "\\boxed{")

# An integer with optional sign, thousands separators and a decimal part; a decimal part that is not
# all zeros makes the number a non-integer (parse_answer then returns None rather than truncating).
_NUMBER_RE = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")
# GSM8k-Aug equations, compact (<<7+5=12>>) or spaced as the zoo tokenizer decodes (<< 7 + 5 = 12 >>).
_EQUATION_RE = re.compile(r"<<\s*([^<>=]*?)\s*=\s*([^<>]*?)\s*>>")
_SIMPLE_RE = re.compile(r"^(-?\d+)\s*([-+*/])\s*(-?\d+)$")

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
# A leading number: sign, digits with optional thousands separators, decimals, an optional /denominator.
_LEAD_NUMBER_RE = re.compile(r"[-\u2212]?\d(?:\d|,(?=\d{3}))*(?:\.\d+)?(?:/\d+)?")
# Exact plain numbers for the fast path: integer or decimal, optional thousands separators.
_PLAIN_NUMBER_RE = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?\.\d+")
# LaTeX that never changes a value: sizing, spacing, math-mode delimiters.
_COSMETIC_RE = re.compile(r"\\left(?![a-z])|\\right(?![a-z])|\\[!,;: ]|\\displaystyle|\$|\s+")
_TEXT_WRAP_RE = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox)\{([^{}]*)\}")


def _to_int(token: str) -> int | None:
    number = token.replace(",", "")
    if "." in number:
        whole, frac = number.split(".", 1)
        if frac.strip("0"):
            return None
        number = whole
    return int(number)


def parse_answer(text: str) -> int | None:
    """The last integer after the last answer marker (``####``, ``The answer is:``, ``\\boxed{``).

    Returns None when no marker occurs, when no number follows it, or when the last number after it
    is not an integer (``3.5``). Commas as thousands separators are accepted.

    Example:
        >>> parse_answer("#### 3 #### 4")
        4
        >>> parse_answer("The answer is: -7 apples") , parse_answer("#### 2.5")
        (-7, None)
    """
    if not isinstance(text, str):
        raise ThinklensError.of("answer text", type(text).__name__, "a str", "decode the tokens first")
    cut = -1
    for marker in ANSWER_MARKERS:
        at = text.rfind(marker)
        if at >= 0:
            cut = max(cut, at + len(marker))
    if cut < 0:
        return None
    numbers = _NUMBER_RE.findall(text[cut:])
    return _to_int(numbers[-1]) if numbers else None


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


def _box_content(text: str, end: int) -> str | None:
    """The argument of a box command ending at ``end``: ``{...}`` brace-matched, or one bare token."""
    i = end
    while i < len(text) and text[i] in " \t":
        i += 1
    if i >= len(text):
        return None
    if text[i] == "{":
        close = _braced(text, i)
        return None if close is None else text[i + 1 : close].strip()  # unclosed: a truncated answer
    if i == end and text[i].isalnum():
        return None  # "\boxedx" is another command, not a box
    bare = re.match(r"[^\s$]+", text[i:])
    return bare.group(0).rstrip(".,;") if bare else None


def _last_boxed(text: str) -> str | None:
    for m in reversed(list(_BOX_RE.finditer(text))):
        content = _box_content(text, m.end())
        if content:
            inner = _last_boxed(content) if _BOX_RE.search(content) else None  # \boxed{\boxed{5}}
            return inner or content
    return None


def _after_marker(rest: str, loose: bool) -> str | None:
    """The answer written right after a marker: a math span, a number, or (after a colon) the line."""
    rest = rest.lstrip()
    for open_, close in (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$")):
        if rest.startswith(open_):
            end = rest.find(close, len(open_))
            if end > len(open_):
                return rest[len(open_) : end].strip() or None
            if open_ != "$":
                return None
            rest = rest[1:]  # an unmatched "$" is a currency sign: "#### $18.90"
            break
    rest = rest.removeprefix("\\$").removeprefix("**").lstrip()
    number = _LEAD_NUMBER_RE.match(rest)
    if number:
        return number.group(0).replace("\u2212", "-")
    if loose:
        return None
    line = rest.split("\n", 1)[0]
    line = re.split(r"\.(?:\s|$)", line, maxsplit=1)[0].strip().strip("*").strip()
    return line[:200] or None


def extract_answer(text: str) -> str | None:
    r"""The final answer of a model's output, as written: the content of the LAST ``\boxed{...}``
    (or ``\fbox{...}``, or ``\boxed 5`` without braces), brace-matched so nested braces stay whole; else
    what follows the last answer marker (``#### N``, ``Final Answer:``, ``The answer is:``; ``the answer
    is`` without a colon only before a number or a math span). Never "the last number in the text".

    Returns None when there is no box and no marker. A box that is never closed (a truncated output)
    does not count.

    Example:
        >>> extract_answer(r"\boxed{\frac{3}{4}}"), extract_answer(r"\boxed{42}. Wait, 3")
        ('\\frac{3}{4}', '42')
        >>> extract_answer("<< 7 + 5 = 12 >> #### 12"), extract_answer("The answer is: Evelyn."), extract_answer("so 5")
        ('12', 'Evelyn', None)
    """
    if not isinstance(text, str):
        raise ThinklensError.of("answer text", type(text).__name__, "a str", "decode the tokens first")
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed
    for m in reversed(list(_MARKER_RE.finditer(text))):
        loose = m.group(0) != "####" and not (m.group("c1") or m.group("c2"))
        found = _after_marker(text[m.end() :], loose)
        if found is not None:
            return found
    return None


def _plain_number(answer: str) -> Fraction | None:
    r"""The exact value of a plain integer or decimal (thousands separators, ``$``, ``\!``, a final ``.``)."""
    s = re.sub(r"\\[!,]|\\\$|\$|\s", "", answer).replace("{,}", ",").rstrip(".")
    if not _PLAIN_NUMBER_RE.fullmatch(s):
        return None
    return Fraction(s.replace(",", ""))


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


def answers_equal(pred: str, gold: str | int | float, *, timeout: float = DEFAULT_TIMEOUT) -> bool:
    r"""Whether an extracted answer equals the gold one: plain numbers exactly (``1,450,000`` ==
    ``1450000``, ``12.0`` == ``12``), then LaTeX that changes nothing (``\left(``, ``\dfrac``,
    ``\text{}``), then math-verify with at most ``timeout`` seconds (a timeout reads as False).

    Example:
        >>> answers_equal("1,450,000", 1450000), answers_equal(r"\dfrac{14}{3}", r"\frac{14}{3}"), answers_equal("7", "8")
        (True, True, False)
    """
    gold_text = _gold_answer(gold)
    if not isinstance(pred, str):
        raise ThinklensError.of("predicted answer", type(pred).__name__, "a str", "pass the extracted answer text")
    pred = pred.strip()
    if not pred or not gold_text:
        return False
    gold_value, pred_value = _plain_number(gold_text), _plain_number(pred)
    if gold_value is not None and pred_value is not None:
        return gold_value == pred_value
    if _cosmetic_form(gold_text) == _cosmetic_form(pred):
        return True
    return math_equal(gold_text, pred, timeout=timeout)


def is_correct(text: str, gold: str | int | float, *, timeout: float = DEFAULT_TIMEOUT) -> bool:
    r"""Whether a model's output states the gold answer: :func:`extract_answer`, then :func:`answers_equal`.

    ``gold`` is the data set's answer: a number, a LaTeX string (MATH-500's ``\frac{14}{3}``) or a
    full solution ending in ``#### N`` or a box (its final answer is used). No answer in the text is
    wrong; a comparison that takes longer than ``timeout`` seconds is wrong.

    Example:
        >>> is_correct(r"... so the answer is \boxed{\dfrac{14}{3}}", r"\frac{14}{3}"), is_correct("#### 1,450,000", "1450000")
        (True, True)
        >>> is_correct(r"\boxed{3}", 4), is_correct("I give up", 4)
        (False, False)
    """
    pred = extract_answer(text)
    return pred is not None and answers_equal(pred, gold, timeout=timeout)


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


@dataclass(frozen=True)
class Equation:
    """One ``<<lhs=result>>`` equation found in a text."""

    lhs: str
    """The left-hand side as written, e.g. ``12*3``."""
    result: str
    """The right-hand side as written, e.g. ``36``."""

    @property
    def claimed(self) -> int | None:
        """The integer result the text claims, or None."""
        try:
            return _to_int(self.result.strip())
        except ValueError:
            return None

    @property
    def computed(self) -> int | None:
        """The true value of a simple ``a op b`` left side (``/`` only when exact), or None."""
        m = _SIMPLE_RE.match(self.lhs.strip())
        if m is None:
            return None
        a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
        if op == "/":
            return a // b if b and a % b == 0 else None
        return {"+": a + b, "-": a - b, "*": a * b}[op]

    @property
    def correct(self) -> bool:
        """Whether the claimed result equals the computed one."""
        return self.computed is not None and self.computed == self.claimed


def parse_equations(text: str) -> list[Equation]:
    """All ``<<...=...>>`` equations of a text, compact or spaced.

    Example:
        >>> [e.correct for e in parse_equations("<<7+5=12>> << 12 * 3 = 35 >>")]
        [True, False]
    """
    return [Equation(m.group(1).replace(" ", ""), m.group(2).replace(" ", "")) for m in _EQUATION_RE.finditer(text)]


def extract_cot(text: str) -> str:
    """The GSM8k-Aug chain of a solution text: its equations, compact, joined by spaces.

    Example:
        >>> extract_cot("She sold 48/2 = <<48/2=24>>24 clips.\\nThen <<48+24=72>>72.\\n#### 72")
        '<<48/2=24>> <<48+24=72>>'
    """
    return " ".join(f"<<{e.lhs}={e.result}>>" for e in parse_equations(text))
