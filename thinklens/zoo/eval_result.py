"""What evaluating a zoo model returns (:class:`ZooEvalResult`): held-out accuracy by number of steps and the
think-trace statistics, the same for the word-level models (:func:`thinklens.zoo.accuracy.evaluate_model`) and tiny-r1's
chats (:func:`thinklens.zoo.r1_train.evaluate_r1_model`).

Example:
    >>> r = ZooEvalResult(model="tiny-cot", style="cot", seed=0, n_per_steps=10, accuracy={1: 1.0, 2: 0.5},
    ...                   equation_accuracy={1: 1.0, 2: 0.75})
    >>> r.mean_accuracy([1, 2]), r.to_json()["accuracy"]
    (0.75, {'1': 1.0, '2': 0.5})
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class ZooEvalResult:
    """Held-out accuracy of one model, by number of steps, and think-trace statistics."""

    model: str
    """Zoo name or folder evaluated."""
    style: str
    """Prompt style used."""
    seed: int
    """Seed of the held-out problems."""
    n_per_steps: int
    """Problems per step count."""
    accuracy: dict[int, float]
    """Step count -> fraction answered right."""
    equation_accuracy: dict[int, float]
    """Step count -> fraction of generated equations whose arithmetic is right."""
    reflection_rate: float | None = None
    """Fraction of traces containing a reflection word (think style only)."""
    correction_right_rate: float | None = None
    """Fraction of ``wait`` corrections whose following equation is right (think style only)."""
    n_corrections: int | None = None
    """Number of ``wait`` followed by an equation (think style only)."""
    sampled_reflection_rate: float | None = None
    """Like ``reflection_rate`` but counting only ``hmm``/``wait``, on traces sampled at temperature 1
    (think style only; the trained near-miss/hmm rates are < 0.5, so greedy decoding rarely picks them)."""
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
