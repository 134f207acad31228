"""The steering jobs behind the CLI: SAE training, feature steering, reasoning vectors, hybrid steering.

Each job takes a frozen config, writes a :class:`~thinklens.runs.RunFolder` (``config.json``,
``results/*.json``, ``figures/*.json|html``) and returns a summary dict. The CLI (:mod:`steering.cli`)
only parses options and calls these.

Example:
    >>> SteerJobConfig().word
    'wait'
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import torch

from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.model import HookedModel
    from thinklens.runs import RunFolder

Log = Callable[[str], None]


def zoo_prompts(n: int, *, seed: int, style: str, min_steps: int, max_steps: int) -> tuple[list[str], list[int]]:
    """``n`` rendered zoo prompts of ``style`` and their answers (seeded, held out from training seeds).

    Example:
        >>> p, a = zoo_prompts(2, seed=1, style="think", min_steps=2, max_steps=3)
        >>> p[0].endswith("<think>"), len(a)
        (True, 2)
    """
    from steering.data import zoo_problems
    from thinklens.tasks import render_prompt

    ps = zoo_problems(n, seed=seed, min_steps=min_steps, max_steps=max_steps)
    return [render_prompt(p, style) for p in ps], [p.answer for p in ps]


def budget(style: str, max_steps: int) -> int:
    """New tokens enough for a ``max_steps`` problem in ``style`` (the zoo evaluator's budget)."""
    return {"direct": 4, "cot": 7 * max_steps + 6, "think": 13 * max_steps + 10}[style]


def _prompts(spec: str, n: int, seed: int, min_steps: int, max_steps: int) -> tuple[list[str], list[int] | None, int]:
    """Prompts from ``zoo:<style>`` (with answers and a token budget) or a prompt file (no answers)."""
    if spec.startswith("zoo:"):
        from thinklens.tasks import check_style

        style = check_style(spec[4:])
        p, a = zoo_prompts(n, seed=seed, style=style, min_steps=min_steps, max_steps=max_steps)
        return p, a, budget(style, max_steps)
    from thinklens.prompts import read_prompts

    return read_prompts(spec)[:n], None, 64


def _check_finite(what: str, values, fix: str) -> None:
    import math

    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)]
    if bad or not values:
        raise ThinklensError.of(what, bad[0] if bad else "nothing", "finite numbers (at least one)", f"pass e.g. {fix}")


def target_style(path: str) -> str:
    """The prompt style a zoo model answers in: its zoo.json recipe, else its name, else ``cot``."""
    from zoo.evaluate import DEFAULT_STYLES

    meta = Path(path) / "zoo.json"
    if meta.is_file():
        style = json.loads(meta.read_text()).get("recipe", {}).get("eval_style")
        if style:
            return style
    return DEFAULT_STYLES.get(Path(path).name, "cot")


# ---------------------------------------------------------------- SAE training


@dataclass(frozen=True)
class SAEJobConfig:
    """`thinklens sae train`: the data and the feature statistics around one SAE training run."""

    model: str = "tiny-think"
    """Zoo name, local model folder or hub id."""
    data: str = "zoo:think"
    """Training texts: zoo:<style> (rendered zoo problems) or a .txt/.jsonl file (one text per line)."""
    n_texts: int = 6000
    """Training texts drawn (zoo) or read (file)."""
    eval_texts: int = 400
    """Held-out texts for the metrics (zoo data only; a file is evaluated on its first texts)."""
    stats_traces: int = 200
    """Generated traces scanned for feature statistics (0 skips)."""
    stats_min_steps: int = 2
    """Fewest steps of the problems whose traces are scanned (zoo)."""
    stats_max_steps: int = 6
    """Most steps of the problems whose traces are scanned (zoo)."""
    stats_sample: bool = True
    """Sample the scanned traces (temperature 1, seeded) rather than decode greedily: greedy zoo traces never
    say wait or hmm (each is drawn with p < 0.5 in training), so only sampled traces show their features."""


