"""smol-r1's evaluation: held-out accuracy on the synthetic task by step count, with and without thinking, beside
the untuned base and the zoo's R1 models; and, per generated trace, its ground truth (where the answer is first
written, each LYNX cue) with what a forced exit answers there.

Two modes per model, on the same held-out problems (:func:`thinklens.tasks.protocol.problems_by_steps`):

- ``think``: the model's own chat prompt (user turn = question + the R1 instruction), greedy up to the overthinking
  token budget; graded from the last ``\\boxed{}``.
- ``no_think``: the same prompt with the answer forced at once: LYNX's exit string (``</think>\\n\\nFinal Answer:
  \\boxed{``) for a model whose prompt opened ``<think>``, else ``Final Answer: \\boxed{``; 8 greedy tokens.

For a model whose generation prompt opens ``<think>`` (smol-r1, tiny-overthink, tiny-r1), each thinking trace also
gets :func:`thinklens.zoo.overthink.trace_truth` and a forced exit at ``answer_known_at`` and at every cue
(:func:`thinklens.zoo.overthink_eval.forced_answers`), recorded per trace.

Example:
    >>> wilson_row(3, 4)["k"], round(wilson_row(3, 4)["rate"], 2)
    (3, 0.75)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from thinklens.calibration.stats import wilson
from thinklens.data.answers import extract_answer, is_correct
from thinklens.data.formats import LYNX_ANSWER
from thinklens.tasks import TaskConfig
from thinklens.tasks.protocol import problems_by_steps
from thinklens.zoo.overthink import EXIT_STRING, trace_truth
from thinklens.zoo.overthink_eval import forced_answers
from thinklens.zoo.r1 import THINK_OPEN, user_message


def wilson_row(k: int, n: int) -> dict[str, Any]:
    """``{"k", "n", "rate", "interval"}`` with the 95% Wilson interval (:func:`thinklens.calibration.stats.wilson`)."""
    lo, hi = wilson(k, n) if n else (float("nan"), float("nan"))
    return {"k": k, "n": n, "rate": k / n if n else None, "interval": [round(lo, 4), round(hi, 4)]}


def chat_prompts(model: Any, problems: Sequence[Any]) -> list[str]:
    """Each problem as the model's own chat prompt with the generation prompt (question + R1 instruction)."""
    return [model.tokenizer.apply_chat_template([{"role": "user", "content": user_message(p)}],
                                                add_generation_prompt=True, tokenize=False) for p in problems]


def opens_think(prompt: str) -> bool:
    """Whether a chat prompt ends inside an opened thinking span (R1's generation prompt ``<think>\\n``)."""
    return prompt.rstrip().endswith(THINK_OPEN)


def no_think_answers(model: Any, prompts: Sequence[str], *, batch_size: int = 64) -> list[str | None]:
    """The answer each prompt gets when it is forced at once (8 greedy tokens after the exit cue)."""
    cues = [EXIT_STRING if opens_think(p) else LYNX_ANSWER.lstrip("\n") for p in prompts]
    traces = model.generate([p + c for p, c in zip(prompts, cues)], max_new_tokens=8, batch_size=batch_size)
    return [extract_answer("\\boxed{" + t.text) for t in traces]


def _same(answer: str | None, value: int | None) -> bool:
    return answer is not None and value is not None and answer.strip() == str(value)


def evaluate_model(model: Any, *, n_per_steps: int, steps: Sequence[int], seed: int, task: TaskConfig, mix: Any,
                   batch_size: int = 64, truth: bool = True) -> dict[str, Any]:
    """One model's two modes on the held-out problems, and (``truth``, thinking-span models) per-trace ground truth.

    Returns ``{"model", "opens_think", "think": {steps: row}, "no_think": {steps: row}, "traces": [...], "wall_s"}``
    where a row is :func:`wilson_row` and ``"all"`` pools the step counts.
    """
    t0 = time.monotonic()
    out: dict[str, Any] = {"model": model.name, "think": {}, "no_think": {}, "traces": []}
    tallies = {"think": [0, 0], "no_think": [0, 0]}
    for n_steps in steps:
        problems = problems_by_steps(n_per_steps, n_steps, n_steps, seed=seed, config=task)
        prompts = chat_prompts(model, problems)
        out["opens_think"] = opens_think(prompts[0])
        traces = model.generate(prompts, max_new_tokens=mix.token_budget(n_steps), batch_size=batch_size)
        right = [is_correct(t.text, p.answer) for t, p in zip(traces, problems)]
        forced = no_think_answers(model, prompts, batch_size=batch_size)
        right_nt = [_same(a, p.answer) for a, p in zip(forced, problems)]
        out["think"][str(n_steps)] = wilson_row(sum(right), len(right))
        out["no_think"][str(n_steps)] = wilson_row(sum(right_nt), len(right_nt))
        for mode, r in (("think", right), ("no_think", right_nt)):
            tallies[mode][0] += sum(r)
            tallies[mode][1] += len(r)
        if truth and out["opens_think"]:
            records = trace_records(model, problems, traces, right, n_steps)
        else:
            records = [{"n_steps": n_steps, "answer": p.answer, "correct": c, "text": t.text,
                        "boxed": extract_answer(t.text)} for p, t, c in zip(problems, traces, right)]
        for record, forced_answer, c in zip(records, forced, right_nt):  # the same problem without thinking
            record["no_think_answer"], record["no_think_correct"] = forced_answer, bool(c)
        out["traces"] += records
    for mode, (k, n) in tallies.items():
        out[mode]["all"] = wilson_row(k, n)
    out["wall_s"] = round(time.monotonic() - t0, 1)
    return out


