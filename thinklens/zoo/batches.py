"""Training batches for the zoo: problems rendered in a mixture of prompt formats, encoded word by word.

A rendered word is exactly one zoo token (see :mod:`thinklens.zoo.tokenizer`), so encoding is a dict
lookup, much faster than calling the HF tokenizer per example (a test checks both agree).

Example:
    >>> import numpy as np
    >>> from thinklens.tasks import TaskConfig
    >>> b = make_batch(np.random.default_rng(0), TaskConfig(), (("cot", 1.0),), batch_tokens=512)
    >>> b["input_ids"].shape[0] == b["labels"].shape[0]
    True
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np
import torch

from thinklens.errors import ThinklensError
from thinklens.tasks import Problem, TaskConfig, generate_problem, render_example
from thinklens.zoo.tokenizer import BOS, EOS, PAD, UNK, zoo_vocab

IGNORE = -100


@lru_cache(maxsize=1)
def _vocab() -> dict[str, int]:
    return zoo_vocab()


def encode_words(text: str) -> list[int]:
    """Token ids of a canonical (spaced) text, without ``<bos>``/``<eos>``.

    Example:
        >>> len(encode_words("<< 7 + 5 = 12 >>"))
        7
    """
    vocab = _vocab()
    return [vocab.get(w, vocab[UNK]) for w in text.split()]


def encode_example(problem: Problem, prompt_format: str) -> tuple[list[int], int]:
    """``(ids, n_prompt)``: ``<bos> prompt target <eos>`` in a zoo prompt format, and how many leading ids are prompt."""
    prompt, target = render_example(problem, prompt_format)
    vocab = _vocab()
    head = [vocab[BOS], *encode_words(prompt)]
    return [*head, *encode_words(target), vocab[EOS]], len(head)


def collate(examples: list[tuple[list[int], int]], pad: int | None = None) -> dict[str, torch.Tensor]:
    """Right-pad a list of ``(ids, n_prompt)`` with ``pad`` (default: the zoo's ``<pad>``); labels ignore the
    prompt and the padding."""
    pad = _vocab()[PAD] if pad is None else pad
    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.full((len(examples), width), pad, dtype=torch.long)  # [batch, pos]
    labels = torch.full((len(examples), width), IGNORE, dtype=torch.long)  # [batch, pos]
    mask = torch.zeros((len(examples), width), dtype=torch.long)  # [batch, pos]
    for row, (ids, n_prompt) in enumerate(examples):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        labels[row, n_prompt : len(ids)] = torch.tensor(ids[n_prompt:])
        mask[row, : len(ids)] = 1
    return {"input_ids": input_ids, "attention_mask": mask, "labels": labels}


def pack_batch(rng: np.random.Generator, task: TaskConfig, draw: Callable[[int], tuple[list[int], int]], *,
               batch_tokens: int, pad: int | None = None) -> dict[str, torch.Tensor]:
    """One batch of about ``batch_tokens`` (padded) tokens: examples ``draw(n_steps) -> (ids, n_prompt)`` until
    the next one would not fit, then :func:`collate` (the zoo's batches and tiny-r1's).

    All problems of a batch share one number of steps, drawn uniformly from the task's range, so rows
    have similar lengths and little compute goes to padding; short problems give larger batches.
    """
    n_steps = int(rng.integers(task.min_steps, task.max_steps + 1))
    examples: list[tuple[list[int], int]] = []
    width = 0
    while True:
        ex = draw(n_steps)
        new_width = max(width, len(ex[0]))
        if examples and new_width * (len(examples) + 1) > batch_tokens:
            break
        examples.append(ex)
        width = new_width
    return collate(examples, pad)


def make_batch(
    rng: np.random.Generator,
    task: TaskConfig,
    format_mix: tuple[tuple[str, float], ...],
    *,
    batch_tokens: int,
) -> dict[str, torch.Tensor]:
    """One batch of about ``batch_tokens`` (padded) tokens, each problem rendered in a prompt format drawn from
    ``format_mix``, ``(prompt_format, weight)`` pairs (see :func:`pack_batch`)."""
    names = [s for s, _ in format_mix]
    weights = np.asarray([w for _, w in format_mix], dtype=float)
    if not len(names) or (weights < 0).any() or weights.sum() <= 0:
        raise ThinklensError.of("format_mix", format_mix, "(prompt format, weight) pairs with positive total",
                                "fix the recipe")
    weights = weights / weights.sum()

    def draw(n_steps: int) -> tuple[list[int], int]:
        prompt_format = names[int(rng.choice(len(names), p=weights))]
        return encode_example(generate_problem(rng, task, n_steps=n_steps), prompt_format)

    return pack_batch(rng, task, draw, batch_tokens=batch_tokens)
