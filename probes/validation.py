"""Planted and null settings of LYNX (shared/specs/controls.md), run by ``thinklens run validate``.

- ``lynx planted``: the zoo organism ``tiny-overthink`` (tiny-r1's chat format, fine-tuned from tiny-r1) computes the
  answer, writes "So Tom has X apples.", then 1-3 re-check rounds that open with "Wait, let me double-check.",
  "Hmm, let me verify." or "Alternatively, ...": the cues after the answer are places where a forced exit is right
  and the rest of the rollout is wasted. Target, at every delta in 0.05-0.1: LYNX saves at least 30% of the test
  rollouts' tokens at no more than 1 point of accuracy loss against the full rollouts, and the per-event bound
  P(S={1}|y=0) <= delta is shown: not rejected by the one-sided exact binomial test at delta, with power >= 0.8
  against delta + the size's violation (0.02 full). The oracle's saving (first cue whose forced exit is right) is
  reported beside it, and so is the accuracy loss against the oracle's exits (``accuracy_loss_vs_oracle`` per delta,
  ``oracle_misses``): the re-checks can damage a full rollout's answer, so "within 1 point of the full rollouts" alone
  can hide a loss against the best exit. The verdict reads the full rollouts only (the ``-model`` setting reads both).
- ``lynx null``: ``tiny-r1`` itself, whose cues ("Hmm," before a step, "Wait," after a slip) all come before the
  answer is known: a forced exit there is wrong, so there is nothing to save. It passes only by equivalence, at every
  delta, within margins stated here beforehand: the saving's 95% interval lies below 5% (:data:`NULL_SAVING`), the
  paired accuracy change's 90% TOST interval lies inside +-the size's harm margin (2 points full), and the bound is
  shown as in the planted setting. A saving or a loss that is merely not significant does not pass. tiny-r1's probe
  is at chance at its cues, so the job's discrimination gate (:mod:`thinklens.probes.exit_gate`) keeps LYNX from
  exiting at all (``exit_gate`` in the details): saving 0, accuracy unchanged. Where LYNX abstains so (the gate closed,
  no exit at any test event) the bound holds by construction and its test's power is not asked for
  (:func:`judge_null`): smol-r1-once's null held 11 test negatives in 80 rollouts, too few for power against any
  violation, and no exit among them.

Both run the real ``lynx`` job (:mod:`thinklens.probes.jobs.lynx`) on synthetic problems in the chat format; the quick
versions (run in the slow tier, organism-level) use few, short problems and say how coarse a violation and a harm
they can see (:class:`Size`); the full ones hold enough test negatives for a violation of 0.02 (about 1,600 at
delta 0.1) and rollouts for a 2-point harm margin.

Example:
    >>> [s.key for s in SETTINGS]
    ['lynx/planted', 'lynx/null', 'lynx/planted-model', 'lynx/null-model']
    >>> judge_planted([row(0.05, 0.42, 0.99, 1.0, True), row(0.1, 0.45, 0.995, 1.0, True)])
    (True, [])
    >>> judge_planted([row(0.05, 0.0, 1.0, 1.0, True), row(0.1, 0.31, 0.97, 1.0, True)])[1]
    ['delta 0.05: saving 0 < 0.3', 'delta 0.1: accuracy loss 0.03 > 0.01']
    >>> judge_planted([row(0.05, 0.42, 0.99, 1.0, True, power=0.49)])[1]  # 19/379 at 0.05: not rejected, not shown
    ['delta 0.05: the bound P(S={1}|y=0) <= 0.05 is not shown: the test has power 0.49 < 0.8 against a violation']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.errors import ThinklensError
from thinklens.probes.conformal import MIN_POWER, VIOLATION, binomial_power
from thinklens.probes.lynx_findings import ACCURACY, ACCURACY_MARGIN, SAVING, find
from thinklens.zoo.reasons import reasoning_precondition
from thinklens.zoo.registry import zoo_dir, zoo_path

PLANTED_MODEL = "tiny-overthink"
NULL_MODEL = "tiny-r1"
#: The deltas the targets are checked at (each of them).
DELTAS: tuple[float, ...] = (0.05, 0.1)
MIN_SAVING = 0.30
MAX_ACCURACY_LOSS = 0.01
#: A null's saving counts as none only when its whole 95% interval lies below this (an equivalence bound: an interval
#: that merely includes 0 on few rollouts does not pass).
NULL_SAVING = 0.05


@dataclass(frozen=True)
class Size:
    """How big one run of a setting is, and the coarsest violation and harm its n can see."""

    n_train: int
    """Problems (one rollout each) that train the probe."""
    n_calibration: int
    """Problems that calibrate the conformal thresholds."""
    n_test: int
    """Problems the exits are evaluated on."""
    max_steps: int
    """Most arithmetic steps of a problem (short problems, short rollouts)."""
    violation: float = VIOLATION
    """The violation of the bound (a true P(S={1}|y=0) of delta + this) the validity test needs power 0.8 against."""
    harm_margin: float = ACCURACY_MARGIN
    """The harm margin of the null's accuracy TOST (the paired change's 90% interval must lie inside +-this)."""

    def fields(self, model: str, seed: int) -> dict[str, Any]:
        """The lynx job's fields for ``model`` (the probe is the reference's MLP 256, 64: the job's default)."""
        n = self.n_train + self.n_calibration + self.n_test
        return dict(model=model, prompt_format="chat", data=f"synthetic:1-{self.max_steps}:{n}", n_train=self.n_train,
                    n_calibration=self.n_calibration, n_test=self.n_test, deltas=DELTAS, skip_vacuous=True, seed=seed)


