"""One model's stage of the mi-peaks job: generate, score every site and estimator, the
shuffled-answer control, peaks by every rule (and the answer-specific top-k peaks, :func:`trajectory_peaks`); one
record per trajectory on disk, and the model's summary (means, controls, mean curves) for the run index.

Problems are processed ``batch_size`` at a time, so the captured states held in memory stay
bounded however many problems a run has; the answer vectors (one per problem and site) are
computed first, because the shuffled control scores trajectory i against the answer of another
problem ``perm[i]`` (a seeded derangement).

Example:
    >>> import numpy as np
    >>> jaccard([1, 2, 3], [2, 3, 4])
    0.5
    >>> round(expected_jaccard(30, 3, 3), 4)  # two random 3-step peak sets of a 30-step trajectory
    0.0621
    >>> round(pearson(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 7.0])), 3)
    0.993
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from thinklens.analyses.mi.answer_controls import derangement
from thinklens.analyses.mi.config import estimator_config
from thinklens.analyses.mi.estimator import nhsic_trajectory
from thinklens.analyses.mi.figures import mean_curve
from thinklens.analyses.mi.peaks import PEAK_RULES, Peaks, answer_specific, find_peaks
from thinklens.analyses.mi.run_format import (
    SPECIFIC_PEAKS,
    TrajectoryRecord,
    read_trajectory,
    trajectory_path,
    write_trajectory,
)
from thinklens.analyses.mi.small_scale import kernel_scale, small_scale_nhsic, squared_correlation
from thinklens.analyses.mi.trajectory import golden_answer_vectors
from thinklens.data.answers import extract_answer, is_correct
from thinklens.data.formats import token_separator
from thinklens.errors import ThinklensError
from thinklens.generation.budgets import budgets_for
from thinklens.runs.jobs import Shards

if TYPE_CHECKING:
    from thinklens.analyses.mi.config import MIPeaksJobConfig
    from thinklens.data.formats import PromptFormat
    from thinklens.engine.model import HookedModel
    from thinklens.engine.sites import Site


def jaccard(a: Sequence[int], b: Sequence[int]) -> float:
    """|A & B| / |A | B| of two index sets (1.0 when both are empty)."""
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def expected_jaccard(n: int, a: int, b: int) -> float:
    """Chance level of :func:`jaccard`: its expectation for two independent uniformly random subsets of sizes
    ``a`` and ``b`` of ``n`` steps (exact: the overlap is hypergeometric). 1.0 when both are empty, as jaccard.

    Example:
        >>> expected_jaccard(10, 10, 10), expected_jaccard(10, 0, 0), expected_jaccard(10, 0, 3)
        (1.0, 1.0, 0.0)
    """
    if not 0 <= a <= n or not 0 <= b <= n:
        raise ThinklensError.of("peak set sizes", (n, a, b), "0 <= a, b <= n", "pass the sizes of two peak sets of n steps")
    if a + b == 0:
        return 1.0
    total = math.comb(n, b)
    return sum(math.comb(a, k) * math.comb(n - a, b - k) / total * k / (a + b - k)
               for k in range(max(0, a + b - n), min(a, b) + 1))


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation; NaN when either side is constant or shorter than 3."""
    if x.size < 3 or float(np.std(x)) == 0.0 or float(np.std(y)) == 0.0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def peak_options(cfg: MIPeaksJobConfig, rule: str) -> dict[str, Any]:
    """The options of a peak rule from the job settings."""
    return {"k": cfg.k, "clip": True} if rule == "top_k" else {"whisker": cfg.whisker}


