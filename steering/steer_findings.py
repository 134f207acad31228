"""What the ``steer`` job's sweep shows (:mod:`thinklens.steering.jobs.steer`): its rows pooled over seeds
(:func:`aggregate_seeds`, :func:`word_rates`), one finding per non-zero coefficient against every other arm and the
harm bound (:func:`steer_findings`, the job's declared findings) and the report's lines (:func:`headlines`).

Example:
    >>> rows = [{"arm": "feature", "coeff": c, "traces_with_word": k, "n_traces": 40} for c, k in ((0.0, 10), (1.0, 30))]
    >>> word_rates(rows, "wait")
    {'feature': {'0': [10, 40], '1': [30, 40]}}
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import TYPE_CHECKING, Any

from thinklens.calibration.findings import accuracy_finding, headline
from thinklens.calibration.stats import wilson

if TYPE_CHECKING:
    from thinklens.calibration.findings import Finding

#: The harm bound a steer run states before any steering, unless its config says otherwise (``--max-accuracy-drop``,
#: ``--max-degenerate-rise``): the most the steered accuracy may fall below the unsteered accuracy, and the most the
#: share of degenerate traces may rise over the unsteered share.
MAX_ACCURACY_DROP = 0.10
MAX_DEGENERATE_RISE = 0.20


def word_rates(rows: list[dict[str, Any]], word: str) -> dict[str, dict[str, list[float]]]:
    """``{arm: {coeff: [traces saying word, traces]}}`` summed over seeds (coefficient 0: the unsteered runs)."""
    return _counts(rows, "traces_with_word")


def _counts(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, list[float]]]:
    """``{arm: {coeff: [sum of row[key], traces]}}`` summed over seeds; arms whose rows lack ``key`` are left out."""
    out: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        if r.get(key) is None:
            continue
        cell = out.setdefault(r["arm"], {}).setdefault(f"{r['coeff']:g}", [0, 0])
        cell[0] += int(r[key])
        cell[1] += int(r["n_traces"])
    return out


#: What each arm is, for the reason a finding is not shown: controls (nothing to steer with) and competing methods.
ARM_NAMES = {"random_feature": "the equal-norm random feature", "random_direction": "the equal-norm random direction",
             "top_activating": "the top-activating feature (a competing choice of feature)",
             "diff_of_means": "the difference-of-means baseline (a competing method)", "unsteered": "the unsteered run"}


def _harm(rows_acc: dict[str, dict[str, list[float]]], rows_deg: dict[str, dict[str, list[float]]], c: str,
          harm: dict[str, float]) -> dict[str, Any]:
    """The steered feature's accuracy and degenerate share at ``c`` against the unsteered run (coefficient 0)."""
    out: dict[str, Any] = {**harm, "within": True, "exceeded": []}
    base = "0"
    for key, counts, bound, worse in (("accuracy", rows_acc, "max_accuracy_drop", -1),
                                      ("degenerate", rows_deg, "max_degenerate_rise", 1)):
        here, ref = counts.get("feature", {}).get(c), counts.get("feature", {}).get(base)
        if here is None or ref is None:
            out[key] = None  # not graded (a prompt file without answers), or no unsteered run
            continue
        value, unsteered = here[0] / here[1], ref[0] / ref[1]
        change = worse * (value - unsteered)  # > 0: worse than unsteered
        out[key] = {"steered": value, "unsteered": unsteered, "ci": list(wilson(int(here[0]), int(here[1]))),
                    "n": int(here[1]), "worse_by": change}
        if change > harm[bound] + 1e-12:
            out["within"] = False
            out["exceeded"].append(f"{key} {unsteered:.3f} -> {value:.3f} ({'drop' if worse < 0 else 'rise'} "
                                   f"{change:.3f} > {harm[bound]:g})")
    return out