#: The quick planted run: tiny-overthink's rollouts are long (up to three re-check rounds), so short problems. The
#: probe's training rollouts decide the accuracy: with 40 or 60 the probe misses some slipped first conclusions and
#: the wrong exits cost 2-7 points at some seeds (40 also left 33 calibration negatives: the bound broke at seed 1);
#: with 120 seeds 0, 1 and 2 all meet the targets. Its 80 test rollouts held 52 test negatives at seed 0: the test sees
#: a violation of 0.15 (power 0.96 at delta 0.05, 0.87 at 0.1), not one of 0.02.
QUICK_PLANTED = Size(n_train=120, n_calibration=60, n_test=80, max_steps=2, violation=0.15, harm_margin=0.05)
#: The quick null run: tiny-r1's forced exits are almost never right, so it takes 60 calibration rollouts (their
#: fallback events) to hold the 19 positives that delta 0.05 needs. 60 test rollouts held 37 test negatives at seed 0
#: (power 0.74 against a violation of 0.15 at delta 0.1: not shown), so it tests 100 (90 negatives at seed 0: power
#: 0.98; 55 s); no loss among 100 rollouts bounds the loss rate at 0.030, so its harm margin is 5 points.
QUICK_NULL = Size(n_train=60, n_calibration=60, n_test=100, max_steps=3, violation=0.15, harm_margin=0.05)
#: The full runs: 0.95 (planted) and 0.87 (null) test negatives per test rollout in the 2026-12-02 record, and the
#: test needs 1,510 negatives for power 0.8 against 0.12 at delta 0.1 (855 at 0.05): 1,800 and 2,000 test rollouts.
FULL_PLANTED = Size(n_train=300, n_calibration=300, n_test=1800, max_steps=4)
#: ``validate --model M`` (an R1-format organism with re-check rounds, smol-r1): the planted setting on M's own
#: rollouts, over M's own step range. A real 135M model's rollouts cost ten times tiny-overthink's on a CPU, so the quick
#: size is small and says how coarse a violation and a harm it sees. Its negatives (cues where a forced exit is wrong)
#: are few: smol-r1's greedy traces hold 0.55 per trace at 1-4 steps (45 cues before the answer and 10 after a slipped
#: conclusion in 100, its organism-eval record) and almost none at 1 step; so 1-4 steps and 100 calibration rollouts
#: (67 negatives at seed 0; delta 0.05 needs 19). The quick size's probe learns from 40 rollouts (92 events): at seed 0
#: it told right from wrong exits at AUROC 0.79 [0.71, 0.86] on the calibration cues and LYNX saved 0.08 / 0.14 at
#: delta 0.05 / 0.1, where the oracle's exit saved 0.38 [0.34, 0.42]; the full size trains it on 200 rollouts.
QUICK_MODEL = Size(n_train=40, n_calibration=100, n_test=60, max_steps=4, violation=0.3, harm_margin=0.1)
FULL_MODEL = Size(n_train=200, n_calibration=150, n_test=80, max_steps=4, violation=0.2, harm_margin=0.1)
#: ``validate --model M``'s null, on M's sibling that concludes once (smol-r1-once beside smol-r1): its cues ("Hmm,"
#: before most multiplications) all come before the answer is known. Up to 4 steps, so that most rollouts hold a cue;
#: the quick size sees the same coarse violation and harm as QUICK_MODEL, the full one is the zoo's quick null. Only cue
#: events calibrate the wrong-exit class: 60 calibration rollouts held 11 at seed 0 and 120 held 17 (delta 0.05 needs
#: 19: about 0.14 per rollout), so 180 (about 25). The full size is the planted full size's, with calibration at 240.
QUICK_MODEL_NULL = Size(n_train=40, n_calibration=180, n_test=60, max_steps=4, violation=0.3, harm_margin=0.1)
FULL_MODEL_NULL = Size(n_train=200, n_calibration=240, n_test=80, max_steps=4, violation=0.2, harm_margin=0.1)
FULL_NULL = Size(n_train=300, n_calibration=300, n_test=2000, max_steps=4)


