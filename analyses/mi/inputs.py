"""Problems for the MI-peaks job: any problem source or the job's own synthetic stream, each problem
rendered in each model's prompt format, and the golden solution text whose last state is h_gt.

Sources (``--data``):

* empty: ``n_problems`` synthetic problems drawn with ``--seed`` between ``--min-steps`` and
  ``--max-steps`` (the demo's stream, :meth:`thinklens.data.problemsets.ProblemSet.synthetic`), each keeping its
  per-step ground truth;
* anything :func:`thinklens.data.problemsets.load_problems` reads: GSM8K, MATH-500, AIME, your JSONL, a
  saved ``datasets`` folder, ``synthetic:MIN-MAX[:N]`` (the first ``n_problems``).

Prompts come from the model's :class:`thinklens.data.formats.PromptFormat` (chat template, plain text or a
zoo style: :meth:`~thinklens.data.formats.PromptFormat.render_problems`). The golden text (the reference runs the
problem's full solution text through the model):

* a zoo style on a synthetic problem: the target rendered in ``gold_style`` (cot:
  ``<< 7 + 5 = 12 >> #### 12``), what the zoo was trained to write;
* otherwise the source's solution (GSM8K's answer text, MATH's solution), followed by ``#### <answer>``
  when it states no final answer (synthetic chains, GSM8k-Aug ``cot``), or ``#### <answer>`` alone
  without a solution; in the zoo's spaced form for zoo styles.

Example:
    >>> from thinklens.data.formats import PromptFormat
    >>> from thinklens.data.problemsets import ProblemSet
    >>> ps = ProblemSet.synthetic(2, seed=0, min_steps=2, max_steps=2)
    >>> gold_text(ps[0], PromptFormat("think"), "cot").endswith(f"#### {ps[0].answer}")
    True
    >>> gold_text(ps[0], PromptFormat("plain"), "cot").startswith("<<")
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from thinklens.data.answers import extract_answer
from thinklens.data.problemsets import RealProblem
from thinklens.tasks import render_target, spaced

if TYPE_CHECKING:
    from thinklens.data.formats import PromptFormat


def solution_text(problem: RealProblem) -> str:
    """The source's solution, ending in its final answer (``#### <answer>`` appended when it states none).

    Example:
        >>> solution_text(RealProblem("a", "q", "4", "<<3+1=4>>"))
        '<<3+1=4>> #### 4'
        >>> solution_text(RealProblem("b", "q", "\\\\frac{1}{2}", "So it is \\\\boxed{\\\\frac{1}{2}}."))
        'So it is \\\\boxed{\\\\frac{1}{2}}.'
    """
    solution = problem.solution.strip()
    if solution and extract_answer(solution) is not None:
        return solution
    return f"{solution} #### {problem.answer}".strip()


def gold_text(problem: RealProblem, fmt: PromptFormat, gold_style: str) -> str:
    """The text run through the model once for h_gt (see the module docstring)."""
    if not fmt.is_zoo:
        return solution_text(problem)

    if problem.ground_truth is not None:
        return render_target(problem.ground_truth, gold_style)
    return spaced(solution_text(problem))
