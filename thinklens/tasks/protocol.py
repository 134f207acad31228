"""The task protocol: which prompt style a model answers in, how many new tokens a problem needs, and
which seeds hold out evaluation problems. Defined once; every job, trainer and evaluator uses these.

Seeds: training streams use small seeds (0, 1, ...); each held-out purpose has its own base
(:data:`HELD_OUT`), far from the training seeds, so evaluation problems never overlap a training
stream drawn with another seed. Problems of ``s`` steps for seed ``seed`` come from the stream
``seed * 1000 + s`` (:func:`problems_by_steps`).

Example:
    >>> model_style("tiny-direct"), model_style("/models/tiny-think"), model_style("org/llm")
    ('direct', 'think', 'cot')
    >>> token_budget("cot", 4), token_budget("think", 4), token_budget("direct", 8)
    (34, 72, 4)
    >>> [p.n_steps for p in problems_by_steps(2, 3, 4, seed=HELD_OUT["eval"])]
    [3, 3, 4, 4]
"""

from __future__ import annotations

import json
from pathlib import Path

from thinklens.errors import ThinklensError
from thinklens.tasks.config import check_step_range
from thinklens.tasks.generator import generate_problems
from thinklens.tasks.render import check_style
from thinklens.zoo.registry import is_zoo_name, zoo_path

#: Style each zoo model answers in, when its zoo.json recipe does not say.
ZOO_STYLES: dict[str, str] = {
    "tiny-pre": "cot", "tiny-direct": "direct", "tiny-cot": "cot", "tiny-think": "think", "tiny-think-carry": "think",
    "tiny-grpo": "cot", "tiny-coconut": "cot", "tiny-codi": "cot", "tiny-latent-sft": "cot",
}

#: Seed bases of held-out problem streams, by purpose (far from the training seeds 0, 1, ...).
HELD_OUT: dict[str, int] = {
    "eval": 10_000,        # accuracy tables: zoo eval, latent eval, the MI demo's problems
    "sampling": 20_000,    # sampled traces scanned for feature statistics (steering)
    "steer": 30_000,       # problems the steer job steers and scores
    "steer_train": 40_000,  # problems whose traces build steering vectors
    "steer_eval": 50_000,   # problems steered and scored
}

# New tokens per step: a cot equation is 7 tokens (<< a + b = c >>); a think step may add hmm, a wrong
# equation and wait (9 more). Constant overheads: the answer marker, the number, </think> so and <eos>.
_PER_STEP = {"direct": 0, "cot": 7, "think": 16}
_OVERHEAD = {"direct": 4, "cot": 6, "think": 8}


def zoo_meta(name_or_path: str | Path) -> dict:
    """The zoo.json of a zoo model (by name or folder), or ``{}``."""
    folder = Path(name_or_path).expanduser()
    if not (folder / "zoo.json").is_file():
        found = zoo_path(str(name_or_path)) if is_zoo_name(str(name_or_path)) else None
        if found is None:
            return {}
        folder = found
    if not (folder / "zoo.json").is_file():
        return {}
    return json.loads((folder / "zoo.json").read_text())


def model_style(name_or_path: str | Path, fallback: str = "cot") -> str:
    """The zoo prompt style a model answers in: its zoo.json recipe's, else its zoo name's, else ``fallback``."""
    recipe = zoo_meta(name_or_path).get("recipe") or {}
    style = recipe.get("prompt_format") or recipe.get("eval_style")  # eval_style: its key in a zoo.json before the rename
    if style and style != "chat":  # chat: an R1 model's chat template, not a zoo style
        return check_style(style)
    name = Path(str(name_or_path)).name
    return ZOO_STYLES.get(str(name_or_path), ZOO_STYLES.get(name, check_style(fallback)))


def token_budget(style: str, n_steps: int) -> int:
    """New tokens enough for a zoo-style answer to an ``n_steps`` problem (greedy or sampled)."""
    if not isinstance(n_steps, int) or n_steps < 1:
        raise ThinklensError.of("n_steps", n_steps, "an integer >= 1", "pass the problem's number of steps")
    style = check_style(style)
    return _PER_STEP[style] * n_steps + _OVERHEAD[style]


def problems_by_steps(n: int, min_steps: int, max_steps: int, *, seed: int, config=None) -> list:
    """``n`` problems of every step count in ``min_steps..max_steps`` (stream ``seed * 1000 + steps`` each)."""
    check_step_range(min_steps, max_steps)
    return [p for s in range(min_steps, max_steps + 1) for p in generate_problems(n, seed=seed * 1000 + s, config=config, n_steps=s)]


def gsm8k_record(problem) -> dict[str, str]:
    """A problem as a line of GSM8K's test files: ``question``, and an ``answer`` of ``a op b = <<a op b=c>>c.``
    calculations ending in ``#### N`` (how the real-path runs, benches and tests write their data files).

    Example:
        >>> p = problems_by_steps(1, 2, 2, seed=HELD_OUT["eval"])[0]
        >>> gsm8k_record(p)["answer"].endswith(f"\\n#### {p.answer}")
        True
    """
    calc = " ".join(f"{s.left} {s.op} {s.right} = <<{s.left}{s.op}{s.right}={s.result}>>{s.result}." for s in problem.steps)
    return {"question": problem.question, "answer": f"{calc}\n#### {problem.answer}"}
