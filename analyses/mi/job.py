"""The MI-peaks job: problems -> for the reasoning model and each sibling, traced trajectories scored
at every site and by every estimator, with the shuffled-answer control and peaks -> thinking-token
enrichment -> model comparison -> optional suppression test, RR (layer sweep) and TTTS on the
reasoning model, into one run folder (format: :mod:`analyses.mi.store`).

Stages are resumable: each is marked done in the run folder when its files are written, so
re-running with the same config skips finished stages (``trajectories:<model key>``,
``enrichment``, ``comparison``, ``suppression``, ``recycling``, ``ttts``).

Example:
    >>> stage_names(MIPeaksJobConfig(compare=("tiny-cot",), ttts=True))
    ['trajectories:tiny-think', 'trajectories:tiny-cot', 'enrichment', 'comparison', 'ttts']
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from analyses.mi.collect import collect_model
from analyses.mi.figures_runs import controls_table, figure_controls, figure_overlay, figure_sites, models_table
from analyses.mi.job_interventions import run_recycling, run_suppression, run_ttts, thinking_words_for
from analyses.mi.jobconfig import PRESETS, MIPeaksJobConfig, preset
from analyses.mi.peaks import PEAK_RULES
from analyses.mi.problems import MIProblem, default_style, gold_text, load_problems, render_prompt_for, resolve_format
from analyses.mi.store import model_key, read_index, read_trajectory, write_index
from analyses.mi.thinking_tokens import TokenTrajectory, thinking_token_enrichment
from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.model import HookedModel
    from thinklens.runs import RunFolder

INTERVENTIONS = ("suppression", "recycling", "ttts")

__all__ = ["INTERVENTIONS", "PRESETS", "MIPeaksJobConfig", "finite", "model_keys", "preset", "run_mi_peaks",
           "stage_comparison", "stage_enrichment", "stage_names", "summary_of"]


def finite(obj: Any) -> Any:
    """NaN and infinities -> None, recursively (run folders hold strict JSON).

    Example:
        >>> finite({"a": [1.0, float("nan")], "b": float("inf")})
        {'a': [1.0, None], 'b': None}
    """
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def model_keys(cfg: MIPeaksJobConfig) -> list[str]:
    """Folder keys of the job's models, in order (reasoning model first)."""
    keys: list[str] = []
    for name in cfg.models:
        keys.append(model_key(name, set(keys)))
    return keys


def stage_names(cfg: MIPeaksJobConfig) -> list[str]:
    """Every stage the config asks for, in order."""
    return ([f"trajectories:{k}" for k in model_keys(cfg)] + ["enrichment", "comparison"]
            + [s for s in INTERVENTIONS if getattr(cfg, s)])


def _style(cfg: MIPeaksJobConfig, j: int) -> str:
    if cfg.styles:
        return cfg.styles[j]
    return default_style(cfg.models[j], "think" if j == 0 else "cot")


def _prompts(problems: list[MIProblem], cfg: MIPeaksJobConfig, j: int) -> tuple[list[str], list[str], str, str]:
    fmt = resolve_format(cfg.models[j], cfg.prompt_format)
    style = _style(cfg, j)
    return ([render_prompt_for(p, style, fmt) for p in problems], [gold_text(p, cfg.gold_style, fmt) for p in problems],
            style, fmt)


def _models_so_far(run: RunFolder) -> list[dict[str, Any]]:
    try:
        return list(read_index(run.path)["models"])
    except ThinklensError:
        return []


def _stage_trajectories(model: HookedModel, j: int, key: str, problems: list[MIProblem], cfg: MIPeaksJobConfig,
                        run: RunFolder, log: Callable[[str], None] | None) -> None:
    prompts, solutions, style, fmt = _prompts(problems, cfg, j)
    entry = collect_model(model, key=key, name=cfg.models[j], role="reasoning" if j == 0 else "baseline",
                          style=style, fmt=fmt, prompts=prompts, solutions=solutions,
                          answers=[p.answer for p in problems], cfg=cfg, run_path=run.path, progress=log)
    order = model_keys(cfg)
    models = {m["key"]: m for m in _models_so_far(run)}
    models[key] = entry
    write_index(run.path, finite([models[k] for k in order if k in models]), peak_rule=cfg.peak_rule)