def trajectory_peaks(curve: Sequence[float], shuffled: Sequence[float], cfg: MIPeaksJobConfig) -> dict[str, Peaks]:
    """One trajectory's peaks: every rule of :data:`~thinklens.analyses.mi.peaks.PEAK_RULES` on ``curve`` (the own-answer
    MI, the paper's peaks, which the thinking-word stages read), and under
    :data:`~thinklens.analyses.mi.run_format.SPECIFIC_PEAKS` the top-k rule, with the same k and clipping, on the
    answer-specific curve ``curve - shuffled`` (the shuffled-answer MI on the same states), which the validation
    settings score."""
    peaks = {rule: find_peaks(curve, rule, **peak_options(cfg, rule)) for rule in PEAK_RULES}
    peaks[SPECIFIC_PEAKS] = find_peaks(answer_specific(curve, shuffled), "top_k", **peak_options(cfg, "top_k"))
    return peaks


def unique_sites(model: HookedModel, sites: Sequence[str]) -> list[Site]:
    """Resolve sites for this model, dropping repeats (resid_post.-1 may equal resid_post.3)."""
    out: list[Site] = []
    for s in sites:
        site = model.resolve_site(s)
        if site not in out:
            out.append(site)
    return out


def _nanmean(values: list[float]) -> float | None:
    arr = np.asarray([v for v in values if not math.isnan(v)], dtype=np.float64)
    return float(arr.mean()) if arr.size else None


class _Stats:
    """Running per-estimator statistics of one model's trajectories."""

    def __init__(self, estimators: Sequence[str]) -> None:
        self.own: dict[str, list[float]] = {e: [] for e in estimators}
        self.shuf: dict[str, list[float]] = {e: [] for e in estimators}
        self.beats: dict[str, list[float]] = {e: [] for e in estimators}
        self.j_shuf: dict[str, list[float]] = {e: [] for e in estimators}
        self.j_chance: dict[str, list[float]] = {e: [] for e in estimators}
        self.j_shuf_iqr: dict[str, list[float]] = {e: [] for e in estimators}
        self.j_chance_iqr: dict[str, list[float]] = {e: [] for e in estimators}
        self.j_ref: dict[str, list[float]] = {e: [] for e in estimators}
        self.corr: dict[str, list[float]] = {e: [] for e in estimators}
        self.frac_iqr: dict[str, list[float]] = {e: [] for e in estimators}

    def add(self, rec: TrajectoryRecord, cfg: MIPeaksJobConfig) -> None:
        ref_peaks = rec.peaks["top_k"]
        norms = np.asarray(rec.norms)
        for e in self.own:
            own, shuf = np.asarray(rec.variants[e]), np.asarray(rec.shuffled[e])
            self.own[e].append(float(own.mean()))
            self.shuf[e].append(float(shuf.mean()))
            self.beats[e].append(float(own.mean() > shuf.mean()))
            top = find_peaks(own, "top_k", **peak_options(cfg, "top_k")).indices
            top_shuf = find_peaks(shuf, "top_k", **peak_options(cfg, "top_k")).indices
            self.j_shuf[e].append(jaccard(top, top_shuf))
            self.j_chance[e].append(expected_jaccard(own.size, len(top), len(top_shuf)))
            iqr, iqr_shuf = (find_peaks(c, "iqr", whisker=cfg.whisker).indices for c in (own, shuf))
            self.j_shuf_iqr[e].append(jaccard(iqr, iqr_shuf))
            self.j_chance_iqr[e].append(expected_jaccard(own.size, len(iqr), len(iqr_shuf)))
            self.j_ref[e].append(jaccard(top, ref_peaks))
            self.corr[e].append(pearson(own, norms))
            self.frac_iqr[e].append(len(iqr) / own.size if own.size else 0.0)

    def rows(self) -> list[dict[str, Any]]:
        return [{"estimator": e, "mean_mi": _nanmean(self.own[e]), "mean_mi_shuffled": _nanmean(self.shuf[e]),
                 "own_beats_shuffled": _nanmean(self.beats[e]), "peak_jaccard_shuffled": _nanmean(self.j_shuf[e]),
                 "peak_jaccard_chance": _nanmean(self.j_chance[e]),
                 "iqr_peak_jaccard_shuffled": _nanmean(self.j_shuf_iqr[e]),
                 "iqr_peak_jaccard_chance": _nanmean(self.j_chance_iqr[e]),
                 "peak_jaccard_reference": _nanmean(self.j_ref[e]), "corr_with_norm": _nanmean(self.corr[e]),
                 "iqr_peak_fraction": _nanmean(self.frac_iqr[e])} for e in self.own]


