"""Whether a model reasons in the R1 format: the precondition that the reasoning settings of ``validate --model M``
(LYNX's and MI peaks') check before their minutes of rollouts, so that a model that cannot meet it (the untuned
SmolLM2-135M, which answers none of the task) is refused in a minute with one line, not run for half an hour.

The check: greedy traces of :data:`N_PER_STEPS` held-out problems at each of :data:`STEPS` steps in the model's own chat
format (its generation prompt opens ``<think>``), graded by their boxed answer; each trace's ground truth
(:func:`thinklens.zoo.overthink.trace_truth`) says whether it re-checks after writing its answer (a cue after
``answer_known_at``). One check per model and seed, shared by every setting of one validate run.

Example:
    >>> print(refusal({"model": "smollm2-135m", "n": 8, "right": 0, "rechecked": 0, "opens_think": False},
    ...               method="lynx", rechecks=True))  # doctest: +NORMALIZE_WHITESPACE
    smollm2-135m answers 0 of 8 held-out problems in the R1 format (its chat prompt opens no <think> span):
    lynx needs a model that reasons and re-checks after its answer (at least 6 of 8); try smol-r1
    >>> refusal({"model": "smol-r1", "n": 8, "right": 8, "rechecked": 8, "opens_think": True}, method="lynx",
    ...         rechecks=True) is None
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from thinklens.data.answers import is_correct
from thinklens.tasks import TaskConfig
from thinklens.tasks.protocol import HELD_OUT, problems_by_steps
from thinklens.zoo.overthink import OverthinkMix, trace_truth
from thinklens.zoo.smol_r1_eval import chat_prompts, opens_think

N_PER_STEPS = 4
"""Problems per step count."""
STEPS = (1, 2)
"""Step counts of the check's problems (the shortest: the check costs one batch of short traces)."""
MIN_SHARE = 0.75
"""Share of the problems a model must answer right (and, for LYNX, re-check after its answer) to be run."""
SUGGEST = "smol-r1"
"""The real-weight organism that meets it."""


def measure(model: Any, *, seed: int) -> dict[str, Any]:
    """``{"model", "n", "right", "rechecked", "opens_think"}`` of ``model``'s greedy traces on the check's problems."""
    problems = [p for s in STEPS for p in problems_by_steps(N_PER_STEPS, s, s, seed=HELD_OUT["eval"] + seed,
                                                              config=TaskConfig(max_steps=max(STEPS)))]
    prompts = chat_prompts(model, problems)
    traces = model.generate(prompts, max_new_tokens=OverthinkMix().token_budget(max(STEPS)), batch_size=len(prompts))
    right = [is_correct(t.text, p.answer) for t, p in zip(traces, problems)]
    think = opens_think(prompts[0])
    rechecked = 0
    if think:
        for t, p, ok in zip(traces, problems, right):
            truth = trace_truth(t.tokens, p)
            rechecked += bool(ok and any(c.after_answer for c in truth.cues))
    return {"model": model.name, "n": len(problems), "right": sum(right), "rechecked": rechecked, "opens_think": think}


def refusal(tally: dict[str, Any], *, method: str, rechecks: bool) -> str | None:
    """The one line that refuses ``method`` on the measured model (None: it meets the precondition)."""
    need = int(round(MIN_SHARE * tally["n"]))
    if tally["right"] >= need and (not rechecks or tally["rechecked"] >= need):
        return None
    what = "reasons and re-checks after its answer" if rechecks else "reasons (writes its answer in a thinking span)"
    said = f"{tally['model']} answers {tally['right']} of {tally['n']} held-out problems in the R1 format"
    if not tally["opens_think"]:
        said += " (its chat prompt opens no <think> span)"
    elif rechecks:
        said += f", re-checks after its answer in {tally['rechecked']}"
    return f"{said}: {method} needs a model that {what} (at least {need} of {tally['n']}); try {SUGGEST}"


def reasoning_precondition(method: str, *, rechecks: bool = False) -> Callable[[Any], str | None]:
    """A setting's precondition (:attr:`thinklens.calibration.controls.Setting.precondition`): measures the context's
    model once per validate run (kept with its loaded models) and returns :func:`refusal`'s line or None."""

    def check(ctx: Any) -> str | None:
        key = f"reasons:{ctx.model}:{ctx.seed}"
        if key not in ctx._models:
            ctx._models[key] = measure(ctx.hooked(), seed=ctx.seed)
        return refusal(ctx._models[key], method=method, rechecks=rechecks)

    return check
