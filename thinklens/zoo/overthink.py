"""tiny-overthink's world: tiny-r1's chains that keep re-checking an answer they already have, and the ground
truth of where that answer became known, read from any text (a rendered training text or the model's own).

A training text is tiny-r1's chain (:func:`thinklens.zoo.r1.reasoning_text`: "Okay, ...", one sentence + equation per
step, with its "Hmm," and its mid-chain slips corrected by "Wait,"), then a conclusion, then ``R`` re-check
rounds (``R`` drawn from :attr:`thinklens.zoo.overthink.OverthinkMix.round_weights`). Round ``j`` opens with cue ``j``
of :data:`ROUND_CUES` and re-derives the last ``j`` steps (round 3: the whole chain) as bare equations,
ending in the same conclusion::

    Okay, Tom has 7 apples. First, Tom buys 5 more, so 7 + 5 = 12. Hmm, then Tom multiplies them by 2,
    so 12 * 2 = 24. So Tom has 12 apples. Wait, let me double-check. 12 * 2 = 24. So Tom has 24 apples.
    Hmm, let me verify. 7 + 5 = 12, 12 * 2 = 24. So Tom has 24 apples.

The first conclusion slips (it forgets the last multiplication, so it states the value before it) on
most chains whose last step is a multiplication (:attr:`~thinklens.zoo.overthink.OverthinkMix.slip_rate`), a rule the model can
learn, so greedy decoding shows it; the first round then fixes it. Some texts
(:attr:`~thinklens.zoo.overthink.OverthinkMix.forced_exit_rate`) stop at a sentence end and exit as LYNX forces it
(:attr:`thinklens.data.formats.PromptFormat.lynx_exit`), answering the last value the reasoning stated: so a
forced exit after a cue is right exactly when the last value stated before the cue is the answer.

Ground truth (:func:`ground_truth`) is read from the text against the problem, so it applies to the model's
own generations: ``answer_known_at`` is the end of the first sentence that writes the final value as the
last step's right equation (after the earlier steps' right equations) or as a conclusion; each LYNX cue
(hmm / wait / alternatively) gets where a forced exit cuts, the value a forced answer gives there and whether it is right.

Example:
    >>> from thinklens.tasks import Problem, Step
    >>> p = Problem(name="Tom", obj="apples", start=7, steps=(Step("+", 7, 5, 12), Step("*", 12, 2, 24)))
    >>> text = overthink_reasoning(p, rounds=1, slip=True)
    >>> text[answer_known_at(text, p):]
    ' So Tom has 12 apples. Wait, let me double-check. 12 * 2 = 24. So Tom has 24 apples.'
    >>> [(c.word, c.value, c.correct) for c in ground_truth(text, p).cues]
    [('wait', 12, False)]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from thinklens.data.formats import SPANS, PromptFormat
from thinklens.data.words import RECHECK, word_pattern
from thinklens.errors import ThinklensError
from thinklens.tasks import Problem
from thinklens.zoo.r1 import THINK_CLOSE, R1TextMix, _equation, answer_text, chat_prompt, reasoning_text, user_message

#: The cue that opens re-check round 1, 2, 3 (each starts with one of LYNX's default cue words).
ROUND_CUES: tuple[str, ...] = ("Wait, let me double-check.", "Hmm, let me verify.", "Alternatively, let me recompute.")
#: LYNX's cue words (:data:`thinklens.probes.lynx.DEFAULT_CUES`), matched as LYNX matches them.
CUE_WORDS: tuple[str, ...] = ("hmm", "wait", "alternatively")
#: What a forced exit appends after the cut (the chat format's LYNX exit: ``</think>\n\nFinal Answer: \boxed{``).
EXIT_STRING: str = PromptFormat("chat", span=SPANS["think"]).lynx_exit

_CUE_RE = word_pattern(CUE_WORDS)
_ROUND_RE = RECHECK
_VALUE_RE = re.compile(r"(?:= |has )(\d+)")
_EQUATION_RE = re.compile(r"(\d+) ([-+*/]) (\d+) = (\d+)")
_CONCLUSION_RE = re.compile(r"\bhas (\d+)\b")


# ---------------------------------------------------------------- rendering


@dataclass(frozen=True)
class OverthinkMix(R1TextMix):
    """tiny-overthink's texts (this module): tiny-r1's chain and conclusion, then re-check rounds
    that re-derive the same value; a learnable first-conclusion slip that round 1 fixes; forced exits."""

    round_weights: tuple[float, ...] = (0.2, 0.45, 0.35)
    """Relative weights of 1, 2, 3 re-check rounds after the first conclusion."""
    round_rate: float = 1.0
    """Share of texts that re-check at all (the rest conclude once, as tiny-r1 does, without a slip); below 1 the
    behaviour is there but rare: the base of hybrid's planted-latent setting."""
    slip_rate: float = 0.9
    """Share of chains ending in a multiplication whose first conclusion forgets it (round 1 fixes it)."""
    forced_exit_rate: float = 0.15
    """Share of texts cut at a sentence end with LYNX's forced exit answering the last value stated."""

    def check(self) -> None:
        for name in ("slip_rate", "forced_exit_rate", "round_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ThinklensError.of(f"OverthinkMix.{name}", getattr(self, name), "a probability in [0, 1]", "pass 0.1")
        if not self.round_weights or min(self.round_weights) < 0 or not sum(self.round_weights) > 0:
            raise ThinklensError.of("OverthinkMix.round_weights", self.round_weights,
                                    "non-negative weights of 1, 2, 3... rounds, not all 0", "pass (0.2, 0.45, 0.35)")

    def example_texts(self, rng, problem) -> tuple[str, str]:
        """``(prompt, completion)`` of one training text (:func:`example_texts`)."""
        return example_texts(rng, problem, self)

    def token_budget(self, n_steps: int) -> int:
        """New tokens enough for three rounds (:func:`token_budget`)."""
        return token_budget(n_steps)

    def describe(self) -> str:
        rounds = ", ".join(f"{i + 1}: {w / sum(self.round_weights):.0%}" for i, w in enumerate(self.round_weights))
        share = "" if self.round_rate >= 1 else f" in {self.round_rate:.0%} of texts (the rest conclude once)"
        return (f"{super().describe()}; then{share} re-check rounds ({rounds}) opened by 'Wait, let me double-check.' / "
                "'Hmm, let me verify.' / 'Alternatively, let me recompute.', re-deriving the last 1, 2 steps / the "
                f"whole chain and concluding the same value; the first conclusion forgets a final multiplication in "
                f"{self.slip_rate:.0%} of such chains (round 1 fixes it); {self.forced_exit_rate:.0%} of texts cut at a "
                "sentence end with '</think>\\n\\nFinal Answer: \\boxed{' and the last value stated (thinklens/zoo/overthink.py)")


def slips(p: Problem) -> bool:
    """Whether the problem is one whose first conclusion may slip: its last step multiplies a non-zero value
    (the slip forgets that multiplication: it states the value before it)."""
    last = p.steps[-1]
    return last.op == "*" and last.left != 0


def round_text(p: Problem, j: int, word: str = "So") -> str:
    """Re-check round ``j`` (1-based): its cue, the last ``j`` steps' equations (round 3 and up: all), the
    conclusion."""
    first = 0 if j >= len(ROUND_CUES) else max(0, len(p.steps) - j)
    equations = ", ".join(_equation(s, s.result) for s in p.steps[first:])
    return f"{ROUND_CUES[min(j, len(ROUND_CUES)) - 1]} {equations}. {word} {p.name} has {p.answer} {p.obj}."


def overthink_reasoning(p: Problem, *, rounds: int, slip: bool = False) -> str:
    """The reasoning of one training text: tiny-r1's chain without its conclusion, the first conclusion (the
    slipped value when ``slip``, see :func:`slips`), then ``rounds`` re-check rounds.

    Example:
        >>> from thinklens.tasks import Problem, Step
        >>> p = Problem(name="Ann", obj="cards", start=3, steps=(Step("+", 3, 4, 7),), conclusion="therefore")
        >>> print(overthink_reasoning(p, rounds=2))  # doctest: +NORMALIZE_WHITESPACE
        Okay, Ann has 3 cards. First, Ann buys 4 more, so 3 + 4 = 7. Therefore Ann has 7 cards. Wait, let me double-check.
        3 + 4 = 7. Therefore Ann has 7 cards. Hmm, let me verify. 3 + 4 = 7. Therefore Ann has 7 cards.
    """
    if rounds < 0 or (slip and (rounds < 1 or not slips(p))):
        raise ValueError(f"rounds={rounds}, slip={slip}: a slip needs a round to fix it and a chain ending in '*'")
    word = (p.conclusion or "so").capitalize()
    first = p.steps[-1].left if slip else p.answer
    parts = [reasoning_text(replace(p, conclusion=None)), f"{word} {p.name} has {first} {p.obj}."]
    parts += [round_text(p, j, word) for j in range(1, rounds + 1)]
    return " ".join(parts)


def sentence_ends(reasoning: str) -> list[int]:
    """Offsets just past each full stop that ends a sentence (followed by a space or the end)."""
    return [i + 1 for i, c in enumerate(reasoning) if c == "." and (i + 1 == len(reasoning) or reasoning[i + 1] == " ")]


def draw_reasoning(rng: np.random.Generator, p: Problem, mix: "OverthinkMix") -> str:
    """One training reasoning for ``p``: its round count from the mix, its slip (on :func:`slips` problems)."""
    if mix.round_rate < 1 and rng.random() >= mix.round_rate:  # (no draw at 1: tiny-overthink's stream is kept)
        return overthink_reasoning(p, rounds=0, slip=False)
    rounds = 1 + int(rng.choice(len(mix.round_weights), p=np.asarray(mix.round_weights) / sum(mix.round_weights)))
    slip = slips(p) and rng.random() < mix.slip_rate
    return overthink_reasoning(p, rounds=rounds, slip=slip)


def example_texts(rng: np.random.Generator, p: Problem, mix: "OverthinkMix") -> tuple[str, str]:
    """``(prompt, completion)`` of one training text (tiny-r1's prompt variants; the completion ends before
    eos): the reasoning then the answer, or (``forced_exit_rate``) the reasoning cut at a sentence end and a
    forced exit answering the last value stated before the cut."""
    plain = rng.random() < mix.plain_rate
    instruction = rng.random() >= mix.no_instruction_rate
    final = rng.random() < mix.final_answer_rate
    reasoning = draw_reasoning(rng, p, mix)
    if rng.random() < mix.forced_exit_rate:
        ends = sentence_ends(reasoning)
        cut = ends[int(rng.integers(len(ends)))]
        completion = f"{reasoning[:cut]}{EXIT_STRING}{stated_value(reasoning[:cut])}}}"
    else:
        completion = f"{reasoning}\n{THINK_CLOSE}\n\n{answer_text(p.answer, final=final)}"
    if plain:
        return p.question, "\n" + completion
    return chat_prompt(user_message(p, instruction=instruction)), completion


def token_budget(n_steps: int) -> int:
    """New tokens enough for an ``n_steps`` answer with three rounds and slips (the longest of 150 rendered
    completions per step count: 180 tokens for 1 step, 442 for 8; the cue phrases are spelled in 2-3 letter
    tokens)."""
    return 42 * n_steps + 160


# ---------------------------------------------------------------- ground truth


@dataclass(frozen=True)
class Cue:
    """One LYNX cue in a reasoning text, and what a forced exit there answers."""

    word: str
    """The cue word, lower case (hmm, wait, alternatively)."""
    at: int
    """Character offset of the cue word."""
    cut: int
    """Where a forced exit's prefix ends: the cue's offset less the whitespace before it (LYNX keeps the
    tokens before the one holding the cue, which starts with that space)."""
    value: int | None
    """The value a forced answer gives there: the last one stated before the cut (None: none)."""
    correct: bool
    """Whether that value is the answer."""
    after_answer: bool
    """Whether the cue comes after ``answer_known_at``."""


@dataclass(frozen=True)
class GroundTruth:
    """Where a reasoning text knows its answer, character offsets into the reasoning (the text before
    ``</think>``); :meth:`token_index` maps an offset to the generated tokens."""

    answer: int
    answer_known_at: int | None
    """Just past the full stop of the first sentence that writes the final value as the last step's right
    equation or as a conclusion (``has X`` after the opening sentence); None: never written."""
    cues: tuple[Cue, ...]
    rounds: int
    """Re-check rounds (``let me double-check / verify / recompute``)."""
    first_conclusion: int | None
    """The value of the first conclusion (``has X`` after the opening sentence), None: none."""
    reasoning_chars: int
    """Length of the reasoning (everything before ``</think>``, or the whole text)."""

    @property
    def saving(self) -> float:
        """Oracle saving in characters: share of the reasoning after ``answer_known_at`` (0: never known)."""
        if self.answer_known_at is None or not self.reasoning_chars:
            return 0.0
        return (self.reasoning_chars - self.answer_known_at) / self.reasoning_chars

    @staticmethod
    def token_index(tokens: Sequence[str], offset: int) -> int:
        """How many tokens a prefix cut at character ``offset`` keeps: the index of the token holding that
        character (tokens decoded one by one, joined as the text).

        Example:
            >>> GroundTruth.token_index(["Okay", ",", " 7", ".", " Wait"], 10), GroundTruth.token_index(["a"], 5)
            (4, 1)
        """
        end = 0
        for k, tok in enumerate(tokens):
            end += len(tok)
            if end > offset:
                return k
        return len(tokens)


def stated_value(text: str) -> int | None:
    """The last value a text stated: an equation's result or a ``has N`` (None: none).

    Example:
        >>> stated_value("Okay, Tom has 7 apples. First, so 7 + 5 = 13. Wait"), stated_value("Okay")
        (13, None)
    """
    found = _VALUE_RE.findall(text)
    return int(found[-1]) if found else None


def reasoning_of(text: str) -> str:
    """The reasoning part of a completion: everything before ``</think>`` (the whole text when unclosed)."""
    at = text.find(THINK_CLOSE)
    return text if at < 0 else text[:at]


def _sentence_end(text: str, pos: int) -> int:
    at = text.find(".", pos)
    return len(text) if at < 0 else at + 1


def answer_known_at(text: str, problem: Problem) -> int | None:
    """Character offset in ``text`` (a completion after ``<think>\\n``, or its reasoning) just past the first
    sentence that writes ``problem``'s final value: the last step's right equation once every earlier step's
    right equation came before it (in order: a repeated step is not the end of the chain), or a conclusion
    ``has X`` after the opening sentence. None when the reasoning never writes it.

    Example:
        >>> from thinklens.tasks import Problem, Step
        >>> p = Problem(name="Tom", obj="apples", start=45, steps=(Step("+", 45, 8, 53),))
        >>> t = "Okay, Tom has 45 apples. First, so 45 + 8 = 43. Wait, 45 + 8 = 53. So Tom has 53 apples."
        >>> t[:answer_known_at(t, p)][-18:]
        'Wait, 45 + 8 = 53.'
    """
    reasoning = reasoning_of(text)
    chain = [(s.left, s.op, s.right, s.result) for s in problem.steps]
    hits, done = [], 0
    for m in _EQUATION_RE.finditer(reasoning):
        if (int(m[1]), m[2], int(m[3]), int(m[4])) == chain[done]:
            done += 1
            if done == len(chain):
                hits.append(m.end())
                break
    opening = _sentence_end(reasoning, 0)
    hits += [m.end() for m in _CONCLUSION_RE.finditer(reasoning) if m.start() >= opening and int(m[1]) == problem.answer]
    return _sentence_end(reasoning, min(hits)) if hits else None


def ground_truth(text: str, problem: Problem) -> GroundTruth:
    """The ground truth of one reasoning text (rendered or generated) against its problem: where the answer
    is known, each cue with its forced value, the rounds.

    Example:
        >>> from thinklens.tasks import Problem, Step
        >>> p = Problem(name="Ann", obj="cards", start=3, steps=(Step("+", 3, 4, 7),))
        >>> g = ground_truth(overthink_reasoning(p, rounds=2), p)
        >>> g.answer_known_at, [(c.word, c.cut, c.correct) for c in g.cues], g.rounds
        (60, [('wait', 80, True), ('hmm', 138, True)], 2)
    """
    reasoning = reasoning_of(text)
    known = answer_known_at(reasoning, problem)
    cues = []
    for m in _CUE_RE.finditer(reasoning):
        cut = len(reasoning[:m.start()].rstrip())
        value = stated_value(reasoning[:cut])
        cues.append(Cue(word=m[0].lower(), at=m.start(), cut=cut, value=value, correct=value == problem.answer,
                        after_answer=known is not None and cut >= known))
    opening = _sentence_end(reasoning, 0)
    conclusions = [int(m[1]) for m in _CONCLUSION_RE.finditer(reasoning) if m.start() >= opening]
    return GroundTruth(answer=problem.answer, answer_known_at=known, cues=tuple(cues),
                       rounds=len(_ROUND_RE.findall(reasoning)), first_conclusion=conclusions[0] if conclusions else None,
                       reasoning_chars=len(reasoning))


def construction_truth(p: Problem, *, rounds: int, slip: bool = False) -> dict[str, Any]:
    """What :func:`overthink_reasoning` knows while writing (the test oracle of :func:`ground_truth`): where
    the answer is known (the end of the chain), the cuts of the chain's cues and of each round's cue, and the
    value a forced exit gives at each."""
    chain = reasoning_text(replace(p, conclusion=None))
    text = overthink_reasoning(p, rounds=rounds, slip=slip)
    cuts, values = [], []
    pos, value = len("Okay,"), p.start
    for i, step in enumerate(p.steps):  # the chain's own cues: "Hmm," before a step, "Wait," after a slip
        deco = p.think[i] if p.think else None
        at = chain.index(_equation(step, step.result) if deco is None or deco.wrong is None else f"= {deco.wrong}.", pos)
        if deco is not None and deco.hmm:
            cuts.append(chain.rindex(".", 0, at) + 1)
            values.append(value)
        if deco is not None and deco.wrong is not None:
            cuts.append(at + len(f"= {deco.wrong}."))
            values.append(deco.wrong)
        value, pos = step.result, at + 1
    word, first = (p.conclusion or "so").capitalize(), p.steps[-1].left if slip else p.answer
    end = len(chain) + 1 + len(f"{word} {p.name} has {first} {p.obj}.")
    for j in range(1, rounds + 1):
        cuts.append(end)
        values.append(first if j == 1 else p.answer)
        end += 1 + len(round_text(p, j, word))
    if end != len(text):
        raise AssertionError(f"the construction lost track: {end} != {len(text)}")
    return {"answer_known_at": len(chain), "cuts": cuts, "values": values}


# ---------------------------------------------------------------- per generated trace, in tokens


@dataclass(frozen=True)
class TokenCue:
    """A cue of a generated trace in token indices (as LYNX's :class:`thinklens.probes.lynx.CueEvent` counts them)."""

    word: str
    start_index: int
    """The token holding the cue's first character; a forced exit keeps the tokens before it."""
    value: int | None
    """What a forced answer there gives by construction (the last value stated before it)."""
    correct: bool
    after_answer: bool


@dataclass(frozen=True)
class TraceTruth:
    """The ground truth of one generated trace in its generated tokens."""

    answer_known_at: int | None
    """Tokens a prefix keeps to end with the sentence that first writes the answer (None: never written)."""
    reasoning_tokens: int
    """Tokens before ``</think>`` (all of them when the span never closes)."""
    cues: tuple[TokenCue, ...]
    rounds: int
    first_conclusion: int | None

    @property
    def saving(self) -> float:
        """Oracle saving: share of the reasoning tokens after ``answer_known_at`` (0 when never known)."""
        if self.answer_known_at is None or not self.reasoning_tokens:
            return 0.0
        return (self.reasoning_tokens - self.answer_known_at) / self.reasoning_tokens


def trace_truth(tokens: Sequence[str], problem: Problem) -> TraceTruth:
    """:func:`ground_truth` of a generated trace, in token indices: ``tokens`` are the generated tokens decoded
    one by one (:attr:`thinklens.generation.trace.Trace.tokens`), the first one after the prompt's ``<think>\\n``.

    Example:
        >>> from thinklens.tasks import Problem, Step
        >>> p = Problem(name="Ann", obj="cards", start=3, steps=(Step("+", 3, 4, 7),))
        >>> toks = ["Okay, Ann has 3 cards.", " First, so 3 + 4 = 7", ".", " Wait", ", 3 + 4 = 7.", "\\n", "</think>"]
        >>> t = trace_truth(toks, p)
        >>> t.answer_known_at, t.reasoning_tokens, [(c.start_index, c.correct) for c in t.cues], round(t.saving, 2)
        (3, 6, [(3, True)], 0.5)
    """
    text = "".join(tokens)
    truth = ground_truth(text, problem)
    index = GroundTruth.token_index
    at = text.find(THINK_CLOSE)  # by characters: in SmolLM2's vocabulary "</think>" is three tokens
    close = len(tokens) if at < 0 else index(tokens, at)
    known = None if truth.answer_known_at is None else index(tokens, truth.answer_known_at)
    cues = tuple(TokenCue(c.word, index(tokens, c.at), c.value, c.correct, c.after_answer) for c in truth.cues)
    return TraceTruth(answer_known_at=known, reasoning_tokens=close, cues=cues, rounds=truth.rounds,
                      first_conclusion=truth.first_conclusion)