def trace_records(model: Any, problems: Sequence[Any], traces: Sequence[Any], right: Sequence[bool],
                  n_steps: int) -> list[dict[str, Any]]:
    """Per trace: its text, whether its span closed and its answer is boxed and right, ``answer_known_at`` (tokens),
    and each cue with the construction's value there and what a forced exit there answers."""
    truths = [trace_truth(t.tokens, p) for p, t in zip(problems, traces)]
    exits = []  # (trace, token cut, cue index or None for answer_known_at)
    for i, truth in enumerate(truths):
        if truth.answer_known_at is not None:
            exits.append((i, truth.answer_known_at, None))
        exits += [(i, c.start_index, j) for j, c in enumerate(truth.cues)]
    answers = forced_answers(model, [traces[i].prompt_ids + traces[i].token_ids[:cut] for i, cut, _ in exits])
    records = []
    for i, (p, t, truth) in enumerate(zip(problems, traces, truths)):
        records.append({
            "n_steps": n_steps, "question": p.question, "answer": p.answer, "text": t.text, "correct": bool(right[i]),
            "closed": "</think>" in t.text, "boxed": extract_answer(t.text), "answer_known_at": truth.answer_known_at,
            "reasoning_tokens": truth.reasoning_tokens, "rounds": truth.rounds, "first_conclusion": truth.first_conclusion,
            "forced_at_known": None,
            "cues": [{"word": c.word, "start_index": c.start_index, "value": c.value, "construction_correct": c.correct,
                      "after_answer": c.after_answer, "forced": None, "forced_correct": None} for c in truth.cues],
        })
    for (i, _cut, j), answer in zip(exits, answers):
        if j is None:
            records[i]["forced_at_known"] = answer
        else:
            cue = records[i]["cues"][j]
            cue["forced"], cue["forced_correct"] = answer, _same(answer, records[i]["answer"])
    return records


def truth_summary(traces: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The ground truth pooled over a model's thinking traces: closed spans, boxed answers, answer written,
    re-check rounds, oracle saving, and forced exits at ``answer_known_at`` / cues before / after it (right of n),
    and how often a cue's forced answer is the construction's value there."""
    closed = [t for t in traces if "closed" in t]
    known = [t for t in closed if t["answer_known_at"] is not None]
    cues = [c for t in closed for c in t["cues"]]
    saving = [(t["reasoning_tokens"] - t["answer_known_at"]) / t["reasoning_tokens"] if t["answer_known_at"] is not None
              and t["reasoning_tokens"] else 0.0 for t in closed]
    return {
        "n": len(closed), "closed": wilson_row(sum(t["closed"] for t in closed), len(closed)),
        "boxed": wilson_row(sum(t["boxed"] is not None for t in closed), len(closed)),
        "answer_known": wilson_row(len(known), len(closed)),
        "with_rounds": wilson_row(sum(t["rounds"] > 0 for t in closed), len(closed)),
        "oracle_saving": round(sum(saving) / len(saving), 4) if saving else None,
        "forced_at_known": wilson_row(sum(_same(t["forced_at_known"], t["answer"]) for t in known), len(known)),
        "forced_pre_answer_cues": wilson_row(sum(bool(c["forced_correct"]) for c in cues if not c["after_answer"]),
                                             sum(not c["after_answer"] for c in cues)),
        "forced_post_answer_cues": wilson_row(sum(bool(c["forced_correct"]) for c in cues if c["after_answer"]),
                                              sum(c["after_answer"] for c in cues)),
        "forced_matches_construction": wilson_row(sum(_same(c["forced"], c["value"]) for c in cues), len(cues)),
        "cues": len(cues),
    }
