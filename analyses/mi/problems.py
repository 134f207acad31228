"""Problems for the MI-peaks job: any problem source or the job's own synthetic stream, each problem
rendered in each model's prompt format, and the golden solution text whose last state is h_gt.

Sources (``--data``):

* empty: ``n_problems`` synthetic problems drawn with ``--seed`` between ``--min-steps`` and
  ``--max-steps`` (the demo's stream), each keeping its per-step ground truth;
* anything :func:`thinklens.problemsets.load_problems` reads: GSM8K, MATH-500, AIME, your JSONL, a
  saved ``datasets`` folder, ``synthetic:MIN-MAX[:N]`` (the first ``n_problems``).

Prompts come from the model's :class:`thinklens.formats.PromptFormat` (chat template, plain text or a
zoo style). The golden text (the reference runs the problem's full solution text through the model):

* a zoo style on a synthetic problem: the target rendered in ``gold_style`` (cot:
  ``<< 7 + 5 = 12 >> #### 12``), what the zoo was trained to write;
* otherwise the source's solution (GSM8K's answer text, MATH's solution), followed by ``#### <answer>``
  when it states no final answer (synthetic chains, GSM8k-Aug ``cot``), or ``#### <answer>`` alone
  without a solution; in the zoo's spaced form for zoo styles.

Example:
    >>> ps = stream_problems(2, seed=0, min_steps=2, max_steps=2)
    >>> ps[0].ground_truth.n_steps, ps[0].answer == str(ps[0].ground_truth.answer)
    (2, True)
    >>> from thinklens.formats import PromptFormat
    >>> prompt_of(ps[0], PromptFormat("think")).endswith("<think>")
    True
    >>> gold_text(ps[0], PromptFormat("think"), "cot").endswith(f"#### {ps[0].answer}")
    True
    >>> gold_text(ps[0], PromptFormat("plain"), "cot").startswith("<<")
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from thinklens.answers import extract_answer
from thinklens.problemsets import ProblemSet, RealProblem

if TYPE_CHECKING:
    from analyses.jobs.mi_peaks import MIPeaksJobConfig
    from thinklens.formats import PromptFormat


def stream_problems(n: int, *, seed: int, min_steps: int, max_steps: int) -> ProblemSet:
    """``n`` seeded problems of the synthetic task with mixed step counts (the same for every model)."""
    from thinklens.tasks import TaskConfig, generate_problems

    cfg = TaskConfig(min_steps=min_steps, max_steps=max_steps)
    problems = tuple(RealProblem(f"synthetic-{seed}-{i}", p.question, str(p.answer), p.cot, {"n_steps": p.n_steps},
                                 ground_truth=p)
                     for i, p in enumerate(generate_problems(n, seed=seed, config=cfg)))
    return ProblemSet(f"synthetic stream (seed {seed}, {min_steps}-{max_steps} steps)", problems)


def job_problems(cfg: MIPeaksJobConfig) -> ProblemSet:
    """The job's problems: its synthetic stream when ``data`` is empty, else the first ``n_problems`` of the source."""
    if not cfg.data:
        return stream_problems(cfg.n_problems, seed=cfg.seed, min_steps=cfg.min_steps, max_steps=cfg.max_steps)
    return cfg.load(limit=cfg.n_problems)


def prompt_of(problem: RealProblem, fmt: PromptFormat, tokenizer: Any = None) -> str:
    """One problem's prompt in a model's format (``tokenizer`` for chat templates)."""
    return fmt.render(problem.ground_truth if problem.ground_truth is not None else problem.question, tokenizer)


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
    from thinklens.tasks import render_target, spaced

    if problem.ground_truth is not None:
        return render_target(problem.ground_truth, gold_style)
    return spaced(solution_text(problem))