def run_sae_job(model: "HookedModel", job: SAEJobConfig, sae_cfg, run: "RunFolder", log: Log = print) -> dict[str, Any]:
    """Train, evaluate (held out), scan traces for feature statistics, write figures."""
    from steering import figures
    from steering.data import corpus
    from steering.sae import evaluate_sae, train_sae

    texts = corpus(job.data, job.n_texts, seed=sae_cfg.seed)
    log(f"training {sae_cfg.architecture} SAE ({sae_cfg.d_sae} features, k={sae_cfg.k}) at {sae_cfg.site} on {len(texts)} texts")
    sae, train_metrics = train_sae(model, texts, sae_cfg, out_dir=run.path / "sae")
    held = corpus(job.data, job.eval_texts, seed=sae_cfg.seed + 1_000_003) if job.data.startswith("zoo:") else texts[: job.eval_texts]
    metrics = evaluate_sae(model, sae, held, n_batches=max(1, min(16, len(held) // 32)), batch_prompts=32)
    metrics["train_split"] = {k: train_metrics.get(k) for k in ("explained_variance", "l0", "ce_loss_recovered", "dead_features")}
    run.write_result("metrics", metrics)
    run.write_figure("sae_metrics", figures.sae_metrics_figure(metrics))
    summary = {k: metrics.get(k) for k in ("explained_variance", "l0", "dead_features", "ce_loss_recovered")}
    log("held-out metrics: " + " ".join(f"{k}={v:.4g}" for k, v in summary.items() if isinstance(v, (int, float))))
    if job.stats_traces > 0:
        stats = write_feature_stats(model, sae, sae_cfg.site, job, run)
        summary["stats_accuracy"] = stats.accuracy
        summary["stats_word_counts"] = stats.word_counts
    run.finish(summary)
    return summary


def write_feature_stats(model: "HookedModel", sae, site, job: SAEJobConfig, run: "RunFolder"):
    """Generate ``job.stats_traces`` traces, compute :class:`FeatureStats`, write them and their figures."""
    from steering import figures
    from steering.features import feature_stats
    from thinklens.answers import parse_answer

    prompts, answers, max_new = _prompts(job.data, job.stats_traces, 20_000, job.stats_min_steps, job.stats_max_steps)
    s = model.resolve_site(site)
    trs = model.generate(prompts, max_new_tokens=max_new, capture=[s], batch_size=64, do_sample=job.stats_sample,
                         seed=20_000, temperature=1.0)
    correct = [parse_answer(t.text) == a for t, a in zip(trs, answers)] if answers is not None else None
    stats = feature_stats(sae, trs, s, tokenizer=model.tokenizer, correct=correct)
    run.write_result("feature_stats", stats.to_json())
    run.write_figure("feature_density", figures.feature_density_figure(stats))
    run.write_figure("feature_correlation", figures.feature_correlation_figure(stats, "wait"))
    return stats


# ---------------------------------------------------------------- feature steering


@dataclass(frozen=True)
class SteerJobConfig:
    """`thinklens run steer`: steer with an SAE feature against equal-norm baselines."""

    model: str = "tiny-think"
    """Zoo name, local model folder or hub id."""
    sae: str = ""
    """An sae-lens SAE folder, or an `sae` run folder (its sae/ subfolder and feature statistics are used)."""
    site: str | None = None
    """Site of the SAE (None: from the SAE's metadata)."""
    feature: int | None = None
    """Feature to steer (None: the one most correlated with --word)."""
    word: str = "wait"
    """Thinking word whose most correlated feature is steered, and whose frequency is reported."""
    mode: Literal["add", "clamp"] = "add"
    """add: x + c * |x|_mean * unit(W_dec[f]); clamp: set the feature to c * its max activation (error term kept)."""
    coeffs: tuple[float, ...] = (-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0)
    """Coefficients (add: in units of the mean activation norm at the site; clamp: of the feature's max
    activation). Negative lists need the = form: --coeffs=-1,0,1."""
    prompts: str = "zoo:think"
    """Prompts: zoo:<style> or a prompt file (.txt/.jsonl)."""
    n_prompts: int = 100
    """Prompts generated per (arm, coefficient)."""
    stats_traces: int = 150
    """Traces scanned to pick features when the SAE run has no statistics."""
    min_steps: int = 2
    """Fewest steps of the zoo problems."""
    max_steps: int = 5
    """Most steps of the zoo problems."""
    sample: bool = True
    """Sample (temperature 1, one seed for every arm) instead of greedy decoding: greedy zoo traces never say
    wait, so only sampling shows a decrease as well as an increase."""
    seed: int = 0
    """Seed of the baselines' random choices and of the sampling."""
    n_seeds: int = 1
    """Repeat the sweep with seeds seed, seed+1, ... (new random baselines and samples each time); the
    table reports the mean and standard deviation over seeds."""
    diff_of_means: bool = True
    """Add a difference-of-means arm: mean state before --word minus mean state before any other token
    (from sampled traces), at the same norm as the other arms."""

    def __post_init__(self) -> None:
        _check_finite("coefficient", self.coeffs, "--coeffs=-1,0,1")
        if self.n_seeds < 1:
            raise ThinklensError.of("--n-seeds", self.n_seeds, "an integer >= 1", "pass --n-seeds 3")


def _sae_source(path: str) -> tuple[Path, Path | None]:
    """``(sae folder, run folder or None)`` from an SAE folder or an `sae` run folder."""
    p = Path(path)
    if not path:
        raise ThinklensError.of("--sae", "nothing", "an SAE folder or an `sae` run folder", "pass --sae runs/sae/<id>")
    if (p / "sae" / "cfg.json").is_file():
        return p / "sae", p
    if (p / "cfg.json").is_file():
        return p, None
    raise ThinklensError.of("--sae", path, "an sae-lens SAE folder or an `sae` run folder", "train one: `thinklens sae train`")


def run_steer_job(model: "HookedModel", cfg: SteerJobConfig, run: "RunFolder", log: Log = print) -> dict[str, Any]:
    from steering import figures
    from steering.effects import mean_norm, steer_sweep
    from steering.feature_steering import equal_norm_arms
    from steering.features import FeatureStats, feature_stats
    from steering.sae import check_feature, check_sae, load_sae
    from thinklens.answers import parse_answer

    sae_dir, sae_run = _sae_source(cfg.sae)
    sae = load_sae(sae_dir)
    site = check_sae(model, sae, cfg.site)
    stats_file = sae_run / "results" / "feature_stats.json" if sae_run else None
    stats_prompts, answers0, max_new0 = _prompts(cfg.prompts, cfg.stats_traces, 20_000, cfg.min_steps, cfg.max_steps)
    def traces(prompts):
        return model.generate(prompts, max_new_tokens=max_new0, capture=[site], batch_size=64, do_sample=cfg.sample,
                              seed=20_000, temperature=1.0)

    trs = traces(stats_prompts[: max(8, min(cfg.stats_traces, 64))])
    unit = mean_norm([t.hidden[site] for t in trs])
    if stats_file is not None and stats_file.is_file():
        stats = FeatureStats.from_json(json.loads(stats_file.read_text()))
    else:
        trs = traces(stats_prompts)
        correct = [parse_answer(t.text) == a for t, a in zip(trs, answers0)] if answers0 else None
        stats = feature_stats(sae, trs, site, tokenizer=model.tokenizer, correct=correct, words=(cfg.word,))
    feature = check_feature(sae, cfg.feature) if cfg.feature is not None else stats.best_for_word(cfg.word)
    top = stats.top_activating(exclude=[feature])
    alive = torch.tensor(stats.freq) > 0
    dom = _diff_of_means_arm(model, cfg, site, trs if cfg.sample else None, stats_prompts, max_new0, log) \
        if cfg.diff_of_means else None
    prompts, answers, max_new = _prompts(cfg.prompts, cfg.n_prompts, 30_000, cfg.min_steps, cfg.max_steps)
    per_seed: list[dict[str, Any]] = []
    random_features: list[int | None] = []
    for seed in range(cfg.seed, cfg.seed + cfg.n_seeds):
        arms = equal_norm_arms(sae, feature, top_feature=top, seed=seed, alive=alive)
        if dom is not None:
            arms["diff_of_means"] = (dom / dom.norm(), None)
        random_features.append(arms["random_feature"][1])
        log(f"seed {seed}: feature {feature}: corr with next {cfg.word!r} {stats.corr_words[cfg.word][feature]:.3f}; "
            f"baselines random feature {arms['random_feature'][1]}, top-activating {top}; unit norm {unit:.3f}")
        rows = steer_sweep(model, prompts, answers, site, arms, cfg.coeffs, unit_norm=unit, mode=cfg.mode, sae=sae,
                           max_acts=stats.max_act, max_new_tokens=max_new, word=cfg.word, do_sample=cfg.sample,
                           seed=seed, log=log)
        per_seed += [{**r, "seed": seed} for r in rows]
    rows = aggregate_seeds(per_seed, cfg.word)
    chosen = {"feature": feature, "word": cfg.word, "corr": stats.corr_words[cfg.word][feature],
              "top_activating": top, "random_feature": random_features[0], "random_features": random_features,
              "unit_norm": unit, "top_contexts": stats.top_contexts.get(feature, [])[:8],
              "diff_of_means_cos_feature": None if dom is None else
              float(torch.nn.functional.cosine_similarity(dom, arms["feature"][0], dim=0))}
    run.write_result("steer", {"rows": rows, "rows_by_seed": per_seed, "chosen": chosen, "site": str(site),
                               "seeds": list(range(cfg.seed, cfg.seed + cfg.n_seeds))})
    run.write_figure("steer", figures.steer_figure(rows, cfg.word))
    summary = {"feature": feature, "corr": chosen["corr"], "site": str(site)}
    run.finish(summary)
    return summary


def _word_token(tokenizer, word: str) -> int | None:
    """The single token id of ``word`` (as is, or with a leading space for BPE vocabularies), else None."""
    for cand in (word, " " + word):
        ids = tokenizer(cand, add_special_tokens=False)["input_ids"]
        if len(ids) == 1:
            return int(ids[0])
    return None


def _diff_of_means_arm(model: "HookedModel", cfg: SteerJobConfig, site, traces, prompts, max_new: int, log: Log):
    """The difference-of-means direction for ``cfg.word`` (un-normalised), or None with a log line."""
    from steering.vectors import next_token_diff_of_means

    tid = _word_token(model.tokenizer, cfg.word)
    if tid is None:
        log(f"diff_of_means arm skipped: {cfg.word!r} is not one token")
        return None
    if traces is None:  # greedy sweep: the direction still needs traces that say the word
        traces = model.generate(prompts[:64], max_new_tokens=max_new, capture=[site], batch_size=64, do_sample=True,
                                seed=20_000, temperature=1.0)
    try:
        sv = next_token_diff_of_means(traces, site, tid)
    except ThinklensError as e:
        log(f"diff_of_means arm skipped: {e}")
        return None
    log(f"diff_of_means: {sv.n_a} states before {cfg.word!r} vs {sv.n_b} others, |v| {sv.norm:.3f}")
    return sv.vector


def aggregate_seeds(rows: list[dict[str, Any]], word: str) -> list[dict[str, Any]]:
    """Rows of several seeds -> one row per (arm, coefficient): means, plus ``<metric>_std`` over seeds.

    Example:
        >>> r = [{"arm": "a", "coeff": 1.0, "seed": s, "wait": w, "accuracy": 0.5} for s, w in ((0, 1.0), (1, 3.0))]
        >>> out = aggregate_seeds(r, "wait")[0]
        >>> out["wait"], out["wait_std"], out["n_seeds"]
        (2.0, 1.0, 2)
    """
    import statistics

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


# ---------------------------------------------------------------- reasoning vectors


@dataclass(frozen=True)
class ReasoningVectorJobConfig:
    """`thinklens run reasoning-vector`: v = a - b added to a target with an alpha sweep."""

    a: str = "data/zoo/tiny-grpo"
    """The checkpoint whose behaviour is wanted (paper: the GRPO model)."""
    b: str = "tiny-cot"
    """The checkpoint subtracted (paper: the SFT model of the same init and data)."""
    target: str = "tiny-think"
    """The sibling that receives alpha * v."""
    base: str | None = "tiny-pre"
    """The shared init (lineage check and cosines; none to skip)."""
    alphas: tuple[float, ...] = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0)
    """Scales of v (negative alphas subtract it; write --alphas=-1,0,1)."""
    groups: tuple[str, ...] = ("all", "attention", "mlp", "no_embeddings")
    """Tensor groups v is applied to (all, attention, mlp, no_embeddings)."""
    style: str | None = None
    """Prompt style of the evaluation (None: the target's own, from its zoo.json or name)."""
    n_per_steps: int = 25
    """Held-out problems per step count (0: norms and cosines only)."""
    steps: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)
    """Step counts evaluated."""
    eval_seed: int = 10_000
    """Seed of the held-out problems (the zoo evaluator's)."""
    save_alpha: float | None = 1.0
    """Save target + save_alpha * v (group all) in HF format under merged/ (none: do not save)."""

    def __post_init__(self) -> None:
        from steering.reasoning_vectors import in_group

        _check_finite("alpha", [*self.alphas, *([self.save_alpha] if self.save_alpha is not None else [])],
                      "--alphas=-1,0,0.5,1")
        for g in self.groups:
            in_group("x", g)


def run_reasoning_vector_job(cfg: ReasoningVectorJobConfig, run: "RunFolder", log: Log = print) -> dict[str, Any]:
    from steering import figures
    from steering.reasoning_vectors import alpha_sweep, apply_vector, load_model, load_weights, reasoning_vector, save_merged, vector_stats
    from thinklens.model import load_tokenizer, resolve_model_path
    from zoo.evaluate import evaluate_model

    v, report = reasoning_vector(cfg.a, cfg.b, base=cfg.base)
    target = load_model(cfg.target)
    tok = load_tokenizer(resolve_model_path(cfg.target))
    tw = load_weights(target)[0]
    bw = load_weights(cfg.base)[0] if cfg.base else None
    stats = vector_stats(v, tw, bw)
    stats["lineage"] = asdict(report)
    if bw is not None:
        wa, wb = load_weights(cfg.a)[0], load_weights(cfg.b)[0]
        stats["norm_delta_a"] = float(torch.cat([(wa[n] - bw[n]).flatten() for n in wa]).norm())
        stats["norm_delta_b"] = float(torch.cat([(wb[n] - bw[n]).flatten() for n in wb]).norm())
    run.write_result("vector", stats)
    log(f"|v|={stats['norms']['all']:.3f} ({stats['relative_norm']:.3%} of |target|); lineage {asdict(report)}")
    rows: list[dict[str, Any]] = []
    if cfg.n_per_steps > 0:
        style = cfg.style or target_style(resolve_model_path(cfg.target))

        def evaluate(model) -> dict[str, Any]:
            r = evaluate_model(model, tok, label="merged", style=style, n_per_steps=cfg.n_per_steps, steps=list(cfg.steps),
                               seed=cfg.eval_seed)
            return {"accuracy": r.mean_accuracy(list(cfg.steps)), "by_steps": {str(k): x for k, x in r.accuracy.items()}}

        rows = alpha_sweep(target, v, cfg.alphas, evaluate, groups=cfg.groups, progress=log)
        run.write_result("alpha_sweep", rows)
        run.write_figure("alpha_sweep", figures.alpha_sweep_figure(rows))
    if cfg.save_alpha is not None:
        merged = apply_vector(target, v, cfg.save_alpha, "all")
        save_merged(merged, tok, run.path / "merged", meta={"a": cfg.a, "b": cfg.b, "target": cfg.target,
                                                              "alpha": cfg.save_alpha, "group": "all"})
    best = max(rows, key=lambda r: r["accuracy"]) if rows else None
    summary = {"norm": stats["norms"]["all"], "related": report.related,
               "alpha0_accuracy": next((r["accuracy"] for r in rows if r["alpha"] == 0 and r["group"] == "all"), None),
               "best": {k: best[k] for k in ("group", "alpha", "accuracy")} if best else None}
    run.finish(summary)
    return summary


# ---------------------------------------------------------------- hybrid


@dataclass(frozen=True)
class HybridJobConfig:
    """`thinklens run hybrid`: base model steered by the thinking model's behaviours (Venhoff et al.)."""

    base: str = "tiny-cot"
    """The base model (steered)."""
    thinking: str = "tiny-think"
    """The thinking model (decides when and which behaviour)."""
    n_train: int = 150
    """Thinking-model traces whose sentences train the categories and vectors."""
    n_eval: int = 60
    """Held-out problems evaluated per mode."""
    min_steps: int = 2
    """Fewest steps of the problems."""
    max_steps: int = 5
    """Most steps of the problems."""
    modes: tuple[str, ...] = ("base", "thinking", "hybrid", "bias_only", "random_category", "random_firing", "random_vectors")
    """Modes evaluated (base and thinking alone, the hybrid, and the ablations)."""
    seeds: tuple[int, ...] = (0,)
    """Seeds of the clustering SAE, the vector training and the ablations' random choices (one full
    train + evaluation per seed; mean and standard deviation reported)."""

    def __post_init__(self) -> None:
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ThinklensError.of("--seeds", self.seeds, "distinct integers, at least one", "pass --seeds 0,1,2")


def run_hybrid_job(job: HybridJobConfig, hcfg, run: "RunFolder", log: Log = print) -> dict[str, Any]:
    """Train and evaluate hybrid steering for each seed; every (seed, mode) is a resumable stage.

    The unsteered ``base`` and ``thinking`` modes do not depend on the seed and run once. A killed run
    started again with the same config (same ``--run-id``) skips the stages in ``progress.jsonl``; the
    vectors of a seed are retrained (seeded: the same vectors) only if one of its modes is still to run.
    ``results/hybrid.json`` is the first seed's table (what the app shows), ``hybrid_seeds.json`` every
    seed's, ``hybrid_summary.json`` the mean and standard deviation over seeds per mode.
    """
    import dataclasses
    import statistics

    from steering import figures
    from steering.hybrid import train_hybrid_vectors
    from steering.hybrid_generate import evaluate_hybrid
    from thinklens.answers import parse_answer
    from thinklens.model import HookedModel

    base, thinking = HookedModel.load(job.base), HookedModel.load(job.thinking)
    max_new = budget("think", job.max_steps)
    ep, ea = zoo_prompts(job.n_eval, seed=50_000, style="think", min_steps=job.min_steps, max_steps=job.max_steps)
    done = run.finished()
    traces: list = []

    def vectors_for(seed: int, scfg):
        def train():
            if not traces:
                tp, _ = zoo_prompts(job.n_train, seed=40_000, style="think", min_steps=job.min_steps,
                                    max_steps=job.max_steps)
                traces.extend(thinking.generate(tp, max_new_tokens=max_new, batch_size=64))
            log(f"seed {seed}: training the categories and vectors")
            hv = train_hybrid_vectors(base, thinking, traces, scfg, log=log)
            if seed == job.seeds[0]:
                run.write_result("categories", {"counts": hv.counts, "examples": {str(k): v for k, v in hv.examples.items()},
                                                "losses": hv.losses, "bias_norm": float(hv.bias.norm()),
                                                "vector_norms": hv.vectors.norm(dim=-1).tolist()})
            return hv
        return train

    per_seed: dict[str, dict[str, dict[str, Any]]] = {}
    for seed in job.seeds:
        scfg = dataclasses.replace(hcfg, seed=int(seed))
        prior = {m: done[f"mode:{m}"] for m in ("base", "thinking") if f"mode:{m}" in done}
        prior.update({m: row for item, row in done.items() if item.startswith(f"seed{seed}:")
                      for m in [item.split(":", 1)[1]]})

        def record(mode: str, row: dict[str, Any], seed: int = seed) -> None:
            item = f"mode:{mode}" if mode in ("base", "thinking") else f"seed{seed}:{mode}"
            run.mark_done(item, row)
            done[item] = row

        log(f"seed {seed}: {len(prior)} of {len(job.modes)} modes already done")
        per_seed[str(seed)] = evaluate_hybrid(base, thinking, vectors_for(seed, scfg), ep, ea, scfg, modes=job.modes,
                                              max_new_tokens=max_new, log=log, done=prior, on_mode=record)
    res = dict(per_seed[str(job.seeds[0])])
    # context: the base model on its own prompt style for the same problems (not part of the gap)
    own = target_style(str(Path(base.config._name_or_path or job.base)))
    if "own_style" not in done:
        op, _ = zoo_prompts(job.n_eval, seed=50_000, style=own, min_steps=job.min_steps, max_steps=job.max_steps)
        texts = [t.text for t in base.generate(op, max_new_tokens=budget(own, job.max_steps), batch_size=64)]
        row = {"style": own, "accuracy": sum(parse_answer(t) == a for t, a in zip(texts, ea)) / len(ea),
               "tokens": 0, "fired_fraction": 0.0, "changed_fraction": 0.0, "samples": texts[:3]}
        run.mark_done("own_style", row)
        done["own_style"] = row
    res["base_own_style"] = done["own_style"]
    summary_rows: dict[str, dict[str, Any]] = {}
    for m in res:
        if m == "base_own_style":
            continue
        for k in ("accuracy", "fired_fraction", "gap_recovered"):
            vals = [t[m][k] for t in per_seed.values() if t.get(m, {}).get(k) is not None]
            if vals:
                summary_rows.setdefault(m, {"n_seeds": len(vals)})
                summary_rows[m][k] = statistics.fmean(vals)
                summary_rows[m][f"{k}_std"] = statistics.pstdev(vals)
    run.write_result("hybrid", res)
    run.write_result("hybrid_seeds", per_seed)
    run.write_result("hybrid_summary", summary_rows)
    run.write_figure("hybrid", figures.hybrid_figure(res))
    summary = {m: {k: r.get(k) for k in ("accuracy", "accuracy_std", "fired_fraction", "gap_recovered", "gap_recovered_std")}
               for m, r in summary_rows.items()}
    run.finish(summary)
    return summary
