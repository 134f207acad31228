"""LYNX's discrimination gate and its calibration negatives, against oracles.

- The AUROC interval (probes/exit_gate.py): the point value is sklearn's, the clustered DeLong standard error equals a
  naive double loop over the pairs and the clusters, and a probe at chance opens the gate at about the interval's
  one-sided level, while a probe that tells the classes apart opens it.
- A closed gate: no exits at any delta (saving 0, accuracy unchanged), the bound trivially held, and the findings say
  so in one line with the AUROC and its interval.
- The calibration negatives (probes/lynx_splits.py ``SplitData.calibration_events``): only real cue events calibrate
  the class that carries the per-event bound. The oracle is the conformal identity on uniform scores.

Mutants these tests kill (by name):

- "gate opens on the point AUROC (interval ignored)": ``ExitGate.discriminates`` reading ``self.auroc`` for
  ``self.ci[0]`` (:func:`test_a_probe_at_chance_rarely_opens_the_gate`);
- "closed gate still exits": ``GatedCalibrator.exit_mask`` returning the plain mask
  (:func:`test_a_closed_gate_makes_no_exits_and_says_so`);
- "fallback negatives calibrate the exits (the reference's calibration)": ``calibration_events`` returning every
  event (:func:`test_calibration_negatives_at_cues_keep_the_bound_where_fallbacks_break_it`).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from thinklens.calibration.findings import findings_doc
from thinklens.errors import ThinklensError
from thinklens.probes.conformal import MondrianCalibrator, validity_curve
from thinklens.probes.datasets import ForcedExits
from thinklens.probes.exit_gate import ExitGate, GatedCalibrator, auroc_gate, delong_clustered_se, hanley_mcneil_se
from thinklens.probes.exits import EventTable, RolloutTable, evaluate_exit_policies
from thinklens.probes.lynx import CueEvent
from thinklens.probes.lynx_findings import GATE, headline_lines, lynx_findings
from thinklens.probes.lynx_splits import SplitData


def _naive_clustered_delong(p: np.ndarray, y: np.ndarray, groups: np.ndarray) -> float:
    """Obuchowski's (1997) variance written out with loops over every pair and every cluster."""
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    psi = lambda a, b: 1.0 if a > b else (0.5 if a == b else 0.0)  # noqa: E731
    v10 = {i: sum(psi(p[i], p[j]) for j in neg) / len(neg) for i in pos}
    v01 = {j: sum(psi(p[i], p[j]) for i in pos) / len(pos) for j in neg}
    a = sum(v10.values()) / len(pos)
    clusters = sorted(set(groups.tolist()))
    big_i, m_tot, n_tot = len(clusters), len(pos), len(neg)
    s10 = s01 = s11 = 0.0
    for k in clusters:
        m_k = sum(1 for i in pos if groups[i] == k)
        n_k = sum(1 for j in neg if groups[j] == k)
        d10 = sum(v10[i] for i in pos if groups[i] == k) - m_k * a
        d01 = sum(v01[j] for j in neg if groups[j] == k) - n_k * a
        s10, s01, s11 = s10 + d10 * d10, s01 + d01 * d01, s11 + d10 * d01
    c = big_i / (big_i - 1)
    return math.sqrt(c * (s10 / m_tot**2 + s01 / n_tot**2 + 2 * s11 / (m_tot * n_tot)))


def test_auroc_and_its_clustered_standard_error_match_the_naive_formulas():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 60)
    p = np.round(np.clip(0.2 * y + rng.random(60), 0, 1), 1)  # rounded: ties, counted half
    groups = rng.integers(0, 20, 60)  # [event] rollout: 1-6 events each
    gate = auroc_gate(p, y, groups)
    assert gate.auroc == pytest.approx(roc_auc_score(y, p))
    assert delong_clustered_se(p, y, groups) == pytest.approx(_naive_clustered_delong(p, y, groups))
    assert gate.se["delong_clustered"] == pytest.approx(_naive_clustered_delong(p, y, groups))
    # Hanley-McNeil (1982) by its formula; the interval takes the larger standard error
    a, n1, n0 = gate.auroc, gate.n_pos, gate.n_neg
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    hm = math.sqrt((a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n0 - 1) * (q2 - a * a)) / (n1 * n0))
    assert hanley_mcneil_se(a, n1, n0) == pytest.approx(hm)
    half = 1.959963984540054 * max(hm, gate.se["delong_clustered"])
    assert gate.ci == pytest.approx((max(0.0, a - half), min(1.0, a + half)))


def test_a_probe_at_chance_rarely_opens_the_gate():
    """Scores unrelated to the labels, 5-30 positives among 300 events of 250 rollouts whose events vary together
    (tiny-r1's calibration cues hold about that many right forced exits). The 95% interval's lower end lies above 0.5
    about 2.5% of the time; the point AUROC lies above 0.5 half the time (kills "gate opens on the point AUROC")."""
    rng = np.random.default_rng(1)
    opened, tries = 0, 400
    for _ in range(tries):
        groups = np.sort(rng.integers(0, 250, 300))  # [event]
        shared = rng.normal(size=250)[groups]  # a rollout's events vary together
        y = (rng.random(300) < rng.uniform(0.02, 0.1)).astype(int)
        if y.sum() < 2:
            y[:2] = 1
        p = 1 / (1 + np.exp(-(0.8 * shared + 0.6 * rng.normal(size=300))))
        opened += auroc_gate(p, y, groups).open
    assert opened / tries <= 0.05, opened