def _record(i: int, key: str, tr: Any, prompt: str, solution: str, answer: str, sites: list[Site],
            gold: dict[Site, torch.Tensor], perm: list[int], cfg: MIPeaksJobConfig,
            device: torch.device) -> TrajectoryRecord:
    site0, est0 = sites[0], cfg.estimators[0]
    fixed = fixed_estimator(cfg.estimators)
    mi: dict[str, list[float]] = {}
    for s in sites:
        mi[str(s)] = nhsic_trajectory(tr.hidden[s].float(), gold[s][i], est0, device=device).mi.tolist()
    states = tr.hidden[site0].float()
    variants = {est0: mi[str(site0)]}
    for e in cfg.estimators[1:]:
        variants[e] = nhsic_trajectory(states, gold[site0][i], e, device=device).mi.tolist()
    shuffled = {e: nhsic_trajectory(states, gold[site0][perm[i]], e, device=device).mi.tolist()
                for e in cfg.estimators}
    peaks = trajectory_peaks(mi[str(site0)], shuffled[est0], cfg)  # mi[site0] is variants[est0]
    return TrajectoryRecord(
        index=i, model=key, prompt=prompt, solution=solution, answer=answer, parsed=extract_answer(tr.text),
        correct=is_correct(tr.text, answer), tokens=tuple(tr.tokens), token_ids=tuple(tr.token_ids),
        text=tr.text, stop_reason=tr.stop_reason, site=str(site0), estimator=est0, mi=mi, variants=variants,
        shuffled=shuffled, shuffled_answer_of=perm[i], norms=states.norm(dim=1).double().tolist(),
        peaks={r: list(p.indices) for r, p in peaks.items()}, thresholds={r: p.threshold for r, p in peaks.items()},
        small_scale=small_scale_curves(states, gold[site0][i], gold[site0][perm[i]], fixed) if fixed else {},
    )


def fixed_estimator(estimators: Sequence[str]) -> str | None:
    """The first fixed-sigma estimator scored (the reference when it is among them): the one whose kernel scale and
    small-scale limit the run records, whichever estimator drives the peaks (a saturated fixed sigma is seen even
    next to the scaled default).

    Example:
        >>> fixed_estimator(("median_sigma", "reference", "l2")), fixed_estimator(("median_sigma",))
        ('reference', None)
    """
    return next((e for e in estimators if estimator_config(e).bandwidth == "fixed"), None)


def small_scale_curves(states: torch.Tensor, answer: torch.Tensor, shuffled_answer: torch.Tensor, estimator: str
                       ) -> dict[str, list[float]]:
    """Per step, the squared coordinate correlation with the own and the shuffled answer, the small-scale nHSIC of
    ``estimator`` against both, and the expansion parameter (:mod:`thinklens.analyses.mi.small_scale`); {} without a fixed
    bandwidth."""
    if estimator_config(estimator).bandwidth != "fixed":
        return {}
    return {"corr2": squared_correlation(states, answer).tolist(),
            "corr2_shuffled": squared_correlation(states, shuffled_answer).tolist(),
            "approx": small_scale_nhsic(states, answer, estimator).tolist(),
            "approx_shuffled": small_scale_nhsic(states, shuffled_answer, estimator).tolist(),
            "scale": kernel_scale(states, estimator).tolist()}


