"""Problem sets: GSM8K, MATH-500, AIME, your own JSONL/JSON/Parquet/CSV, HF ``datasets`` folders, or
the synthetic task, as one typed list of problems with gold answers, and seeded disjoint splits.

A source is a string (the CLI's ``--data``):
- a file: ``.jsonl``, ``.json`` (a list of objects, or columns), ``.parquet``, ``.csv``;
- a folder: one saved with ``datasets``' ``save_to_disk``, or a folder of such files (a hub snapshot);
- a hub id already in the local Hugging Face cache (``openai/gsm8k:main`` for a config; never downloaded);
- ``synthetic:MIN-MAX`` (or ``synthetic:MIN-MAX:N``, N problems per step count, default 100): the
  project's task, drawn from the held-out evaluation seeds, each problem keeping its ground truth.
A ``@split`` suffix (``openai/gsm8k:main@test``) picks a split; without it a source with one split
uses it, else ``test``.

Fields are found by name, case-insensitively: the question in ``question``/``problem``/``prompt``, the
gold answer in ``answer``/``final_answer`` (GSM8K's ``... #### 72`` gives ``72`` and keeps the text as
the solution; without an answer field, the last box of the ``solution`` is the answer, as in MATH),
the solution in ``solution``/``cot``/``rationale``, the id in ``unique_id``/``id``. Other columns
become metadata (MATH-500's ``level``, ``subject``). A mapping overrides: ``question=prompt,answer=target``.

Example:
    >>> ps = load_problems("synthetic:2-3:2")
    >>> len(ps), ps[0].answer == str(ps[0].ground_truth.answer), ps[0].metadata["n_steps"]
    (4, True, 2)
    >>> parts = ps.split({"train": 0.5, "test": 0.5}, seed=0)
    >>> [len(p) for p in parts.values()]
    [2, 2]
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from thinklens.data.answers import extract_answer, is_correct, parse_answer
from thinklens.data.formats import check_format
from thinklens.data.sources import read_rows
from thinklens.errors import ThinklensError, did_you_mean, opt, opt_name
from thinklens.runs.configcli import ConfigGroup

#: Our fields and the source columns that fill them when no mapping says otherwise (first match wins).
FIELD_NAMES: dict[str, tuple[str, ...]] = {
    "question": ("question", "problem", "prompt"),
    "answer": ("answer", "final_answer"),
    "solution": ("solution", "cot", "rationale"),
    "id": ("unique_id", "id"),
}
#: Problems per step count of ``synthetic:MIN-MAX`` when the source does not say.
SYNTHETIC_PER_STEPS = 100
_SYNTHETIC_RE = re.compile(r"synthetic:(\d+)(?:-(\d+))?(?::(\d+))?")


@dataclass(frozen=True)
class RealProblem:
    """One problem of a problem set: its question, the gold answer as written, and what else the source had."""

    id: str
    """Stable id: the source's ``unique_id``/``id`` column, else ``<source name>-<row>``."""
    question: str
    """The problem text, without any prompt format (chat templates are applied later)."""
    answer: str
    """The gold answer as written (``72``, ``\\frac{14}{3}``, ``\\text{Evelyn}``)."""
    solution: str = ""
    """A worked solution or chain of thought when the source has one (GSM8K's answer text, MATH's solution)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """The source's other columns (MATH-500: ``level``, ``subject``; synthetic: ``n_steps``)."""
    ground_truth: Any = None
    """The synthetic task's :class:`thinklens.tasks.Problem` (values at every step), else None."""

    @property
    def integer_answer(self) -> int | None:
        """The gold answer as an integer (``1,450,000`` -> 1450000), or None when it is not one."""
        return parse_answer("#### " + self.answer) if re.fullmatch(r"\s*-?[\d,]+(?:\.0+)?\s*", self.answer) else None

    def is_correct(self, text: str, *, timeout: float = 5.0) -> bool:
        """Whether a model's output states this problem's gold answer (:func:`thinklens.data.answers.is_correct`)."""
        return is_correct(text, self.answer, timeout=timeout)


def normalized_question(question: str) -> str:
    """The form two questions are compared in: case-folded, whitespace collapsed.

    Example:
        >>> normalized_question("  How many\\n apples? ") == normalized_question("how many apples?")
        True
    """
    return " ".join(question.casefold().split())


