"""The problems a steering job runs on: where they come from, their prompts in a model's format, the gold
answers they are graded against and the new-token budget.

``--data`` takes any source of :mod:`thinklens.data.problemsets` (GSM8K, MATH-500, AIME, your JSONL, a saved
HF dataset, ``synthetic:MIN-MAX``); prompts are rendered in the model's prompt format
(:func:`thinklens.data.formats.format_for` and :meth:`~thinklens.data.formats.PromptFormat.render_problems`: its chat
template with the thinking span, plain text, or a zoo style), the budget is the core's
(:func:`thinklens.generation.budgets.new_token_budget`) and outputs are graded by :func:`thinklens.data.answers.is_correct`.
Without ``--data`` a job draws the synthetic task's seeded stream it always drew
(:meth:`thinklens.data.problemsets.ProblemSet.synthetic`: ``min_steps..max_steps`` steps, one held-out seed base
per purpose), so the zoo's results stay what they were.

Example:
    >>> from thinklens.data.problemsets import load_problems
    >>> parts = draw(load_problems("synthetic:2-2:5"), {"steer": 3, "stats": 4}, seed=0)
    >>> [len(v) for v in parts.values()]
    [3, 2]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from thinklens.data.answers import is_correct
from thinklens.data.formats import format_for
from thinklens.data.problemsets import ProblemSet, RealProblem, load_problems
from thinklens.generation.budgets import budgets_for, new_token_budget
from thinklens.steering.text_files import is_text_file, read_texts
from thinklens.tasks import check_style, render_example
from thinklens.tasks.protocol import HELD_OUT

if TYPE_CHECKING:
    from thinklens.data.formats import PromptFormat
    from thinklens.engine.model import HookedModel


@dataclass(frozen=True)
class PromptSet:
    """Prompts of one model for some problems, with what grading and generation need."""

    prompts: list[str]
    """The rendered prompts."""
    golds: list[str] | None
    """Gold answers (None: a prompt file without answers)."""
    max_new_tokens: int
    """New tokens per completion."""
    fmt: PromptFormat | None
    """The prompt format (None: prompts read from a file, used as they are)."""

    def __len__(self) -> int:
        return len(self.prompts)

    def correct(self, texts: Sequence[str]) -> list[bool] | None:
        """Whether each output states its problem's gold answer (None without golds)."""
        return None if self.golds is None else graded(texts, self.golds)


def graded(texts: Sequence[str], golds: Sequence[Any]) -> list[bool]:
    """:func:`thinklens.data.answers.is_correct` of every output against its gold answer."""
    return [is_correct(t, g) for t, g in zip(texts, golds)]


def accuracy(texts: Sequence[str], golds: Sequence[Any]) -> float:
    """Fraction of outputs that state their gold answer.

    Example:
        >>> accuracy(["so \\\\boxed{12}. Wait, 3", "#### 7"], ["12", 8])
        0.5
    """
    return sum(graded(texts, golds)) / max(1, len(golds))


def draw(problems: ProblemSet, sizes: Mapping[str, int], *, seed: int) -> dict[str, list[RealProblem]]:
    """Seeded, disjoint parts of a problem set, each of at most its size (earlier parts are filled first;
    a part gets fewer problems, or none, when the set runs out)."""
    counts: dict[str, int] = {}
    left = len(problems)
    for name, size in sizes.items():
        counts[name] = max(0, min(int(size), left))
        left -= counts[name]
    return {name: list(part) for name, part in problems.split(counts, seed=seed).items()}


def max_steps_of(problems: Sequence[RealProblem], default: int) -> int:
    """The most steps of the synthetic problems among ``problems`` (``default`` when none has ground truth)."""
    steps = [p.ground_truth.n_steps for p in problems if p.ground_truth is not None]
    return max(steps) if steps else default


def prompt_set(model: HookedModel, fmt: PromptFormat, problems: Sequence[RealProblem], *, max_new_tokens: int | None,
               max_steps: int) -> PromptSet:
    """The :class:`PromptSet` of ``problems`` for ``model`` in ``fmt`` (``max_steps``: a zoo style's budget; one
    budget for the set, inside the model's context)."""
    prompts = fmt.render_problems(problems, model.tokenizer)
    budget = budgets_for(model, prompts, new_token_budget(fmt, max_new_tokens, max_steps=max_steps)).shared
    return PromptSet(prompts, [p.answer for p in problems], budget, fmt)


def data_format(model: HookedModel, prompt_format: str, zoo_spec: str | None = None) -> PromptFormat:
    """The format of a job's prompts: ``prompt_format`` resolved for ``model``. For a ``zoo:<style>`` spec with
    ``prompt_format`` auto: that zoo style for a model that answers in a zoo style, else the model's own
    format (a chat model gets the synthetic problems in its chat template)."""
    fmt = format_for(model, prompt_format)
    if zoo_spec is not None and zoo_spec.startswith("zoo:") and prompt_format == "auto" and fmt.is_zoo:
        return format_for(model, check_style(zoo_spec[4:]))
    return fmt


def problem_texts(fmt: PromptFormat, problems: Sequence[RealProblem], tokenizer: Any) -> list[str]:
    """Full texts of problems (SAE training data): the prompt in ``fmt`` followed by the problem's worked
    solution (its answer when it has none); in a zoo style, a synthetic problem's own zoo training text.

    Example:
        >>> from thinklens.data.formats import PromptFormat
        >>> problem_texts(PromptFormat("plain"), [RealProblem("a", "What is 2+2?", "4", "2+2=4. #### 4")], None)
        ['What is 2+2?\\n2+2=4. #### 4']
    """
    prompts = fmt.render_problems(problems, tokenizer)
    out = []
    for prompt, p in zip(prompts, problems):
        if fmt.is_zoo and p.ground_truth is not None:
            zoo_prompt, target = render_example(p.ground_truth, fmt.name)
            out.append(f"{zoo_prompt} {target}")
            continue
        body = p.solution.strip() or p.answer
        sep = " " if fmt.is_zoo else ("" if prompt.endswith(("\n", " ")) else "\n")
        out.append(f"{prompt}{sep}{body}")
    return out


def held_out_prompts(model: HookedModel, data: str, n: int, *, prompt_format: str = "auto", data_fields: str = "",
                     min_steps: int = 2, max_steps: int = 6, max_new_tokens: int | None = None, offset: int = 0) -> PromptSet:
    """Prompts an SAE was not trained on, whose completions the ``sae`` and ``sae-eval`` jobs generate (to score
    fidelity on the generated tokens and to scan for feature statistics): the held-out zoo stream for
    ``zoo:<style>``, the lines of a text file (used as prompts as they are), else ``n`` problems of a problem
    set from ``offset`` (those after the training ones), filled up from its start when fewer are left.

    Example:
        >>> # held_out_prompts(model, "zoo:think", 64).prompts[:1]
    """
    if data.startswith("zoo:"):
        problems = ProblemSet.synthetic(n, seed=HELD_OUT["sampling"], min_steps=min_steps, max_steps=max_steps)
        return prompt_set(model, data_format(model, prompt_format, data), problems, max_new_tokens=max_new_tokens,
                          max_steps=max_steps)
    if is_text_file(data):
        return PromptSet(read_texts(data)[:n], None, max_new_tokens or 64, None)
    every = list(load_problems(data, mapping=data_fields or None))
    problems = (every[offset:] + every[:offset])[:n]  # the held-out ones first; training ones only to fill up
    return prompt_set(model, data_format(model, prompt_format), problems, max_new_tokens=max_new_tokens,
                      max_steps=max_steps_of(problems, max_steps))
