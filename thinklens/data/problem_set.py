"""A problem set's types: :class:`RealProblem` (a question with its gold answer) and :class:`ProblemSet` (an ordered
tuple of them, drawn from the synthetic task or loaded by :func:`thinklens.data.problemsets.load_problems`), and
seeded disjoint splits (:meth:`ProblemSet.split`, :func:`check_disjoint`).

Example:
    >>> ps = ProblemSet.synthetic(4, seed=0, min_steps=2, max_steps=3)
    >>> parts = ps.split({"train": 0.5, "test": 0.5}, seed=0)
    >>> [len(p) for p in parts.values()]
    [2, 2]
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from thinklens.data.answers import is_correct, parse_answer
from thinklens.errors import ThinklensError, opt
from thinklens.tasks.config import TaskConfig, check_step_range
from thinklens.tasks.generator import generate_problems
from thinklens.tasks.protocol import problems_by_steps


@dataclass(frozen=True)
class RealProblem:
    """One problem of a problem set: its question, the gold answer as written, and what else the source had."""

    id: str
    """Stable id: the source's ``unique_id``/``id`` column, else ``<source name>-<row>``."""
    question: str
    """The problem text, without any prompt format (chat templates are applied later)."""
    answer: str
    """The gold answer as written (``72``, ``\\frac{14}{3}``, ``\\text{Evelyn}``)."""
    solution: str = ""
    """A worked solution or chain of thought when the source has one (GSM8K's answer text, MATH's solution)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """The source's other columns (MATH-500: ``level``, ``subject``; synthetic: ``n_steps``)."""
    ground_truth: Any = None
    """The synthetic task's :class:`thinklens.tasks.Problem` (values at every step), else None."""

    @property
    def integer_answer(self) -> int | None:
        """The gold answer as an integer (``1,450,000`` -> 1450000), or None when it is not one."""
        return parse_answer("#### " + self.answer) if re.fullmatch(r"\s*-?[\d,]+(?:\.0+)?\s*", self.answer) else None

    def is_correct(self, text: str, *, timeout: float = 5.0) -> bool:
        """Whether a model's output states this problem's gold answer (:func:`thinklens.data.answers.is_correct`)."""
        return is_correct(text, self.answer, timeout=timeout)


def normalized_question(question: str) -> str:
    """The form two questions are compared in: case-folded, whitespace collapsed.

    Example:
        >>> normalized_question("  How many\\n apples? ") == normalized_question("how many apples?")
        True
    """
    return " ".join(question.casefold().split())


