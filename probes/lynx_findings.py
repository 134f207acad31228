"""The findings of a LYNX run (shared/specs/controls.md), built with :mod:`thinklens.calibration.stats`.

Per delta in :data:`FINDING_DELTAS` (0.05 to 0.1, both ends included) three findings, each with its n, interval,
control and verdict:

- ``saving``: the share of the test rollouts' tokens LYNX saves (:func:`thinklens.probes.exits.token_saving`), with a
  percentile bootstrap interval over test rollouts, against no exit (0): ``effect`` only when the interval lies
  above 0, so a 0% saving is never an effect. ``extra`` holds the oracle's saving (first event whose forced exit is
  right: an upper bound) with its interval, and LYNX minus oracle paired over the same resampled rollouts.
- ``accuracy``: LYNX's accuracy against the full rollouts' on the same problems (McNemar): ``effect`` means a
  significant loss (``higher_is_effect=False``). ``extra["equivalence"]`` holds the paired accuracy change's TOST
  against the harm margin :data:`ACCURACY_MARGIN` stated beforehand (:func:`accuracy_equivalence`): a null setting
  passes only when the change is shown inside it.
- ``P(S={1}|y=0)``: the rate at which test events whose forced exit is wrong get the set {1}, with its exact
  (Clopper-Pearson) interval, against delta, decided by the one-sided exact binomial test of the bound at delta
  (``p``): ``effect`` means the per-event bound is rejected; ``no effect`` means it is not rejected by a test whose
  power against delta + :data:`~thinklens.probes.conformal.VIOLATION` is at least
  :data:`~thinklens.probes.conformal.MIN_POWER` (``extra["power"]``); ``too few samples`` means it is not rejected
  but the test was underpowered (not shown).

With the run's discrimination gate (:mod:`thinklens.probes.exit_gate`), one ``AUROC`` finding more: the probe's AUROC
at the calibration split's cue events against chance, ``effect`` when its interval lies above it (the gate opens; the
finding comes last); otherwise it comes first and its line says that LYNX abstains (no exits at any delta), with the
AUROC and its interval.

The ``accuracy`` and ``P(S={1}|y=0)`` claims are harms: their ``effect`` is a failure of LYNX, marked
``extra["harm"] = True`` so that no page shows it as a success.

Example:
    >>> import numpy as np
    >>> from thinklens.probes.conformal import MondrianCalibrator, validity_curve
    >>> from thinklens.probes.exits import EventTable, RolloutTable, evaluate_exit_policies
    >>> ro = RolloutTable(length=[100] * 40, correct=[1] * 40, tokens=[100] * 40)
    >>> ev = EventTable(rollout=np.repeat(np.arange(40), 2), position=[30, 60] * 40, label=[0, 1] * 40,
    ...                 prob=np.tile([0.1, 0.9], 40), exit_tokens=[33, 63] * 40)
    >>> cal = MondrianCalibrator.fit(np.r_[np.full(30, 0.1), np.full(30, 0.9)], np.r_[np.zeros(30), np.ones(30)])
    >>> report = evaluate_exit_policies(ev, ro, cal, (0.05, 0.1))
    >>> fs = lynx_findings(report, validity_curve(ev.prob, ev.label, cal, (0.05, 0.1)), ev, ro)
    >>> [(f.statistic, f.verdict) for f in fs[:3]]  # 40 negatives cannot show the bound to within 0.02
    [('saving', 'effect'), ('accuracy', 'no effect'), ('P(S={1}|y=0)', 'too few samples')]
    >>> round(fs[0].value, 2), fs[0].extra["oracle_saving"]
    (0.37, 0.37)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from thinklens.calibration.findings import MIN_N, Finding, headline, paired_finding, verdict_from_interval
from thinklens.calibration.stats import bootstrap_ci
from thinklens.calibration.tost import Equivalence, tost_mean
from thinklens.probes.conformal import ValidityCurve
from thinklens.probes.exit_gate import GATE_AUROC, INTERVAL, ExitGate
from thinklens.probes.exits import EventTable, ExitReport, RolloutTable, policy_costs

#: The deltas whose findings a LYNX run reports (lowest, highest; both included).
FINDING_DELTAS: tuple[float, float] = (0.05, 0.1)
SAVING, ACCURACY, VALIDITY, GATE = "saving", "accuracy", "P(S={1}|y=0)", "AUROC"
#: The harm margin on accuracy, stated beforehand: LYNX's paired accuracy change against the full rollouts counts as
#: no harm only when its 90% TOST interval lies inside +-2 points (a null once passed at -2.25 points).
ACCURACY_MARGIN = 0.02


def accuracy_equivalence(correct: np.ndarray, full_correct: np.ndarray, *, margin: float = ACCURACY_MARGIN,
                         alpha: float = 0.05) -> Equivalence:
    """TOST of LYNX's paired accuracy change (``correct - full_correct`` per rollout, each 0/1) against
    ``[-margin, +margin]`` (:func:`thinklens.calibration.tost.tost_mean`).

    When every rollout's change is the same (no discordant pair) the t interval has zero width at any n; the interval
    is then the exact one-sided bound on the discordance rate, ``1 - alpha ** (1 / n)`` either side (no loss among
    60 rollouts does not show a loss rate below 2 points: its bound is 0.049).

    Example:
        >>> eq = accuracy_equivalence(np.ones(400), np.ones(400))
        >>> eq.ci[1] < 0.02 and eq.equivalent, accuracy_equivalence(np.ones(60), np.ones(60)).equivalent
        (True, False)
        >>> lost = np.r_[np.zeros(9), np.ones(391)]  # 9 of 400 rollouts lost by exiting early, none gained
        >>> eq = accuracy_equivalence(lost, np.ones(400)); round(eq.mean, 4), eq.equivalent
        (-0.0225, False)
    """
    d = np.asarray(correct, dtype=np.float64) - np.asarray(full_correct, dtype=np.float64)  # [rollout]
    n = int(d.shape[0])
    if n < 2:
        return Equivalence(float(d.mean()) if n else float("nan"), (-1.0, 1.0), margin, 1.0, n)
    return tost_mean(d, margin=margin, alpha=alpha, bounds=(-1.0, 1.0))  # exact where no rollout's change differs


def validity_verdict(validity: ValidityCurve, i: int) -> str:
    """The verdict of the claim "P(S={1}|y=0) exceeds delta" at ``validity.deltas[i]``: ``effect`` when the one-sided
    exact binomial test rejects the bound, ``no effect`` when it does not and had the power to, ``too few samples``
    when it does not but was underpowered (or fewer than MIN_N negatives)."""
    if validity.n_neg < MIN_N:
        return "too few samples"
    return {"rejected": "effect", "shown": "no effect"}.get(validity.verdict(i), "too few samples")


def saving_interval(tokens: np.ndarray, full_tokens: np.ndarray, *, baseline_tokens: np.ndarray | None = None,
                    seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval, over rollouts, of the token saving ``1 - sum(tokens) / sum(full_tokens)``;
    with ``baseline_tokens``, of the saving minus the baseline's saving on the same resampled rollouts.

    Example:
        >>> saving_interval(np.full(20, 50.0), np.full(20, 100.0))
        (0.5, 0.5)
    """
    t, f = np.asarray(tokens, dtype=np.float64), np.asarray(full_tokens, dtype=np.float64)
    b = None if baseline_tokens is None else np.asarray(baseline_tokens, dtype=np.float64)

    def stat(idx: np.ndarray, axis: int) -> np.ndarray:  # idx: [n_boot, n] resampled rollout ids
        rows = idx.astype(np.int64)
        full = np.maximum(f[rows].sum(axis=axis), 1e-12)  # [n_boot]
        saving = 1.0 - t[rows].sum(axis=axis) / full
        return saving if b is None else saving - (1.0 - b[rows].sum(axis=axis) / full)

    return bootstrap_ci(np.arange(t.shape[0], dtype=np.float64), stat=stat, seed=seed)


