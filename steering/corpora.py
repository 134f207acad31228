"""Local text corpora for SAE training and steering: zoo problems, a text file or any problem set, never the hub.

A corpus is a list of full texts (prompt and target). :func:`token_rows` turns it into the
pretokenized, fixed-width ``datasets.Dataset`` that sae-lens's ``ActivationsStore`` reads as an
override dataset: one example per row, right-padded. Right padding is harmless for a causal model
(a real token never attends to a later pad) and the pad, bos and eos positions are excluded from
training and from the metrics (``exclude_special_tokens``), so no activation of a padded slot counts.
Rows are not concatenated: the zoo models were trained on one example per sequence, and a second
problem mid-row would give off-distribution activations.

Example:
    >>> texts = zoo_texts("think", 3, seed=0)
    >>> texts[0].split("<think>")[1].strip().startswith(("hmm", "<<"))
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from thinklens.data.problemsets import ProblemSet, load_problems
from thinklens.engine.tokenization import prompt_ids
from thinklens.errors import ThinklensError, did_you_mean, opt
from thinklens.steering.problems import data_format, max_steps_of, problem_texts, prompt_set
from thinklens.steering.text_files import is_text_file, read_texts
from thinklens.tasks import TaskConfig, check_style, generate_problems, render_example, render_prompt


def zoo_problems(n: int, *, seed: int, min_steps: int = 1, max_steps: int = 8):
    """``n`` zoo task problems from the default :class:`thinklens.tasks.TaskConfig` (seeded).

    Example:
        >>> [p.n_steps >= 1 for p in zoo_problems(2, seed=0)]
        [True, True]
    """
    return generate_problems(n, seed=seed, config=TaskConfig(min_steps=min_steps, max_steps=max_steps))


def zoo_prompts(n: int, *, seed: int, style: str, min_steps: int, max_steps: int) -> tuple[list[str], list[int]]:
    """``n`` rendered zoo prompts of ``style`` and their answers (seeded; pick a held-out seed base).

    Example:
        >>> p, a = zoo_prompts(2, seed=1, style="think", min_steps=2, max_steps=3)
        >>> p[0].endswith("<think>"), len(a)
        (True, 2)
    """
    ps = zoo_problems(n, seed=seed, min_steps=min_steps, max_steps=max_steps)
    return [render_prompt(p, style) for p in ps], [p.answer for p in ps]


def zoo_texts(style: str, n: int, *, seed: int, min_steps: int = 1, max_steps: int = 8) -> list[str]:
    """``prompt + " " + target`` of ``n`` rendered problems (the zoo's training format).

    Example:
        >>> zoo_texts("cot", 1, seed=0)[0].endswith(str(zoo_problems(1, seed=0)[0].answer))
        True
    """
    out = []
    for p in zoo_problems(n, seed=seed, min_steps=min_steps, max_steps=max_steps):
        prompt, target = render_example(p, style)
        out.append(f"{prompt} {target}")
    return out


def check_corpus(spec: str, data_fields: str = "") -> None:
    """Refuse a corpus spec that :func:`corpus` could not read, without a model (a job's preflight): ``zoo:<style>``
    with a known style, a text file with texts, or a problem source that loads (its fields mapped).

    Example:
        >>> check_corpus("zoo:think")
        >>> check_corpus("missing.jsonl")
        Traceback (most recent call last):
        ...
        thinklens.errors.ThinklensError: bad data source: received 'missing.jsonl'; ...
    """
    if spec.startswith("zoo:"):
        check_style(spec[4:])
    elif is_text_file(spec):
        read_texts(spec)
    else:
        load_problems(spec, mapping=data_fields or None)


CORPORA = ("auto", "generated", "reference")
"""What an SAE trains on: the model's own completions, the data set's reference texts, or auto (see :func:`corpus_kind`)."""


def corpus_kind(kind: str, spec: str, fmt=None) -> str:
    """``kind`` with ``auto`` resolved: ``generated`` (the model's own completions of the problems' prompts: the states
    steering reads) for a problem set in a real model's format; ``reference`` for the zoo's styles (their rendered
    texts are the zoo models' training distribution) and for text files (no prompt to complete).

    Example:
        >>> corpus_kind("auto", "gsm8k_train.jsonl"), corpus_kind("auto", "zoo:think"), corpus_kind("reference", "x")
        ('generated', 'reference', 'reference')
    """
    if kind not in CORPORA:
        raise ThinklensError.of("corpus", kind, f"one of {', '.join(CORPORA)}", did_you_mean(kind, CORPORA))
    if kind != "auto":
        return kind
    if is_text_file(spec) or (fmt is not None and fmt.is_zoo) or (fmt is None and spec.startswith("zoo:")):
        return "reference"
    return "generated"


def generated_rows(model, prompts: Sequence[str], *, max_new_tokens: int, seed: int, sample: bool = True,
                   batch_size: int = 64) -> list[list[int]]:
    """The model's own completions of ``prompts`` as token-id rows (prompt ids + generated ids, exactly as generated;
    sampled at temperature 1 from ``seed``, or greedy): an SAE corpus of the states the model writes."""
    trs = model.generate(list(prompts), max_new_tokens=max_new_tokens, batch_size=batch_size, do_sample=sample,
                         seed=seed, temperature=1.0)
    return [list(t.prompt_ids) + list(t.token_ids) for t in trs]


def corpus(spec: str, n: int, *, seed: int, model=None, prompt_format: str = "auto", data_fields: str = "",
           offset: int = 0, kind: str = "reference", max_new_tokens: int | None = None,
           sample: bool = True) -> "list[str] | list[list[int]]":
    """Texts from a spec: ``zoo:<style>`` (direct, cot, think: rendered zoo problems), a .txt/.jsonl file of
    texts, or any problem source of :mod:`thinklens.data.problemsets` (GSM8K, MATH-500, your JSONL,
    ``synthetic:MIN-MAX``), whose problems ``offset .. offset + n`` become their prompt in the ``model``'s
    ``prompt_format`` followed by their worked solution (:func:`thinklens.steering.problems.problem_texts`).
    ``zoo:<style>`` is the zoo stream (``seed``) in a zoo style (that style for a zoo-style model or without
    a model; ``prompt_format`` when it names one), else in the model's own format
    (:func:`thinklens.steering.problems.data_format`).

    ``kind`` (:data:`CORPORA`, ``auto`` resolved by :func:`corpus_kind`): ``generated`` replaces each solution by the
    model's own completion of the prompt (token-id rows from :func:`generated_rows`, ``max_new_tokens`` as
    :func:`thinklens.steering.problems.prompt_set` gives it, sampled from ``seed`` unless ``sample`` is False).

    Example:
        >>> len(corpus("zoo:think", 4, seed=0))
        4
    """
    fmt = data_format(model, prompt_format, spec) if model is not None else None
    kind = corpus_kind(kind, spec, fmt)
    if kind == "generated" and (model is None or is_text_file(spec)):
        raise ThinklensError.of("generated corpus", spec, "a problem set and a model to complete its prompts",
                                f"pass {opt('corpus', 'reference')} for a text file")
    if kind == "reference" and spec.startswith("zoo:") and (fmt is None or fmt.is_zoo):
        return zoo_texts(fmt.name if fmt is not None else check_style(spec[4:]), n, seed=seed)
    if is_text_file(spec):
        return read_texts(spec)[:n]
    if fmt is None:
        raise ThinklensError.of("texts of a problem set", spec, "a model to render its prompts with",
                                "pass model= (the jobs pass theirs)")
    if spec.startswith("zoo:"):
        problems = list(ProblemSet.synthetic(n, seed=seed, min_steps=1, max_steps=8))
    else:
        problems = list(load_problems(spec, mapping=data_fields or None))[offset: offset + n]
    if not problems:
        raise ThinklensError.of("texts", f"none left in {spec} after {offset} problems", "at least one problem",
                                "pass fewer texts or more data")
    if kind == "generated":
        ps = prompt_set(model, fmt, problems, max_new_tokens=max_new_tokens, max_steps=max_steps_of(problems, 8))
        return generated_rows(model, ps.prompts, max_new_tokens=ps.max_new_tokens, seed=seed, sample=sample)
    return problem_texts(fmt, problems, model.tokenizer)


def special_ids(tokenizer) -> list[int]:
    """Ids of pad, bos and eos (the positions left out of SAE training and metrics)."""
    ids = {tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id}
    return sorted(i for i in ids if i is not None)



def sink_slice(rows: Sequence[Sequence[int]], exclude: Sequence[int]) -> tuple[int | None, ...]:
    """sae-lens's ``seqpos_slice`` for token rows: ``(1, None)`` (each row's first position dropped) when some row starts
    with a regular token, else ``(None,)``. A tokenizer that prepends no BOS (SmolLM2's) puts a word at position 0, the
    attention sink, whose residual norm is orders of magnitude above the others' (at SmolLM2's ``resid_post.15``
    about 22,000 against about 180): kept, those rows dominate the SAE's loss and its decoder bias becomes that one
    state. With a BOS the first position is a special token, already excluded, and nothing changes.

    Example:
        >>> sink_slice([[1, 7, 8], [1, 9, 0]], exclude=[0, 1]), sink_slice([[7, 8, 1], [9, 1, 0]], exclude=[0, 1])
        ((None,), (1, None))
    """
    first = {int(r[0]) for r in rows}
    return (None,) if first <= {int(x) for x in exclude} else (1, None)

def encode(tokenizer, texts: "Sequence[str] | Sequence[Sequence[int]]", *, add_eos: bool = True) -> list[list[int]]:
    """Token ids per text as generation reads them (:func:`thinklens.engine.tokenization.prompt_ids`: one BOS even when a
    chat template wrote one), eos appended when it has one. A row of ids (a generated sequence) is kept as it is."""
    enc = iter(prompt_ids(tokenizer, [t for t in texts if isinstance(t, str)]))
    eos = [tokenizer.eos_token_id] if add_eos and tokenizer.eos_token_id is not None else []
    return [next(enc) + eos if isinstance(t, str) else list(t) for t in texts]


def token_rows(tokenizer, texts: Sequence[str], context_size: int | None = None):
    """A ``datasets.Dataset`` with an ``input_ids`` column: one text per row, right-padded.

    Args:
        context_size: row width; None = the longest text (longer texts are cut to it).

    Example:
        >>> from tools.testing import word_tokenizer
        >>> ds = token_rows(word_tokenizer(), ["w1 w2", "w3"])
        >>> [list(r) for r in ds["input_ids"]]
        [[4, 5, 1], [6, 1, 0]]
    """
    from datasets import Dataset  # lazy: CLI start-up (datasets)

    if not texts:
        raise ThinklensError.of("corpus", 0, "at least one text", f"pass more texts or a larger {opt('n_texts')}")
    ids = encode(tokenizer, texts)
    width = context_size or max(len(r) for r in ids)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    rows = [(r[:width] + [pad] * (width - len(r))) for r in ids]
    return Dataset.from_dict({"input_ids": rows})
