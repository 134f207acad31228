"""Problems for the MI-peaks job: the synthetic task or a GSM8k-format JSONL file, rendered as a
prompt in each model's style and as the golden solution text whose last state is h_gt.

Two prompt formats:

* ``"zoo"``: the zoo's canonical spaced text plus the style's cue (``... steps :``, ``... <think>``,
  ``... answer :``), exactly what the zoo models were trained on;
* ``"plain"``: the question as written, then a newline (no chat template, as the reference run).

``"auto"`` picks "zoo" for zoo names and folders holding a ``zoo.json``, "plain" otherwise.

Example:
    >>> ps = synthetic_problems(2, seed=0, min_steps=2, max_steps=2)
    >>> render_prompt_for(ps[0], "think", "zoo").endswith("<think>")
    True
    >>> gold_text(ps[0], "cot", "zoo").endswith(f"#### {ps[0].answer}")
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from thinklens.errors import ThinklensError
from thinklens.tasks import CUES, STYLES, Problem, TaskConfig, generate_problems, render_target, spaced

PROMPT_FORMATS = ("auto", "zoo", "plain")
"""Prompt formats; see the module docstring."""


@dataclass(frozen=True)
class MIProblem:
    """One problem: its question, integer answer and reference solution text."""

    question: str
    """The question in natural text."""
    answer: int
    """The gold integer answer (scored with ``thinklens.answers.parse_answer``)."""
    solution: str = ""
    """The source's reference solution (GSM8k ``answer`` text); empty for synthetic problems."""
    cot: str = ""
    """GSM8k-Aug equations, e.g. ``<<7+5=12>> <<12*3=36>>`` (may be empty)."""
    problem: Problem | None = None
    """The synthetic problem with its per-step ground truth (None for file input)."""


def synthetic_problems(n: int, *, seed: int, min_steps: int, max_steps: int) -> list[MIProblem]:
    """``n`` seeded problems of the synthetic task (the same for every model of a run)."""
    cfg = TaskConfig(min_steps=min_steps, max_steps=max_steps)
    return [MIProblem(question=p.question, answer=p.answer, cot=p.cot, problem=p)
            for p in generate_problems(n, seed=seed, config=cfg)]


def jsonl_problems(path: str | Path, n: int | None = None) -> list[MIProblem]:
    """The first ``n`` records (all if None) of a GSM8k / GSM8k-Aug / ``\\boxed`` JSONL file.

    Example:
        >>> import json, tempfile
        >>> f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        >>> _ = f.write(json.dumps({"question": "Tom has 3 apples .", "answer": "<<3+1=4>>4 #### 4"}) + "\\n")
        >>> f.close(); jsonl_problems(f.name)[0].cot
        '<<3+1=4>>'
    """
    from thinklens.answers import load_gsm8k_jsonl

    records = load_gsm8k_jsonl(path)
    if not records:
        raise ThinklensError.of("problem file", str(path), "at least one JSON line", "add problems to the file")
    return [MIProblem(question=r.question, answer=r.answer, solution=r.solution, cot=r.cot)
            for r in records[: n if n is not None else len(records)]]


def resolve_format(model_name: str, prompt_format: str) -> str:
    """"zoo" or "plain" for a model, resolving "auto" (see the module docstring)."""
    if prompt_format not in PROMPT_FORMATS:
        raise ThinklensError.of("prompt format", prompt_format, f"one of {PROMPT_FORMATS}", "use auto")
    if prompt_format != "auto":
        return prompt_format
    from thinklens.zoo.registry import is_zoo_name

    folder = Path(model_name).expanduser()
    return "zoo" if is_zoo_name(model_name) or (folder / "zoo.json").is_file() else "plain"


def render_prompt_for(problem: MIProblem, style: str, fmt: str) -> str:
    """The prompt of one problem for one model (``fmt`` already resolved: "zoo" or "plain")."""
    if style not in STYLES:
        raise ThinklensError.of("style", style, f"one of {STYLES}", "use think, cot or direct")
    if fmt == "zoo":
        return f"{spaced(problem.question)} {CUES[style]}"
    if fmt == "plain":
        return f"{problem.question}\n"
    raise ThinklensError.of("prompt format", fmt, "'zoo' or 'plain'", "resolve 'auto' with resolve_format first")


def gold_text(problem: MIProblem, gold_style: str, fmt: str) -> str:
    """The solution text run through the model once for h_gt (one text for every model of a run).

    Synthetic problems render their target in ``gold_style`` (default "cot": ``<< 7 + 5 = 12 >> ...
    #### 12``); file problems use the source's solution text (else its equations and answer).
    """
    if problem.problem is not None and fmt == "zoo":
        return render_target(problem.problem, gold_style)
    text = problem.solution or f"{problem.cot} #### {problem.answer}".strip()
    return spaced(text) if fmt == "zoo" else text


def load_problems(data: str, n: int, *, seed: int, min_steps: int, max_steps: int) -> list[MIProblem]:
    """The job's problems: the synthetic task when ``data`` is empty, else the first n file records."""
    if data:
        return jsonl_problems(data, n)
    return synthetic_problems(n, seed=seed, min_steps=min_steps, max_steps=max_steps)