@dataclass(frozen=True)
class ProblemSet:
    """A loaded problem set: an ordered tuple of :class:`RealProblem`."""

    source: str
    """Where it came from (the source string it was loaded from, or a split's name after it)."""
    problems: tuple[RealProblem, ...]
    """The problems, in the source's order."""

    def __len__(self) -> int:
        return len(self.problems)

    def __iter__(self) -> Iterator[RealProblem]:
        return iter(self.problems)

    def __getitem__(self, index: int) -> RealProblem:
        return self.problems[index]

    @property
    def questions(self) -> list[str]:
        """The question texts."""
        return [p.question for p in self.problems]

    @property
    def answers(self) -> list[str]:
        """The gold answers."""
        return [p.answer for p in self.problems]

    @property
    def is_synthetic(self) -> bool:
        """Whether every problem carries the synthetic task's ground truth."""
        return bool(self.problems) and all(p.ground_truth is not None for p in self.problems)

    @classmethod
    def synthetic(cls, n: int, *, seed: int | Sequence[int], min_steps: int, max_steps: int, per_steps: bool = False,
                  source: str | None = None, id_prefix: str | None = None) -> ProblemSet:
        """``n`` problems of the synthetic task (the zoo's multi-step arithmetic), each keeping its ground truth.

        One seeded stream of mixed step counts in ``min_steps..max_steps`` (``seed``: an int, or a sequence of
        ints that numpy's ``default_rng`` takes, so a job can keep independent streams per purpose), or with
        ``per_steps`` ``n`` problems of every step count, ``s`` steps from the stream ``seed * 1000 + s``
        (:func:`thinklens.tasks.protocol.problems_by_steps`). Problem ``i`` is ``<id_prefix>-<i>`` (per step
        count: ``<id_prefix>-<s>-<i>``); ``id_prefix`` defaults to ``synthetic-<seed>``.

        Example:
            >>> ps = ProblemSet.synthetic(3, seed=0, min_steps=2, max_steps=3)
            >>> [p.id for p in ps], all(p.answer == str(p.ground_truth.answer) for p in ps)
            (['synthetic-0-0', 'synthetic-0-1', 'synthetic-0-2'], True)
            >>> [p.metadata["n_steps"] for p in ProblemSet.synthetic(1, seed=5, min_steps=2, max_steps=3, per_steps=True)]
            [2, 3]
        """
        # the task (numpy): imported on first use, so a job's --help (DataOptions) starts without numpy
        from thinklens.tasks.config import TaskConfig, check_step_range
        from thinklens.tasks.generator import generate_problems
        from thinklens.tasks.protocol import problems_by_steps

        if isinstance(n, bool) or not isinstance(n, int) or n < (1 if per_steps else 0):
            raise ThinklensError.of("number of synthetic problems", n, f"an integer >= {1 if per_steps else 0}",
                                    "pass e.g. n=100")
        check_step_range(min_steps, max_steps)
        key = seed if isinstance(seed, int) else "-".join(str(s) for s in seed)
        prefix = f"synthetic-{key}" if id_prefix is None else id_prefix
        if per_steps:
            if not isinstance(seed, int):
                raise ThinklensError.of("seed of per-step streams", seed, "an int (stream seed * 1000 + steps)", "pass seed=0")
            drawn = problems_by_steps(n, min_steps, max_steps, seed=seed)
            ids = [f"{prefix}-{p.n_steps}-{i % n}" for i, p in enumerate(drawn)]
        else:
            import numpy as np  # numpy: imported on first use (see above)

            rng = seed if isinstance(seed, int) else np.random.default_rng(list(seed))
            drawn = generate_problems(n, seed=rng, config=TaskConfig(min_steps=min_steps, max_steps=max_steps))
            ids = [f"{prefix}-{i}" for i in range(len(drawn))]
        problems = tuple(RealProblem(pid, p.question, str(p.answer), p.cot, {"n_steps": p.n_steps}, ground_truth=p)
                         for pid, p in zip(ids, drawn))
        name = f"synthetic stream (seed {key}, {min_steps}-{max_steps} steps)" if source is None else source
        return cls(name, problems)

    def take(self, n: int) -> ProblemSet:
        """The first ``n`` problems (all when fewer)."""
        if not isinstance(n, int) or n < 0:
            raise ThinklensError.of("number of problems", n, "an integer >= 0", "pass e.g. 100")
        return replace(self, problems=self.problems[:n])

    def split(self, sizes: Mapping[str, int | float], *, seed: int) -> dict[str, ProblemSet]:
        """Seeded, disjoint splits, e.g. ``{"train": 0.6, "calibration": 0.2, "test": 0.2}`` or counts.

        Fractions are of the whole set (when they sum to 1 the last split takes the remainder); ints
        are counts. Problems with the same normalised question always land in the same split, so
        the splits never share a question; each split keeps the source's order.

        Example:
            >>> ps = load_problems("synthetic:2-2:10")
            >>> parts = ps.split({"train": 6, "test": 4}, seed=1)
            >>> sorted(p.id for part in parts.values() for p in part) == sorted(p.id for p in ps)
            True
        """
        counts = _split_counts(sizes, len(self.problems))
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(self.problems):
            groups.setdefault(normalized_question(p.question), []).append(i)
        order = list(groups.values())
        random.Random(seed).shuffle(order)
        parts: dict[str, list[int]] = {name: [] for name in counts}
        names = iter(counts)
        name = next(names, None)
        for group in order:
            while name is not None and len(parts[name]) >= counts[name]:
                name = next(names, None)
            if name is None:
                break
            parts[name].extend(group)
        out = {n: ProblemSet(f"{self.source}#{n}", tuple(self.problems[i] for i in sorted(idx))) for n, idx in parts.items()}
        check_disjoint(out)
        return out


