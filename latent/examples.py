"""Problems as latent-training examples in a model's prompt format, and the deterministic training batches.

A problem -- the synthetic task's :class:`~thinklens.tasks.Problem`, or a
:class:`~thinklens.data.problemsets.RealProblem` from any ``--data`` source (a GSM8k-Aug ``cot`` of ``<<a*b=c>>``
steps is its solution) -- becomes an :class:`~thinklens.latent.segments.Example` in one of two ways, chosen by the format:

- the zoo's formats (direct, cot, think; the committed latent models were trained so): the zoo's word
  prompt, the equations spaced into zoo words, and ``#### N`` (:func:`zoo_example`);
- any other format (chat, plain): the question as the format renders it (the model's chat template, or
  the bare question), the equations as written (``<<600*30/100=180>>``) and ``The answer is: N`` (CODI's
  answer line), all tokenised by the model's own tokenizer (:func:`generic_example`): a number may be
  several tokens, and nothing assumes the zoo's vocabulary.

Example:
    >>> from thinklens.data.formats import PromptFormat
    >>> from thinklens.zoo.tokenizer import build_zoo_tokenizer
    >>> from thinklens.tasks import generate_problems
    >>> builder = ExampleBuilder(build_zoo_tokenizer(), PromptFormat("cot"))
    >>> ex = builder.build(generate_problems(1, seed=0, n_steps=2)[0])
    >>> len(ex.steps), builder.tokenizer.decode(list(ex.answer)), builder.marker
    (2, '#### 82', '####')
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from thinklens.data.formats import PromptFormat
from thinklens.errors import ThinklensError, opt
from thinklens.latent.segments import Example, make_example
from thinklens.tasks import ANSWER_MARKER, Problem, TaskConfig, generate_problem, spaced

if TYPE_CHECKING:
    from thinklens.data.problemsets import RealProblem

#: The answer line of latent models outside the zoo's formats (CODI's reference writes ``The answer is: N``).
GENERIC_MARKER = "The answer is:"
_EQUATION = re.compile(r"<<[^<>]*>>")


def answer_marker(fmt: "PromptFormat") -> str:
    """The answer marker of examples in ``fmt``: ``####`` for the zoo's formats, else :data:`GENERIC_MARKER`."""
    return ANSWER_MARKER if fmt.is_zoo else GENERIC_MARKER


def equations_of(problem: "Problem | RealProblem") -> list[str]:
    """The GSM8k-Aug equations of a problem, compact (``<<12*3=36>>``): the synthetic task's steps, else every
    ``<<...>>`` of the solution (GSM8k-Aug's ``cot``, or GSM8K's answer text).

    Example:
        >>> from thinklens.data.problemsets import RealProblem
        >>> equations_of(RealProblem("a", "q", "18", "<<16-3-4=9>> <<9*2=18>>"))
        ['<<16-3-4=9>>', '<<9*2=18>>']
    """
    truth = problem if isinstance(problem, Problem) else problem.ground_truth
    if truth is not None:
        return [s.equation for s in truth.steps]
    return _EQUATION.findall(problem.solution)


def gold_of(problem: "Problem | RealProblem") -> int | str:
    """The gold answer: the synthetic task's integer, or the data set's answer as written."""
    return problem.answer


def n_steps_of(problem: "Problem | RealProblem") -> int:
    """Reasoning steps of a problem: the synthetic task's, else the equations of its solution (at least 1)."""
    return max(len(equations_of(problem)), 1)


def problem_record(problem: "Problem | RealProblem") -> dict[str, Any]:
    """What a result shows of a problem: question, gold answer, chain of thought, steps."""
    cot = problem.cot if isinstance(problem, Problem) else problem.solution
    return {"question": problem.question, "answer": gold_of(problem), "cot": cot, "steps": n_steps_of(problem)}


def zoo_example(problem: "Problem | RealProblem", tokenizer: Any, fmt: "PromptFormat") -> Example:
    """The zoo's form: the zoo prompt of ``fmt``'s style, spaced equations and ``#### N``."""
    gold = problem.answer if isinstance(problem, Problem) or problem.integer_answer is None else problem.integer_answer
    return make_example(tokenizer, fmt.render_problems([problem])[0], [spaced(e) for e in equations_of(problem)], gold)


