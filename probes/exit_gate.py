"""The discrimination gate of LYNX's exits: a probe that cannot tell right from wrong forced exits abstains.

The conformal bound holds for any probe, even one at chance: a probe whose p says nothing still puts about delta of
the events whose forced exit is wrong in the set {1}, and each of those exits costs an answer (tiny-r1's
probe, AUROC 0.52 at its cues, lost 2.4 points at delta 0.05 and 8.3 at 0.1 while the bound held). So LYNX exits
only when the probe's AUROC on held-out events of the kind it exits at has a 95% interval whose lower end lies above
``min_auroc`` (0.5: chance). The events are the calibration split's real cue events: never seen in training (the
probe's own validation share mixes in fallback events, which a probe can tell apart where it cannot tell the cues:
0.95 there against 0.52 at the cues on tiny-r1), and of the kind the test rollouts are scanned at. A closed gate
removes exits, never adds one, so the per-event bound still holds.

The interval (stated): the AUROC (Mann-Whitney, ties half) plus or minus ``z * SE`` at the two-sided level, where SE
is the larger of two standard errors: DeLong's, clustered by rollout (Obuchowski 1997, Biometrics 53: the events of
one rollout are correlated), and Hanley and McNeil's (1982, Radiology 143), which keeps its level with few events of
a class where DeLong's is too narrow. On simulated probes at chance (300 rollouts, 5-30 positive events, correlated
within a rollout) DeLong's alone opened the gate 4-7% of the time against the nominal 2.5%, the larger of the two
2-3%; a probe at AUROC ~0.75 with 14 positives opened it 90% of the time. With fewer than
:data:`~thinklens.calibration.findings.MIN_N` events, or fewer than 2 of a class, the gate stays closed.

Example:
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 300); rollout = np.arange(300) // 2
    >>> good = auroc_gate(np.clip(0.3 * y + 0.7 * rng.random(300), 0, 1), y, rollout)
    >>> chance = auroc_gate(rng.random(300), y, rollout)
    >>> good.open, chance.open, round(chance.auroc, 2), [round(x, 2) for x in chance.ci]
    (True, False, 0.53, [0.46, 0.59])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import norm, rankdata

from thinklens.calibration.findings import MIN_N
from thinklens.errors import ThinklensError
from thinklens.probes.conformal import MondrianCalibrator

#: The default gate: the AUROC's interval must lie above chance.
GATE_AUROC = 0.5
INTERVAL = ("AUROC +- z * SE, SE the larger of DeLong's clustered by rollout (Obuchowski 1997) and Hanley-McNeil's "
            "(1982)")


def auroc_placements(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's placement values: per positive the share of negatives it ranks above, per negative the share of
    positives that rank above it (ties count half); both average to the AUROC.

    Args:
        p: [event] scores; y: [event] 0/1 labels, both classes present.

    Example:
        >>> v10, v01 = auroc_placements(np.array([0.1, 0.6, 0.6, 0.9]), np.array([0, 0, 1, 1]))
        >>> v10.tolist(), v01.tolist(), float(v10.mean())
        ([0.75, 1.0], [1.0, 0.75], 0.875)
    """
    pos, neg = y == 1, y == 0
    r_all = rankdata(p)  # [event] average ranks: ties count half
    v10 = (r_all[pos] - rankdata(p[pos])) / neg.sum()  # [pos] negatives below (+ half the tied ones)
    v01 = 1.0 - (r_all[neg] - rankdata(p[neg])) / pos.sum()  # [neg] positives above (+ half the tied ones)
    return v10, v01


def delong_clustered_se(p: np.ndarray, y: np.ndarray, groups: np.ndarray) -> float:
    """Standard error of the AUROC by DeLong's method with clusters (Obuchowski 1997): the placement values summed per
    cluster (a rollout), so events of one rollout vary together; inf with fewer than 2 clusters.

    With every event its own cluster it is DeLong's unclustered variance up to the factor ``I / (I - 1)`` in place of
    ``n_c / (n_c - 1)`` per class.

    Example:
        >>> p, y = np.array([0.2, 0.7, 0.4, 0.9, 0.3, 0.6]), np.array([0, 1, 0, 1, 1, 0])
        >>> round(delong_clustered_se(p, y, np.arange(6)), 4)  # each event its own rollout
        0.2222
        >>> round(delong_clustered_se(p, y, np.array([0, 0, 1, 1, 2, 2])), 4)  # pairs that vary together: wider
        0.294
    """
    v10, v01 = auroc_placements(p, y)
    a = float(v10.mean())
    _, g = np.unique(groups, return_inverse=True)  # [event] cluster index
    n_clusters = int(g.max()) + 1 if g.size else 0
    if n_clusters < 2:
        return math.inf
    pos, neg = y == 1, y == 0
    m, n = np.bincount(g[pos], minlength=n_clusters), np.bincount(g[neg], minlength=n_clusters)  # [cluster]
    d10 = np.bincount(g[pos], weights=v10, minlength=n_clusters) - m * a  # [cluster]
    d01 = np.bincount(g[neg], weights=v01, minlength=n_clusters) - n * a  # [cluster]
    M, N, c = float(m.sum()), float(n.sum()), n_clusters / (n_clusters - 1)
    var = c * ((d10 @ d10) / M**2 + (d01 @ d01) / N**2 + 2.0 * (d10 @ d01) / (M * N))
    return math.sqrt(max(var, 0.0))