def row(delta: float, saving: float, accuracy: float, full_accuracy: float, not_rejected: bool, *,
        ci: tuple[float, float] | None = None, power: float = 1.0, change_ci: tuple[float, float] | None = None,
        harm_margin: float = ACCURACY_MARGIN, abstained: bool = False) -> dict[str, Any]:
    """One delta's outcome as the judges read it (what :func:`delta_rows` builds from a run): ``power`` of the validity
    test against the size's violation; ``change_ci`` the paired accuracy change's 90% TOST interval (default: the
    point change, as if measured without error); ``abstained``: the exit gate stayed closed and LYNX exited nowhere."""
    change = round(accuracy - full_accuracy, 12)
    return {"delta": delta, "saving": saving, "saving_ci": list(ci or (saving, saving)), "accuracy": accuracy,
            "full_accuracy": full_accuracy, "accuracy_loss": -change, "not_rejected": not_rejected,
            "power": power, "validity_shown": bool(not_rejected and power >= MIN_POWER), "accuracy_change": change,
            "accuracy_change_ci": list(change_ci or (change, change)), "harm_margin": harm_margin,
            "abstained": abstained}


def delta_rows(result, size: Size | None = None) -> tuple[list[dict[str, Any]], list[float]]:
    """Per target delta the saving (with its bootstrap interval from the run's findings), accuracy, full accuracy and
    the paired change's TOST interval, exits, oracle saving and validity (its test's power against ``size``'s
    violation) of a LYNX result; and the target deltas the run could not evaluate."""
    size = size or FULL_NULL
    full = result.report.get("full").accuracy
    oracle = result.report.get("oracle").saving
    by_delta = {round(r["delta"], 9): r for r in result.per_delta}
    v = result.validity
    rows, missing = [], []
    for d in DELTAS:
        r = by_delta.get(round(d, 9))
        if r is None:
            missing.append(d)
            continue
        f = find(result.summary["findings"], SAVING, d)
        eq = find(result.summary["findings"], ACCURACY, d).get("extra", {}).get("equivalence")
        i = [round(x, 9) for x in v.deltas.tolist()].index(round(d, 9))
        power = binomial_power(v.n_neg, d, size.violation, v.alpha)
        gate_closed = (result.summary.get("exit_gate") or {}).get("open") is False
        out = row(d, r["saving"], r["accuracy"], full, bool(r["consistent"]), ci=tuple(f["ci"]), power=power,
                  change_ci=None if eq is None else tuple(eq["ci"]), harm_margin=size.harm_margin,
                  abstained=gate_closed and r["n_exit"] == 0)
        if eq is None:  # an older run holds no TOST: its harm is not shown (rerun it)
            out["accuracy_change_ci"] = [-1.0, 1.0]
        out.update({"n_exit": r["n_exit"], "n_rollouts": r["n_rollouts"], "oracle_saving": oracle,
                    "oracle_ci": f["extra"]["oracle_ci"], "saving_verdict": f["verdict"],
                    "n_neg": v.n_neg, "n_neg_set_one": int(v.n_neg_set_one[i]), "p_value": float(v.p_value[i]),
                    "violation": size.violation,
                    "validity": f"{r['validity']} (judged against a violation of {size.violation:g}: power {power:.2f})"})
        rows.append(out)
    return rows, missing