def in_range(delta: float, deltas: tuple[float, float] = FINDING_DELTAS) -> bool:
    """Whether ``delta`` lies in the closed range ``deltas`` (up to float rounding)."""
    return deltas[0] - 1e-9 <= float(delta) <= deltas[1] + 1e-9


def gate_finding(gate: ExitGate) -> Finding:
    """The discrimination gate as a finding (:mod:`thinklens.probes.exit_gate`): the probe's AUROC at the calibration
    split's cue events against chance, ``effect`` when its interval lies above it on at least MIN_N events (the gate
    opens); otherwise ``extra["otherwise"]`` says in one line that LYNX abstains, with the AUROC and its interval.

    Example:
        >>> from thinklens.calibration.findings import finding_sentence
        >>> from thinklens.probes.exit_gate import ExitGate
        >>> print(finding_sentence(gate_finding(ExitGate(0.52, (0.31, 0.73), 6, 267, 212))))  # doctest: +NORMALIZE_WHITESPACE
        LYNX abstains: no exits at any delta (saving 0, accuracy unchanged): the probe does not tell right from wrong
        forced exits above chance 0.5 at the calibration split's cue events: AUROC 0.52, 95% interval [0.31, 0.73],
        n=273 events (6 right, 267 wrong) from 212 rollouts (no effect; AUROC 0.52 [0.31, 0.73] against chance 0.5, n=273)
    """
    floor = GATE_AUROC if gate.min_auroc is None else gate.min_auroc
    verdict = verdict_from_interval(gate.ci, floor, n=gate.n) if not np.isnan(gate.ci[0]) else "too few samples"
    if verdict == "effect" and not gate.discriminates:  # pragma: no cover - one rule decides both
        raise RuntimeError("the gate and its finding disagree")
    extra = {"gate": "off" if gate.min_auroc is None else ("open" if gate.open else "closed"), "harm": False,
             "n_pos": gate.n_pos, "n_neg": gate.n_neg, "n_rollouts": gate.n_rollouts, "interval": INTERVAL,
             "statement": gate.statement()}
    if verdict != "effect":
        extra["otherwise"] = gate.statement()
    return Finding(f"the probe tells right from wrong forced exits at {gate.events}, so LYNX may exit", GATE,
                   gate.auroc, gate.ci, gate.n, "chance", floor, verdict, extra=extra)