def hanley_mcneil_se(auroc: float, n_pos: int, n_neg: int) -> float:
    """Hanley and McNeil's (1982) standard error of an AUROC from its value and class sizes.

    Example:
        >>> round(hanley_mcneil_se(0.8, 3, 270), 3)
        0.155
    """
    a = float(auroc)
    q1, q2 = a / (2.0 - a), 2.0 * a * a / (1.0 + a)
    var = (a * (1.0 - a) + (n_pos - 1) * (q1 - a * a) + (n_neg - 1) * (q2 - a * a)) / (n_pos * n_neg)
    return math.sqrt(max(var, 0.0))


@dataclass(frozen=True)
class ExitGate:
    """The probe's discrimination at held-out cue events and whether LYNX may exit on it."""

    auroc: float
    """AUROC of the probe's p on the events (nan with fewer than 2 of a class)."""
    ci: tuple[float, float]
    """Its interval at ``confidence`` (:data:`INTERVAL`); (nan, nan) without one."""
    n_pos: int
    """Events whose forced exit is right (y = 1)."""
    n_neg: int
    """Events whose forced exit is wrong (y = 0)."""
    n_rollouts: int
    """Rollouts the events come from (the clusters of the interval)."""
    min_auroc: float | None = GATE_AUROC
    """The interval's lower end must lie above this for exits; None: the gate is off (always open)."""
    confidence: float = 0.95
    """Level of the two-sided interval."""
    events: str = "the calibration split's cue events"
    """Which events it was measured on, in words."""
    se: dict[str, float] = field(default_factory=dict)
    """The two standard errors (``delong_clustered``, ``hanley_mcneil``); the interval uses the larger."""

    @property
    def n(self) -> int:
        """Events measured."""
        return self.n_pos + self.n_neg

    @property
    def discriminates(self) -> bool:
        """Whether the interval lies above ``min_auroc`` (0.5 when the gate is off) on at least MIN_N events."""
        floor = GATE_AUROC if self.min_auroc is None else self.min_auroc
        return self.n >= MIN_N and not math.isnan(self.ci[0]) and self.ci[0] > floor

    @property
    def open(self) -> bool:
        """Whether LYNX may exit: the gate is off, or the probe discriminates."""
        return self.min_auroc is None or self.discriminates

    def statement(self) -> str:
        """The gate in one line, with the AUROC, its interval and n.

        Example:
            >>> print(ExitGate(0.52, (0.31, 0.73), 6, 267, 212).statement())  # doctest: +NORMALIZE_WHITESPACE
            LYNX abstains: no exits at any delta (saving 0, accuracy unchanged): the probe does not tell right from
            wrong forced exits above chance 0.5 at the calibration split's cue events: AUROC 0.52, 95% interval
            [0.31, 0.73], n=273 events (6 right, 267 wrong) from 212 rollouts
        """
        floor = GATE_AUROC if self.min_auroc is None else self.min_auroc
        lo, hi = self.ci
        interval = "no interval" if math.isnan(lo) else f"{self.confidence:.0%} interval [{lo:.3g}, {hi:.3g}]"
        numbers = (f"AUROC {self.auroc:.3g}, {interval}, n={self.n} events ({self.n_pos} right, {self.n_neg} wrong) "
                   f"from {self.n_rollouts} rollouts")
        if self.min_auroc is None:
            return f"the discrimination gate is off: LYNX exits whatever the probe's discrimination at {self.events}: {numbers}"
        if self.open:
            return f"LYNX may exit: the probe tells right from wrong forced exits above chance {floor:g} at {self.events}: {numbers}"
        why = "" if self.n >= MIN_N else f" (fewer than {MIN_N} events)"
        return (f"LYNX abstains: no exits at any delta (saving 0, accuracy unchanged): the probe does not tell right from "
                f"wrong forced exits above chance {floor:g} at {self.events}{why}: {numbers}")

    def to_dict(self) -> dict:
        """The summary's ``exit_gate`` entry (nan -> None)."""
        def num(x: float) -> float | None:
            return None if math.isnan(float(x)) else float(x)

        return {"open": self.open, "min_auroc": self.min_auroc, "auroc": num(self.auroc),
                "ci": [num(self.ci[0]), num(self.ci[1])], "confidence": self.confidence, "n_pos": self.n_pos,
                "n_neg": self.n_neg, "n_rollouts": self.n_rollouts, "events": self.events, "interval": INTERVAL,
                "se": {k: num(v) for k, v in self.se.items()}, "statement": self.statement()}