@dataclass(frozen=True)
class ProblemSet:
    """A loaded problem set: an ordered tuple of :class:`RealProblem`."""

    source: str
    """Where it came from (the source string it was loaded from, or a split's name after it)."""
    problems: tuple[RealProblem, ...]
    """The problems, in the source's order."""

    def __len__(self) -> int:
        return len(self.problems)

    def __iter__(self) -> Iterator[RealProblem]:
        return iter(self.problems)

    def __getitem__(self, index: int) -> RealProblem:
        return self.problems[index]

    @property
    def questions(self) -> list[str]:
        """The question texts."""
        return [p.question for p in self.problems]

    @property
    def answers(self) -> list[str]:
        """The gold answers."""
        return [p.answer for p in self.problems]

    @property
    def is_synthetic(self) -> bool:
        """Whether every problem carries the synthetic task's ground truth."""
        return bool(self.problems) and all(p.ground_truth is not None for p in self.problems)

    @classmethod
    def synthetic(cls, n: int, *, seed: int | Sequence[int], min_steps: int, max_steps: int, per_steps: bool = False,
                  source: str | None = None, id_prefix: str | None = None) -> ProblemSet:
        """``n`` problems of the synthetic task (the zoo's multi-step arithmetic), each keeping its ground truth.

        One seeded stream of mixed step counts in ``min_steps..max_steps`` (``seed``: an int, or a sequence of
        ints that numpy's ``default_rng`` takes, so a job can keep independent streams per purpose), or with
        ``per_steps`` ``n`` problems of every step count, ``s`` steps from the stream ``seed * 1000 + s``
        (:func:`thinklens.tasks.protocol.problems_by_steps`). Problem ``i`` is ``<id_prefix>-<i>`` (per step
        count: ``<id_prefix>-<s>-<i>``); ``id_prefix`` defaults to ``synthetic-<seed>``.

        Example:
            >>> ps = ProblemSet.synthetic(3, seed=0, min_steps=2, max_steps=3)
            >>> [p.id for p in ps], all(p.answer == str(p.ground_truth.answer) for p in ps)
            (['synthetic-0-0', 'synthetic-0-1', 'synthetic-0-2'], True)
            >>> [p.metadata["n_steps"] for p in ProblemSet.synthetic(1, seed=5, min_steps=2, max_steps=3, per_steps=True)]
            [2, 3]
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < (1 if per_steps else 0):
            raise ThinklensError.of("number of synthetic problems", n, f"an integer >= {1 if per_steps else 0}",
                                    "pass e.g. n=100")
        check_step_range(min_steps, max_steps)
        key = seed if isinstance(seed, int) else "-".join(str(s) for s in seed)
        prefix = f"synthetic-{key}" if id_prefix is None else id_prefix
        if per_steps:
            if not isinstance(seed, int):
                raise ThinklensError.of("seed of per-step streams", seed, "an int (stream seed * 1000 + steps)", "pass seed=0")
            drawn = problems_by_steps(n, min_steps, max_steps, seed=seed)
            ids = [f"{prefix}-{p.n_steps}-{i % n}" for i, p in enumerate(drawn)]
        else:
            rng = seed if isinstance(seed, int) else np.random.default_rng(list(seed))
            drawn = generate_problems(n, seed=rng, config=TaskConfig(min_steps=min_steps, max_steps=max_steps))
            ids = [f"{prefix}-{i}" for i in range(len(drawn))]
        problems = tuple(RealProblem(pid, p.question, str(p.answer), p.cot, {"n_steps": p.n_steps}, ground_truth=p)
                         for pid, p in zip(ids, drawn))
        name = f"synthetic stream (seed {key}, {min_steps}-{max_steps} steps)" if source is None else source
        return cls(name, problems)

    def take(self, n: int) -> ProblemSet:
        """The first ``n`` problems (all when fewer)."""
        if not isinstance(n, int) or n < 0:
            raise ThinklensError.of("number of problems", n, "an integer >= 0", "pass e.g. 100")
        return replace(self, problems=self.problems[:n])

    def split(self, sizes: Mapping[str, int | float], *, seed: int) -> dict[str, ProblemSet]:
        """Seeded, disjoint splits, e.g. ``{"train": 0.6, "calibration": 0.2, "test": 0.2}`` or counts.

        Fractions are of the whole set (when they sum to 1 the last split takes the remainder); ints
        are counts. Problems with the same normalised question always land in the same split, so
        the splits never share a question; each split keeps the source's order.

        Example:
            >>> ps = ProblemSet.synthetic(10, seed=0, min_steps=2, max_steps=2)
            >>> parts = ps.split({"train": 6, "test": 4}, seed=1)
            >>> sorted(p.id for part in parts.values() for p in part) == sorted(p.id for p in ps)
            True
        """
        counts = _split_counts(sizes, len(self.problems))
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(self.problems):
            groups.setdefault(normalized_question(p.question), []).append(i)
        order = list(groups.values())
        random.Random(seed).shuffle(order)
        parts: dict[str, list[int]] = {name: [] for name in counts}
        names = iter(counts)
        name = next(names, None)
        for group in order:
            while name is not None and len(parts[name]) >= counts[name]:
                name = next(names, None)
            if name is None:
                break
            parts[name].extend(group)
        out = {n: ProblemSet(f"{self.source}#{n}", tuple(self.problems[i] for i in sorted(idx))) for n, idx in parts.items()}
        check_disjoint(out)
        return out


def _split_counts(sizes: Mapping[str, int | float], n: int) -> dict[str, int]:
    if not isinstance(sizes, Mapping) or not sizes:
        raise ThinklensError.of("split sizes", sizes, "a mapping like {'train': 0.8, 'test': 0.2}", "name each split")
    counts: dict[str, int] = {}
    for name, size in sizes.items():
        if isinstance(size, bool) or not isinstance(size, (int, float)) or size < 0 or (isinstance(size, float) and size > 1):
            raise ThinklensError.of(f"size of split {name!r}", size, "a count (int >= 0) or a fraction in [0, 1]", "fix it")
        counts[name] = size if isinstance(size, int) else int(round(size * n))
    fractions = [s for s in sizes.values() if isinstance(s, float)]
    if len(fractions) == len(sizes) and abs(sum(fractions) - 1.0) < 1e-9:
        last = list(counts)[-1]
        counts[last] = n - sum(c for k, c in counts.items() if k != last)
    if sum(counts.values()) > n:
        raise ThinklensError.of("split sizes", dict(sizes), f"at most {n} problems in all", "ask for fewer or load more")
    return counts


def check_disjoint(sets: Mapping[str, ProblemSet], *, allow_overlap: bool = False) -> None:
    """Raise when a question (normalised) is in two of the named sets, unless ``allow_overlap``.

    Use it when a job trains on one data set and tests on another.

    Example:
        >>> a = ProblemSet.synthetic(3, seed=0, min_steps=2, max_steps=2)
        >>> check_disjoint({"train": a, "test": a})
        Traceback (most recent call last):
        ...
        thinklens.errors.ThinklensError: bad splits: received '3 questions in both train and test, e.g. ...
    """
    if allow_overlap:
        return
    owner: dict[str, str] = {}
    for name, problems in sets.items():
        shared = [p.question for p in problems if owner.get(normalized_question(p.question), name) != name]
        if shared:
            other = owner[normalized_question(shared[0])]
            raise ThinklensError.of(
                "splits", f"{len(shared)} questions in both {other} and {name}, e.g. {shared[0][:60]}",
                "disjoint splits (no question in two of them)", f"use disjoint data, or pass {opt('allow_overlap', True)} to allow it",
            )
        for p in problems:
            owner.setdefault(normalized_question(p.question), name)
