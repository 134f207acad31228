"""The result of a LYNX run and its files: JSON results, safetensors arrays, plotly figures.

``write_lynx_result`` writes ``results/{lynx,per_delta}.json``, ``arrays/test_{events,rollouts}
.safetensors`` and the figures (pareto, validity, exit_histogram, base_rate); ``load_lynx_result``
rebuilds the typed result from them, which is all the app page needs (it never touches a model).
Missing values (nan: an empty bin, no negatives) are stored as JSON ``null``.

Example:
    >>> # result = load_lynx_result(RunFolder.open("runs/lynx/demo"))
    >>> # figure_exit_histogram(result.report.get("lynx", 0.1))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import safetensors.numpy

from thinklens.errors import ThinklensError
from thinklens.probes.conformal import MIN_POWER, VIOLATION, ValidityCurve
from thinklens.probes.exits import BaseRateCurve, EventTable, ExitReport, PolicyOutcome, RolloutTable
from thinklens.probes.figures import figure_base_rate, figure_exit_histogram, figure_pareto, figure_validity
from thinklens.runs.folders import RunFolder, atomic_write_bytes, to_jsonable


def _floats(values: Any) -> np.ndarray:
    """A numeric JSON list back to floats: None (a nan written as null) -> nan."""
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


@dataclass(frozen=True, eq=False)
class LynxResult:
    """Exit policies, validity and base rate of a LYNX run, plus its scalar summary."""

    report: ExitReport
    """Every policy on the test split (LYNX per usable delta, baselines, full, oracle)."""
    validity: ValidityCurve
    """Empirical P(S={1} | y=0) per delta on the test split."""
    base_rate: BaseRateCurve
    """Label base rate by relative event position (test split)."""
    per_delta: list[dict]
    """One row per delta: thresholds, accuracy, accuracy change, tokens, saving, the test rollouts that exited
    (``n_exit`` of ``n_rollouts``), and validity: the test events with y=0 that got the set {1} (``n_neg_set_one`` of
    ``n_neg``), their rate with its exact interval, the one-sided exact binomial test of the bound at delta
    (``p_value``; ``consistent``: not rejected) and its power against delta + ``violation`` (``power``;
    ``validity_shown``: not rejected with power >= ``min_power``; ``validity_verdict``: rejected, shown or
    underpowered; ``validity``: all of it in words)."""
    summary: dict
    """Counts, label base rates, probe quality, calibration sizes."""

    @classmethod
    def build(cls, *, report: ExitReport, validity: ValidityCurve, base_rate: BaseRateCurve, summary: dict,
              thresholds: dict[float, tuple[float, float]]) -> LynxResult:
        """Assemble the result and its per-delta table."""
        full = report.get("full")
        rows = []
        for i, d in enumerate(validity.deltas.tolist()):
            o = report.get("lynx", d)
            q_pos, q_neg = thresholds[d]
            rows.append({
                "delta": d, "q_pos": q_pos, "q_neg": q_neg, "accuracy": o.accuracy,
                "accuracy_change": o.accuracy - full.accuracy, "mean_tokens": o.mean_tokens, "saving": o.saving,
                "exit_rate": o.exit_rate, "n_exit": o.n_exit, "n_rollouts": int(o.exit_event.shape[0]),
                "rate": float(validity.rate[i]), "lower": float(validity.lower[i]),
                "upper": float(validity.upper[i]), "margin": float(validity.margin[i]),
                "n_neg_set_one": int(validity.n_neg_set_one[i]), "n_neg": validity.n_neg,
                "consistent": bool(validity.consistent[i]), "p_value": float(validity.p_value[i]),
                "power": float(validity.power[i]), "violation": validity.violation,
                "validity_shown": bool(validity.shown[i]), "validity_verdict": validity.verdict(i),
                "validity": validity.statement(i),
            })
        return cls(report=report, validity=validity, base_rate=base_rate, per_delta=rows, summary=summary)

    def to_json(self) -> dict:
        """Everything but the per-delta table, JSON-able (nan -> null)."""
        outcomes = [{**o.summary(), "exit_event": o.exit_event, "exit_fraction": o.exit_fraction}
                    for o in self.report.outcomes]
        b = self.base_rate
        return to_jsonable({
            "summary": self.summary,
            "outcomes": outcomes, "skipped_deltas": self.report.skipped_deltas,
            "validity": self.validity.to_dict(),
            "base_rate": {"edges": b.edges, "rate": b.rate, "count": b.count, "lower": b.lower, "upper": b.upper},
        })

    @classmethod
    def from_json(cls, doc: dict, per_delta: list[dict]) -> LynxResult:
        """Inverse of :meth:`to_json`."""
        outcomes = tuple(PolicyOutcome(
            policy=o["policy"], param=o["param"], accuracy=_nan(o["accuracy"]), mean_tokens=_nan(o["mean_tokens"]),
            saving=_nan(o["saving"]), exit_rate=_nan(o["exit_rate"]),
            exit_event=np.asarray(o["exit_event"], dtype=np.int64), exit_fraction=_floats(o["exit_fraction"]),
        ) for o in doc["outcomes"])
        v, b = doc["validity"], doc["base_rate"]
        validity = ValidityCurve(deltas=_floats(v["deltas"]), rate=_floats(v["rate"]), lower=_floats(v["lower"]),
                                 upper=_floats(v["upper"]), n_neg=int(v["n_neg"]),
                                 # older runs named the count of y=0 events with the set {1} "n_exit"
                                 n_neg_set_one=np.asarray(v["n_neg_set_one"] if "n_neg_set_one" in v else v["n_exit"],
                                                          dtype=np.int64), confidence=float(v["confidence"]),
                                 # runs that stored no violation: their power is computed at the defaults
                                 violation=float(v.get("violation", VIOLATION)),
                                 min_power=float(v.get("min_power", MIN_POWER)))
        base = BaseRateCurve(edges=_floats(b["edges"]), rate=_floats(b["rate"]),
                             count=np.asarray(b["count"], dtype=np.int64), lower=_floats(b["lower"]),
                             upper=_floats(b["upper"]))
        report = ExitReport(outcomes=outcomes, skipped_deltas=tuple(doc.get("skipped_deltas", ())))
        return cls(report=report, validity=validity, base_rate=base, per_delta=per_delta, summary=doc["summary"])

    def lynx_deltas(self) -> list[float]:
        """The deltas LYNX was evaluated at."""
        return [o.param for o in self.report.outcomes if o.policy == "lynx"]

    def figures(self, histogram_delta: float | None = None) -> dict:
        """The run's plotly figures by name; the histogram shows LYNX at ``histogram_delta``
        (default: the middle delta) against the first-cue baseline."""
        deltas = self.lynx_deltas()
        d = histogram_delta if histogram_delta is not None else deltas[len(deltas) // 2]
        return {"pareto": figure_pareto(self.report), "validity": figure_validity(self.validity),
                "exit_histogram": figure_exit_histogram([self.report.get("lynx", d), self.report.get("first_cue")]),
                "base_rate": figure_base_rate(self.base_rate)}


def _nan(v: Any) -> float:
    return float("nan") if v is None else float(v)


def write_lynx_result(run: RunFolder, result: LynxResult, *, events: EventTable, rollouts: RolloutTable) -> None:
    """Write the result files of a LYNX run (results, arrays, figures)."""
    run.write_result("lynx", result.to_json())
    run.write_result("per_delta", result.per_delta)
    ev = {"rollout": events.rollout, "position": events.position, "label": events.label, "prob": events.prob,
          "exit_tokens": events.exit_tokens, "is_cue": events.is_cue.astype(np.int8)}
    ro = {"length": rollouts.length, "correct": rollouts.correct, "tokens": rollouts.tokens}
    for name, arrays in (("test_events", ev), ("test_rollouts", ro)):
        data = safetensors.numpy.save({k: np.ascontiguousarray(v) for k, v in arrays.items()})
        atomic_write_bytes(run.path / "arrays" / f"{name}.safetensors", data)
    for name, fig in result.figures().items():
        run.write_figure(name, fig)


def load_lynx_result(run: RunFolder) -> LynxResult:
    """Rebuild a :class:`LynxResult` from a finished LYNX run folder."""
    try:
        doc, per_delta = run.read_result("lynx"), run.read_result("per_delta")
    except FileNotFoundError:
        raise ThinklensError.of("LYNX run", str(run.path), "a finished run with results/lynx.json and "
                                "results/per_delta.json", "wait for the job to finish or re-run it") from None
    except ValueError as e:  # a truncated or hand-edited file
        raise ThinklensError.of("LYNX results", f"{run.path}: {e}", "valid JSON written by thinklens run lynx",
                                "re-run the job into a new run folder") from None
    try:
        return LynxResult.from_json(doc, per_delta)
    except (KeyError, TypeError, ValueError) as e:
        raise ThinklensError.of("LYNX results", f"{run.path}: {type(e).__name__} {e}", "results written by "
                                "thinklens run lynx", "re-run the job into a new run folder") from None


def load_test_tables(run: RunFolder) -> tuple[EventTable, RolloutTable]:
    """The test split's event and rollout tables of a LYNX run (for custom policies)."""
    ev = safetensors.numpy.load_file(str(run.path / "arrays" / "test_events.safetensors"))
    ro = safetensors.numpy.load_file(str(run.path / "arrays" / "test_rollouts.safetensors"))
    events = EventTable(rollout=ev["rollout"], position=ev["position"], label=ev["label"], prob=ev["prob"],
                        exit_tokens=ev["exit_tokens"], is_cue=ev["is_cue"].astype(bool))
    return events, RolloutTable(length=ro["length"], correct=ro["correct"], tokens=ro["tokens"])