def auroc_gate(p: np.ndarray, y: np.ndarray, groups: np.ndarray, *, min_auroc: float | None = GATE_AUROC,
               confidence: float = 0.95, events: str = "the calibration split's cue events") -> ExitGate:
    """Measure the probe's AUROC with its interval (:data:`INTERVAL`) and decide the gate.

    Args:
        p: [event] probe probabilities on held-out events of the kind LYNX exits at.
        y: [event] forced-exit labels (1 = right).
        groups: [event] rollout of each event (the clusters of the interval).
        min_auroc: the lower end of the interval must lie above this (None: the gate is off).
        confidence: level of the two-sided interval.
        events: which events these are, in words (the finding's line says it).
    """
    p, y, groups = np.asarray(p, dtype=np.float64), np.asarray(y), np.asarray(groups)
    if p.ndim != 1 or y.shape != p.shape or groups.shape != p.shape:
        raise ThinklensError.of("gate events", f"p {p.shape}, y {y.shape}, groups {groups.shape}",
                                "three 1-d arrays of one length (one probability, label and rollout per event)",
                                "pass predict_proba(X)[:, 1], the forced-exit labels and the rollout ids")
    if y.size and not set(np.unique(y).tolist()) <= {0, 1}:
        raise ThinklensError.of("gate labels", sorted(set(np.unique(y).tolist()))[:5], "0/1 forced-exit labels",
                                "label an event 1 when its forced exit answers right")
    if min_auroc is not None and not 0.5 <= float(min_auroc) < 1.0:
        raise ThinklensError.of("gate_auroc", min_auroc, "None or an AUROC in [0.5, 1)",
                                f"use {GATE_AUROC} (chance) or None to turn the gate off")
    if not 0.0 < confidence < 1.0:
        raise ThinklensError.of("confidence", confidence, "a level in (0, 1)", "use 0.95")
    y = y.astype(np.int64)
    n_pos, n_neg = int(y.sum()), int(y.size - y.sum())
    n_rollouts = int(np.unique(groups).size)
    kw = dict(n_pos=n_pos, n_neg=n_neg, n_rollouts=n_rollouts, min_auroc=min_auroc, confidence=confidence, events=events)
    if min(n_pos, n_neg) < 2:
        return ExitGate(float("nan"), (float("nan"), float("nan")), **kw)
    v10, _ = auroc_placements(p, y)
    a = float(v10.mean())
    se = {"delong_clustered": delong_clustered_se(p, y, groups), "hanley_mcneil": hanley_mcneil_se(a, n_pos, n_neg)}
    half = float(norm.ppf(0.5 + confidence / 2.0)) * max(se.values())
    ci = (max(0.0, a - half), min(1.0, a + half)) if math.isfinite(half) else (0.0, 1.0)
    return ExitGate(a, ci, se=se, **kw)


@dataclass(frozen=True, eq=False)
class GatedCalibrator(MondrianCalibrator):
    """A Mondrian calibrator behind an :class:`ExitGate`: the same thresholds and prediction sets, but no event is
    declared safe to exit (the set {1}) while the gate is closed.

    Example:
        >>> cal = MondrianCalibrator.fit(np.r_[np.full(20, 0.9), np.full(20, 0.1)], np.r_[np.ones(20), np.zeros(20)])
        >>> closed = GatedCalibrator.behind(cal, ExitGate(0.5, (0.4, 0.6), 20, 20, 40))
        >>> cal.exit_mask(np.array([0.95]), 0.1).tolist(), closed.exit_mask(np.array([0.95]), 0.1).tolist()
        ([True], [False])
    """

    gate: ExitGate = field(default_factory=lambda: ExitGate(float("nan"), (float("nan"),) * 2, 0, 0, 0, None))
    """The gate (default: off, as a plain calibrator)."""

    @classmethod
    def behind(cls, calibrator: MondrianCalibrator, gate: ExitGate) -> GatedCalibrator:
        """``calibrator`` behind ``gate``."""
        return cls(scores_pos=calibrator.scores_pos, scores_neg=calibrator.scores_neg, gate=gate)

    def exit_mask(self, p: np.ndarray, delta: float) -> np.ndarray:
        """Bool [n]: the set is exactly {1} and the gate is open."""
        mask = super().exit_mask(p, delta)
        return mask if self.gate.open else np.zeros_like(mask)
