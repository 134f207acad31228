r"""The chains of the zoo and of GSM8k-Aug: the integer after the last answer marker (:func:`parse_answer`, the zoo's
outputs' reader) and the ``<<a op b = c>>`` equations of a chain (:func:`parse_equations`, :func:`extract_cot`),
whose arithmetic can be checked step by step. Free-form answers are graded by :mod:`thinklens.data.answers`.

Example:
    >>> parse_answer("<< 7 + 5 = 12 >> #### 12"), parse_answer(r"so \boxed{1,024}") , parse_answer("no marker 5")
    (12, 1024, None)
    >>> [e.correct for e in parse_equations("<<7+5=12>> << 12 * 3 = 35 >>")]
    [True, False]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from thinklens.errors import ThinklensError

#: Answer markers of :func:`parse_answer`, in no particular order: the LAST occurrence of any of them counts.
ANSWER_MARKERS: tuple[str, ...] = ("####", "The answer is:", "\\boxed{")

# An integer with optional sign, thousands separators and a decimal part; a decimal part that is not
# all zeros makes the number a non-integer (parse_answer then returns None rather than truncating).
_NUMBER_RE = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")
# GSM8k-Aug equations, compact (<<7+5=12>>) or spaced as the zoo tokenizer decodes (<< 7 + 5 = 12 >>).
_EQUATION_RE = re.compile(r"<<\s*([^<>=]*?)\s*=\s*([^<>]*?)\s*>>")
_SIMPLE_RE = re.compile(r"^(-?\d+)\s*([-+*/])\s*(-?\d+)$")


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