def _split_counts(sizes: Mapping[str, int | float], n: int) -> dict[str, int]:
    if not isinstance(sizes, Mapping) or not sizes:
        raise ThinklensError.of("split sizes", sizes, "a mapping like {'train': 0.8, 'test': 0.2}", "name each split")
    counts: dict[str, int] = {}
    for name, size in sizes.items():
        if isinstance(size, bool) or not isinstance(size, (int, float)) or size < 0 or (isinstance(size, float) and size > 1):
            raise ThinklensError.of(f"size of split {name!r}", size, "a count (int >= 0) or a fraction in [0, 1]", "fix it")
        counts[name] = size if isinstance(size, int) else int(round(size * n))
    fractions = [s for s in sizes.values() if isinstance(s, float)]
    if len(fractions) == len(sizes) and abs(sum(fractions) - 1.0) < 1e-9:
        last = list(counts)[-1]
        counts[last] = n - sum(c for k, c in counts.items() if k != last)
    if sum(counts.values()) > n:
        raise ThinklensError.of("split sizes", dict(sizes), f"at most {n} problems in all", "ask for fewer or load more")
    return counts


def check_disjoint(sets: Mapping[str, ProblemSet], *, allow_overlap: bool = False) -> None:
    """Raise when a question (normalised) is in two of the named sets, unless ``allow_overlap``.

    Use it when a job trains on one data set and tests on another.

    Example:
        >>> a = load_problems("synthetic:2-2:3")
        >>> check_disjoint({"train": a, "test": a})
        Traceback (most recent call last):
        ...
        thinklens.errors.ThinklensError: bad splits: received '3 questions in both train and test, e.g. ...
    """
    if allow_overlap:
        return
    owner: dict[str, str] = {}
    for name, problems in sets.items():
        shared = [p.question for p in problems if owner.get(normalized_question(p.question), name) != name]
        if shared:
            other = owner[normalized_question(shared[0])]
            raise ThinklensError.of(
                "splits", f"{len(shared)} questions in both {other} and {name}, e.g. {shared[0][:60]}",
                "disjoint splits (no question in two of them)", f"use disjoint data, or pass {opt('allow_overlap', True)} to allow it",
            )
        for p in problems:
            owner.setdefault(normalized_question(p.question), name)


