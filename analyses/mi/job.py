"""The MI-peaks job: problems -> traced trajectories -> MI curves (all estimators, shuffled control)
-> peaks -> thinking-token enrichment -> optional suppression test, RR and TTTS, into a run folder.

Stages are resumable: each writes ``results/<stage>.json`` and is marked done in the run folder,
so re-running with the same config skips finished stages.

Example:
    >>> MIPeaksJobConfig(n_problems=4, k=5).peak_rule
    'top_k'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from analyses.mi.config import ESTIMATORS
from analyses.mi.controls import shuffled_answer_control
from analyses.mi.estimator import compare_estimators
from analyses.mi.figures import figure_enrichment, figure_mi_curve, figure_model_overlay
from analyses.mi.figures_interventions import figure_recycling, figure_suppression, figure_ttts
from analyses.mi.peaks import PEAK_RULES, find_peaks
from analyses.mi.recycling import recycling_eval
from analyses.mi.suppression import suppression_test
from analyses.mi.thinking_tokens import CI_METHODS, TokenTrajectory, thinking_token_enrichment
from analyses.mi.trajectory import golden_answer_vectors, score_traces
from analyses.mi.ttts import ttts_eval
from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.model import HookedModel
    from thinklens.runs import RunFolder

STAGES = ("trajectories", "enrichment", "suppression", "recycling", "ttts")


@dataclass(frozen=True)
class MIPeaksJobConfig:
    """Settings of ``thinklens run mi-peaks``."""

    model: str = "tiny-think"
    """Zoo name, local model folder or hub id."""
    n_problems: int = 32
    """Problems drawn from the synthetic arithmetic task."""
    seed: int = 0
    """Seed of the problem stream."""
    style: str = "think"
    """Prompt style of the task: direct, cot or think."""
    min_steps: int = 2
    """Fewest arithmetic steps per problem."""
    max_steps: int = 4
    """Most arithmetic steps per problem."""
    sites: tuple[str, ...] = ("resid_post.-1",)
    """Blocks to score (the first one drives peaks and enrichment)."""
    max_new_tokens: int = 128
    """Generation budget per problem (512 in the paper)."""
    estimators: tuple[str, ...] = ("reference", "median_sigma", "l2")
    """Estimator variants scored side by side (the first one drives peaks)."""
    peak_rule: str = "top_k"
    """top_k or iqr."""
    k: int = 20
    """Peaks per trajectory for top_k (shorter trajectories keep all their steps)."""
    whisker: float = 1.5
    """IQR multiple for the iqr rule."""
    lowercase: bool = False
    """Merge the case of words in the enrichment."""
    ci: str = "bootstrap"
    """Enrichment interval: bootstrap (over trajectories) or wilson."""
    top_words: int = 5
    """Thinking words (most frequent at peaks) used by the suppression test and RR."""
    suppression: bool = False
    """Run the suppression test."""
    n_random: int = 3
    """Random-token draws of the suppression test."""
    recycling: bool = False
    """Run Representation Recycling vs greedy."""
    rr_layer: int | None = None
    """Recycled block (default about 0.72 of the depth)."""
    rr_probability: float = 0.5
    """Chance to recycle at a thinking token."""
    ttts: bool = False
    """Run thinking-token test-time scaling vs plain continuation."""
    ttts_words: tuple[str, ...] = ("Wait",)
    """Words appended by TTTS."""
    ttts_budgets: tuple[int, ...] = (0, 16, 32)
    """Extra-token budgets of TTTS."""

    def __post_init__(self) -> None:
        bad = [e for e in self.estimators if e not in ESTIMATORS]
        if bad or not self.estimators:
            raise ThinklensError.of("estimators", self.estimators, f"names among {sorted(ESTIMATORS)}",
                                    "e.g. --estimators reference,median_sigma")
        if self.peak_rule not in PEAK_RULES:
            raise ThinklensError.of("peak rule", self.peak_rule, f"one of {sorted(PEAK_RULES)}", "use top_k")
        if self.ci not in CI_METHODS:
            raise ThinklensError.of("ci", self.ci, f"one of {CI_METHODS}", "use bootstrap")
        if self.n_problems < 2:
            raise ThinklensError.of("n_problems", self.n_problems, "at least 2 (the shuffled control needs two)",
                                    "pass --n-problems 8")
        if not self.sites:
            raise ThinklensError.of("sites", self.sites, "at least one site", "use resid_post.-1")


def _problems(cfg: MIPeaksJobConfig) -> tuple[list[str], list[str], list[int]]:
    from thinklens.tasks import TaskConfig, generate_problems, render_example

    problems = generate_problems(cfg.n_problems, seed=cfg.seed,
                                 config=TaskConfig(min_steps=cfg.min_steps, max_steps=cfg.max_steps))
    pairs = [render_example(p, cfg.style) for p in problems]
    return [a for a, _ in pairs], [b for _, b in pairs], [p.answer for p in problems]


def _peak_options(cfg: MIPeaksJobConfig) -> dict[str, Any]:
    return {"k": cfg.k, "clip": True} if cfg.peak_rule == "top_k" else {"whisker": cfg.whisker}


def _trajectories(model: HookedModel, cfg: MIPeaksJobConfig, run: RunFolder, progress: bool) -> dict[str, Any]:
    prompts, solutions, _ = _problems(cfg)
    sites = [model.resolve_site(s) for s in cfg.sites]
    first, site0 = cfg.estimators[0], sites[0]
    gold = golden_answer_vectors(model, solutions, sites)
    traces = model.generate(prompts, max_new_tokens=cfg.max_new_tokens, capture=sites, progress=progress)
    trajs = score_traces(traces, solutions, gold, first, device=model.device)
    states = [tr.hidden[site0].float() for tr in traces]
    control = shuffled_answer_control(states, list(gold[site0]), first, seed=cfg.seed, device=model.device)
    rows, peaks0, variants0 = [], None, None
    for i, t in enumerate(trajs):
        variants = compare_estimators(states[i], gold[site0][i], cfg.estimators, device=model.device)
        peaks = find_peaks(t.curve(site0), cfg.peak_rule, **_peak_options(cfg))
        if i == 0:
            peaks0, variants0 = peaks, variants
        rows.append({"prompt": t.prompt, "tokens": list(t.tokens), "text": t.text, "stop_reason": t.stop_reason,
                     "mi": {str(s): c.mi.tolist() for s, c in t.curves.items()},
                     "variants": {n: c.mi.tolist() for n, c in variants.items()},
                     "shuffled": control.curves[i].mi.tolist(), "shuffled_answer_of": control.answer_of[i],
                     "peaks": list(peaks.indices), "peak_threshold": peaks.threshold})
    run.write_figure("mi_curve_0", figure_mi_curve({**variants0, "shuffled answer": control.curves[0]},  # type: ignore[dict-item]
                                                   tokens=list(trajs[0].tokens), peaks=peaks0))
    run.write_figure("mi_by_site", figure_model_overlay({str(s): [t.curves[s] for t in trajs] for s in sites},
                                                        title="Mean MI per site"))
    run.write_figure("mi_vs_shuffled", figure_model_overlay(
        {"own answer": [t.curve(site0) for t in trajs], "shuffled answer": list(control.curves)},
        title="Own vs shuffled answer"))
    return {"site": str(site0), "estimator": first, "rows": rows}


def _enrichment(cfg: MIPeaksJobConfig, traj: dict[str, Any], run: RunFolder) -> dict[str, Any]:
    res = thinking_token_enrichment([TokenTrajectory.of(r["tokens"], r["peaks"]) for r in traj["rows"]],
                                    lowercase=cfg.lowercase, ci=cfg.ci, seed=cfg.seed)
    run.write_figure("enrichment", figure_enrichment(res))
    return {"words": res.rows(), "n_trajectories": res.n_trajectories, "n_peak_tokens": res.n_peak_tokens,
            "n_tokens": res.n_tokens, "ci": res.ci, "level": res.level,
            "top_words": [w.word for w in res.top(cfg.top_words)]}


def run_mi_peaks(model: HookedModel, cfg: MIPeaksJobConfig, run: RunFolder, *, progress: bool = False) -> dict[str, Any]:
    """Run every stage not yet done; returns the summary written by ``run.finish``."""
    wanted = ["trajectories", "enrichment"] + [s for s in STAGES[2:] if getattr(cfg, s)]
    for stage in run.pending(wanted):
        if stage == "trajectories":
            out = _trajectories(model, cfg, run, progress)
        elif stage == "enrichment":
            out = _enrichment(cfg, run.read_result("trajectories"), run)
        else:
            out = _intervention(stage, model, cfg, run)
        run.write_result(stage, out)
        run.mark_done(stage)
    enr = run.read_result("enrichment")
    rows = run.read_result("trajectories")["rows"]
    summary: dict[str, Any] = {
        "n_problems": len(rows), "mean_tokens": sum(len(r["tokens"]) for r in rows) / len(rows),
        "mean_peak_fraction": sum(len(r["peaks"]) / max(1, len(r["tokens"])) for r in rows) / len(rows),
        "top_words": enr["top_words"],
    }
    for stage in wanted[2:]:
        summary[stage] = run.read_result(stage).get("summary")
    run.finish(summary)
    return summary


def _intervention(stage: str, model: HookedModel, cfg: MIPeaksJobConfig, run: RunFolder) -> dict[str, Any]:
    prompts, _, answers = _problems(cfg)
    words = run.read_result("enrichment")["top_words"]
    if stage == "ttts":
        res = ttts_eval(model, prompts, answers, words=cfg.ttts_words, budgets=cfg.ttts_budgets,
                        max_new_tokens=cfg.max_new_tokens)
        run.write_figure("ttts", figure_ttts(res))
        return {"rows": [asdict(r) for r in res.rows], "summary": {r.method + "@" + str(r.budget): r.accuracy
                                                                   for r in res.rows}}
    if not words:
        return {"skipped": "no alphabetic thinking words at the peaks", "summary": None}
    if stage == "suppression":
        sup = suppression_test(model, prompts, answers, words, n_random=cfg.n_random, seed=cfg.seed,
                               max_new_tokens=cfg.max_new_tokens, lowercase=cfg.lowercase)
        run.write_figure("suppression", figure_suppression(sup))
        return {"rows": [asdict(r) for r in sup.rows], "words": list(sup.thinking_words), "summary": sup.summary()}
    rr = recycling_eval(model, prompts, answers, words, layer=cfg.rr_layer, probability=cfg.rr_probability,
                        seed=cfg.seed, max_new_tokens=cfg.max_new_tokens)
    run.write_figure("recycling", figure_recycling({model.name: rr}))
    return {"result": asdict(rr), "words": words, "summary": {"plain": rr.accuracy_plain, "rr": rr.accuracy_rr}}
