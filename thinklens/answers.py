"""THE integer answer parser of the project, equation extraction, and GSM8k-style loaders.

Every part of thinklens that scores an answer calls :func:`parse_answer`, so all accuracies agree.

Example:
    >>> parse_answer("<< 7 + 5 = 12 >> #### 12")
    12
    >>> parse_answer(r"so \\boxed{1,024}") , parse_answer("no marker 5")
    (1024, None)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from thinklens.errors import ThinklensError

#: Answer markers, in no particular order: the LAST occurrence of any of them counts.
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


@dataclass(frozen=True)
class GSMRecord:
    """One loaded problem: question, GSM8k-Aug chain (possibly empty) and integer answer."""

    question: str
    """The question text."""
    cot: str
    """The equations, e.g. ``<<48/2=24>> <<48+24=72>>`` (empty when the source has none)."""
    answer: int
    """The final answer."""
    solution: str = ""
    """The source's full answer text when it had one (GSM8k ``answer`` field), else empty."""


def _answer_of(raw: object) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if not isinstance(raw, str):
        return None
    parsed = parse_answer(raw)
    if parsed is not None:
        return parsed
    try:
        return _to_int(raw.strip())
    except ValueError:
        return None


def load_gsm8k_jsonl(path: str | Path) -> list[GSMRecord]:
    """Load GSM8k (``answer`` ending in ``#### N``), GSM8k-Aug (``cot`` + plain ``answer``) or
    ``\\boxed{N}`` style JSON lines.

    The cot comes from a ``cot`` field when present, else from the ``<<...>>`` equations of the
    answer text. Blank lines are skipped; a malformed line raises :class:`ThinklensError` naming the
    file and line.

    Example:
        >>> import tempfile, os
        >>> f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        >>> _ = f.write('{"question": "1+1?", "answer": "1+1=<<1+1=2>>2\\\\n#### 2"}\\n'); f.close()
        >>> load_gsm8k_jsonl(f.name)[0].cot, load_gsm8k_jsonl(f.name)[0].answer
        ('<<1+1=2>>', 2)
        >>> os.unlink(f.name)
    """
    p = Path(path)
    if not p.is_file():
        raise ThinklensError.of("GSM8k file", str(p), "an existing .jsonl file", "check the path")
    records: list[GSMRecord] = []
    with p.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{p}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ThinklensError.of(
                    "GSM8k line", where, f"one JSON object per line ({exc.msg})", "fix or remove that line"
                ) from None
            if not isinstance(row, dict) or not isinstance(row.get("question"), str) or "answer" not in row:
                raise ThinklensError.of(
                    "GSM8k line", where, "an object with a string 'question' and an 'answer'", "fix that line"
                )
            answer = _answer_of(row["answer"])
            if answer is None:
                raise ThinklensError.of(
                    "GSM8k answer", f"{where}: {str(row['answer'])[-40:]!r}",
                    "an integer, text ending in '#### N', or '\\boxed{N}'", "fix that line's answer",
                )
            solution = row["answer"] if isinstance(row["answer"], str) else ""
            cot = row.get("cot")
            if cot is not None and not isinstance(cot, str):
                raise ThinklensError.of("GSM8k cot", where, "a string", "fix that line's cot")
            records.append(GSMRecord(row["question"], cot if cot is not None else extract_cot(solution), answer, solution))
    return records
