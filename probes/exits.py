"""Early-exit policies over labelled cue events: LYNX at each delta and the baselines.

Inputs are two tables of plain arrays. Events: which rollout, where (token index of the cue end),
the forced-exit label (1 = answering from there is correct), the probe probability, and the tokens
an exit there costs. Rollouts: length, whether the full rollout was correct, and its token cost.
A policy picks at most one event per rollout (the first that qualifies, scanning in order); a
rollout without a pick keeps its full answer. Accuracy and mean tokens follow.

Policies: ``lynx`` (first event whose conformal set is exactly {1}), ``first_cue`` (first real cue),
``fraction`` (first event at or after a fixed fraction of the rollout; a model-free stand-in for
forcing an exit at exactly that token; a rollout without an event there keeps its full answer),
``threshold`` (first event with uncalibrated p > 0.5), ``full`` (never exit) and ``oracle`` (first
event whose forced exit is correct; an upper bound).

Example:
    >>> import numpy as np
    >>> from thinklens.probes.conformal import MondrianCalibrator
    >>> ev = EventTable(rollout=np.array([0, 0, 1]), position=np.array([3, 8, 5]),
    ...                 label=np.array([0, 1, 1]), prob=np.array([0.2, 0.99, 0.4]),
    ...                 exit_tokens=np.array([10, 15, 12]))
    >>> ro = RolloutTable(length=np.array([20, 20]), correct=np.array([1, 0]), tokens=np.array([30, 30]))
    >>> out = evaluate_policy("threshold", 0.5, ev, ro, threshold_exits(ev, ro, 0.5))
    >>> out.exit_event.tolist(), out.accuracy, out.mean_tokens
    ([1, -1], 0.5, 22.5)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from thinklens.errors import ThinklensError
from thinklens.probes.conformal import MondrianCalibrator, clopper_pearson


def _int_array(x, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer) and not np.all(a == np.round(a))):
        raise ThinklensError.of(name, f"array of shape {a.shape}, dtype {a.dtype}", "a 1-d integer array",
                                "pass one integer per row")
    return a.astype(np.int64)


@dataclass(frozen=True, eq=False)
class RolloutTable:
    """One row per rollout (row i is rollout id i)."""

    length: np.ndarray
    """Generated tokens of the full rollout, [rollout]."""
    correct: np.ndarray
    """1 if the full rollout's answer is correct, [rollout]."""
    tokens: np.ndarray
    """Tokens the full rollout costs (the no-exit cost), [rollout]."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "length", _int_array(self.length, "rollout length"))
        object.__setattr__(self, "correct", _binary(self.correct, "rollout correct", self.length.shape[0]))
        object.__setattr__(self, "tokens", np.asarray(self.tokens, dtype=np.float64))
        if self.tokens.shape != self.length.shape:
            raise ThinklensError.of("rollout tokens", self.tokens.shape, f"shape {self.length.shape}",
                                    "pass one token count per rollout")

    @property
    def n(self) -> int:
        """Number of rollouts."""
        return int(self.length.shape[0])


@dataclass(frozen=True, eq=False)
class EventTable:
    """One row per cue event; rows of one rollout may come in any order (scanned by position)."""

    rollout: np.ndarray
    """Rollout id (row of the RolloutTable), [event]."""
    position: np.ndarray
    """Token index of the event (the cue's last token) in its rollout, [event]."""
    label: np.ndarray
    """1 if the forced exit at this event answers correctly, [event]."""
    prob: np.ndarray
    """Probe probability P(label = 1), [event]."""
    exit_tokens: np.ndarray
    """Tokens used when exiting here (tokens before the cue + exit string + answer tokens), [event]."""
    is_cue: np.ndarray | None = field(default=None)
    """False for a cue-less rollout's fallback event, [event]; None means all are real cues. A test split has
    none (LYNX exits at real cues only); tables of older runs may."""

    def __post_init__(self) -> None:
        n = np.asarray(self.rollout).shape[0]
        object.__setattr__(self, "rollout", _int_array(self.rollout, "event rollout"))
        object.__setattr__(self, "position", _int_array(self.position, "event position"))
        object.__setattr__(self, "label", _binary(self.label, "event label", n))
        prob = np.asarray(self.prob, dtype=np.float64)
        if prob.shape != (n,) or (n and (not np.all(np.isfinite(prob)) or prob.min() < 0 or prob.max() > 1)):
            raise ThinklensError.of("event prob", f"shape {prob.shape}", f"[{n}] probabilities in [0, 1]",
                                    "pass predict_proba(X)[:, 1]")
        object.__setattr__(self, "prob", prob)
        object.__setattr__(self, "exit_tokens", np.asarray(self.exit_tokens, dtype=np.float64))
        is_cue = np.ones(n, dtype=bool) if self.is_cue is None else np.asarray(self.is_cue, dtype=bool)
        object.__setattr__(self, "is_cue", is_cue)
        for name in ("position", "exit_tokens", "is_cue"):
            if getattr(self, name).shape != (n,):
                raise ThinklensError.of(f"event {name}", getattr(self, name).shape, f"shape ({n},)",
                                        "pass one value per event")

    @property
    def n(self) -> int:
        """Number of events."""
        return int(self.rollout.shape[0])


def _binary(x, name: str, n: int) -> np.ndarray:
    a = np.asarray(x)
    if a.shape != (n,) or not set(np.unique(a).tolist()) <= {0, 1}:
        raise ThinklensError.of(name, f"shape {a.shape}, values {np.unique(a)[:5].tolist()}",
                                f"shape ({n},) with values 0/1", "pass one 0/1 label per row")
    return a.astype(np.int64)


def _check_tables(events: EventTable, rollouts: RolloutTable) -> None:
    if events.n and (events.rollout.min() < 0 or events.rollout.max() >= rollouts.n):
        raise ThinklensError.of("event rollout ids", f"range [{events.rollout.min()}, {events.rollout.max()}]",
                                f"ids in [0, {rollouts.n})", "number rollouts 0..n-1 as the RolloutTable rows")


def first_exits(events: EventTable, rollouts: RolloutTable, mask: np.ndarray) -> np.ndarray:
    """The exit rule: per rollout, the earliest event (by position) with ``mask`` set, else -1.

    Returns int [rollout]: an event row index, or -1 (keep the full rollout).

    Example:
        >>> ev = EventTable(rollout=[0, 0, 0], position=[9, 2, 5], label=[1, 1, 1],
        ...                 prob=[0.9, 0.9, 0.9], exit_tokens=[1, 1, 1])
        >>> first_exits(ev, RolloutTable([10], [1], [10]), np.array([True, False, True])).tolist()
        [2]
    """
    _check_tables(events, rollouts)
    mask = np.asarray(mask, dtype=bool)
    out = np.full(rollouts.n, -1, dtype=np.int64)
    rows = np.flatnonzero(mask)
    if rows.size:
        order = rows[np.lexsort((events.position[rows], events.rollout[rows]))]  # by rollout, then position
        ids, first = np.unique(events.rollout[order], return_index=True)
        out[ids] = order[first]
    return out


def lynx_exits(events: EventTable, rollouts: RolloutTable, calibrator: MondrianCalibrator,
               delta: float) -> np.ndarray:
    """LYNX: the first event whose prediction set is exactly {1} at ``delta``."""
    return first_exits(events, rollouts, calibrator.exit_mask(events.prob, delta))


def first_cue_exits(events: EventTable, rollouts: RolloutTable) -> np.ndarray:
    """Baseline: exit at the first real cue (fallback events never count)."""
    return first_exits(events, rollouts, events.is_cue)


def fraction_exits(events: EventTable, rollouts: RolloutTable, fraction: float) -> np.ndarray:
    """Baseline: the first event at or after ``fraction`` of the rollout's length."""
    if not 0.0 <= fraction <= 1.0:
        raise ThinklensError.of("exit fraction", fraction, "a fraction in [0, 1]", "use e.g. 0.5")
    _check_tables(events, rollouts)
    return first_exits(events, rollouts, events.position >= fraction * rollouts.length[events.rollout])


def threshold_exits(events: EventTable, rollouts: RolloutTable, threshold: float = 0.5) -> np.ndarray:
    """Baseline: the first event with uncalibrated probe probability above ``threshold``."""
    return first_exits(events, rollouts, events.prob > threshold)


def oracle_exits(events: EventTable, rollouts: RolloutTable) -> np.ndarray:
    """Upper bound: the first event whose forced exit is correct (uses the labels)."""
    return first_exits(events, rollouts, events.label == 1)


@dataclass(frozen=True, eq=False)
class PolicyOutcome:
    """Accuracy and cost of one exit policy over all rollouts."""

    policy: str
    """Policy name: lynx, first_cue, fraction, threshold, full or oracle."""
    param: float | None
    """Its parameter (delta, fraction or threshold), None if it has none."""
    accuracy: float
    """Share of rollouts answered correctly under the policy."""
    mean_tokens: float
    """Mean tokens used per rollout."""
    saving: float
    """Share of the test rollouts' tokens saved: 1 - (tokens used) / (tokens of the full rollouts), summed over rollouts
    (:func:`token_saving`)."""
    exit_rate: float
    """Share of rollouts that exited early."""
    exit_event: np.ndarray
    """Chosen event row per rollout, -1 for none, [rollout]."""
    exit_fraction: np.ndarray
    """Relative exit position (position / length) per rollout, nan for none, [rollout]."""

    @property
    def n_exit(self) -> int:
        """Test rollouts that exited early (at most one exit each), not events."""
        return int(np.sum(self.exit_event >= 0))

    @property
    def label(self) -> str:
        """Display name, e.g. "lynx δ=0.05"."""
        symbol = {"lynx": "δ", "fraction": "f", "threshold": "p>"}.get(self.policy, "")
        return self.policy if self.param is None else f"{self.policy} {symbol}={self.param:g}"

    def summary(self) -> dict:
        """Scalars only, for a results table."""
        return {"policy": self.policy, "param": self.param, "accuracy": self.accuracy,
                "mean_tokens": self.mean_tokens, "saving": self.saving, "exit_rate": self.exit_rate,
                "n_exit": self.n_exit}


def policy_costs(events: EventTable, rollouts: RolloutTable, exit_event: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per rollout, under the exit choices ``exit_event`` [rollout] (event row or -1): ``(correct, tokens)``, both
    [rollout]: a rollout that exits takes the forced answer's label and the exit's cost, one that does not keeps its
    full answer and its full cost.

    Example:
        >>> ev = EventTable(rollout=[0], position=[4], label=[0], prob=[0.9], exit_tokens=[6])
        >>> correct, tokens = policy_costs(ev, RolloutTable([10, 10], [1, 1], [12, 12]), np.array([0, -1]))
        >>> correct.tolist(), tokens.tolist()
        ([0.0, 1.0], [6.0, 12.0])
    """
    exit_event = np.asarray(exit_event, dtype=np.int64)
    if exit_event.shape != (rollouts.n,):
        raise ThinklensError.of("exit choices", exit_event.shape, f"shape ({rollouts.n},): one event row or -1 per "
                                "rollout", "pass the output of first_exits")
    exited = exit_event >= 0
    rows = exit_event[exited]
    correct = rollouts.correct.astype(np.float64).copy()
    tokens = rollouts.tokens.copy()
    correct[exited] = events.label[rows]
    tokens[exited] = events.exit_tokens[rows]
    return correct, tokens


def token_saving(tokens: np.ndarray, full_tokens: np.ndarray) -> float:
    """Share of the full rollouts' tokens saved: ``1 - sum(tokens) / sum(full_tokens)`` over the same rollouts
    (the ratio of the totals, so a long rollout weighs by its length; 0 when there is nothing to save).

    Example:
        >>> token_saving(np.array([50.0, 100.0]), np.array([100.0, 100.0]))
        0.25
    """
    total = float(np.sum(full_tokens))
    return 1.0 - float(np.sum(tokens)) / total if total > 0 else 0.0


def evaluate_policy(policy: str, param: float | None, events: EventTable, rollouts: RolloutTable,
                    exit_event: np.ndarray) -> PolicyOutcome:
    """Score per-rollout exit choices ``exit_event`` [rollout] (event row or -1)."""
    exit_event = np.asarray(exit_event, dtype=np.int64)
    correct, tokens = policy_costs(events, rollouts, exit_event)
    exited = exit_event >= 0
    rows = exit_event[exited]
    fraction = np.full(rollouts.n, np.nan)
    fraction[exited] = events.position[rows] / np.maximum(rollouts.length[exited], 1)
    return PolicyOutcome(
        policy=policy, param=None if param is None else float(param),
        accuracy=float(correct.mean()) if rollouts.n else float("nan"),
        mean_tokens=float(tokens.mean()) if rollouts.n else float("nan"),
        saving=token_saving(tokens, rollouts.tokens),
        exit_rate=float(exited.mean()) if rollouts.n else float("nan"),
        exit_event=exit_event, exit_fraction=fraction,
    )


@dataclass(frozen=True, eq=False)
class ExitReport:
    """All policies on one test split, plus deltas skipped as too small for the calibration set."""

    outcomes: tuple[PolicyOutcome, ...]
    """One outcome per policy/parameter, LYNX first in delta order."""
    skipped_deltas: tuple[float, ...] = ()
    """Deltas whose quantile would be vacuous for this calibration set (only with skip_vacuous)."""

    def get(self, policy: str, param: float | None = None) -> PolicyOutcome:
        """The outcome of one policy (and parameter)."""
        for out in self.outcomes:
            if out.policy == policy and (param is None or (out.param is not None and np.isclose(out.param, param))):
                return out
        raise ThinklensError.of("policy", f"{policy} {param}", f"one of {[o.label for o in self.outcomes]}",
                                "pick a policy that was evaluated")

    def pareto(self) -> tuple[PolicyOutcome, ...]:
        """Outcomes on the accuracy-vs-tokens Pareto front, by increasing tokens."""
        tokens = np.array([o.mean_tokens for o in self.outcomes])
        acc = np.array([o.accuracy for o in self.outcomes])
        front = pareto_front(tokens, acc)
        return tuple(sorted((o for o, f in zip(self.outcomes, front) if f), key=lambda o: o.mean_tokens))

    def table(self) -> list[dict]:
        """One summary dict per outcome, with an ``on_pareto`` flag."""
        on = {id(o) for o in self.pareto()}
        return [{**o.summary(), "label": o.label, "on_pareto": id(o) in on} for o in self.outcomes]


def pareto_front(tokens: np.ndarray, accuracy: np.ndarray) -> np.ndarray:
    """Bool [point]: no other point has fewer-or-equal tokens and higher-or-equal accuracy, one strictly.

    Example:
        >>> pareto_front(np.array([10, 20, 15, 30]), np.array([0.5, 0.8, 0.4, 0.8])).tolist()
        [True, True, False, False]
    """
    t, a = np.asarray(tokens, dtype=np.float64), np.asarray(accuracy, dtype=np.float64)
    dominated = (t[None, :] <= t[:, None]) & (a[None, :] >= a[:, None]) \
        & ((t[None, :] < t[:, None]) | (a[None, :] > a[:, None]))  # [i, j]: j dominates i
    return ~dominated.any(axis=1)


def evaluate_exit_policies(events: EventTable, rollouts: RolloutTable, calibrator: MondrianCalibrator,
                           deltas: Sequence[float] = (0.01, 0.02, 0.03, 0.05, 0.10), *,
                           fractions: Sequence[float] = (0.25, 0.5, 0.75), threshold: float = 0.5,
                           skip_vacuous: bool = False) -> ExitReport:
    """LYNX at every delta and all baselines on one test split (disjoint from calibration).

    Args:
        events, rollouts: the test split.
        calibrator: fitted on the calibration split.
        deltas: the LYNX sweep.
        fractions: fixed-fraction baselines.
        threshold: the uncalibrated baseline's cut on p.
        skip_vacuous: skip (and list) deltas too small for the calibration set instead of raising.
    """
    outcomes, skipped = [], []
    for delta in deltas:
        try:
            calibrator.thresholds(delta)
        except ThinklensError:
            if not skip_vacuous:
                raise
            skipped.append(float(delta))
            continue
        outcomes.append(evaluate_policy("lynx", delta, events, rollouts,
                                        lynx_exits(events, rollouts, calibrator, delta)))
    outcomes.append(evaluate_policy("full", None, events, rollouts, np.full(rollouts.n, -1)))
    outcomes.append(evaluate_policy("first_cue", None, events, rollouts, first_cue_exits(events, rollouts)))
    for f in fractions:
        outcomes.append(evaluate_policy("fraction", f, events, rollouts, fraction_exits(events, rollouts, f)))
    outcomes.append(evaluate_policy("threshold", threshold, events, rollouts,
                                    threshold_exits(events, rollouts, threshold)))
    outcomes.append(evaluate_policy("oracle", None, events, rollouts, oracle_exits(events, rollouts)))
    return ExitReport(outcomes=tuple(outcomes), skipped_deltas=tuple(skipped))


@dataclass(frozen=True, eq=False)
class BaseRateCurve:
    """Share of events whose forced exit is correct, by relative position in the rollout."""

    edges: np.ndarray
    """Bin edges over position / length in [0, 1], [bin + 1]."""
    rate: np.ndarray
    """Label base rate per bin (nan when empty), [bin]."""
    count: np.ndarray
    """Events per bin, [bin]."""
    lower: np.ndarray
    """Clopper-Pearson 95% lower bound, [bin]."""
    upper: np.ndarray
    """Clopper-Pearson 95% upper bound, [bin]."""


def base_rate_by_position(events: EventTable, rollouts: RolloutTable, n_bins: int = 10) -> BaseRateCurve:
    """Label base rate vs relative event position: where in a rollout an exit starts to pay off.

    Example:
        >>> ev = EventTable(rollout=[0, 0, 0, 0], position=[1, 3, 6, 8], label=[0, 0, 1, 1],
        ...                 prob=[0.5] * 4, exit_tokens=[0] * 4)
        >>> base_rate_by_position(ev, RolloutTable([10], [1], [10]), n_bins=2).rate.tolist()
        [0.0, 1.0]
    """
    if n_bins < 1:
        raise ThinklensError.of("n_bins", n_bins, "an integer >= 1", "use 10")
    _check_tables(events, rollouts)
    rel = events.position / np.maximum(rollouts.length[events.rollout], 1)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    bins = np.clip(np.searchsorted(edges, rel, side="right") - 1, 0, n_bins - 1)
    count = np.bincount(bins, minlength=n_bins)
    hits = np.bincount(bins, weights=events.label, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(count > 0, hits / count, np.nan)
    lower, upper = np.full(n_bins, np.nan), np.full(n_bins, np.nan)
    for b in np.flatnonzero(count):
        lo, hi = clopper_pearson(np.array([hits[b]]), int(count[b]))
        lower[b], upper[b] = lo[0], hi[0]
    return BaseRateCurve(edges=edges, rate=rate, count=count, lower=lower, upper=upper)
