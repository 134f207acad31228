"""Mathematical equivalence of two answer strings through HF's ``math-verify``, with a hard time limit.

``math-verify`` parses LaTeX and plain expressions into SymPy and compares them (fractions, roots,
intervals, sets, percentages, units). SymPy can run for minutes on a pathological answer
(``9^{9^{9^{9}}}``), and math-verify's own time limit uses ``signal.alarm``, which works only in the
main thread and cannot interrupt a long C-level computation. So every comparison runs in one
long-lived worker process per calling process: the caller waits at most ``timeout`` seconds for the
answer, and on timeout kills the worker (a fresh one starts on the next call) and reads the pair as
not equivalent. This works from any thread and from worker processes (a plain subprocess, not a
multiprocessing child, so daemonic pool workers may use it too).

The worker parses with latex2sympy made faster and unchanged in its results (:func:`fast_parsing`: ANTLR's
two-stage prediction, plain numbers without ``sympify``, the parser's tables built at start from
:data:`WARM_UP`); ``THINKLENS_GRADING_PARSE=reference`` keeps latex2sympy as shipped. ``python -m bench.grading``
measures the latency per graded output.

Example:
    >>> math_equal(r"\\frac{14}{3}", "14/3"), math_equal(r"(3, \\frac{\\pi}{2})", r"\\left( 3, \\pi/2 \\right)")
    (True, True)
    >>> math_equal("3", "4")
    False
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import re
import subprocess
import sys
import threading
from functools import lru_cache
from pathlib import Path

from thinklens.errors import ThinklensError

#: Seconds one comparison may take before it counts as not equivalent.
DEFAULT_TIMEOUT = 5.0
#: Seconds the worker may take to start (importing SymPy and math-verify); not part of a comparison's limit.
STARTUP_TIMEOUT = 120.0

#: Answers of common shapes parsed once at the worker's start: ANTLR builds its prediction tables (DFA) per
#: shape on first sight (100-500 ms each), so the first tuple, interval or equation list a user grades is as
#: fast as the next. None of them is an answer of the fixture cases (a test holds that).
WARM_UP = (
    # numbers, units, text
    r"17", r"-23", r"4.75", r"1,234", r"12\%", r"45^\circ", r"\$18.50", r"18 \text{ dollars}", r"\text{Lorenzo}",
    # fractions, roots, constants
    r"\frac{7}{9}", r"-\frac{11}{6}", r"\dfrac{5}{13}", r"\tfrac58", r"3\frac{1}{4}", r"\frac{\sqrt{3}}{2}",
    r"2\sqrt{6}", r"\sqrt[3]{9}", r"5 + 3\sqrt{7}", r"\frac{9 - 2\sqrt{5}}{11}", r"\frac{-7 \pm \sqrt{17}}{8}",
    r"\pi", r"\frac{3\pi}{8}", r"6\pi^2", r"e^{2}", r"2^{10}", r"10^{-3}", r"\log_2 9", r"\ln 7", r"\infty",
    r"-\infty",
    # expressions
    r"x^2 - 5x + 6", r"3x + 2y", r"(t - 4)^2 + 9", r"\sin x \cos y", r"\tan \theta", r"\cos^2 \alpha", r"f(7)",
    # tuples, intervals, sets, lists
    r"(8, -9)", r"\left( 6, \frac{\pi}{5} \right)", r"(1, 4, 9)", r"(2;5;8)", r"[7, 13]", r"(-8, 12]",
    r"[-2, \infty)", r"(-\infty, 4) \cup (9, \infty)", r"[1, 3) \cup (3, 8]", r"\{4, 9, 16\}", r"\{-7, 2\}",
    r"\emptyset", r"9, 14, 25", r"-4; -13; 22", r"(3, 8), (8, 3)", r"\{(6, 7), (7, 6)\}",
    # equations, relations
    r"x = 14", r"y = -\frac{8}{3}", r"x = 6, y = -11", r"b_2 = 5, b_{11} = 29", r"x_1 = 4, \quad x_2 = -9",
    r"(m, n) = (11, 4)", r"AB = 7", r"P:Q = 5:12", r"x \geq 8", r"2 < y \leq 15", r"a < b < c", r"x \in [4, 11]",
    # matrices, bases, choices, geometry
    r"\begin{pmatrix} 2 \\ -5 \end{pmatrix}", r"\begin{pmatrix} 1 & 4 \\ 6 & 3 \end{pmatrix}",
    r"101101_2", r"\mathrm{C}", r"\text{(D)}", r"\overline{AB}",
    r"\angle ABC", r"90^{\circ}", r"\frac{1}{3} \text{ cm}^2",
)

_INTEGER_RE = re.compile(r"[0-9]+")
_DECIMAL_RE = re.compile(r"[0-9]+\.[0-9]+")


def _wrap(answer: str) -> str:
    # math-verify extracts from text: a box around the bare answer makes it take the whole answer.
    return "\\boxed{" + answer + "}"


def plain_number(text: str):
    """The SymPy number latex2sympy's ``parse_number`` makes of a plain integer or decimal (commas dropped), built
    directly: ``Integer`` for digits, ``Float`` for digits.digits (the value and precision ``sympify`` gives); None
    for anything else.

    Example:
        >>> plain_number("1,024"), plain_number("3.50"), plain_number("1e5")
        (1024, 3.50000000000000, None)
    """
    import sympy  # lazy: CLI start-up (sympy)

    digits = text.replace(",", "")
    if _INTEGER_RE.fullmatch(digits):
        return sympy.Integer(digits)
    if _DECIMAL_RE.fullmatch(digits):
        return sympy.Float(digits)
    return None


def fast_parsing() -> None:
    """Make latex2sympy (math-verify's LaTeX parser) parse the same trees and numbers, faster. Two changes:

    - **Two-stage prediction.** ANTLR's documented strategy (``PredictionMode.SLL``): SLL either returns the
      parse tree LL would return or reports a syntax error, which latex2sympy's error listener raises; the same
      input is then parsed again in LL mode. Most answers skip LL's full-context prediction, which is not cached
      across inputs and made the parse of a tuple or an interval take 100-1000 ms.
    - **Numbers without sympify.** ``sympy.Number("12")`` runs ``parse_expr``, which executes
      ``from sympy import *`` on every call (2-5 ms a number); a plain integer or decimal is built directly
      (``Integer("12")``, ``Float("3.50")``: the same values and precision as ``auto_number`` gives), anything
      else as before.

    Called in the worker process only (it changes a third-party class of that process); the oracle test
    (tests/test_grading_latency.py) holds the verdicts of every answer case equal with and without it.
    """
    from antlr4.atn.PredictionMode import PredictionMode  # lazy: CLI start-up (antlr4)
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy  # lazy: CLI start-up (latex2sympy2_extended)

    if getattr(_Latex2Sympy, "_thinklens_fast", False):
        return
    create_parser, parse, parse_number = _Latex2Sympy.create_parser, _Latex2Sympy.parse, _Latex2Sympy.parse_number

    def create_parser_in_mode(self, latex_str):
        parser = create_parser(self, latex_str)
        parser._interp.predictionMode = getattr(self, "_thinklens_mode", PredictionMode.LL)
        return parser

    def parse_sll_first(self, latex_str):
        self._thinklens_mode = PredictionMode.SLL
        try:
            return parse(self, latex_str)
        except Exception:  # noqa: BLE001 - a syntax error in SLL mode: LL decides, as without this stage
            self._thinklens_mode = PredictionMode.LL
            return parse(self, latex_str)

    def parse_plain_number(self, text):
        number = plain_number(text)
        return number if number is not None else parse_number(self, text)

    _Latex2Sympy.create_parser, _Latex2Sympy.parse = create_parser_in_mode, parse_sll_first
    _Latex2Sympy.parse_number = parse_plain_number
    _Latex2Sympy._thinklens_fast = True


def serve() -> None:
    """The worker loop: one JSON request per stdin line (``{"gold", "pred"}``), one JSON reply per line."""
    # The parent enforces the time limit, so math-verify's own (signal) limits are off; silence the
    # warning it logs about that, and its parse-failure chatter.
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    from math_verify import parse, verify  # lazy: CLI start-up (math_verify)

    if os.environ.get("THINKLENS_GRADING_PARSE") != "reference":  # "reference": latex2sympy as shipped (the oracle test)
        fast_parsing()
    gold_cache: dict[str, list] = {}
    # Warm up before saying ready: the first parse and verify build math-verify's grammars and SymPy's caches
    # (seconds on a busy machine), which belongs to the start-up limit, not to the first comparison's.
    verify(parse(_wrap("\\frac{1}{2}"), parsing_timeout=None), parse(_wrap("0.5"), parsing_timeout=None), timeout_seconds=None)
    for answer in WARM_UP if os.environ.get("THINKLENS_GRADING_PARSE") != "reference" else ():
        parse(_wrap(answer), parsing_timeout=None)
    out = sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            req = json.loads(line)
            gold = gold_cache.get(req["gold"])
            if gold is None:
                gold = gold_cache[req["gold"]] = parse(_wrap(req["gold"]), parsing_timeout=None)
            pred = parse(_wrap(req["pred"]), parsing_timeout=None)
            reply = {"equal": bool(gold) and bool(pred) and bool(verify(gold, pred, timeout_seconds=None))}
        except Exception as exc:  # noqa: BLE001 - a comparison that fails is "not equal", never a crash
            reply = {"equal": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
        if len(gold_cache) > 10_000:
            gold_cache.clear()
        out.write(json.dumps(reply) + "\n")
        out.flush()


class _Worker:
    """One math-verify worker process, owned by the process that started it."""

    def __init__(self) -> None:
        root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.owner = os.getpid()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from thinklens.data.equivalence import serve; serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, encoding="utf-8", env=env,
        )
        self.replies: queue.Queue[str | None] = queue.Queue()
        # A reader thread turns the blocking pipe into a queue with a timed get (works on every OS).
        threading.Thread(target=self._read, daemon=True).start()
        first = self._reply(STARTUP_TIMEOUT)
        if first is None or not json.loads(first).get("ready"):
            self.kill()
            raise ThinklensError.of(
                "math-verify worker", "no start within %.0f s" % STARTUP_TIMEOUT, "a worker process that imports math_verify",
                'install it: pip install "math-verify[antlr4_13_2]"',
            )

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        for line in stdout:
            self.replies.put(line)
        self.replies.put(None)  # end of stream: the worker exited

    def _reply(self, timeout: float) -> str | None:
        try:
            return self.replies.get(timeout=timeout)
        except queue.Empty:
            return None

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def ask(self, gold: str, pred: str, timeout: float) -> bool | None:
        """True/False, or None when the worker did not answer in time (it is then killed)."""
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps({"gold": gold, "pred": pred}) + "\n")
            stdin.flush()
        except OSError:
            self.kill()
            return None
        line = self._reply(timeout)
        if line is None:
            self.kill()
            return None
        return bool(json.loads(line)["equal"])

    def kill(self) -> None:
        if self.owner != os.getpid():
            return  # a forked child never kills its parent's worker
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass


_lock = threading.Lock()
_worker: _Worker | None = None


def _stop_worker() -> None:
    global _worker
    if _worker is not None:
        _worker.kill()
        _worker = None


def _forget_worker_after_fork() -> None:
    # A forked child starts its own worker when it needs one; the lock may have been held at the fork.
    global _lock, _worker
    _lock, _worker = threading.Lock(), None


atexit.register(_stop_worker)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_worker_after_fork)


@lru_cache(maxsize=65_536)
def _compare(gold: str, pred: str, timeout: float) -> bool:
    global _worker
    with _lock:
        if _worker is None or not _worker.alive():
            _worker = _Worker()
        answer = _worker.ask(gold, pred, timeout)
        if answer is None:
            _worker = None
        return bool(answer)


def math_equal(gold: str, pred: str, *, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """Whether ``pred`` equals ``gold`` under math-verify (gold first: the comparison is not symmetric).

    Both are bare answers (the content of a ``\\boxed{}``). Returns False when either does not parse,
    and when the comparison takes longer than ``timeout`` seconds (the worker is killed; a fresh one
    starts on the next call). Results are cached per (gold, pred, timeout).

    Example:
        >>> math_equal(r"2\\sqrt{5}", r"\\sqrt{20}"), math_equal(r"\\{1,2\\}", r"\\{2,1\\}"), math_equal("[2, 5)", "(2,5)")
        (True, True, False)
    """
    if not isinstance(gold, str) or not isinstance(pred, str):
        raise ThinklensError.of("answers to compare", (type(gold).__name__, type(pred).__name__), "two str", "pass the answer texts")
    if not timeout > 0:
        raise ThinklensError.of("timeout", timeout, "seconds > 0", "pass e.g. timeout=5.0")
    if not gold.strip() or not pred.strip():
        return False
    return _compare(gold.strip(), pred.strip(), float(timeout))