def answers_alike(answers: torch.Tensor, perm: Sequence[int], estimator: str) -> dict[str, float]:
    """How alike the answer vectors of different problems are (why a shuffled answer scores like the own one):
    means over problems i of rho^2(h_i, h_perm(i)) (``answer_corr2``), of nHSIC(h_i, h_perm(i))
    (``answer_nhsic_shuffled``) and of nHSIC(h_i, h_i) (``answer_nhsic_self``, the most any state can score)."""
    h = answers.double()
    cross = [float(nhsic_trajectory(h[i][None], h[j], estimator).mi[0]) for i, j in enumerate(perm)]
    own = [float(nhsic_trajectory(h[i][None], h[i], estimator).mi[0]) for i in range(len(perm))]
    corr2 = [float(squared_correlation(h[i][None], h[j])[0]) for i, j in enumerate(perm)]
    return {"answer_corr2": float(np.mean(corr2)), "answer_nhsic_shuffled": float(np.mean(cross)),
            "answer_nhsic_self": float(np.mean(own))}


def small_scale_summary(records: Sequence[TrajectoryRecord], answers_alike: dict[str, float] | None = None,
                        estimator: str | None = None) -> dict[str, Any] | None:
    """How close the fixed-sigma estimator's nHSIC (``estimator``; default the records' own) is to its small-scale limit
    rho^2, pooled over every step of every trajectory: means of both (own and shuffled answer), their Pearson correlation
    over steps, the mean absolute difference, the expansion parameter (median and max over steps), and
    ``answers_alike`` (:func:`answers_alike`). None when the records hold none."""
    recs = [r for r in records if r.small_scale]
    if not recs:
        return None
    est = estimator or recs[0].estimator  # the fixed-sigma estimator the records' small-scale curves belong to
    mi = np.concatenate([np.asarray(r.variants[est]) for r in recs])
    mi_shuf = np.concatenate([np.asarray(r.shuffled[est]) for r in recs])
    cat = {k: np.concatenate([np.asarray(r.small_scale[k]) for r in recs]) for k in recs[0].small_scale}
    return {
        "estimator": est, "n_steps": int(mi.size),
        "mean_mi": float(mi.mean()), "mean_corr2": float(cat["corr2"].mean()), "mean_approx": float(cat["approx"].mean()),
        "mean_mi_shuffled": float(mi_shuf.mean()), "mean_corr2_shuffled": float(cat["corr2_shuffled"].mean()),
        "corr_mi_corr2": pearson(mi, cat["corr2"]), "corr_mi_corr2_shuffled": pearson(mi_shuf, cat["corr2_shuffled"]),
        "mean_abs_diff_corr2": float(np.abs(mi - cat["corr2"]).mean()),
        "mean_abs_diff_approx": float(np.abs(mi - cat["approx"]).mean()),
        "median_scale": float(np.median(cat["scale"])), "max_scale": float(cat["scale"].max()),
        **(answers_alike or {}),
    }


