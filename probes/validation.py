"""Planted and null settings of LYNX (shared/specs/controls.md), run by ``thinklens run validate``.

- ``lynx planted``: the zoo organism ``tiny-overthink`` (tiny-r1's chat format, fine-tuned from tiny-r1) computes the
  answer, writes "So Tom has X apples.", then 1-3 re-check rounds that open with "Wait, let me double-check.",
  "Hmm, let me verify." or "Alternatively, ...": the cues after the answer are places where a forced exit is right
  and the rest of the rollout is wasted. Target, at every delta in 0.05-0.1: LYNX saves at least 30% of the test
  rollouts' tokens at no more than 1 point of accuracy loss against the full rollouts, and the data do not reject
  the per-event bound P(S={1}|y=0) <= delta (exact binomial interval). The oracle's saving (first cue whose forced
  exit is right) is reported beside it.
- ``lynx null``: ``tiny-r1`` itself, whose cues ("Hmm," before a step, "Wait," after a slip) all come before the
  answer is known: a forced exit there is wrong, so there is nothing to save. Target: the saving's interval
  includes 0 or the saving is below 5%, at every delta, and the bound is not rejected.

Both run the real ``lynx`` job (:mod:`thinklens.probes.jobs.lynx`) on synthetic problems in the chat format; the quick
versions (the default test tier) use few, short problems, the full ones enough rollouts for tight intervals.

Example:
    >>> [s.key for s in SETTINGS]
    ['lynx/planted', 'lynx/null']
    >>> judge_planted([row(0.05, 0.42, 0.99, 1.0, True), row(0.1, 0.45, 0.995, 1.0, True)])
    (True, [])
    >>> judge_planted([row(0.05, 0.0, 1.0, 1.0, True), row(0.1, 0.31, 0.97, 1.0, True)])[1]
    ['delta 0.05: saving 0 < 0.3', 'delta 0.1: accuracy loss 0.03 > 0.01']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from thinklens.calibration.controls import Check, Setting, SettingContext

PLANTED_MODEL = "tiny-overthink"
NULL_MODEL = "tiny-r1"
#: The deltas the targets are checked at (each of them).
DELTAS: tuple[float, ...] = (0.05, 0.1)
MIN_SAVING = 0.30
MAX_ACCURACY_LOSS = 0.01
#: A null's saving below this counts as none even when its interval excludes 0.
NULL_SAVING = 0.05


@dataclass(frozen=True)
class Size:
    """How big one run of a setting is."""

    n_train: int
    """Problems (one rollout each) that train the probe."""
    n_calibration: int
    """Problems that calibrate the conformal thresholds."""
    n_test: int
    """Problems the exits are evaluated on."""
    max_steps: int
    """Most arithmetic steps of a problem (short problems, short rollouts)."""

    def fields(self, model: str, seed: int) -> dict[str, Any]:
        """The lynx job's fields for ``model`` (the probe is the reference's MLP 256, 64: the job's default)."""
        n = self.n_train + self.n_calibration + self.n_test
        return dict(model=model, prompt_format="chat", data=f"synthetic:1-{self.max_steps}:{n}", n_train=self.n_train,
                    n_calibration=self.n_calibration, n_test=self.n_test, deltas=DELTAS, skip_vacuous=True, seed=seed)


#: The quick planted run: tiny-overthink's rollouts are long (up to three re-check rounds), so short problems. The
#: probe's training rollouts decide the accuracy: with 40 or 60 the probe misses some slipped first conclusions and
#: the wrong exits cost 2-7 points at some seeds (40 also left 33 calibration negatives: the bound broke at seed 1);
#: with 120 seeds 0, 1 and 2 all meet the targets.
QUICK_PLANTED = Size(n_train=120, n_calibration=60, n_test=80, max_steps=2)
#: The quick null run: tiny-r1's forced exits are almost never right, so it takes 60 calibration rollouts (their
#: fallback events) to hold the 19 positives that delta 0.05 needs.
QUICK_NULL = Size(n_train=60, n_calibration=60, n_test=60, max_steps=3)
FULL = Size(n_train=300, n_calibration=300, n_test=400, max_steps=4)


def row(delta: float, saving: float, accuracy: float, full_accuracy: float, not_rejected: bool, *,
        ci: tuple[float, float] | None = None) -> dict[str, Any]:
    """One delta's outcome as the judges read it (what :func:`delta_rows` builds from a run)."""
    return {"delta": delta, "saving": saving, "saving_ci": list(ci or (saving, saving)), "accuracy": accuracy,
            "full_accuracy": full_accuracy, "accuracy_loss": round(full_accuracy - accuracy, 12),
            "not_rejected": not_rejected}


def delta_rows(result) -> tuple[list[dict[str, Any]], list[float]]:
    """Per target delta the saving (with its bootstrap interval from the run's findings), accuracy, full accuracy,
    exits, oracle saving and validity of a LYNX result; and the target deltas the run could not evaluate."""
    from thinklens.probes.lynx_findings import SAVING, find

    full = result.report.get("full").accuracy
    oracle = result.report.get("oracle").saving
    by_delta = {round(r["delta"], 9): r for r in result.per_delta}
    rows, missing = [], []
    for d in DELTAS:
        r = by_delta.get(round(d, 9))
        if r is None:
            missing.append(d)
            continue
        f = find(result.summary["findings"], SAVING, d)
        out = row(d, r["saving"], r["accuracy"], full, bool(r["consistent"]), ci=tuple(f["ci"]))
        out.update({"n_exit": r["n_exit"], "n_rollouts": r["n_rollouts"], "oracle_saving": oracle,
                    "oracle_ci": f["extra"]["oracle_ci"], "saving_verdict": f["verdict"], "validity": r["validity"]})
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
    return not misses and bool(rows), misses