def test_a_probe_that_tells_the_classes_apart_opens_the_gate_and_the_gate_off_is_always_open():
    rng = np.random.default_rng(2)
    y = np.r_[np.ones(40, dtype=int), np.zeros(260, dtype=int)]
    p = 1 / (1 + np.exp(-(1.5 * y + rng.normal(size=300))))
    gate = auroc_gate(p, y, np.arange(300) // 2)
    assert gate.open and gate.ci[0] > 0.5 and gate.statement().startswith("LYNX may exit")
    off = auroc_gate(rng.random(300), y, np.arange(300) // 2, min_auroc=None)
    assert off.open and not off.discriminates and "gate is off" in off.statement()
    stricter = auroc_gate(p, y, np.arange(300) // 2, min_auroc=0.95)
    assert not stricter.open and "above chance 0.95" in stricter.statement()


def test_too_few_events_of_a_class_close_the_gate():
    y = np.r_[1, np.zeros(50, dtype=int)]  # one right forced exit: no AUROC to speak of
    gate = auroc_gate(np.r_[0.99, np.full(50, 0.01)], y, np.arange(51))
    assert not gate.open and math.isnan(gate.auroc) and "no interval" in gate.statement()
    few = auroc_gate(np.array([0.9, 0.8, 0.1, 0.2, 0.3]), np.array([1, 1, 0, 0, 0]), np.arange(5))
    assert not few.open and "fewer than 10 events" in few.statement()
    assert gate.to_dict()["auroc"] is None and gate.to_dict()["open"] is False


@pytest.mark.parametrize("kw,needle", [
    (dict(p=np.zeros(3), y=np.zeros(2), groups=np.zeros(3)), "bad gate events"),
    (dict(p=np.zeros(3), y=np.array([0, 1, 2]), groups=np.zeros(3)), "bad gate labels"),
    (dict(p=np.zeros(3), y=np.array([0, 1, 0]), groups=np.zeros(3), min_auroc=0.3), "bad gate_auroc"),
    (dict(p=np.zeros(3), y=np.array([0, 1, 0]), groups=np.zeros(3), confidence=1.0), "bad confidence"),
])
def test_bad_gate_input_is_a_clear_error(kw, needle):
    with pytest.raises(ThinklensError, match=needle):
        auroc_gate(**kw)


@pytest.mark.parametrize("value", [0.3, 1.0, "high"])
def test_the_job_config_refuses_a_bad_gate(value):
    from thinklens.probes.config import LynxJobConfig

    with pytest.raises(ThinklensError, match="bad gate_auroc.*gate-auroc none|bad gate_auroc.*gate_auroc=None"):
        LynxJobConfig(gate_auroc=value)
    assert LynxJobConfig().gate_auroc == 0.5 and LynxJobConfig(gate_auroc=None).gate_auroc is None


def _tables(n: int, rng: np.random.Generator) -> tuple[EventTable, RolloutTable]:
    """``n`` rollouts, two cues each: the first before the answer (y = 0), the second after it (y = 1)."""
    ev = EventTable(rollout=np.repeat(np.arange(n), 2), position=[20, 40] * n, label=[0, 1] * n,
                    prob=rng.random(2 * n), exit_tokens=[23, 43] * n)
    return ev, RolloutTable(length=[100] * n, correct=[1] * n, tokens=[100] * n)


def test_a_closed_gate_makes_no_exits_and_says_so():
    """A probe at chance (uniform scores): the conformal sets still put about delta of the wrong-exit cues in {1}, and
    LYNX would exit there; behind a closed gate it makes none, at every delta: saving 0, accuracy unchanged, no event
    declared safe. Kills "closed gate still exits"."""
    rng = np.random.default_rng(3)
    ev, ro = _tables(400, rng)
    conformal = MondrianCalibrator.fit(rng.random(400), np.r_[np.ones(200), np.zeros(200)].astype(int))
    gate = auroc_gate(rng.random(300), rng.integers(0, 2, 300), np.arange(300))
    assert not gate.open
    deltas = (0.05, 0.1)
    ungated = evaluate_exit_policies(ev, ro, conformal, deltas)
    assert all(ungated.get("lynx", d).n_exit > 0 for d in deltas)  # what the gate stops
    gated = GatedCalibrator.behind(conformal, gate)
    assert gated.thresholds(0.1) == conformal.thresholds(0.1)
    report = evaluate_exit_policies(ev, ro, gated, deltas)
    validity = validity_curve(ev.prob, ev.label, gated, deltas)
    for d in deltas:
        o = report.get("lynx", d)
        assert o.n_exit == 0 and o.saving == 0.0 and o.accuracy == report.get("full").accuracy
    assert validity.n_neg_set_one.tolist() == [0, 0]
    fs = findings_doc(lynx_findings(report, validity, ev, ro, gate=gate))
    assert fs[0]["statistic"] == GATE and fs[0]["verdict"] != "effect"  # the headline: LYNX abstained
    line = headline_lines(fs)[0]
    assert line.startswith("LYNX abstains: no exits at any delta (saving 0, accuracy unchanged)")
    assert f"AUROC {gate.auroc:.3g}" in line and f"[{gate.ci[0]:.3g}, {gate.ci[1]:.3g}]" in line
    told = auroc_gate(0.5 * ev.prob + 0.5 * ev.label, ev.label, ev.rollout)  # a probe that tells them apart
    opened = lynx_findings(report, validity, ev, ro, gate=told)
    assert opened[-1].statistic == GATE and opened[-1].verdict == "effect"  # open: the gate's finding comes last


def _split(rng: np.random.Generator, n_rollouts: int) -> tuple[SplitData, np.ndarray]:
    """A calibration split as the zoo's has it: a cue-less rollout gets a fallback event, and a wrong forced exit
    there looks unlike one at a cue (the probe scores it low: U(0, 0.2) against U(0, 1) at cues). Half the rollouts
    have a cue, wrong at the cue with probability 0.7; positives score U(0, 1) (their threshold is then about
    1 - delta), and so do the test negatives, which are cues. Returns the split and its probabilities."""
    has_cue = rng.random(n_rollouts) < 0.5
    events = [[CueEvent(5, 5, "wait")] if c else [CueEvent(7, 7, None)] for c in has_cue]
    cue = has_cue.copy()  # one event per rollout
    label = np.where(cue, rng.random(n_rollouts) > 0.7, rng.random(n_rollouts) > 0.6).astype(np.int64)
    p = np.where((label == 0) & ~cue, 0.2 * rng.random(n_rollouts), rng.random(n_rollouts))
    d = SplitData(traces=[], gold=[], events=events)
    d.forced = ForcedExits(label=label, answer=[None] * n_rollouts, answer_tokens=np.ones(n_rollouts, dtype=np.int64),
                           text=[""] * n_rollouts)
    return d, p


def test_calibration_negatives_at_cues_keep_the_bound_where_fallbacks_break_it():
    """The oracle: test negatives are cues whose p is U(0, 1), so given a calibration draw the exact rate at which one
    gets the set {1} is ``1 - max(q_neg, 1 - q_pos)``, and its mean over draws is at most delta (the conformal identity
    ``E[1 - U_(k)] = 1 - k / (n + 1)``). Calibrating negatives on cue events keeps it; letting the fallback
    negatives in (the reference's calibration, the mutant "fallback negatives calibrate the exits") about doubles
    it: the demo's run rejected its bound at delta 0.1 so (14 of 68 test negatives)."""
    rng = np.random.default_rng(4)
    deltas, draws = (0.05, 0.1, 0.2), 300
    rates = {"cues": np.zeros((draws, 3)), "all events": np.zeros((draws, 3))}
    for t in range(draws):
        d, p = _split(rng, 400)
        for rule, keep in (("cues", d.calibration_events()), ("all events", np.ones(400, dtype=bool))):
            cal = MondrianCalibrator.fit(p[keep], d.forced.label[keep])
            for j, delta in enumerate(deltas):
                q_pos, q_neg = cal.thresholds(delta)
                rates[rule][t, j] = 1.0 - min(1.0, max(q_neg, 1.0 - q_pos))  # exact, for U(0, 1) test scores
    mean, se = rates["cues"].mean(0), rates["cues"].std(0) / math.sqrt(draws)
    assert (mean <= np.array(deltas) + 3 * se).all(), mean
    assert (rates["all events"].mean(0) > 1.5 * np.array(deltas)).all(), rates["all events"].mean(0)
    # fallback positives stay in (they only move q_pos); the cue-only rule drops them too
    d, _ = _split(rng, 50)
    fb_pos = ~d.is_cue & (d.forced.label == 1)
    assert d.calibration_events()[fb_pos].all() and not d.calibration_events(False)[fb_pos].any()
    assert not d.calibration_events()[~d.is_cue & (d.forced.label == 0)].any()


def test_calibration_events_need_labels():
    with pytest.raises(ThinklensError, match="bad calibration events"):
        SplitData(traces=[], gold=[], events=[[CueEvent(3, 3, "wait")]]).calibration_events()


def test_gate_statement_and_dict_round_trip_the_numbers():
    gate = ExitGate(0.52, (0.31, 0.73), 6, 267, 212)
    doc = gate.to_dict()
    assert doc["open"] is False and doc["auroc"] == 0.52 and doc["ci"] == [0.31, 0.73] and doc["n_rollouts"] == 212
    assert "n=273 events (6 right, 267 wrong) from 212 rollouts" in doc["statement"]
