"""What evaluating a zoo model returns (:class:`ZooEvalResult`): held-out accuracy by number of steps and the
think-trace statistics, the same for the word-level models (:func:`thinklens.zoo.accuracy.evaluate_model`) and tiny-r1's
chats (:func:`thinklens.zoo.r1_train.evaluate_r1_model`).

Example:
    >>> r = ZooEvalResult(model="tiny-cot", prompt_format="cot", seed=0, n_per_steps=10, accuracy={1: 1.0, 2: 0.5},
    ...                   equation_accuracy={1: 1.0, 2: 0.75})
    >>> r.mean_accuracy([1, 2]), r.to_json()["accuracy"]
    (0.75, {'1': 1.0, '2': 0.5})
    >>> ZooEvalResult.from_json(r.to_json()) == r
    True
    >>> old = {**r.to_json(), "style": "cot"}  # a result saved before the prompt format had one name
    >>> del old["prompt_format"]
    >>> ZooEvalResult.from_json(old).prompt_format
    'cot'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from thinklens.errors import ThinklensError

#: Keys a saved result held before the prompt format had one name: ``{old key: field}``.
LEGACY_KEYS: dict[str, str] = {"style": "prompt_format"}


@dataclass(frozen=True)
class ZooEvalResult:
    """Held-out accuracy of one model, by number of steps, and think-trace statistics."""

    model: str
    """Zoo name or folder evaluated."""
    prompt_format: str
    """Prompt format the model was evaluated in (a zoo format: direct, cot, think; or chat for an R1 model)."""
    seed: int
    """Seed of the held-out problems."""
    n_per_steps: int
    """Problems per step count."""
    accuracy: dict[int, float]
    """Step count -> fraction answered right."""
    equation_accuracy: dict[int, float]
    """Step count -> fraction of generated equations whose arithmetic is right."""
    reflection_rate: float | None = None
    """Fraction of traces containing a reflection word (think format only)."""
    correction_right_rate: float | None = None
    """Fraction of ``wait`` corrections whose following equation is right (think format only)."""
    n_corrections: int | None = None
    """Number of ``wait`` followed by an equation (think format only)."""
    sampled_reflection_rate: float | None = None
    """Like ``reflection_rate`` but counting only ``hmm``/``wait``, on traces sampled at temperature 1
    (think format only; the trained near-miss/hmm rates are < 0.5, so greedy decoding rarely picks them)."""
    sampled_correction_right_rate: float | None = None
    """``correction_right_rate`` on the sampled traces."""
    sampled_corrections: int | None = None
    """``n_corrections`` on the sampled traces."""
    sampled_accuracy: float | None = None
    """Accuracy of the sampled traces (all step counts pooled)."""
    wall_s: float = 0.0
    """Seconds spent generating."""
    samples: dict[int, list[str]] = field(default_factory=dict)
    """A few generations per step count, for eyeballing."""
    problems: list[dict] = field(default_factory=list, compare=False)
    """Every graded problem in order (``steps``, ``prompt``, ``text``, ``gold``, ``correct``): the texts behind the
    accuracy, which ``zoo-eval`` keeps in ``zoo_problems.json``; not in :meth:`to_json`. Empty: not kept."""

    def mean_accuracy(self, steps: range | list[int]) -> float:
        """Mean accuracy over some step counts (each weighted equally)."""
        values = [self.accuracy[s] for s in steps if s in self.accuracy]
        return sum(values) / len(values) if values else float("nan")

    def to_json(self) -> dict:
        """JSON-able dict (step counts become string keys)."""
        out = asdict(self)
        out.pop("problems")
        for key in ("accuracy", "equation_accuracy", "samples"):
            out[key] = {str(k): v for k, v in out[key].items()}
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ZooEvalResult:
        """A result from its :meth:`to_json` (a zoo.json's ``eval``, a ``zoo_eval.json`` row); a key saved before a
        rename (``style``: :data:`LEGACY_KEYS`) still reads, and keys that are not fields (a GRPO or overthinking
        result's extras) are ignored."""
        doc = dict(doc)
        for old, new in LEGACY_KEYS.items():
            if old in doc:
                if new in doc and doc[new] != doc[old]:
                    raise ThinklensError.of(f"saved result {old!r}", (doc[old], doc[new]),
                                            f"only {new!r} (its former name {old!r} holds another value)",
                                            f"drop {old!r} from the file")
                doc.setdefault(new, doc.pop(old))
        keep = {f.name for f in fields(cls)}
        values = {k: v for k, v in doc.items() if k in keep}
        for key in ("accuracy", "equation_accuracy", "samples"):
            values[key] = {int(s): v for s, v in (values.get(key) or {}).items()}
        return cls(**values)