def judge_null(rows: list[dict[str, Any]]) -> tuple[bool, list[str]]:
    """Whether every delta saves nothing (interval includes 0, or saving < 5%) and keeps the bound.

    Example:
        >>> judge_null([row(0.05, 0.0, 1.0, 1.0, True), row(0.1, 0.02, 1.0, 1.0, True, ci=(0.01, 0.03))])
        (True, [])
        >>> judge_null([row(0.05, 0.2, 1.0, 1.0, True, ci=(0.1, 0.3))])[1]
        ['delta 0.05: saving 0.2 [0.1, 0.3] excludes 0 and is >= 0.05']
    """
    misses = []
    for r in rows:
        lo, hi = r["saving_ci"]
        if not (lo <= 0.0 <= hi or r["saving"] < NULL_SAVING):
            misses.append(f"delta {r['delta']:g}: saving {r['saving']:.3g} [{lo:.3g}, {hi:.3g}] excludes 0 and is "
                          f">= {NULL_SAVING}")
        if not r["not_rejected"]:
            misses.append(f"delta {r['delta']:g}: the bound P(S={{1}}|y=0) <= {r['delta']:g} is rejected")
    return not misses and bool(rows), misses


def model_ref(name: str) -> str:
    """``name`` when it is a zoo name; the folder ``data/zoo/<name>`` when the model is published there but its name
    is not registered in this checkout yet (the job loads a local folder the same way); else ``name`` (the job then
    says what is missing)."""
    from thinklens.errors import ThinklensError
    from thinklens.zoo.registry import zoo_dir, zoo_path

    try:
        zoo_path(name)
        return name
    except ThinklensError:
        folder = zoo_dir() / name
        return str(folder) if (folder / "config.json").is_file() else name


def _run(ctx: SettingContext, model: str, sub: str, quick: Size):
    size = quick if ctx.quick else FULL
    fields = size.fields(model_ref(model), ctx.seed)
    result = ctx.run_job("lynx", sub, **fields)
    rows, missing = delta_rows(result)
    s = result.summary
    details: dict[str, Any] = {
        "model": model, "run": str(ctx.workdir / sub) if ctx.workdir else sub, "size": fields, "per_delta": rows,
        "missing_deltas": missing, "oracle_saving": result.report.get("oracle").saving,
        "oracle_accuracy": result.report.get("oracle").accuracy, "full_accuracy": result.report.get("full").accuracy,
        "test_auroc": s.get("test_auroc"),
        "label_base_rate_test": s["splits"]["test"]["label_base_rate"], "calibration": {
            k: s["calibration"][k] for k in ("n_pos", "n_neg")}, "findings": s["findings"]}
    return rows, missing, details


def _check(rows: list[dict[str, Any]], pick) -> tuple[float, tuple[float, float], int]:
    if not rows:
        return float("nan"), (float("nan"), float("nan")), 0
    r = pick(rows, key=lambda x: x["saving"])
    return float(r["saving"]), (float(r["saving_ci"][0]), float(r["saving_ci"][1])), int(r.get("n_rollouts", 0))


def _planted(ctx: SettingContext) -> Check:
    rows, missing, details = _run(ctx, PLANTED_MODEL, "lynx-planted", QUICK_PLANTED)
    ok, misses = judge_planted(rows)
    misses += [f"delta {d:g}: not evaluated (calibration too small)" for d in missing]
    details["misses"] = misses
    value, ci, n = _check(rows, min)  # the smallest saving over the target deltas carries the claim
    return Check("saving", value, ci, "recovered" if ok and not missing else "failed", n=n, details=details,
                 target=f"at every delta in {DELTAS}: saving >= {MIN_SAVING}, accuracy loss <= {MAX_ACCURACY_LOSS}, "
                        "P(S={1}|y=0) <= delta not rejected (exact interval)")


def _null(ctx: SettingContext) -> Check:
    rows, missing, details = _run(ctx, NULL_MODEL, "lynx-null", QUICK_NULL)
    ok, misses = judge_null(rows)
    misses += [f"delta {d:g}: not evaluated (calibration too small)" for d in missing]
    details["misses"] = misses
    value, ci, n = _check(rows, max)  # the largest saving over the target deltas: the one a false claim would use
    return Check("saving", value, ci, "no-effect" if ok and not missing else "failed", n=n, details=details,
                 target=f"at every delta in {DELTAS}: saving interval includes 0 or saving < {NULL_SAVING}, and "
                        "P(S={1}|y=0) <= delta not rejected (exact interval)")


SETTINGS = [
    Setting("lynx", "planted", "recovered", _planted,
            help=f"{PLANTED_MODEL} re-checks after the answer: LYNX saves >= 30% at <= 1 point accuracy loss, bound kept"),
    Setting("lynx", "null", "no-effect", _null,
            help=f"{NULL_MODEL}'s cues come before the answer is known: no saving, bound kept"),
]
