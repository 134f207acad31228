"""Render a problem as prompt + target text in one of three styles, with per-word ground truth.

Styles (the prompt ends with a cue, so one model can be trained on all three):

- ``direct``: prompt ``... answer :``, target ``#### 36``
- ``cot``:    prompt ``... steps :``,  target ``<< 7 + 5 = 12 >> << 12 * 3 = 36 >> #### 36``
- ``think``:  prompt ``... <think>``,  target ``hmm << 7 + 5 = 12 >> << 12 * 3 = 35 >> wait
  << 12 * 3 = 36 >> </think> so #### 36``

Rendered text is in the canonical spaced form (:func:`spaced`): one word per zoo token, so the
alignment of a target word is the alignment of its token.

Example:
    >>> from thinklens.tasks import Problem, Step
    >>> p = Problem(name="Tom", obj="apples", start=7, steps=(Step("+", 7, 5, 12),))
    >>> render_prompt(p, "cot")
    'Tom has 7 apples . Tom buys 5 more . How many apples does Tom have ? steps :'
    >>> render_target(p, "cot")
    '<< 7 + 5 = 12 >> #### 12'
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from thinklens.errors import ThinklensError
from thinklens.tasks.problem import Problem, Step, spaced, words

STYLES: tuple[str, ...] = ("direct", "cot", "think")
CUES: dict[str, str] = {"direct": "answer :", "cot": "steps :", "think": "<think>"}
ANSWER_MARKER = "####"
REFLECTION_WORDS: tuple[str, ...] = ("wait", "hmm", "so", "therefore")

#: Word kinds in an alignment.
KINDS: tuple[str, ...] = ("step", "error", "reflect", "marker", "answer")


@dataclass(frozen=True)
class TargetAlignment:
    """Ground truth for every word of a rendered target (all tuples have one entry per word)."""

    words: tuple[str, ...]
    """The target's words (== its zoo tokens)."""
    step: tuple[int, ...]
    """Index of the step a word belongs to or is about to start; ``n_steps`` after the chain."""
    running: tuple[int, ...]
    """The true running value known at the word: the result of the last correct equation whose result
    word is at or before it (the start value before any)."""
    target: tuple[int, ...]
    """The true result of the word's step (the answer after the chain): what a probe should decode."""
    kind: tuple[str, ...]
    """``step`` (a correct equation), ``error`` (a wrong one), ``reflect`` (hmm wait so therefore),
    ``marker`` (``</think>`` ``####``) or ``answer`` (the final number)."""


def check_style(style: str) -> str:
    """Return ``style`` if known, else raise a did-you-mean error."""
    if style not in STYLES:
        near = difflib.get_close_matches(str(style), STYLES, n=1)
        fix = f"did you mean {near[0]!r}?" if near else f"use one of {', '.join(STYLES)}"
        raise ThinklensError.of("prompt format", style, f"a zoo prompt format (a zoo style): one of {', '.join(STYLES)}", fix)
    return style


def render_prompt(problem: Problem, style: str) -> str:
    """The prompt: the spaced question followed by the style's cue (no ``<bos>``; the tokenizer adds it)."""
    return f"{spaced(problem.question)} {CUES[check_style(style)]}"


def _equation_words(step: Step, result: int) -> list[str]:
    return ["<<", str(step.left), step.op, str(step.right), "=", str(result), ">>"]


def align_target(problem: Problem, style: str) -> TargetAlignment:
    """The target words of ``style`` with their step, running value, step result and kind.

    Example:
        >>> from thinklens.tasks import Problem, Step
        >>> p = Problem(name="Tom", obj="apples", start=7, steps=(Step("+", 7, 5, 12),))
        >>> a = align_target(p, "cot")
        >>> list(zip(a.words, a.running))[4:]
        [('=', 7), ('12', 12), ('>>', 12), ('####', 12), ('12', 12)]
    """
    check_style(style)
    out: list[tuple[str, int, int, int, str]] = []  # word, step, running, target, kind
    running = problem.start
    if style != "direct":
        for i, step in enumerate(problem.steps):
            deco = problem.think[i] if style == "think" and problem.think else None
            if deco is not None and deco.hmm:
                out.append(("hmm", i, running, step.result, "reflect"))
            if deco is not None and deco.wrong is not None:
                out.extend((w, i, running, step.result, "error") for w in _equation_words(step, deco.wrong))
                out.append(("wait", i, running, step.result, "reflect"))
            for j, w in enumerate(_equation_words(step, step.result)):
                if j == 5:  # the result word: from here on the new value is known
                    running = step.result
                out.append((w, i, running, step.result, "step"))
    n, answer = problem.n_steps, problem.answer
    if style == "think":
        out.append(("</think>", n, running, answer, "marker"))
        if problem.conclusion:
            out.append((problem.conclusion, n, running, answer, "reflect"))
    out.append((ANSWER_MARKER, n, running, answer, "marker"))
    out.append((str(answer), n, answer, answer, "answer"))
    cols = list(zip(*out))
    return TargetAlignment(
        words=tuple(cols[0]), step=tuple(cols[1]), running=tuple(cols[2]), target=tuple(cols[3]), kind=tuple(cols[4])
    )


def render_target(problem: Problem, style: str) -> str:
    """The target text of ``style`` (canonical spaced form; without ``<eos>``)."""
    return " ".join(align_target(problem, style).words)


def render_example(problem: Problem, style: str) -> tuple[str, str]:
    """``(prompt, target)`` for training or evaluation."""
    return render_prompt(problem, style), render_target(problem, style)


def reflection_stats(text: str) -> dict[str, int]:
    """Count reflection words in a generated trace.

    Example:
        >>> reflection_stats("hmm << 1 + 1 = 3 >> wait << 1 + 1 = 2 >> so #### 2")
        {'wait': 1, 'hmm': 1, 'so': 1, 'therefore': 0}
    """
    ws = words(text)
    return {w: ws.count(w) for w in REFLECTION_WORDS}