def steer_findings(rows: list[dict[str, Any]], word: str, feature: int, *,
                   harm: dict[str, float] | None = None, mode: str = "add") -> list["Finding"]:
    """One finding per non-zero coefficient: the share of traces that say ``word`` when steering ``feature``, pooled
    over seeds, against every other arm at the same coefficient and the unsteered run.

    ``effect`` only when the feature's Wilson interval lies beyond each of theirs in the coefficient's direction (the
    finding's ``control`` is the equal-norm random feature; every comparison is in ``extra["controls"]``) and the
    feature's steered text stays within ``harm`` (``max_accuracy_drop``, ``max_degenerate_rise`` against the unsteered
    run; ``extra["harm"]``). Otherwise ``no effect`` with the reason in ``extra["not_shown"]`` (and the sentence the CLI,
    Home and pages state in ``extra["otherwise"]``, :func:`thinklens.calibration.findings.finding_sentence`). ``harm``
    defaults to the steer job's (:data:`MAX_ACCURACY_DROP`, :data:`MAX_DEGENERATE_RISE`); in ``clamp`` mode coefficient
    0 is the feature clamped to 0, which then stands where the unsteered run does (in ``add`` and ``scale`` mode it is
    the unsteered run).

    Example:
        >>> rows = [{"arm": a, "coeff": c, "traces_with_word": k, "n_traces": 40, "correct_traces": r, "degenerate_traces": 0}
        ...         for a, c, k, r in (("feature", 0.0, 10, 20), ("feature", 1.0, 38, 2), ("random_feature", 1.0, 10, 20))]
        >>> f = steer_findings(rows, "wait", 7)[0]
        >>> f.verdict, f.extra["not_shown"]
        ('no effect', 'beyond the harm bound: accuracy 0.500 -> 0.050 (drop 0.450 > 0.1)')
    """
    harm = {"max_accuracy_drop": MAX_ACCURACY_DROP, "max_degenerate_rise": MAX_DEGENERATE_RISE} if harm is None else harm
    reference = "feature clamped to 0" if mode == "clamp" else "unsteered"
    rates = word_rates(rows, word)
    acc, deg = _counts(rows, "correct_traces"), _counts(rows, "degenerate_traces")
    steered, control = rates.get("feature", {}), rates.get("random_feature", {})
    out = []
    for c in sorted((k for k in steered if float(k) != 0 and k in control), key=float):
        (k, n), (kc, nc) = steered[c], control[c]
        up = float(c) > 0
        way = "raises" if up else "lowers"
        claim = f"steering feature {feature} at c={c} {way} the share of traces that say {word!r}"
        f = accuracy_finding(claim, int(k), int(n), control="random feature (equal norm)", control_k=int(kc),
                             control_n=int(nc), statistic=f"{word}_rate", higher_is_effect=up)
        others = {arm: by_c[c] for arm, by_c in rates.items() if arm not in ("feature", "random_feature") and c in by_c}
        if "0" in steered:
            others[reference] = steered["0"]
        compared: dict[str, Any] = {}
        for arm, (ka, na) in others.items():
            g = accuracy_finding(claim, int(k), int(n), control=arm, control_k=int(ka), control_n=int(na),
                                 statistic=f"{word}_rate", higher_is_effect=up)
            compared[arm] = {"rate": ka / na if na else None, "k": int(ka), "n": int(na), "ci": g.extra.get("control_ci"),
                             "beaten": g.verdict == "effect"}
        h = _harm(acc, deg, c, harm)
        reasons = [] if f.verdict == "effect" else ["random feature does as well"]
        if f.verdict == "effect":
            reasons += [f"{ARM_NAMES.get(arm, arm)} does as well or better ({word!r} rate {r['rate']:.2f} vs {k / n:.2f})"
                        for arm, r in compared.items() if not r["beaten"]]
        if not h["within"]:
            reasons.append("beyond the harm bound: " + "; ".join(h["exceeded"]))
        extra = {**f.extra, "coeff": float(c), "controls": compared, "harm": h}
        verdict = f.verdict
        if reasons:
            extra["not_shown"] = "; ".join(reasons)
            extra["otherwise"] = f"steering feature {feature} at c={c} ({way} {word!r}): not shown: {extra['not_shown']}"
            verdict = "no effect" if verdict == "effect" else verdict
        out.append(dataclasses.replace(f, verdict=verdict, extra=extra))
    return out


def headlines(found: list["Finding"], word: str, feature: int) -> list[str]:
    """The report's lines: each finding's headline (an effect only when its verdict is one; else why not)."""
    lines = []
    for f in found:
        c = f"c={f.extra['coeff']:g}"
        ci = f"[{f.ci[0]:.2f}, {f.ci[1]:.2f}]"
        lo, hi = f.extra["control_ci"]
        ctrl = f"random feature {f.control_value:.2f} [{lo:.2f}, {hi:.2f}]"
        why = f.extra.get("not_shown", "random feature does as well")
        lines.append(headline(f, effect=f"{c}: feature {feature} moves the {word!r} rate to {f.value:.2f} {ci} vs {ctrl} "
                                        f"and beats every other arm within the harm bound (n={f.n}; effect)",
                              otherwise=f"{c}: not shown: {why}: {word!r} rate {f.value:.2f} {ci} vs {ctrl} (n={f.n})"))
    return lines


def aggregate_seeds(rows: list[dict[str, Any]], word: str) -> list[dict[str, Any]]:
    """Rows of several seeds -> one row per (arm, coefficient): means, plus ``<metric>_std`` over seeds.

    Example:
        >>> r = [{"arm": "a", "coeff": 1.0, "seed": s, "wait": w, "accuracy": 0.5} for s, w in ((0, 1.0), (1, 3.0))]
        >>> out = aggregate_seeds(r, "wait")[0]
        >>> out["wait"], out["wait_std"], out["n_seeds"]
        (2.0, 1.0, 2)
    """
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["arm"], r["coeff"]), []).append(r)
    out = []
    for rs in groups.values():
        row = {k: v for k, v in rs[0].items() if k != "seed"}
        for k in {k for k, v in rs[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)} - {
                "coeff", "feature", "seed", "added_norm"}:
            vals = [float(r[k]) for r in rs]
            row[k] = statistics.fmean(vals)
            row[f"{k}_std"] = statistics.pstdev(vals)
        row["n_seeds"] = len(rs)
        out.append(row)
    return out