def lynx_findings(report: ExitReport, validity: ValidityCurve, events: EventTable, rollouts: RolloutTable, *,
                  deltas: tuple[float, float] = FINDING_DELTAS, seed: int = 0, gate: ExitGate | None = None) -> list[Finding]:
    """The saving, accuracy and validity findings of every LYNX delta of ``report`` inside ``deltas`` (module doc);
    with ``gate``, its finding (:func:`gate_finding`): first when the gate is closed (the run's headline is that LYNX
    abstained), last otherwise."""
    full_correct, full_tokens = policy_costs(events, rollouts, report.get("full").exit_event)
    oracle = report.get("oracle")
    _, oracle_tokens = policy_costs(events, rollouts, oracle.exit_event)
    oracle_ci = saving_interval(oracle_tokens, full_tokens, seed=seed)
    out: list[Finding] = []
    for i, d in enumerate(validity.deltas.tolist()):
        if not in_range(d, deltas):
            continue
        o = report.get("lynx", d)
        correct, tokens = policy_costs(events, rollouts, o.exit_event)
        ci = saving_interval(tokens, full_tokens, seed=seed)
        vs_oracle = saving_interval(tokens, full_tokens, baseline_tokens=oracle_tokens, seed=seed)
        out.append(Finding(
            f"LYNX at delta {d:g} saves reasoning tokens", SAVING, o.saving, ci, rollouts.n, "no exit (full rollouts)",
            0.0, verdict_from_interval(ci, 0.0, n=rollouts.n),
            extra={"delta": d, "n_exit": o.n_exit, "interval": "bootstrap over test rollouts",
                   "oracle_saving": oracle.saving, "oracle_ci": list(oracle_ci), "minus_oracle": o.saving - oracle.saving,
                   "minus_oracle_ci": list(vs_oracle)}))
        acc = paired_finding(f"LYNX at delta {d:g} loses accuracy against the full rollouts", correct, full_correct,
                             control="full rollouts", statistic=ACCURACY, binary=True, higher_is_effect=False, seed=seed)
        eq = accuracy_equivalence(correct, full_correct)
        out.append(dataclasses.replace(acc, extra={
            **acc.extra, "delta": d, "harm": True,
            "equivalence": {"statistic": "accuracy change (LYNX - full, paired per rollout)", "test": "TOST",
                            "change": eq.mean, "ci": list(eq.ci), "level": 0.9, "margin": eq.margin, "p": eq.p,
                            "within_margin": eq.equivalent}}))
        lo, hi = float(validity.lower[i]), float(validity.upper[i])
        out.append(Finding(
            f"P(S={{1}}|y=0) exceeds delta {d:g} (the per-event bound is rejected)", VALIDITY, float(validity.rate[i]),
            (lo, hi), validity.n_neg, "delta", float(d), validity_verdict(validity, i), p=float(validity.p_value[i]),
            extra={"delta": d, "harm": True, "interval": "clopper-pearson",
                   "test": "one-sided exact binomial at delta (scipy.stats.binomtest)",
                   "n_neg_set_one": int(validity.n_neg_set_one[i]), "power": float(validity.power[i]),
                   "violation": validity.violation, "min_power": validity.min_power,
                   "validity": validity.verdict(i), "statement": validity.statement(i),
                   "otherwise": _validity_otherwise(validity, i)}))
    if gate is not None:
        out = [gate_finding(gate)] + out if not gate.open else out + [gate_finding(gate)]
    return out