def stage_enrichment(cfg: MIPeaksJobConfig, run: RunFolder) -> dict[str, Any]:
    """{model key: {unit: {rule: enrichment}}}; unit "words" (the paper) or "all" tokens."""
    from analyses.mi.figures import figure_enrichment
    from analyses.mi.thinking_tokens import UNITS

    out: dict[str, Any] = {}
    for m in read_index(run.path)["models"]:
        records = [read_trajectory(run.path, m["key"], r["i"]) for r in m["index"]]
        out[m["key"]] = {unit: {} for unit in UNITS}
        for unit in UNITS:
            for rule in PEAK_RULES:
                res = thinking_token_enrichment([TokenTrajectory.of(r.tokens, r.peaks[rule]) for r in records],
                                                lowercase=cfg.lowercase, unit=unit, ci=cfg.ci, seed=cfg.seed)
                out[m["key"]][unit][rule] = {
                    "words": res.rows(), "n_trajectories": res.n_trajectories, "n_peak_tokens": res.n_peak_tokens,
                    "n_tokens": res.n_tokens, "ci": res.ci, "level": res.level}
                if res.words:
                    fig = figure_enrichment(res)
                    what = "words" if unit == "words" else "all tokens"
                    fig.update_layout(title={"text": f"{m['name']}, {rule} peaks, {what}: " + fig.layout.title.text})
                    run.write_figure(f"enrichment-{m['key']}-{rule}-{unit}", fig)
    return out


def stage_comparison(run: RunFolder) -> dict[str, Any]:
    models = read_index(run.path)["models"]
    run.write_figure("overlay", figure_overlay(models, x="fraction", shuffled=True))
    run.write_figure("overlay-step", figure_overlay(models, x="step"))
    run.write_figure("controls", figure_controls(models))
    for m in models:
        run.write_figure(f"sites-{m['key']}", figure_sites(m))
    return {"models": models_table(models), "controls": controls_table(models)}


def _default_loader(model: HookedModel) -> Callable[[str], HookedModel]:
    def load(name: str) -> HookedModel:
        from thinklens.model import HookedModel as HM

        return HM.load(name, device=model.device, dtype=next(model.hf.parameters()).dtype)
    return load


def run_mi_peaks(model: HookedModel, cfg: MIPeaksJobConfig, run: RunFolder, *, progress: bool = False,
                 load: Callable[[str], HookedModel] | None = None) -> dict[str, Any]:
    """Run every stage not yet done; returns the summary written by ``run.finish``.

    Args:
        model: the reasoning model (``cfg.model``), already loaded.
        load: loads a sibling by name (default: ``HookedModel.load`` on the same device and dtype).
        progress: print one line per finished batch and stage.
    """
    log = (lambda s: print(s, flush=True)) if progress else None
    load = load or _default_loader(model)
    problems = load_problems(cfg.data, cfg.n_problems, seed=cfg.seed, min_steps=cfg.min_steps,
                             max_steps=cfg.max_steps)
    if len(problems) < 2:
        raise ThinklensError.of("problems", len(problems), "at least 2 (the shuffled control needs two)",
                                "add lines to the --data file")
    keys = model_keys(cfg)
    for stage in run.pending(stage_names(cfg)):
        if stage.startswith("trajectories:"):
            j = keys.index(stage.split(":", 1)[1])
            _stage_trajectories(model if j == 0 else load(cfg.models[j]), j, keys[j], problems, cfg, run, log)
            out: Any = None
        elif stage == "enrichment":
            out = stage_enrichment(cfg, run)
        elif stage == "comparison":
            out = stage_comparison(run)
        else:
            prompts, _, _, _ = _prompts(problems, cfg, 0)
            rows = run.read_result("enrichment")[keys[0]]["words"][cfg.peak_rule]["words"]
            words, source = thinking_words_for(model, cfg, rows)
            answers = [p.answer for p in problems]
            if not words:
                out = {"skipped": "no thinking words: no word token at the peaks and none of the paper's words "
                                  "in the vocabulary", "summary": None}
            else:
                runner = {"suppression": run_suppression, "recycling": run_recycling, "ttts": run_ttts}[stage]
                out = {**runner(model, cfg, run, prompts, answers, words), "word_source": source}
        if out is not None:
            run.write_result(stage, finite(out))
        run.mark_done(stage)
        if log is not None:
            log(f"stage done: {stage}")
    summary = finite(summary_of(cfg, run))
    run.finish(summary)
    return summary


def summary_of(cfg: MIPeaksJobConfig, run: RunFolder) -> dict[str, Any]:
    models = read_index(run.path)["models"]
    enrichment = run.read_result("enrichment")
    per_model = {}
    for m in models:
        words = enrichment[m["key"]]["words"][cfg.peak_rule]["words"]
        tokens = enrichment[m["key"]]["all"][cfg.peak_rule]["words"]
        per_model[m["key"]] = {
            "style": m["style"], "accuracy": m["accuracy"], "mean_tokens": m["mean_tokens"],
            "mean_mi": m["mean_mi"][m["site"]], "peak_fraction": m["peak_fraction"],
            "top_words": [w["word"] for w in words[: cfg.top_words]],
            "top_tokens": [w["word"] for w in tokens[: cfg.top_words]]}
    main = models[0]
    summary: dict[str, Any] = {
        "n_problems": main["n"], "mean_tokens": main["mean_tokens"],
        "mean_peak_fraction": main["peak_fraction"][cfg.peak_rule],
        "top_words": per_model[main["key"]]["top_words"], "models": per_model,
    }
    for stage in INTERVENTIONS:
        if getattr(cfg, stage):
            summary[stage] = run.read_result(stage).get("summary")
    return summary