def judge_planted(rows: list[dict[str, Any]]) -> tuple[bool, list[str]]:
    """Whether every delta meets the planted targets, and what misses them."""
    misses = []
    for r in rows:
        d = f"delta {r['delta']:g}"
        if r["saving"] < MIN_SAVING:
            misses.append(f"{d}: saving {r['saving']:.3g} < {MIN_SAVING}")
        if r["accuracy_loss"] > MAX_ACCURACY_LOSS + 1e-12:
            misses.append(f"{d}: accuracy loss {r['accuracy_loss']:.3g} > {MAX_ACCURACY_LOSS}")
        if not r["not_rejected"]:
            misses.append(f"{d}: the bound P(S={{1}}|y=0) <= {r['delta']:g} is rejected")
        misses += _power_miss(r)
    return not misses and bool(rows), misses


def _power_miss(r: dict[str, Any]) -> list[str]:
    if not r["not_rejected"] or r["power"] >= MIN_POWER:
        return []
    return [f"delta {r['delta']:g}: the bound P(S={{1}}|y=0) <= {r['delta']:g} is not shown: the test has power "
            f"{r['power']:.2g} < {MIN_POWER:g} against a violation"]


def judge_null(rows: list[dict[str, Any]]) -> tuple[bool, list[str]]:
    """Whether every delta is shown to save nothing (the saving's interval below 5%) and to harm nothing (the paired
    accuracy change's TOST interval inside +-harm margin), with the bound shown: equivalence, never non-significance.
    Where LYNX abstained (its exit gate stayed closed and it exited at no test event) no event got an exit, so the rate
    of exits at negatives is 0 by construction, not an estimate: the bound needs no test there, and its power is not
    asked for. A LYNX that exits past a closed gate is judged by the test as before.

    Example:
        >>> judge_null([row(0.05, 0.0, 1.0, 1.0, True), row(0.1, 0.02, 1.0, 1.0, True, ci=(0.01, 0.03))])
        (True, [])
        >>> judge_null([row(0.05, 0.2, 1.0, 1.0, True, ci=(0.1, 0.3))])[1]
        ['delta 0.05: saving 0.2 [0.1, 0.3] not shown below 0.05']
        >>> judge_null([row(0.05, 0.008, 0.975, 0.9975, True, ci=(0.003, 0.015), change_ci=(-0.035, -0.01))])[1]
        ['delta 0.05: accuracy change -0.0225 [-0.035, -0.01] not shown within +-0.02 (harm)']
        >>> judge_null([row(0.05, 0.0, 0.94, 0.94, True, power=0.54, abstained=True)])  # 11 negatives, no exit
        (True, [])
        >>> judge_null([row(0.05, 0.0, 0.94, 0.94, True, power=0.54)])[1][0][:57]  # sets that could exit: tested
        'delta 0.05: the bound P(S={1}|y=0) <= 0.05 is not shown: '
    """
    misses = []
    for r in rows:
        lo, hi = r["saving_ci"]
        if not hi < NULL_SAVING:
            misses.append(f"delta {r['delta']:g}: saving {r['saving']:.3g} [{lo:.3g}, {hi:.3g}] not shown below "
                          f"{NULL_SAVING}")
        clo, chi = r["accuracy_change_ci"]
        m = r["harm_margin"]
        if not (-m < clo and chi < m):
            misses.append(f"delta {r['delta']:g}: accuracy change {r['accuracy_change']:.3g} [{clo:.3g}, {chi:.3g}] "
                          f"not shown within +-{m:g} (harm)")
        if r.get("abstained"):
            continue
        if not r["not_rejected"]:
            misses.append(f"delta {r['delta']:g}: the bound P(S={{1}}|y=0) <= {r['delta']:g} is rejected")
        misses += _power_miss(r)
    return not misses and bool(rows), misses