def _validity_otherwise(validity: ValidityCurve, i: int) -> str:
    """What a validity finding whose verdict is not ``effect`` says instead (the page headlines read it)."""
    d = float(validity.deltas[i])
    if validity.verdict(i) == "shown":
        return (f"the bound P(S={{1}}|y=0) <= {d:g} holds to within {validity.violation:g} (not rejected, power "
                f"{validity.power[i]:.2f} against {d + validity.violation:g})")
    return (f"the bound P(S={{1}}|y=0) <= {d:g} is not shown: not rejected, but the test's power against "
            f"{d + validity.violation:g} is {validity.power[i]:.2f} at n={validity.n_neg} (underpowered)")


def find(findings: Sequence[Finding | dict], statistic: str, delta: float) -> Finding | dict:
    """The finding of ``statistic`` at ``delta`` (a Finding or its dict form, as a summary holds it)."""
    for f in findings:
        extra = f.extra if isinstance(f, Finding) else f.get("extra", {})
        stat = f.statistic if isinstance(f, Finding) else f["statistic"]
        if stat == statistic and abs(float(extra.get("delta", -1)) - float(delta)) < 1e-9:
            return f
    raise KeyError(f"no {statistic} finding at delta {delta}")


def headline_lines(findings: Sequence[Finding | dict]) -> list[str]:
    """One headline per delta (:func:`thinklens.calibration.findings.headline`: a saving whose verdict is not ``effect`` is never
    stated as one), then every finding's own line."""
    doc = [f.to_dict() if isinstance(f, Finding) else f for f in findings]
    lines = [f["extra"]["statement"] for f in doc if f["statistic"] == GATE]
    for f in doc:
        if f["statistic"] != SAVING:
            continue
        d, ci, x = f["extra"]["delta"], f["ci"], f["extra"]
        acc = find(doc, ACCURACY, d)
        val = find(doc, VALIDITY, d)
        said = (f"{f['value']:.1%} [{ci[0]:.1%}, {ci[1]:.1%}] of tokens, n={f['n']} rollouts, oracle "
                f"{x['oracle_saving']:.1%}")
        eq = acc.get("extra", {}).get("equivalence")
        harm = ("" if eq is None else f", change {100 * eq['change']:+.1f} points [{100 * eq['ci'][0]:+.1f}, "
                f"{100 * eq['ci'][1]:+.1f}] {'within' if eq['within_margin'] else 'not shown within'} the harm margin "
                f"+-{100 * eq['margin']:g}")
        lines.append(f"LYNX δ={d:g}: " + headline(f, effect=f"saves {said}", otherwise=f"no token saving shown ({said})")
                     + f"; accuracy {acc['value']:.3f} vs full {acc['control_value']:.3f}: "
                     + headline(acc, effect="a significant loss", otherwise="no significant loss") + harm
                     + "; " + headline(val, effect=f"the bound P(S={{1}}|y=0) <= {d:g} is rejected",
                                       otherwise=_validity_words(val, d)))
    return lines


def _validity_words(val: dict, delta: float) -> str:
    x = val.get("extra", {})
    if "power" not in x:  # a summary written before power was stored: not rejected is all it said
        return f"the data do not reject P(S={{1}}|y=0) <= {delta:g}"
    return x.get("otherwise") or f"P(S={{1}}|y=0) <= {delta:g} not rejected, power {x['power']:.2f}"
