"""Planted and null settings of thought anchors (``thinklens run validate``; shared/specs/anchors.md, "Planted designs").

The organism is built without training: synthetic traces fed to the zoo's ``tiny-overthink`` (:data:`MODEL`), in its
own chat format. Each unit is one trace of :data:`SENTENCES` sentences: filler sentences drawn from :data:`FILLERS`
(one of them always longer than the value sentence) and one *value sentence* ``"So Leo has 77 stones."`` whose place
cycles through the first four positions over the units (never the last: tiny-overthink does not copy a value stated
right before the exit string), so a scorer by position hits it on at most a quarter of the traces and one by length on
none. Forced answers are greedy (one per prefix); rollouts are sampled at 0.7 for 6 tokens (about the replaced
sentence: longer rollouts of this model add arithmetic of their own, which moves every sentence's answer). The
limitation: the traces are written, not sampled from the model (the model only answers and rolls out); a zoo organism
trained to copy would make the same point on its own traces.

- ``thought-anchors planted``: the prompt asks for the count without giving it ("Leo has some stones. How many
  stones does Leo have?"), so the answer (the gold, 77) must be copied from the value sentence. Both black-box
  measures must rank the value sentence first on most traces: each measure's top-1 hit rate (Wilson interval over
  traces) with its lower end at least :data:`MIN_HIT` (chance is 1 / :data:`SENTENCES`).
- ``thought-anchors null``: the same traces, the value also in the prompt ("Leo has 77 stones. ..."): no sentence
  carries the answer. Every sentence position's mean importance (accuracy difference, over traces) must lie within
  +-:data:`NULL_MARGIN` by TOST (:func:`thinklens.calibration.tost.tost_mean`; the exact bound when every trace
  shows 0), for both measures.

Mutants the planted setting must fail (:data:`MUTANTS`; tests/analyses/test_anchors.py runs them): ``by-position``
(the last sentence first) and ``by-length`` (the longest sentence first) in place of the measured importance.

The targets were fixed before the first run: :data:`MIN_HIT` one half, :data:`NULL_MARGIN` a fifth of accuracy.

Example:
    >>> [s.key for s in SETTINGS]
    ['thought-anchors/planted', 'thought-anchors/null']
    >>> unit = planted_unit(0, seed=0, planted=True)
    >>> unit.value_index, len(unit.sentences)
    (0, 5)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from thinklens.analyses.anchors.importance import forced_importance, resampling_importance
from thinklens.analyses.anchors.per_trace import TraceAnchors
from thinklens.analyses.anchors.sentences import Sentences, sentences_of
from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.calibration.stats import wilson
from thinklens.calibration.tost import tost_mean
from thinklens.data.formats import format_for

MODEL = "tiny-overthink"
"""The zoo model that answers and rolls out."""
SENTENCES = 5
"""Sentences per trace (four fillers and the value sentence)."""
MIN_HIT = 0.5
"""The planted target: the lower end of each measure's top-1 hit rate interval."""
NULL_MARGIN = 0.2
"""The null's equivalence margin on every sentence's mean accuracy difference."""
FILLERS = ("Okay, let me think.", "Hmm, let me see.", "Let me verify.", "Okay, so far so good.", "Hmm, let me verify.",
           "Let me think step by step here.")
"""Filler sentences, each checked to leave tiny-overthink's greedy forced answer alone (others, such as "Wait, let me go
over the problem once more.", make it lose the value); the last is longer than any value sentence."""
LONG = FILLERS[-1:]
NAMES = ("Leo", "Eva", "Tom", "Sam")
OBJECTS = ("stones", "apples", "pears", "coins")


@dataclass(frozen=True)
class Plan:
    """How much a setting measures."""

    units: int
    """Traces (the units of every interval)."""
    n_forced: int
    """Forced answers per prefix."""
    n_rollouts: int
    """Rollouts per prefix."""
    rollout_tokens: int
    """Tokens per rollout."""
    temperature: float
    """Sampling temperature of the rollouts."""
    forced_temperature: float
    """Sampling temperature of the forced answers (0: the greedy forced answer)."""


