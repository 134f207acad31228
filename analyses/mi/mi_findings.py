"""The mi-peaks job's findings (shared/specs/controls.md): each headline number with its control and verdict.

* MI against the shuffled-answer control, paired over trajectories (each trajectory's mean MI with its own
  answer against its mean MI with another problem's answer, the same states on both sides: a sign-flip
  test). The mean over all steps dilutes a local effect, so the same is reported at the steps after the
  trajectory first writes its answer when the run knows its answers (:mod:`thinklens.analyses.mi.planted`).
* The peak fraction is no finding: top-k sets it (k of each trajectory's length), so "peaks are sparse" would be true
  by construction. Above :data:`SPARSE` it is flagged (:func:`peak_flag`; peaks that mark almost half of the tokens
  cap every enrichment near 2) in every thinking word's claim and ``extra["flag"]``.
* Thinking words: each top word's enrichment with its interval over the trajectories that hold it (``n``), an effect
  only when the interval excludes 1 and has width, at sparse peaks, in a run whose MI beats its shuffled-answer
  control; otherwise the word's sentence says which of these failed.
* Suppression, Representation Recycling and TTTS: accuracies with n and Wilson intervals against their
  controls, with the headroom the control leaves (``at ceiling`` when the control is at 1.0).

Example:
    >>> f = mi_vs_shuffled_finding("m", [0.30, 0.31, 0.29] * 4, [0.30, 0.30, 0.30] * 4)
    >>> f.verdict, headline(f, effect="x", otherwise=NO_ANSWER_MI)
    ('no effect', 'no answer-specific MI: the shuffled control matches (no effect)')
    >>> peak_fraction_note("m", 600, 1312)["flag"]
    'peaks are 46% of tokens (above 20%): not sparse'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from thinklens.analyses.mi.config import DEFAULT_ESTIMATOR, ESTIMATORS, MAX_KERNEL_SCALE
from thinklens.analyses.mi.planted import score_trajectory
from thinklens.calibration.findings import Finding, accuracy_finding, headline, paired_finding, ratio_finding

if TYPE_CHECKING:
    from thinklens.analyses.mi.run_format import TrajectoryRecord

SPARSE = 0.2
"""A peak rule marking more than this share of tokens is flagged (the paper's peaks are under ~5%)."""
NO_ANSWER_MI = "no answer-specific MI: the shuffled control matches"
NO_WORD = "no thinking word is enriched"
ALPHA = 0.05


def mi_vs_shuffled_finding(model: str, own: Sequence[float], shuffled: Sequence[float], *, where: str = "all steps",
                           seed: int = 0, alpha: float = ALPHA) -> Finding:
    """Per-trajectory MI with the own answer vs with a shuffled answer (same states), paired over trajectories."""
    return paired_finding(f"{model}: MI with the own answer beats the shuffled answer ({where})", own, shuffled,
                          control="shuffled answer", statistic="mean MI", alpha=alpha, seed=seed)


def peak_flag(peak_fraction: float | None) -> str | None:
    """The flag of a peak fraction above :data:`SPARSE` (None at or below it).

    Example:
        >>> peak_flag(600 / 1312), peak_flag(0.05)
        ('peaks are 46% of tokens (above 20%): not sparse', None)
    """
    if peak_fraction is None or not peak_fraction > SPARSE:
        return None
    return f"peaks are {peak_fraction:.0%} of tokens (above {SPARSE:.0%}): not sparse"


def peak_fraction_note(model: str, n_peaks: int, n_tokens: int, *, rule: str = "top_k") -> dict[str, Any]:
    """The share of tokens that the peak rule marks, as a fact of the run, not a finding: top-k *sets* it (k of each
    trajectory's length), so a verdict on it would be true by construction. ``flag`` when it is above :data:`SPARSE`.

    Example:
        >>> peak_fraction_note("m", 600, 1312)["flag"]
        'peaks are 46% of tokens (above 20%): not sparse'
    """
    value = n_peaks / n_tokens if n_tokens else None
    note: dict[str, Any] = {"rule": rule, "n_peaks": int(n_peaks), "n_tokens": int(n_tokens), "peak_fraction": value,
                            "set_by_the_rule": rule == "top_k"}
    flag = peak_flag(value)
    if flag:
        note["flag"] = flag
    return note


NOT_SPARSE = "the peaks are not sparse"
NOT_ANSWER_SPECIFIC = "the MI of this run is not answer-specific (its shuffled-answer control: {verdict})"
ZERO_WIDTH = "its interval has zero width: resampling the trajectories never moved the ratio"


def word_findings(model: str, rows: Sequence[Mapping[str, Any]], *, top: int, peak_fraction: float | None = None,
                  mi_control: Finding | None = None) -> list[Finding]:
    """The enrichment of the ``top`` words seen at peaks: an effect only where the interval excludes 1 *and* the
    words can be thinking tokens at all.

    * ``n`` of each word is its ``n_units``: the trajectories that hold it, the units the bootstrap resamples (19
      occurrences in one looping trajectory are one unit); under ``MIN_N`` units it is ``too few samples``, and so is
      an interval of zero width (nothing varied: no interval was measured).
    * With a ``peak_fraction`` above :data:`SPARSE`, every word's claim and ``extra["flag"]`` say so, with the cap it
      puts on enrichment (``1 / peak_fraction``), and no word is an effect: words at peaks that are not sparse are
      not words at information peaks.
    * With ``mi_control`` (the run's own MI against its shuffled-answer control) not an ``effect``, no word is an
      effect: words found at the peaks of a signal that failed its control are not thinking tokens.

    A word held back by either rule keeps its numbers, gets verdict ``no effect`` and says why (``extra["not_shown"]``
    and the sentence ``extra["otherwise"]``).
    """
    flag = peak_flag(peak_fraction)
    if flag:
        flag = f"{flag}, so no enrichment can exceed {1.0 / float(peak_fraction):.2f}"
    held = []
    if flag:
        held.append(NOT_SPARSE)
    if mi_control is not None and not mi_control.is_effect:
        held.append(NOT_ANSWER_SPECIFIC.format(verdict=mi_control.verdict))
    out = []
    for r in [r for r in rows if r.get("peak_count", 0) > 0][:top]:
        lo, hi = r.get("ci_low"), r.get("ci_high")
        ratio = r.get("ratio")
        if ratio is None or lo is None or hi is None:
            continue
        claim = f"{model}: '{r['word']}' is enriched at peaks" + (f" [{flag}]" if flag else "")
        units = int(r.get("n_units") or 0)  # runs written before n_units: unknown, so too few
        f = ratio_finding(claim, float(ratio), (float(lo), float(hi)), n=units)
        extra: dict[str, Any] = {"peak_count": r.get("peak_count"), "total_count": r.get("total_count"),
                                 "units": "trajectories that hold the word"}
        if flag:
            extra |= {"flag": flag, "peak_fraction": round(float(peak_fraction), 6)}
        verdict, why = f.verdict, list(held)
        if verdict != "too few samples" and float(lo) == float(hi):
            verdict, why = "too few samples", [ZERO_WIDTH, *why]
        elif verdict == "effect" and held:
            verdict = "no effect"
        if why and verdict != "effect":
            extra |= {"not_shown": "; ".join(why),
                      "otherwise": f"{model}: '{r['word']}' not shown as a thinking word: {'; '.join(why)}"}
        out.append(replace(f, verdict=verdict, extra=extra))
    return out


def _with_headroom(f: Finding) -> Finding:
    extra = {**f.extra, "headroom": None if f.control_value is None else round(1.0 - float(f.control_value), 6)}
    return replace(f, extra=extra)


def suppression_findings(rows: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """Thinking words suppressed vs none, and vs as many random words (lower accuracy is the effect)."""
    by = {r["condition"]: r for r in rows}
    if "none" not in by or "thinking" not in by:
        return []
    none, think = by["none"], by["thinking"]
    out = [accuracy_finding("suppressing thinking words lowers accuracy", int(think["n_correct"]), int(think["n"]),
                            control="no suppression", control_k=int(none["n_correct"]), control_n=int(none["n"]),
                            higher_is_effect=False)]
    rand = [r for c, r in by.items() if c.startswith("random_")]
    if rand:
        k, n = sum(int(r["n_correct"]) for r in rand), sum(int(r["n"]) for r in rand)
        out.append(accuracy_finding("suppressing thinking words hurts more than random words", int(think["n_correct"]),
                                    int(think["n"]), control="random words suppressed", control_k=k, control_n=n,
                                    higher_is_effect=False))
    return [_with_headroom(f) for f in out]


def recycling_findings(rows: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """RR vs greedy decoding at each layer (higher accuracy is the effect; at ceiling when greedy is at 1.0)."""
    out = []
    for r in rows:
        n = int(r["n"])
        out.append(_with_headroom(accuracy_finding(
            f"representation recycling at layer {r['layer']} raises accuracy", int(round(r["accuracy_rr"] * n)), n,
            control="greedy", control_k=int(round(r["accuracy_plain"] * n)), control_n=n, ceiling_margin=1e-9)))
    return out


def ttts_findings(rows: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """Each thinking word's TTTS vs plain continuation at the same budget (at ceiling when plain is at 1.0)."""
    plain = {int(r["budget"]): r for r in rows if r["method"] == "plain"}
    out = []
    for r in rows:
        if r["method"] == "plain" or int(r["budget"]) not in plain:
            continue
        p = plain[int(r["budget"])]
        out.append(_with_headroom(accuracy_finding(
            f"TTTS with '{r['method'].split(':', 1)[-1]}' at budget {r['budget']} beats plain continuation",
            int(r["n_correct"]), int(r["n"]), control="plain continuation", control_k=int(p["n_correct"]),
            control_n=int(p["n"]), ceiling_margin=1e-9)))
    return out


def mi_headline(f: Finding | Mapping[str, Any]) -> str:
    """The MI finding as a headline that never states a shuffled-matched MI as an effect, naming where it was measured
    (all steps, or where the answer is first written) so that two MI findings never read as one.

    Example:
        >>> mi_headline(mi_vs_shuffled_finding("m", [0.3] * 20, [0.2] * 20, where="all steps"))
        'answer-specific MI: the own answer beats its shuffled control (all steps)'
    """
    claim = f.claim if isinstance(f, Finding) else str(f.get("claim", ""))
    where = f" ({claim.rsplit('(', 1)[1]}" if claim.endswith(")") and "(" in claim else ""
    text = headline(f, effect="answer-specific MI: the own answer beats its shuffled control", otherwise=NO_ANSWER_MI)
    return f"{text}{where}" if text.startswith("answer-specific") else text.replace(NO_ANSWER_MI, NO_ANSWER_MI + where, 1)


def words_headline(findings: Sequence[Finding | Mapping[str, Any]]) -> str:
    """The enriched thinking words, or that none is; with the run's peak-fraction flag when the words carry it."""
    def get(f: Finding | Mapping[str, Any], k: str) -> Any:
        return getattr(f, k) if isinstance(f, Finding) else f[k]

    enriched = [f for f in findings if get(f, "verdict") == "effect"]
    if not enriched:
        verdicts = sorted({get(f, "verdict") for f in findings}) or ["no words at peaks"]
        why = sorted({r for f in findings for r in ((get(f, "extra") or {}).get("not_shown") or "").split("; ") if r})
        return f"{NO_WORD} ({', '.join(verdicts)}{': ' + '; '.join(why) if why else ''})"
    words = [get(f, "claim").split("'")[1] for f in enriched]
    flags = sorted({(get(f, "extra") or {}).get("flag") for f in enriched} - {None})
    return "thinking words enriched at peaks: " + ", ".join(
        f"'{w}' x{get(f, 'value'):.2f} [{get(f, 'ci')[0]:.2f}, {get(f, 'ci')[1]:.2f}]" for w, f in zip(words, enriched)) + (
        f" ({'; '.join(flags)})" if flags else "")


def saturation_flag(estimator: str, scales: Sequence[float]) -> str | None:
    """The flag of a fixed-sigma estimator whose states reach far beyond its sigma (median over steps of
    max|x - mean| / sigma above :data:`~thinklens.analyses.mi.config.MAX_KERNEL_SCALE`); None otherwise.

    Example:
        >>> saturation_flag("reference", [600.0, 669.0, 700.0])[:60]
        'reference (fixed sigma 50): the states reach 669 sigma (max|'
        >>> saturation_flag("reference", [0.05]), saturation_flag("median_sigma", [669.0])
        (None, None)
    """
    cfg = ESTIMATORS.get(estimator)
    if cfg is None or cfg.bandwidth != "fixed" or not len(scales):
        return None
    scale = float(np.median(np.asarray(scales, dtype=np.float64)))
    if not scale > MAX_KERNEL_SCALE:
        return None
    return (f"{estimator} (fixed sigma {cfg.sigma:g}): the states reach {scale:.0f} sigma (max|x - mean| / sigma, median "
            f"over steps; above {MAX_KERNEL_SCALE:g}): the kernel is saturated and this MI is not comparable across "
            f"models; {DEFAULT_ESTIMATOR} scales the kernel to the states")


def per_trajectory_means(curves: Sequence[Sequence[float]]) -> np.ndarray:
    """One mean per trajectory (an empty curve counts 0)."""
    return np.asarray([float(np.mean(c)) if len(c) else 0.0 for c in curves], dtype=np.float64)


def answer_step_scores(records: Sequence[TrajectoryRecord], rule: str = "top_k") -> list[Any]:
    """:func:`thinklens.analyses.mi.planted.score_trajectory` of every record that writes its answer (first estimator,
    peaks of ``rule``)."""
    out = []
    for r in records:
        s = score_trajectory(r.variants[r.estimator], r.shuffled[r.estimator], r.tokens, str(r.answer),
                             peaks=r.peaks.get(rule, ()))
        if s is not None:
            out.append(s)
    return out


def model_findings(name: str, records: Sequence[TrajectoryRecord], *, word_rows: Sequence[Mapping[str, Any]],
                   rule: str, top: int, seed: int = 0) -> list[Finding]:
    """One model's MI and answer-step MI against the shuffled answer, and its thinking-word findings (held back when
    the MI over all steps, whose peaks give the words, does not beat its control, or when the peaks are not sparse).
    The peak fraction is no finding (top-k sets it); its flag travels with the words."""
    est = records[0].estimator
    own = per_trajectory_means([r.variants[est] for r in records])
    shuf = per_trajectory_means([r.shuffled[est] for r in records])
    control = mi_vs_shuffled_finding(name, own, shuf, seed=seed)
    out = [control]
    scores = answer_step_scores(records, rule)
    if scores:
        out.append(mi_vs_shuffled_finding(name, [s.own for s in scores], [s.shuffled for s in scores],
                                          where="where the answer is first written", seed=seed))
    flag = saturation_flag(est, [v for r in records for v in (getattr(r, "small_scale", None) or {}).get("scale", ())])
    if flag:  # the MI of a saturated fixed-sigma kernel is flagged wherever it is read
        out = [replace(f, extra={**f.extra, "flag": flag}) for f in out]
    n_peaks = sum(len(r.peaks.get(rule, ())) for r in records)
    n_tokens = sum(len(r.tokens) for r in records)
    out += word_findings(name, word_rows, top=top, peak_fraction=n_peaks / n_tokens if n_tokens else None,
                         mi_control=control)
    return out