def load_problems(
    source: str | Path, *, mapping: Mapping[str, str] | str | None = None, split: str | None = None,
    limit: int | None = None, seed: int | None = None, cache_dir: str | Path | None = None,
) -> ProblemSet:
    """Load a problem set from a file, a folder, a cached hub id or ``synthetic:MIN-MAX`` (see the module).

    Args:
        source: the source string (``data/gsm8k_test.jsonl``, ``HuggingFaceH4/MATH-500``, ``synthetic:2-4``).
        mapping: our field -> the source's column, as a dict or ``"question=prompt,answer=target"``;
            fields: ``question``, ``answer``, ``solution``, ``id``.
        split: the split of a source with several (overrides an ``@split`` suffix).
        limit: keep the first ``limit`` problems.
        seed: synthetic only: the seed base of the problem streams (default: the held-out ``eval`` seeds).
        cache_dir: the Hugging Face hub cache to look hub ids up in (default: the user's cache).
    """
    text = str(source)
    fields = parse_mapping(mapping)
    match = _SYNTHETIC_RE.fullmatch(text.strip())
    if match:
        if fields:
            raise ThinklensError.of("field mapping", mapping, "no mapping for synthetic problems", "drop the mapping")
        low, high, per = int(match.group(1)), int(match.group(2) or match.group(1)), int(match.group(3) or SYNTHETIC_PER_STEPS)
        problems = synthetic_problems(low, high, per, seed=seed)
    elif text.startswith("synthetic"):
        raise ThinklensError.of("synthetic source", text, "synthetic:MIN-MAX or synthetic:MIN-MAX:N", "e.g. synthetic:2-4")
    else:
        rows, name = read_rows(text, split=split, cache_dir=cache_dir)
        problems = problems_from_rows(rows, name, fields)
    if limit is not None:
        if not isinstance(limit, int) or limit < 1:
            raise ThinklensError.of("limit", limit, "an integer >= 1", "pass e.g. limit=100")
        problems = problems[:limit]
    if not problems:
        raise ThinklensError.of("problem set", text, "at least one problem", "check the file or the split")
    return ProblemSet(text, tuple(problems))


def synthetic_problems(min_steps: int, max_steps: int, per_steps: int, *, seed: int | None = None) -> list[RealProblem]:
    """``per_steps`` synthetic problems of every step count, from the held-out ``eval`` seeds unless ``seed``."""
    from thinklens.tasks.protocol import HELD_OUT  # numpy: imported on first use (see ProblemSet.synthetic)

    base = HELD_OUT["eval"] if seed is None else seed
    if isinstance(per_steps, bool) or not isinstance(per_steps, int) or per_steps < 1:
        raise ThinklensError.of("problems per step count", per_steps, "an integer >= 1", "e.g. synthetic:2-4:50")
    return list(ProblemSet.synthetic(per_steps, seed=base, min_steps=min_steps, max_steps=max_steps, per_steps=True))


def parse_mapping(mapping: Mapping[str, str] | str | None, fields: Mapping[str, Any] = FIELD_NAMES,
                  example: str = "question=prompt,answer=target") -> dict[str, str]:
    """A field mapping from a dict or ``"question=prompt,answer=target"``, its keys checked against ``fields``
    (ours: a problem's; :mod:`thinklens.data.import_traces` passes a trace record's).

    Example:
        >>> parse_mapping("question=prompt, answer=target")
        {'question': 'prompt', 'answer': 'target'}
    """
    if mapping is None or mapping == "":
        return {}
    if isinstance(mapping, str):
        pairs = [part.split("=", 1) for part in mapping.split(",") if part.strip()]
        if any(len(pair) != 2 or not pair[0].strip() or not pair[1].strip() for pair in pairs):
            raise ThinklensError.of("field mapping", mapping, "field=column pairs, comma-separated", f"e.g. {example}")
        mapping = {k.strip(): v.strip() for k, v in pairs}
    if not isinstance(mapping, Mapping):
        raise ThinklensError.of("field mapping", mapping, "a dict or 'field=column,...'", f"e.g. {example}")
    for key in mapping:
        if key not in fields:
            raise ThinklensError.of("mapped field", key, f"one of {', '.join(fields)}", did_you_mean(key, list(fields)))
    return dict(mapping)


def _column(columns: list[str], field_name: str, fields: Mapping[str, str], source: str) -> str | None:
    if field_name in fields:
        if fields[field_name] not in columns:
            raise ThinklensError.of(
                f"mapping {field_name}={fields[field_name]} for {source}", fields[field_name],
                f"one of its fields: {', '.join(columns)}", did_you_mean(fields[field_name], columns),
            )
        return fields[field_name]
    lower = {c.casefold(): c for c in columns}
    return next((lower[n] for n in FIELD_NAMES[field_name] if n in lower), None)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else str(value)


