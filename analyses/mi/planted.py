"""Where a trajectory's answer information is known to be, and how an MI curve is scored against it.

A trajectory writes its final value at a known place: the result of the equation that first states it
(``... so 33 * 2 = 66.`` in tiny-r1's chains; ``So Tom has 66 apples.`` in tiny-overthink's). From that
token on, the state of every later position carries the value in its input. The *planted steps* are the
steps whose state sits at the tokens of that first statement: step ``t + 1`` for each token ``g[t]`` of it,
because ``rep[t + 1]`` is the state at the position of ``g[t]`` (spec: rep[t] produces g[t], rep[0] is the
last prompt token).

Scores against the planted steps, per trajectory (paired statistics over trajectories live in
:mod:`thinklens.analyses.mi.mi_findings` and the validation settings):

* the MI with the own answer and with the shuffled answer at the planted steps (their difference is the
  answer-specific MI, ``mi_gap``), and the own MI elsewhere (does MI *rise* at the planted steps);
* precision and recall of a peak set against the planted steps, and their chance levels: the same number
  of peaks placed uniformly at random (precision |planted| / n, recall |peaks| / n).

Example:
    >>> tokens = ["So", " 6", " *", " 2", " =", " 1", "2", ".", " So", " 1", "2", "."]
    >>> answer_steps(tokens, "12")  # the tokens " 1", "2" of "= 12" sit at steps 6 and 7
    [6, 7]
    >>> s = score_trajectory([0.1] * 12, [0.1] * 12, tokens, "12", peaks=[6, 9])
    >>> s.precision, s.recall, round(s.chance_precision, 3), round(s.chance_recall, 3)
    (0.5, 0.5, 0.167, 0.167)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from thinklens.errors import ThinklensError


def answer_span(text: str, answer: str) -> tuple[int, int] | None:
    """Character span of the first statement of ``answer`` in ``text``: the first ``= <answer>`` (an equation's
    result), else the first ``<answer>`` standing as a whole number; None when the text never writes it.

    Example:
        >>> answer_span("so 3 + 4 = 7. So 7 apples", "7"), answer_span("Tom has 17 then 7", "7"), answer_span("x", "7")
        ((11, 12), (16, 17), None)
    """
    if not answer:
        return None
    value = re.escape(answer.strip())
    m = re.search(rf"=\s*({value})(?![\d.]\d)(?!\d)", text)
    if m is None:
        m = re.search(rf"(?<![\d.])({value})(?!\d)(?![.]\d)", text)
    return None if m is None else (m.start(1), m.end(1))


def answer_steps(tokens: Sequence[str], answer: str, *, every: bool = False, producing: bool = False) -> list[int]:
    """Planted steps of one trajectory: ``t + 1`` for every generated token ``g[t]`` that overlaps the first
    statement of ``answer`` (:func:`answer_span` on the concatenated tokens), kept below ``len(tokens)``.

    ``every``: every statement of the value from the first one on (the first, and each restatement: an organism
    that re-checks writes it again in every round, where the value is as known as at its first statement).
    ``producing``: instead, the step ``t`` of each statement's first token ``g[t]``: the state that *produces* the
    value's first digit, at the token before it (``=`` or a space), whose input carries nothing of the value. Only a
    state that has computed the value can hold it there, so a reader of the raw token embeddings scores nothing at
    these steps; at the statement's own tokens (the default) the input token *is* the value, and token identity alone
    scores (a reader of the ``embed`` site recovers those steps).
    ``tokens[t]`` is decoded from one generated id, so the concatenation is the generated text.

    Example:
        >>> answer_steps(["=", " 1", "2", ". So", " 1", "2", "."], "12", every=True)
        [2, 3, 5, 6]
        >>> answer_steps(["=", " 1", "2", ". So", " 1", "2", "."], "12", every=True, producing=True)
        [1, 4]
    """
    text = "".join(tokens)
    span = answer_span(text, answer)
    if span is None:
        return []
    spans = [span]
    if every:
        value = re.escape(answer.strip())
        spans += [(m.start(1), m.end(1)) for m in re.finditer(rf"(?<![\d.])({value})(?!\d)(?![.]\d)", text)
                  if m.start(1) > span[0]]
    out, pos = [], 0
    first_of: set[int] = set()  # spans whose first token was seen (producing: one step per statement)
    for t, tok in enumerate(tokens):
        start, pos = pos, pos + len(tok)
        for k, (a0, a1) in enumerate(spans):
            if not (start < a1 and pos > a0):
                continue
            if producing:
                if k not in first_of and 0 < t:
                    out.append(t)
                first_of.add(k)
            elif t + 1 < len(tokens):
                out.append(t + 1)
    return sorted(set(out))


@dataclass(frozen=True)
class PlantedScore:
    """One trajectory's curves scored at its planted steps."""

    n_steps: int
    steps: tuple[int, ...]
    """Planted steps (empty when the trajectory never writes its answer)."""
    own: float
    """Mean MI with the own answer at the planted steps."""
    shuffled: float
    """Mean MI with the shuffled answer at the planted steps."""
    own_elsewhere: float
    """Mean MI with the own answer at every other step."""
    precision: float
    """Share of peaks on a planted step (NaN without peaks)."""
    recall: float
    """Share of planted steps that are peaks."""
    chance_precision: float
    """Expected precision of as many peaks placed at random: |planted| / n."""
    chance_recall: float
    """Expected recall of as many peaks placed at random: |peaks| / n."""
    peak_contrast: float = float("nan")
    """How far the peaks stand above the rest of their own curve: (mean own MI at the peaks - mean elsewhere) / the
    curve's standard deviation (NaN without peaks, or a flat curve). A rule that reads the curve scores well above 0
    (the top 3 of 60 noise steps: ~2); one that ignores it (random or fixed positions) scores ~0."""

    @property
    def gap(self) -> float:
        """own - shuffled at the planted steps: the answer-specific MI."""
        return self.own - self.shuffled