def summarize_model(records: Sequence[TrajectoryRecord], *, key: str, name: str, role: str, style: str, fmt: str,
                    n_layers: int, d_model: int, cfg: MIPeaksJobConfig, token_separator: str = "",
                    thinking_span: str | None = None, answers_alike: dict[str, float] | None = None) -> dict[str, Any]:
    """The run-index entry of one model from its records: settings, means, controls, mean curves and
    one short row per trajectory (see :mod:`thinklens.analyses.mi.run_format`).

    ``style`` and ``fmt`` name the prompt format (a zoo style, chat or plain); ``token_separator`` rebuilds
    the text from the tokens (" " for word-level tokenizers); ``thinking_span`` is the span's family;
    ``answers_alike`` (:func:`answers_alike`) goes to the small-scale summary (:func:`small_scale_summary`)."""
    if not records:
        raise ThinklensError.of("trajectories", 0, "at least one scored trajectory", "score some problems")
    stats = _Stats(cfg.estimators)
    for rec in records:
        stats.add(rec, cfg)
    rows = [rec.index_row() for rec in records]
    sites = list(records[0].mi)
    site0, est0 = records[0].site, records[0].estimator
    curves = {s: [np.asarray(r.mi[s]) for r in records] for s in sites}
    shuffled0 = [np.asarray(r.shuffled[est0]) for r in records]
    fractions = {rule: float(np.mean([r["n_peaks"][rule] / max(1, r["n_tokens"]) for r in rows]))
                 for rule in PEAK_RULES}
    return {
        "key": key, "name": name, "role": role, "style": style, "prompt_format": fmt, "thinking_span": thinking_span,
        "token_separator": token_separator, "n": len(rows),
        "n_layers": n_layers, "d_model": d_model, "site": site0, "sites": sites, "estimator": est0,
        "estimators": list(cfg.estimators), "peak_rules": list(PEAK_RULES),
        "accuracy": float(np.mean([r["correct"] for r in rows])),
        "mean_tokens": float(np.mean([r["n_tokens"] for r in rows])),
        "mean_mi": {s: float(np.mean([c.mean() for c in cs])) for s, cs in curves.items()},
        "mean_max_mi": float(np.mean([c.max() for c in curves[site0]])),
        "peak_to_median": _nanmean([float(c.max() / np.median(c)) if np.median(c) > 0 else math.nan
                                    for c in curves[site0]]),
        "peak_fraction": fractions,
        "controls": stats.rows(),
        "small_scale": small_scale_summary(records, answers_alike, fixed_estimator(cfg.estimators)),
        "mean_curves": {
            "fraction": {s: mean_curve(cs, "fraction") for s, cs in curves.items()},
            "step": {s: mean_curve(cs, "step") for s, cs in curves.items()},
            "shuffled_fraction": mean_curve(shuffled0, "fraction"),
            "shuffled_step": mean_curve(shuffled0, "step"),
        },
        "index": rows,
    }


def collect_model(model: HookedModel, *, key: str, name: str, role: str, fmt: PromptFormat,
                  prompts: Sequence[str], solutions: Sequence[str], answers: Sequence[str],
                  cfg: MIPeaksJobConfig, run_path: Any, progress: Callable[[str], None] | None = None,
                  shards: Shards | None = None) -> dict[str, Any] | None:
    """Score one model on every problem; writes its trajectory records, returns its index entry.

    Problems go ``batch_size`` at a time and the captured states of a batch are dropped as soon as it is
    scored; a batch whose records are all on disk (an interrupted run) is not scored again. Under a
    multi-process launch (``shards``) each process scores its share of the batches; the main process then
    reads every record and returns the entry, the others None.
    """
    shards = shards or Shards()
    sites = unique_sites(model, cfg.sites)
    gold = golden_answer_vectors(model, solutions, sites)
    perm = derangement(len(prompts), cfg.seed)
    budgets = budgets_for(model, prompts, cfg.max_new_tokens)  # each prompt its own, inside the context
    for start in shards.shard(range(0, len(prompts), cfg.batch_size)):
        rows = range(start, min(start + cfg.batch_size, len(prompts)))
        if all(trajectory_path(run_path, key, i).is_file() for i in rows):
            continue
        traces = model.generate([prompts[i] for i in rows], max_new_tokens=[budgets.per_prompt[i] for i in rows],
                                capture=sites)
        for i, tr in zip(rows, traces):
            write_trajectory(run_path, _record(i, key, tr, prompts[i], solutions[i], answers[i], sites, gold, perm, cfg,
                                               model.device))
        del traces
        if progress is not None:
            progress(f"{name}: {rows.stop}/{len(prompts)} problems")
    shards.merge()
    if not shards.is_main:
        return None
    records = [read_trajectory(run_path, key, i) for i in range(len(prompts))]
    separator = next((token_separator(model.tokenizer, list(r.token_ids[:16])) for r in records if len(r.token_ids) >= 2), "")
    alike = answers_alike(gold[sites[0]], perm, fixed_estimator(cfg.estimators) or cfg.estimators[0])
    return {**summarize_model(records, key=key, name=name, role=role, style=fmt.name, fmt=fmt.name, n_layers=model.n_layers,
                           d_model=model.d_model, cfg=cfg, token_separator=separator or "",
                           thinking_span=fmt.span.family if fmt.span is not None else None, answers_alike=alike),
            "budgets": budgets.summary()}