def _gold(raw: str, solution: str) -> tuple[str, str]:
    """The gold answer and the solution from an answer cell: GSM8K's ``... #### N`` holds both."""
    if "####" in raw or "\\boxed" in raw:
        return (extract_answer(raw) or "").strip(), solution or raw
    return raw.strip(), solution


def problems_from_rows(rows: list[Mapping[str, Any]], source: str, fields: Mapping[str, str] | None = None) -> list[RealProblem]:
    """Rows (dicts of one source) to problems, with the fields found by name or by ``fields``."""
    fields = dict(fields or {})
    if not rows:
        return []
    columns = list(dict.fromkeys(k for row in rows[:100] for k in row))
    cols = {f: _column(columns, f, fields, source) for f in FIELD_NAMES}
    if cols["question"] is None or (cols["answer"] is None and cols["solution"] is None):
        missing = "question" if cols["question"] is None else "answer"
        raise ThinklensError.of(
            f"{source}: no {missing} field", f"fields {', '.join(columns)}",
            f"a {missing} in one of {', '.join(FIELD_NAMES[missing])}",
            f"map it, e.g. {opt('data_fields', f'{missing}=<field>')}",
        )
    used = {c for c in cols.values() if c is not None}
    stem = Path(source).stem or source
    problems: list[RealProblem] = []
    for i, row in enumerate(rows):
        question = _text(row.get(cols["question"]))
        solution = _text(row.get(cols["solution"])) if cols["solution"] else ""
        raw = _text(row.get(cols["answer"])) if cols["answer"] else ""
        answer, solution = _gold(raw, solution) if raw else ((extract_answer(solution) or ""), solution)
        if not question.strip() or not answer:
            what = "question" if not question.strip() else "gold answer"
            raise ThinklensError.of(f"{source} row {i}", f"no {what} ({str(dict(row))[:120]})",
                                    "a question and a gold answer in every row", "fix or drop that row")
        pid = _text(row.get(cols["id"])) if cols["id"] else ""
        meta = {k: v for k, v in row.items() if k not in used}
        problems.append(RealProblem(pid or f"{stem}-{i}", question, answer, solution, meta))
    return problems


@dataclass(frozen=True)
class DataOptions(ConfigGroup):
    """The problems a job runs on and how they become prompts: fields every data-taking job config inherits.

    Example:
        >>> DataOptions(data="synthetic:2-4", prompt_format="chat").prompt_format
        'chat'
    """

    data: str = ""
    """Problems: a .jsonl/.json/.parquet/.csv file, a saved HF datasets folder, a cached hub id (a @split suffix picks a
    split), or synthetic:MIN-MAX[:N] (the project's task, N per step count); empty: the synthetic task drawn from
    --min-steps..--max-steps in a job with a step range."""
    data_fields: str = ""
    """Field mapping for --data when names differ, e.g. question=prompt,answer=target (default: found by name)."""
    prompt_format: str = "auto"
    """auto (a zoo model's own style, else the chat template when the tokenizer has one, else plain), chat, plain,
    direct, cot or think."""

    def check(self) -> None:
        check_format(self.prompt_format)
        parse_mapping(self.data_fields or None)
        check_one_step_range(self)

    def load(self, *, limit: int | None = None, seed: int | None = None) -> ProblemSet:
        """The problem set named by ``data`` (``limit`` first problems)."""
        return load_problems(self.data, mapping=self.data_fields or None, limit=limit, seed=seed)

    def problems(self, n: int, *, seed: int | Sequence[int], sample_seed: int | None = None, part: str = "sample",
                 source: str | None = None, id_prefix: str | None = None) -> ProblemSet:
        """The job's ``n`` problems: without ``data``, ``n`` of the synthetic task's stream ``seed``
        (:meth:`ProblemSet.synthetic`, in the config's ``min_steps..max_steps``; ``source`` and ``id_prefix``
        name it); with ``data``, its first ``n``, or with ``sample_seed`` a seeded sample of ``n`` (all of it
        when it has fewer), named ``<data>#<part>``.

        Example:
            >>> from thinklens.tasks.config import StepRange
            >>> @dataclass(frozen=True)
            ... class Job(DataOptions, StepRange):
            ...     pass
            >>> [p.id for p in Job(data="", min_steps=2, max_steps=3).problems(2, seed=4)]
            ['synthetic-4-0', 'synthetic-4-1']
            >>> len(Job(data="synthetic:2-2:10").problems(3, seed=0, sample_seed=1))
            3
        """
        if not self.data:
            steps = (getattr(self, "min_steps", None), getattr(self, "max_steps", None))
            if None in steps:
                raise ThinklensError.of(f"{type(self).__name__} without {opt_name('data')}", "no min_steps/max_steps fields",
                                        "a config with a step range (thinklens.tasks.config.StepRange) for synthetic "
                                        "problems", f"pass {opt('data')}, or inherit StepRange")
            return ProblemSet.synthetic(n, seed=seed, min_steps=steps[0], max_steps=steps[1], source=source,
                                        id_prefix=id_prefix)
        if sample_seed is None:
            return self.load(limit=n)
        loaded = self.load()
        return loaded.split({part: min(n, len(loaded))}, seed=sample_seed)[part]