QUICK = Plan(units=20, n_forced=1, n_rollouts=8, rollout_tokens=6, temperature=0.7, forced_temperature=0.0)
FULL = Plan(units=40, n_forced=1, n_rollouts=16, rollout_tokens=6, temperature=0.7, forced_temperature=0.0)


@dataclass(frozen=True)
class Unit:
    """One synthetic trace."""

    question: str
    """The user's question."""
    sentences: tuple[str, ...]
    """The trace's sentences."""
    value_index: int
    """The value sentence's position."""
    gold: int
    """The value (the answer)."""


def planted_unit(k: int, *, seed: int, planted: bool) -> Unit:
    """Unit ``k``: its value sentence at position ``k % (SENTENCES - 1)`` (never last: tiny-overthink does not copy a value
    stated right before the exit string); ``planted`` False puts the value in the prompt too."""
    rng = np.random.default_rng([seed, k])
    name, obj = NAMES[k % len(NAMES)], OBJECTS[(k // len(NAMES)) % len(OBJECTS)]
    value = int(rng.integers(11, 99))
    fill = [LONG[int(rng.integers(len(LONG)))]] + [FILLERS[int(j)] for j in rng.choice(len(FILLERS) - len(LONG), SENTENCES - 2)]
    fill = [fill[int(j)] for j in rng.permutation(len(fill))]
    pos = k % (SENTENCES - 1)
    sents = fill[:pos] + [f"So {name} has {value} {obj}."] + fill[pos:]
    given = f"{name} has {value} {obj}." if not planted else f"{name} has some {obj}."
    return Unit(f"{given} How many {obj} does {name} have?", tuple(sents), pos, value)


def unit_sentences(model: Any, unit: Unit) -> Sentences:
    """The unit as a trace continuing the model's own prompt."""

    prompt = format_for(model, "auto").render(unit.question)
    got = sentences_of(prompt, " ".join(unit.sentences))
    if len(got) != len(unit.sentences):  # the splitter must see the sentences the unit was written as
        raise AssertionError(f"split {len(got)} sentences, wrote {len(unit.sentences)}")
    return got


def measure_units(model: Any, plan: Plan, *, seed: int, planted: bool) -> list[dict[str, Any]]:
    """Both black-box measures on every unit: per unit its value index and each measure's accuracy differences."""

    exit_string = format_for(model, "auto").lynx_exit
    rows = []
    for k in range(plan.units):
        unit = planted_unit(k, seed=seed, planted=planted)
        sents = unit_sentences(model, unit)
        f = forced_importance(model, sents, unit.gold, exit_string=exit_string, n_forced=plan.n_forced,
                              temperature=plan.forced_temperature, seed=seed + k)
        r = resampling_importance(model, sents, unit.gold, exit_string=exit_string, n_rollouts=plan.n_rollouts,
                                  rollout_tokens=plan.rollout_tokens, temperature=plan.temperature, seed=seed + k)
        rows.append({"value_index": unit.value_index, "sentences": list(unit.sentences),
                     "forced": np.nan_to_num(f.accuracy_diff, nan=0.0).tolist(),
                     "resampling": np.nan_to_num(r.accuracy_diff, nan=0.0).tolist(),
                     "forced_kl": f.kl.tolist(), "resampling_kl": r.kl.tolist()})
    return rows


Scorer = Callable[[dict[str, Any], str], Sequence[float]]
"""``(unit row, measure) -> per-sentence scores`` that the planted check ranks by."""


def measured(row: dict[str, Any], measure: str) -> Sequence[float]:
    """The measured importance (the method)."""
    return row[measure]


MUTANTS: dict[str, Scorer] = {
    "by-position": lambda row, measure: list(range(len(row["sentences"]))),
    "by-length": lambda row, measure: [len(s) for s in row["sentences"]],
}
"""Broken scorers the planted setting must fail: the last sentence first, the longest first."""


def planted_check(rows: Sequence[dict[str, Any]], scorer: Scorer = measured) -> Check:
    """The planted verdict from measured units: each measure's top-1 hit rate, its Wilson interval's lower end >= MIN_HIT."""
    hits, cis = {}, {}
    for measure in ("forced", "resampling"):
        k = sum(TraceAnchors.ranks(scorer(r, measure))[0] == r["value_index"] for r in rows)
        hits[measure], cis[measure] = k / len(rows), wilson(k, len(rows))
    worst = min(hits, key=lambda m: cis[m][0])
    ok = all(ci[0] >= MIN_HIT for ci in cis.values())
    return Check("top1_hit_rate", hits[worst], cis[worst], "recovered" if ok else "failed", n=len(rows),
                 target=f"both measures rank the value sentence first: top-1 hit rate's Wilson lower end >= {MIN_HIT} for each "
                        f"(chance 1/{SENTENCES}); the worse measure reported",
                 details={"model": MODEL, "hit_rate": hits, "hit_ci": {m: list(c) for m, c in cis.items()}, "worst": worst})


def null_check(rows: Sequence[dict[str, Any]]) -> Check:
    """The null verdict: every sentence position's mean accuracy difference within +-NULL_MARGIN (TOST), both measures."""
    tests = {}
    for measure in ("forced", "resampling"):
        imp = np.asarray([r[measure] for r in rows], dtype=float)  # [unit, sentence]
        tests[measure] = [tost_mean(imp[:, s], margin=NULL_MARGIN, bounds=(-1.0, 1.0)) for s in range(imp.shape[1])]
    flat = [(m, s, e) for m, es in tests.items() for s, e in enumerate(es)]
    m, s, worst = max(flat, key=lambda x: max(abs(x[2].ci[0]), abs(x[2].ci[1])))
    ok = all(e.equivalent for _, _, e in flat)
    return Check("max_abs_importance", worst.mean, worst.ci, "no-effect" if ok else "failed", n=len(rows),
                 target=f"every sentence's mean accuracy difference within +-{NULL_MARGIN} by TOST (90% interval), forced and "
                        "resampling; the sentence with the widest interval reported",
                 details={"model": MODEL, "worst": {"measure": m, "sentence": s, "p": worst.p},
                          "means": {mm: [e.mean for e in es] for mm, es in tests.items()},
                          "ci90": {mm: [list(e.ci) for e in es] for mm, es in tests.items()}, "margin": NULL_MARGIN})


def _model(ctx: SettingContext) -> Any:
    import torch  # lazy: import cost (torch)

    from thinklens.engine.model import HookedModel  # lazy: import cost (transformers, nnsight)

    return HookedModel.load(MODEL, device=ctx.device, dtype=getattr(torch, ctx.dtype))


def _planted(ctx: SettingContext) -> Check:
    plan = QUICK if ctx.quick else FULL
    rows = measure_units(_model(ctx), plan, seed=ctx.seed, planted=True)
    check = planted_check(rows)
    mutants = {name: planted_check(rows, scorer).verdict for name, scorer in MUTANTS.items()}
    return Check(check.statistic, check.value, check.ci, check.verdict, n=check.n, target=check.target,
                 details={**check.details, "mutants": mutants, "plan": vars(plan)})


def _null(ctx: SettingContext) -> Check:
    plan = QUICK if ctx.quick else FULL
    check = null_check(measure_units(_model(ctx), plan, seed=ctx.seed, planted=False))
    return Check(check.statistic, check.value, check.ci, check.verdict, n=check.n, target=check.target,
                 details={**check.details, "plan": vars(plan)})


SETTINGS = [
    Setting("thought-anchors", "planted", "recovered", _planted,
            help=f"synthetic traces on {MODEL}: the answer is copied from one sentence among fillers; forced-answer and "
                 f"resampling importance rank it first (top-1 hit rate's lower end >= {MIN_HIT})"),
    Setting("thought-anchors", "null", "no-effect", _null,
            help=f"the same traces with the value in the prompt: every sentence's importance within +-{NULL_MARGIN} (TOST)"),
]