def peak_contrast(curve: Sequence[float] | np.ndarray, peaks: Sequence[int]) -> float:
    """(mean of ``curve`` at ``peaks`` - mean elsewhere) / std of ``curve``; NaN without peaks, without other steps, or
    for a flat curve.

    Example:
        >>> round(peak_contrast([0.0, 0.0, 1.0, 0.0], [2]), 3)
        2.309
        >>> peak_contrast([0.5, 0.5, 0.5], [1])
        nan
    """
    c = np.asarray(curve, dtype=np.float64)
    chosen = np.zeros(len(c), dtype=bool)
    chosen[sorted(set(peaks))] = True
    sd = float(c.std())
    if not chosen.any() or chosen.all() or not sd > 0:
        return float("nan")
    return float((c[chosen].mean() - c[~chosen].mean()) / sd)


def score_trajectory(own: Sequence[float] | np.ndarray, shuffled: Sequence[float] | np.ndarray, tokens: Sequence[str],
                     answer: str, *, peaks: Sequence[int] = (), steps: Sequence[int] | None = None,
                     producing: bool = False) -> PlantedScore | None:
    """Score one trajectory's own and shuffled MI curves at its planted steps (``steps``, default
    :func:`answer_steps`, ``producing`` as there); None when it has none (the answer is never written, or fills the
    whole trajectory)."""
    o, s = np.asarray(own, dtype=np.float64), np.asarray(shuffled, dtype=np.float64)
    n = len(tokens)
    if o.shape != (n,) or s.shape != (n,):
        raise ThinklensError.of("MI curves", (o.shape, s.shape), f"two curves of {n} steps (one per token)",
                                "pass the own and the shuffled curve of the same trajectory")
    planted = sorted(set(answer_steps(tokens, answer, producing=producing) if steps is None else steps))
    if not planted or len(planted) >= n:
        return None
    mask = np.zeros(n, dtype=bool)
    mask[planted] = True
    hits = sum(1 for p in set(peaks) if mask[p])
    return PlantedScore(peak_contrast=peak_contrast(o, peaks),
                        n_steps=n, steps=tuple(planted), own=float(o[mask].mean()), shuffled=float(s[mask].mean()),
                        own_elsewhere=float(o[~mask].mean()),
                        precision=hits / len(set(peaks)) if peaks else float("nan"), recall=hits / len(planted),
                        chance_precision=len(planted) / n, chance_recall=len(set(peaks)) / n)