def check_one_step_range(config: Any) -> None:
    """Refuse a ``synthetic:MIN-MAX`` ``data`` next to a ``min_steps``/``max_steps`` set to another range: both name
    the problems' step counts, and the data source would win without a word. A step field left at the config's
    default is not a choice and never conflicts; a config without a step range has nothing to check.

    Example:
        >>> from thinklens.tasks.config import StepRange
        >>> @dataclass(frozen=True)
        ... class Cfg(DataOptions, StepRange):
        ...     pass
        >>> Cfg(data="synthetic:2-4", max_steps=4).data, Cfg(min_steps=3, max_steps=6).data
        ('synthetic:2-4', '')
        >>> Cfg(data="synthetic:2-4", max_steps=6)
        Traceback (most recent call last):
        ...
        thinklens.errors.ThinklensError: bad data / max_steps: received 'synthetic:2-4 with max_steps=6'; expected one step range ...
    """
    match = _SYNTHETIC_RE.fullmatch(str(getattr(config, "data", "")).strip())
    defaults = {f.name: f.default for f in dataclasses.fields(config) if f.name in ("min_steps", "max_steps")}
    if match is None or len(defaults) < 2:
        return
    low, high = int(match.group(1)), int(match.group(2) or match.group(1))
    clash = [name for name, source in (("min_steps", low), ("max_steps", high))
             if getattr(config, name) != defaults[name] and getattr(config, name) != source]
    if clash:
        flags = [opt_name(name) for name in clash]
        given = " and ".join(opt(name, getattr(config, name)) for name in clash)
        raise ThinklensError.of(
            " / ".join([opt_name("data"), *flags]), f"{config.data} with {given}",
            f"one step range ({config.data} draws {low}..{high} steps and would ignore {' and '.join(flags)})",
            f"drop {opt_name('data')} to draw the synthetic task from {config.min_steps}..{config.max_steps} steps, or "
            f"drop {' and '.join(flags)} to keep {config.data}")


@dataclass(frozen=True)
class SamplingOptions(ConfigGroup):
    """How a job decodes its completions: the two fields of every job config that samples. A config redeclares
    a field only to change its default.

    Example:
        >>> SamplingOptions(temperature=0.6, top_p=0.95).decoding()
        {'do_sample': True, 'temperature': 0.6, 'top_p': 0.95}
        >>> SamplingOptions().decoding()["do_sample"]
        False
    """

    temperature: float = 0.0
    """Sampling temperature; 0: greedy."""
    top_p: float = 1.0
    """Nucleus sampling mass (sampled runs only; 1 = off)."""

    def check(self) -> None:
        if not (self.temperature >= 0.0 and math.isfinite(self.temperature)) or not 0.0 < self.top_p <= 1.0:
            raise ThinklensError.of("temperature / top_p", (self.temperature, self.top_p),
                                    "temperature >= 0 (0: greedy) and top_p in (0, 1]",
                                    f"e.g. {opt('temperature', 0.6)} {opt('top_p', 0.95)}")

    @property
    def sampled(self) -> bool:
        """Whether completions are sampled (temperature > 0) rather than greedy."""
        return self.temperature > 0.0

    def decoding(self) -> dict[str, Any]:
        """The keyword arguments of ``HookedModel.generate`` for this choice (greedy at temperature 0)."""
        return {"do_sample": self.sampled, "temperature": self.temperature if self.sampled else 1.0, "top_p": self.top_p}
