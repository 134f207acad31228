"""Seeded generation of problems; all randomness flows from an explicit ``numpy.random.Generator``.

Example:
    >>> from thinklens.tasks import TaskConfig, generate_problems
    >>> ps = generate_problems(3, seed=0, config=TaskConfig(max_steps=3))
    >>> [p.n_steps for p in ps] == [p.n_steps for p in generate_problems(3, seed=0, config=TaskConfig(max_steps=3))]
    True
"""

from __future__ import annotations

import numpy as np

from thinklens.errors import ThinklensError
from thinklens.tasks.config import TaskConfig
from thinklens.tasks.problem import PHRASES, Distractor, Problem, Step, ThinkStep, apply_op

NAMES: tuple[str, ...] = ("Tom", "Ann", "Sam", "Mia", "Leo", "Eva")
OBJECTS: tuple[str, ...] = ("apples", "pears", "coins", "books", "cards", "stones")

#: Attempts before giving up on a config that admits (almost) no problem.
_MAX_TRIES = 200


def as_rng(seed: int | np.random.Generator) -> np.random.Generator:
    """A generator from an int seed, or the generator itself (no global state is ever touched)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return np.random.default_rng(int(seed))
    raise ThinklensError.of("seed", seed, "an int or a numpy.random.Generator", "pass seed=0")


def _int(rng: np.random.Generator, lo: int, hi: int) -> int:
    """Uniform integer in lo..hi inclusive."""
    return int(rng.integers(lo, hi + 1))


def _candidates(op: str, left: int, cfg: TaskConfig) -> list[int]:
    """Right operands that keep ``left op right`` inside ``0..max_value``."""
    if op == "+":
        return list(range(1, min(cfg.max_operand, cfg.max_value - left) + 1))
    if op == "-":
        return list(range(1, min(cfg.max_operand, left) + 1))
    if op == "*":
        return [k for k in range(2, cfg.max_factor + 1) if left >= 1 and left * k <= cfg.max_value]
    return [k for k in range(2, cfg.max_factor + 1) if left >= k and left % k == 0]


def _draw_chain(rng: np.random.Generator, cfg: TaskConfig, n_steps: int) -> tuple[int, list[Step]] | None:
    start = _int(rng, 1, cfg.max_value)
    steps: list[Step] = []
    used: set[int] = set()
    left = start
    for _ in range(n_steps):
        options = [(op, c) for op in cfg.ops if (c := _candidates(op, left, cfg))]
        if not options:
            return None
        op, cands = options[int(rng.integers(len(options)))]
        fresh = [c for c in cands if c not in used] if cfg.distinct_operands else cands
        right = int(rng.choice(fresh or cands))
        used.add(right)
        result = apply_op(op, left, right)
        steps.append(Step(op, left, right, result))
        left = result
    return start, steps


def _wrong_result(rng: np.random.Generator, cfg: TaskConfig, right: int) -> int:
    """A near miss: within ``max_error`` of the right result, in range, never equal to it."""
    deltas = [d for d in range(-cfg.max_error, cfg.max_error + 1) if d and 0 <= right + d <= cfg.max_value]
    return right + int(rng.choice(deltas))


def forgotten_carry(step: Step) -> int | None:
    """The result of ``step`` with its carry (``+``) or borrow (``-``) forgotten, or None if it has none.

    Example:
        >>> forgotten_carry(Step("+", 45, 8, 53)), forgotten_carry(Step("-", 52, 7, 45)), forgotten_carry(Step("+", 41, 8, 49))
        (43, 55, None)
    """
    if step.op == "+" and step.left % 10 + step.right % 10 >= 10:
        wrong = step.result - 10
    elif step.op == "-" and step.left % 10 < step.right % 10:
        wrong = step.result + 10
    else:
        return None
    return wrong if wrong >= 0 else None


def _think_step(rng: np.random.Generator, cfg: TaskConfig, step: Step) -> ThinkStep:
    # The two rng draws happen whatever the modes, so the problem stream of a seed does not depend on them.
    hmm = bool(rng.random() < cfg.hmm_rate) and (cfg.hmm_on == "any" or step.op in "*/")
    slip = rng.random() < cfg.correction_rate
    if not slip:
        return ThinkStep(hmm=hmm)
    near_miss = _wrong_result(rng, cfg, step.result)  # drawn in every mode, for the same reason
    if cfg.correction_on == "carry":
        wrong = forgotten_carry(step)
        return ThinkStep(hmm=hmm, wrong=wrong if wrong is not None and wrong <= cfg.max_value else None)
    return ThinkStep(hmm=hmm, wrong=near_miss)


def generate_problem(
    seed: int | np.random.Generator, config: TaskConfig | None = None, *, n_steps: int | None = None
) -> Problem:
    """Draw one problem; ``n_steps`` fixes the number of steps (default: uniform in the config's range).

    Example:
        >>> p = generate_problem(0, n_steps=3)
        >>> p.n_steps, all(0 <= v <= 99 for v in p.values)
        (3, True)
    """
    cfg = config or TaskConfig()
    rng = as_rng(seed)
    if n_steps is None:
        n_steps = _int(rng, cfg.min_steps, cfg.max_steps)
    elif not 1 <= n_steps <= 64:
        raise ThinklensError.of("n_steps", n_steps, "1..64", "pass n_steps=3")
    for _ in range(_MAX_TRIES):
        drawn = _draw_chain(rng, cfg, n_steps)
        if drawn is not None:
            break
    else:
        raise ThinklensError.of(
            "TaskConfig", cfg, f"a config admitting {n_steps}-step chains", "add '+' and '-' to ops or raise max_value"
        )
    start, steps = drawn
    name = NAMES[int(rng.integers(len(NAMES)))]
    obj = OBJECTS[int(rng.integers(len(OBJECTS)))]
    phrasing = tuple(int(rng.integers(len(PHRASES[s.op]))) for s in steps)
    distractors = []
    for after in range(n_steps + 1):
        if rng.random() < cfg.distractor_rate:
            other = [n for n in NAMES if n != name][int(rng.integers(len(NAMES) - 1))]
            distractors.append(
                Distractor(after, other, _int(rng, 1, cfg.max_value), OBJECTS[int(rng.integers(len(OBJECTS)))])
            )
    think = tuple(_think_step(rng, cfg, s) for s in steps)
    conclusion = ("so", "therefore")[int(rng.integers(2))] if rng.random() < cfg.conclusion_rate else None
    return Problem(
        name=name, obj=obj, start=start, steps=tuple(steps), phrasing=phrasing,
        distractors=tuple(distractors), think=think, conclusion=conclusion,
    )


def generate_problems(
    n: int, *, seed: int | np.random.Generator, config: TaskConfig | None = None, n_steps: int | None = None
) -> list[Problem]:
    """Draw ``n`` problems from one seeded stream (same seed, same problems).

    Example:
        >>> [p.n_steps for p in generate_problems(4, seed=1, n_steps=2)]
        [2, 2, 2, 2]
    """
    if n < 0:
        raise ThinklensError.of("n", n, "a count >= 0", "pass n=100")
    rng = as_rng(seed)
    return [generate_problem(rng, config, n_steps=n_steps) for _ in range(n)]