def generic_example(problem: "Problem | RealProblem", tokenizer: Any, fmt: "PromptFormat") -> Example:
    """Any model's form: the question in ``fmt`` (chat template or plain), equations as written, ``The answer is: N``."""
    prompt = fmt.render(problem.question, tokenizer)
    return make_example(tokenizer, prompt, equations_of(problem), gold_of(problem), marker=GENERIC_MARKER)


class ExampleBuilder:
    """Builds :class:`~thinklens.latent.segments.Example` s for one model: its tokenizer and its prompt format."""

    def __init__(self, tokenizer: Any, fmt: "PromptFormat"):
        self.tokenizer, self.format = tokenizer, fmt
        self.marker = answer_marker(fmt)
        self.marker_ids = list(tokenizer(" " + self.marker, add_special_tokens=False)["input_ids"])
        """The marker's ids as they appear in an answer segment (searched for in generated ids)."""

    def build(self, problem: "Problem | RealProblem") -> Example:
        """The example of one problem (see the module docstring for the two forms)."""
        if self.format.is_zoo:
            return zoo_example(problem, self.tokenizer, self.format)
        return generic_example(problem, self.tokenizer, self.format)

    def build_all(self, problems: Any) -> list[Example]:
        return [self.build(p) for p in problems]


def check_chains(problems: Any, source: str) -> None:
    """Refuse a problem set when a problem has no ``<<...>>`` chain of thought (every trainer needs one)."""
    for i, p in enumerate(problems):
        if not equations_of(p):
            raise ThinklensError.of(
                "dataset", f"{source}: problem {i} ({p.id}) has no chain of thought", "a cot field or <<a+b=c>> equations "
                "in every solution (GSM8k-Aug format)", "add a GSM8k-Aug cot (e.g. '<<16-3-4=9>> <<9*2=18>>'), or map the "
                f"field that holds it with {opt('data_fields', 'solution=<field>')}",
            )


class ExampleSource:
    """Deterministic batches: batch ``k`` depends only on ``(seed, k)``, so a resumed run continues
    exactly where a straight run would, and every process agrees on the global batch.

    All examples of a batch share one number of CoT steps (the curricula remove steps per row and
    the latent counts must agree across a batch). Without ``problems``, each batch is drawn afresh from
    the synthetic task (``min_steps..max_steps``); with them, from the problems (tokenised when first drawn).

    Args:
        builder: how problems become examples (default: the zoo's cot format with ``tokenizer``).
    """

    def __init__(self, tokenizer: Any, *, seed: int, min_steps: int, max_steps: int, problems: Any = None,
                 builder: ExampleBuilder | None = None, task: TaskConfig | None = None):
        self.builder = builder or ExampleBuilder(tokenizer, PromptFormat("cot"))
        self.seed, self.task = seed, task or TaskConfig()
        self.min_steps, self.max_steps = min_steps, max_steps
        self.buckets: dict[int, list[Any]] | None = None
        self._built: dict[tuple[int, int], Example] = {}
        if problems is not None:
            check_chains(problems, getattr(problems, "source", "problems"))
            self.buckets = {}
            for p in problems:
                self.buckets.setdefault(len(equations_of(p)), []).append(p)

    def batch(self, k: int, size: int) -> list[Example]:
        rng = np.random.default_rng([self.seed, k])
        if self.buckets is not None:
            keys = sorted(self.buckets)
            weights = np.asarray([len(self.buckets[s]) for s in keys], dtype=float)
            n = keys[int(rng.choice(len(keys), p=weights / weights.sum()))]
            return [self._example(n, int(i)) for i in rng.integers(0, len(self.buckets[n]), size)]
        n = int(rng.integers(self.min_steps, self.max_steps + 1))
        return [self.builder.build(generate_problem(rng, self.task, n_steps=n)) for _ in range(size)]

    def _example(self, n_steps: int, i: int) -> Example:
        key = (n_steps, i)
        if key not in self._built:
            self._built[key] = self.builder.build(self.buckets[n_steps][i])  # type: ignore[index]
        return self._built[key]
