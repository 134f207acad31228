"""Problem sets: GSM8K, MATH-500, AIME, your own JSONL/JSON/Parquet/CSV, HF ``datasets`` folders, or
the synthetic task, loaded as one typed list of problems with gold answers (the types and their seeded disjoint
splits: :mod:`thinklens.data.problem_set`, importable from here too), and the data and sampling options of a job.

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
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thinklens.data.answers import extract_answer
from thinklens.data.formats import check_format
from thinklens.data.problem_set import ProblemSet, RealProblem, check_disjoint, normalized_question
from thinklens.data.sources import read_rows
from thinklens.errors import ThinklensError, did_you_mean, opt, opt_name
from thinklens.runs.configcli import ConfigGroup
from thinklens.tasks.protocol import HELD_OUT

# the types and the splits live in thinklens/data/problem_set.py; importable from here as before
__all__ = [
    "FIELD_NAMES", "SYNTHETIC_PER_STEPS", "DataOptions", "ProblemSet", "RealProblem", "SamplingOptions", "check_disjoint",
    "check_one_step_range", "load_problems", "normalized_question", "parse_mapping", "problems_from_rows",
    "synthetic_problems",
]

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
