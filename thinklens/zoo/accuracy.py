"""Evaluate zoo models: accuracy by number of steps (batched greedy decoding, left padding, the shared
answer parser), plus reflection statistics for think traces.

Example:
    >>> r = evaluate_zoo_model("tiny-cot", n_per_steps=20, steps=range(2, 4), seed=1)  # doctest: +SKIP
    >>> r.accuracy[2] > 0.9  # doctest: +SKIP
    True
"""

from __future__ import annotations

import time
from pathlib import Path

from thinklens.data.answers import is_correct, parse_equations
from thinklens.data.formats import zoo_prompt_format
from thinklens.engine.model import HookedModel
from thinklens.errors import ThinklensError
from thinklens.generation.decode_loop import generate_texts  # the zoo evaluator's decoding, in the core (steering scores with it too)
from thinklens.tasks import REFLECTION_WORDS, TaskConfig, check_style, generate_problems, render_prompt, words
from thinklens.tasks.protocol import model_style, token_budget
from thinklens.zoo.eval_result import ZooEvalResult
from thinklens.zoo.modeling import load_zoo_model
from thinklens.zoo.r1_train import evaluate_r1_model


def _resolve(path_or_name):
    return HookedModel(*load_zoo_model(path_or_name), name=str(path_or_name))


def correction_stats(text: str) -> tuple[int, int]:
    """``(corrections, right)``: ``wait`` immediately followed by an equation, and how many are right.

    Example:
        >>> correction_stats("<< 1 + 1 = 3 >> wait << 1 + 1 = 2 >> << 2 + 2 = 5 >> wait << 2 + 2 = 3 >>")
        (2, 1)
    """
    parts = text.split(" wait ")
    n = right = 0
    for after in parts[1:]:
        eqs = parse_equations(after)
        if eqs and after.lstrip().startswith("<<"):
            n += 1
            right += eqs[0].correct
    return n, right


def evaluate_zoo_model(
    path_or_name: str | Path,
    *,
    n_per_steps: int = 50,
    steps: range | list[int] = range(1, 9),
    seed: int = 10_000,
    prompt_format: str | None = None,
    task: TaskConfig | None = None,
    batch_size: int = 64,
    n_samples: int = 2,
    sampled: bool = True,
) -> ZooEvalResult:
    """Accuracy of a zoo model by number of steps on held-out problems.

    Args:
        path_or_name: zoo name or model folder.
        n_per_steps: problems per step count.
        steps: step counts to evaluate.
        seed: problem seed (training uses ``[seed, step]`` streams; pick one not used for training).
        prompt_format: a zoo prompt format, direct, cot or think (default: the model's own, from its zoo.json or
            its name: :func:`thinklens.data.formats.zoo_prompt_format`, else cot).
        task: task config (default :class:`TaskConfig` defaults, as in training).
        batch_size: generation batch size.
        n_samples: generations kept per step count in the result.
        sampled: for the think format, also sample every problem once at temperature 1 (seeded) and report
            the hmm/wait rate and the corrections there (the ``sampled_*`` fields).
    """
    own = zoo_prompt_format(str(path_or_name))
    if own == "chat":  # tiny-r1: prompted through its chat template
        return evaluate_r1_model(path_or_name, n_per_steps=n_per_steps, steps=steps, seed=seed, task=task,
                                 batch_size=batch_size, n_samples=n_samples)
    prompt_format = check_style(prompt_format) if prompt_format is not None else own or model_style(path_or_name)
    model = _resolve(path_or_name)
    return evaluate_model(model, label=str(path_or_name), n_per_steps=n_per_steps, steps=steps, seed=seed,
                          prompt_format=prompt_format, task=task, batch_size=batch_size, n_samples=n_samples,
                          sampled=sampled)


def evaluate_model(
    model: HookedModel,
    *,
    label: str,
    prompt_format: str,
    n_per_steps: int = 50,
    steps: range | list[int] = range(1, 9),
    seed: int = 10_000,
    task: TaskConfig | None = None,
    batch_size: int = 64,
    n_samples: int = 2,
    sampled: bool = False,
) -> ZooEvalResult:
    """:func:`evaluate_zoo_model` for a model already in memory (checkpoints, trainers; an HF module and its
    tokenizer: ``HookedModel(hf, tok)``, which never changes the tokenizer)."""
    if n_per_steps < 1:
        raise ThinklensError.of("n_per_steps", n_per_steps, "an int >= 1", "pass n_per_steps=50")
    check_style(prompt_format)
    task = task or TaskConfig()
    t0 = time.monotonic()
    acc: dict[int, float] = {}
    eq_acc: dict[int, float] = {}
    samples: dict[int, list[str]] = {}
    n_traces = n_reflect = n_corr = n_corr_right = 0
    think = prompt_format == "think"
    sampled = sampled and think
    s_traces = s_reflect = s_corr = s_corr_right = s_right = 0
    graded: list[dict] = []
    for n_steps in steps:
        # One stream per step count: adding a step count never changes the others' problems.
        problems = generate_problems(n_per_steps, seed=(seed * 1000 + n_steps), config=task, n_steps=n_steps)
        prompts = [render_prompt(p, prompt_format) for p in problems]
        texts = generate_texts(model, prompts, max_new_tokens=token_budget(prompt_format, n_steps),
                               batch_size=batch_size)
        right = [bool(is_correct(t, p.answer)) for t, p in zip(texts, problems)]
        acc[n_steps] = sum(right) / len(problems)
        graded += [{"steps": n_steps, "prompt": q, "text": t, "gold": str(p.answer), "correct": r}
                   for q, t, p, r in zip(prompts, texts, problems, right)]
        eqs = [e for t in texts for e in parse_equations(t)]
        eq_acc[n_steps] = sum(e.correct for e in eqs) / len(eqs) if eqs else float("nan")
        samples[n_steps] = texts[:n_samples]
        if think:
            for t in texts:
                n_traces += 1
                n_reflect += any(w in REFLECTION_WORDS for w in words(t))
                c, r = correction_stats(t)
                n_corr, n_corr_right = n_corr + c, n_corr_right + r
        if sampled:
            drawn = generate_texts(model, prompts, max_new_tokens=token_budget(prompt_format, n_steps),
                                   batch_size=batch_size, sample_seed=seed * 1000 + n_steps)
            for t, p in zip(drawn, problems):
                s_traces += 1
                s_right += is_correct(t, p.answer)
                s_reflect += any(w in ("hmm", "wait") for w in words(t))
                c, r = correction_stats(t)
                s_corr, s_corr_right = s_corr + c, s_corr_right + r
    return ZooEvalResult(
        model=label, prompt_format=prompt_format, seed=seed, n_per_steps=n_per_steps, accuracy=acc,
        equation_accuracy=eq_acc,
        reflection_rate=(n_reflect / n_traces if n_traces else None) if think else None,
        correction_right_rate=(n_corr_right / n_corr if n_corr else None) if think else None,
        n_corrections=n_corr if think else None,
        sampled_reflection_rate=s_reflect / s_traces if s_traces else None,
        sampled_correction_right_rate=s_corr_right / s_corr if s_corr else None,
        sampled_corrections=s_corr if sampled else None,
        sampled_accuracy=s_right / s_traces if s_traces else None,
        wall_s=round(time.monotonic() - t0, 1), samples=samples, problems=graded,
    )