def model_ref(name: str) -> str:
    """``name`` when it is a zoo name; the folder ``data/zoo/<name>`` when the model is published there but its name
    is not registered in this checkout yet (the job loads a local folder the same way); else ``name`` (the job then
    says what is missing)."""
    try:
        zoo_path(name)
        return name
    except ThinklensError:
        folder = zoo_dir() / name
        return str(folder) if (folder / "config.json").is_file() else name


def _run(ctx: SettingContext, model: str, sub: str, size: Size):
    fields = size.fields(model_ref(model), ctx.seed)
    result = ctx.run_job("lynx", sub, **fields)
    rows, missing = delta_rows(result, size)
    s = result.summary
    details: dict[str, Any] = {
        "model": model, "run": str(ctx.workdir / sub) if ctx.workdir else sub, "size": fields,
        "violation": size.violation, "min_power": MIN_POWER, "harm_margin": size.harm_margin, "per_delta": rows,
        "missing_deltas": missing, "oracle_saving": result.report.get("oracle").saving,
        "oracle_accuracy": result.report.get("oracle").accuracy, "full_accuracy": result.report.get("full").accuracy,
        "test_auroc": s.get("test_auroc"), "exit_gate": s.get("exit_gate"),
        "label_base_rate_test": s["splits"]["test"]["label_base_rate"], "calibration": {
            k: s["calibration"][k] for k in ("n_pos", "n_neg")}, "findings": s["findings"]}
    return rows, missing, details


def _check(rows: list[dict[str, Any]], pick) -> tuple[float, tuple[float, float], int]:
    if not rows:
        return float("nan"), (float("nan"), float("nan")), 0
    r = pick(rows, key=lambda x: x["saving"])
    return float(r["saving"]), (float(r["saving_ci"][0]), float(r["saving_ci"][1])), int(r.get("n_rollouts", 0))


def _validity_target(size: Size) -> str:
    return (f"P(S={{1}}|y=0) <= delta not rejected by a one-sided exact binomial test, with power >= {MIN_POWER:g} "
            f"against delta + {size.violation:g}")


def _planted(ctx: SettingContext) -> Check:
    size = QUICK_PLANTED if ctx.quick else FULL_PLANTED
    rows, missing, details = _run(ctx, PLANTED_MODEL, "lynx-planted", size)
    ok, misses = judge_planted(rows)
    misses += [f"delta {d:g}: not evaluated (calibration too small)" for d in missing]
    details["misses"] = misses
    # reported beside the verdict, not judged: the organism's own re-checks can damage a full rollout's answer, so the
    # full rollouts alone understate what an exit loses against the best exit (tiny-overthink: 0.912 full, oracle 0.9994)
    details["oracle_misses"] = against_oracle(rows, details["oracle_accuracy"])
    value, ci, n = _check(rows, min)  # the smallest saving over the target deltas carries the claim
    return Check("saving", value, ci, "recovered" if ok and not missing else "failed", n=n, details=details,
                 target=f"at every delta in {DELTAS}: saving >= {MIN_SAVING}, accuracy loss <= {MAX_ACCURACY_LOSS}, "
                        + _validity_target(size))


def _null(ctx: SettingContext) -> Check:
    size = QUICK_NULL if ctx.quick else FULL_NULL
    rows, missing, details = _run(ctx, NULL_MODEL, "lynx-null", size)
    ok, misses = judge_null(rows)
    misses += [f"delta {d:g}: not evaluated (calibration too small)" for d in missing]
    details["misses"] = misses
    value, ci, n = _check(rows, max)  # the largest saving over the target deltas: the one a false claim would use
    return Check("saving", value, ci, "no-effect" if ok and not missing else "failed", n=n, details=details,
                 target=f"at every delta in {DELTAS} (equivalence, margins stated beforehand): saving's 95% interval "
                        f"below {NULL_SAVING}, paired accuracy change's 90% TOST interval inside +-{size.harm_margin:g}, "
                        + _validity_target(size))


def _planted_model(ctx: SettingContext) -> Check:
    size = QUICK_MODEL if ctx.quick else FULL_MODEL
    rows, missing, details = _run(ctx, str(ctx.model), "lynx-planted-model", size)
    ok, misses = judge_planted(rows)
    oracle_misses = against_oracle(rows, details["oracle_accuracy"])
    misses += oracle_misses + [f"delta {d:g}: not evaluated (calibration too small)" for d in missing]
    details["misses"] = misses
    value, ci, n = _check(rows, min)
    return Check("saving", value, ci, "recovered" if ok and not oracle_misses and not missing else "failed", n=n,
                 details=details,
                 target=f"at every delta in {DELTAS}: saving >= {MIN_SAVING}, accuracy loss <= {MAX_ACCURACY_LOSS} against "
                        "the full rollouts and against the oracle's exits (a real model's re-checks can change its "
                        "answer, so the full rollouts alone may sit below what an exit could keep), "
                        + _validity_target(size))


def against_oracle(rows: list[dict[str, Any]], oracle_accuracy: float) -> list[str]:
    """What misses "within :data:`MAX_ACCURACY_LOSS` of the oracle's accuracy" (the oracle exits at the first cue
    whose forced exit is right): each row gets ``oracle_accuracy`` and ``accuracy_loss_vs_oracle``.

    Example:
        >>> print(*against_oracle([row(0.05, 0.4, 0.95, 0.95, True)], 0.99))
        delta 0.05: accuracy 0.95 is 0.04 below the oracle's 0.99 (> 0.01)
    """
    misses = []
    for r in rows:
        loss = round(oracle_accuracy - r["accuracy"], 12)
        r.update(oracle_accuracy=oracle_accuracy, accuracy_loss_vs_oracle=loss)
        if loss > MAX_ACCURACY_LOSS + 1e-12:
            misses.append(f"delta {r['delta']:g}: accuracy {r['accuracy']:.3g} is {loss:.3g} below the oracle's "
                          f"{oracle_accuracy:.3g} (> {MAX_ACCURACY_LOSS})")
    return misses


def _null_model(ctx: SettingContext) -> Check:
    from thinklens.engine.real_organisms import once_sibling  # lazy: CLI start-up

    size = QUICK_MODEL_NULL if ctx.quick else FULL_MODEL_NULL
    target = (f"on --model M's sibling that concludes once, at every delta in {DELTAS} (equivalence, margins stated "
              f"beforehand): saving's 95% interval below {NULL_SAVING}, paired accuracy change's 90% TOST interval inside "
              f"+-{size.harm_margin:g}, " + _validity_target(size))
    sibling = once_sibling(str(ctx.model))
    if sibling is None:
        why = (f"{ctx.model} has no sibling that concludes once (a real organism's once_sibling, as smol-r1-once is "
               "smol-r1's): LYNX's null needs a model whose cues all come before its answer; try --model smol-r1")
        return Check("saving", float("nan"), (float("nan"), float("nan")), "failed", n=0, target=target,
                     details={"precondition_met": False, "precondition": why})
    rows, missing, details = _run(ctx, sibling, "lynx-null-model", size)
    ok, misses = judge_null(rows)
    misses += [f"delta {d:g}: not evaluated (calibration too small)" for d in missing]
    details["misses"] = misses
    value, ci, n = _check(rows, max)
    return Check("saving", value, ci, "no-effect" if ok and not missing else "failed", n=n, details=details, target=target)


SETTINGS = [
    Setting("lynx", "planted", "recovered", _planted,
            help=f"{PLANTED_MODEL} re-checks after the answer: LYNX saves >= 30% at <= 1 point accuracy loss, bound "
                 "shown (not rejected, power >= 0.8)"),
    Setting("lynx", "null", "no-effect", _null,
            help=f"{NULL_MODEL}'s cues come before the answer is known: saving shown below 5%, accuracy change shown "
                 "within the harm margin (TOST), bound shown"),
    Setting("lynx", "planted-model", "recovered", _planted_model, on_model=True,
            precondition=reasoning_precondition("lynx", rechecks=True),
            help="--model M that re-checks after its answer (smol-r1): the planted targets on M's own rollouts"),
    Setting("lynx", "null-model", "no-effect", _null_model, on_model=True,
            help="--model M's sibling that concludes once (smol-r1-once): the null's targets on its own rollouts"),
]
