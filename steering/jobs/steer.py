"""``thinklens run steer``: steer generation with an SAE feature against equal-norm baselines.

Steers ``--model`` with the SAE feature most correlated with the next ``--word`` (or ``--feature``), against
equal-norm baselines: a random live feature, the most often active feature, a random direction and (optionally) the
difference of means of the states before ``--word``; every arm adds the same norm at a given coefficient, over a sweep
of coefficients and seeds. By default (``--mode scale``) the feature's own activation times c is added, token by token
(c=-1 removes the feature where it fires), and every other arm adds that same norm at the same tokens along its own
direction; ``--mode add`` adds c times the mean residual norm at every token, ``--mode clamp`` sets the feature to c
times its max activation (:data:`GRIDS`: each mode's default coefficients, and why ``scale`` is the default). ``--sae`` takes an sae-lens
folder or an ``sae`` run folder (whose feature statistics are then reused). Results: ``results/steer.json`` (the
word's frequency, accuracy, degenerate traces and length per arm: rows averaged over seeds, rows per seed, the chosen
feature), ``results/steer_problems.json`` (every steered text with its grade and whether the steering broke it,
:func:`thinklens.steering.steer_traces.problem_records`) and the figure steer.

The findings (:func:`thinklens.steering.steer_findings.steer_findings`, beside the seed means and the report's lines),
one per non-zero coefficient: steering the feature moves the share of traces
that say ``--word`` (``effect``) only when, at that coefficient, its Wilson interval lies beyond that of EVERY other
arm the job ran (the random feature, the random direction, the top-activating feature, the difference of means: a
competing method that does as well or better leaves the feature's effect not shown) and beyond the unsteered run's,
and when the steered text stays within the harm bound stated before the run (``--max-accuracy-drop`` below the
unsteered accuracy, ``--max-degenerate-rise`` over the unsteered share of degenerate traces,
:func:`thinklens.steering.contrast.is_degenerate`). Otherwise the verdict is ``no effect`` and ``extra["not_shown"]``
says why; a headline never says more than its finding's verdict. A difference of means from fewer than
``--min-dom-states`` states before the word is not built (the summary's ``warnings`` say so).

Example:
    >>> JOB.name, SteerJobConfig().word
    ('steer', 'wait')
    >>> # thinklens run steer --sae data/saes/tiny-think-resid_post.2-topk32 --coeffs=-1,0,1 --n-prompts 30
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from thinklens.calibration.findings import findings_doc
from thinklens.data.problemsets import DataOptions, ProblemSet
from thinklens.data.prompts import read_prompts
from thinklens.errors import ThinklensError, opt, opt_name
from thinklens.runs.headlines import num, result_json
from thinklens.runs.jobs import DemoRun, Job, JobContext
from thinklens.steering.configs import check_finite
from thinklens.steering.problems import PromptSet, data_format, draw, max_steps_of, prompt_set
from thinklens.steering.steer_findings import ARM_NAMES as ARM_NAMES  # re-exported: the arms named in the findings
from thinklens.steering.steer_findings import (
    MAX_ACCURACY_DROP,
    MAX_DEGENERATE_RISE,
    aggregate_seeds,
    headlines,
    steer_findings,
    word_rates,
)
from thinklens.steering.steer_traces import PROBLEMS, problem_records
from thinklens.tasks import StepRange, check_style
from thinklens.tasks.protocol import HELD_OUT

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel
    from thinklens.engine.sites import Site
    from thinklens.steering.features import FeatureStats


@dataclass(frozen=True)
class SteerJobConfig(DataOptions, StepRange):
    """``thinklens run steer``: steer with an SAE feature against equal-norm baselines."""

    model: str = "tiny-think"
    """Zoo name, local model folder or hub id."""
    sae: str = ""
    """An sae-lens SAE folder, or an `sae` run folder (its sae/ subfolder and feature statistics are used)."""
    site: str | None = None
    """Site of the SAE (None: from the SAE's metadata)."""
    feature: int | None = None
    """Feature to steer (None: the one most correlated with --word)."""
    data: str = ""
    """Problems steered and scored (and, a disjoint part, whose traces pick the feature): a .jsonl/.json/.parquet/.csv
    file, a saved HF datasets folder, a cached hub id or synthetic:MIN-MAX[:N]; empty: --prompts."""
    word: str = "wait"
    """Word whose most correlated feature is steered, and whose frequency is reported (case-insensitive): any word the
    model writes; one the SAE run's statistics did not score is scored on the model's own traces first."""
    mode: Literal["scale", "add", "clamp"] = "scale"
    """scale: x + c * z_f(x) * W_dec[f], the feature's own activation times c added token by token (c=-1 removes it
    where it fires; nothing is added where it is off), every other arm adding that same norm at the same tokens along
    its own direction; add: x + c * |x|_mean * unit(direction) at every token; clamp: set the feature to c * its max
    activation at every token (error term kept)."""
    coeffs: tuple[float, ...] | None = None
    """Coefficients; none: the mode's grid (:data:`GRIDS`: scale -4,-2,-1,0,1,2,4 in units of the feature's own
    activation; add -0.1..0.1 in units of the mean activation norm at the site; clamp -1,0,1 of the feature's max
    activation). Negative lists need the = form: --coeffs=-1,0,1."""
    prompts: str = "zoo:think"
    """Prompts without --data: zoo:<style> (the synthetic task's zoo stream; --prompt-format renders it in another
    format) or a prompt file (.txt/.jsonl, used as is, no answers)."""
    n_prompts: int = 100
    """Prompts generated per (arm, coefficient)."""
    stats_traces: int = 150
    """Traces scanned to pick features when the SAE run has no statistics."""
    min_steps: int = 2
    max_steps: int = 5
    max_new_tokens: int | None = None
    """New tokens per trace; None: the task protocol's budget for a zoo style and max_steps, 1024 for a real model's
    format (capped by its context), 64 for a prompt file."""
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
    min_dom_states: int = 20
    """Fewest states before --word the difference of means is built from; fewer: the arm is not run and the run's
    warnings say so (a mean of 3 states is mostly noise)."""
    max_accuracy_drop: float = MAX_ACCURACY_DROP
    """Harm bound, stated before the run: a steered point whose accuracy falls more than this below the unsteered
    accuracy is not an effect, whatever it does to the word."""
    max_degenerate_rise: float = MAX_DEGENERATE_RISE
    """Harm bound, stated before the run: a steered point whose share of degenerate traces (no word, or a repeated
    3-gram share above 0.3) rises more than this over the unsteered share is not an effect."""

    def check(self) -> None:
        check_finite("coefficient", self.grid, opt("coeffs", (-1, 0, 1)))
        if not self.word.strip():
            raise ThinklensError.of(opt_name("word"), self.word, "a thinking word", f"pass {opt('word', 'wait')}")
        if self.n_seeds < 1:
            raise ThinklensError.of(opt_name("n_seeds"), self.n_seeds, "an integer >= 1", f"pass {opt('n_seeds', 3)}")
        if self.min_dom_states < 1:
            raise ThinklensError.of(opt_name("min_dom_states"), self.min_dom_states, "an integer >= 1",
                                    f"pass {opt('min_dom_states', 20)}")
        for name in ("max_accuracy_drop", "max_degenerate_rise"):
            if not 0 <= getattr(self, name) <= 1:
                raise ThinklensError.of(opt_name(name), getattr(self, name), "a share in [0, 1]", f"pass {opt(name, 0.1)}")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise ThinklensError.of(opt_name("max_new_tokens"), self.max_new_tokens, "an integer >= 1 or none",
                                    f"pass {opt('max_new_tokens', 88)}")

    @property
    def grid(self) -> tuple[float, ...]:
        """The coefficients swept: ``coeffs``, or the mode's grid (:data:`GRIDS`)."""
        return GRIDS[self.mode] if self.coeffs is None else tuple(self.coeffs)


#: Each mode's default coefficients (the measurements behind them: :mod:`thinklens.steering.validation`).
#: ``add``'s unit, the mean residual norm (10.6 at tiny-overthink's resid_post.1), is six times the wait feature's largest
#: activation there: no arm moves the wait rate at |c| <= 0.3, every arm costs accuracy beyond the harm bound at c = -0.2,
#: and |c| >= 0.5 breaks every arm, the random direction included; its grid keeps to the fractions that cost no arm more
#: than the bound. ``clamp`` (the feature set to c times its max activation at every token) breaks the same way from
#: |c| = 1 (accuracy 0.725 -> 0.60); its grid stays below that. ``scale`` adds only where the feature fires and in its
#: own units, and is the default.
GRIDS: dict[str, tuple[float, ...]] = {"scale": (-4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0),
                                       "add": (-0.1, -0.05, 0.0, 0.05, 0.1), "clamp": (-0.5, 0.0, 0.5)}


#: What a coefficient is in each mode (the report's line).
MODE_UNITS = {"scale": "c times the feature's own activation, added where it fires; every arm that norm, token by token",
              "add": "c times the mean activation norm at the site, added at every token",
              "clamp": "the feature set to c times its max activation at every token"}


def prompt_sets(cfg: SteerJobConfig, model: "HookedModel", log) -> tuple["PromptSet", "PromptSet"]:
    """``(stats, steered)``: the prompts whose traces pick the feature and the prompts steered and scored."""
    if cfg.data:
        fmt = data_format(model, cfg.prompt_format)
        parts = draw(cfg.load(), {"steer": cfg.n_prompts, "stats": cfg.stats_traces},
                     seed=cfg.seed)
        if not parts["stats"]:
            log(f"{cfg.data} has no problems left for the feature statistics: they use the steered problems")
        steps = max_steps_of([*parts["steer"], *parts["stats"]], cfg.max_steps)
        sets = [prompt_set(model, fmt, parts[k] or parts["steer"], max_new_tokens=cfg.max_new_tokens, max_steps=steps)
                for k in ("stats", "steer")]
        return sets[0], sets[1]
    if cfg.prompts.startswith("zoo:"):
        fmt = data_format(model, cfg.prompt_format, cfg.prompts)
        return tuple(prompt_set(model, fmt, ProblemSet.synthetic(n, seed=HELD_OUT[purpose], min_steps=cfg.min_steps,
                                                                 max_steps=cfg.max_steps),
                                max_new_tokens=cfg.max_new_tokens, max_steps=cfg.max_steps)
                     for n, purpose in ((cfg.stats_traces, "sampling"), (cfg.n_prompts, "steer")))

    if cfg.prompt_format != "auto":
        raise ThinklensError.of(opt_name("prompt_format"), cfg.prompt_format, "auto with a prompt file (its prompts are used as "
                                "they are)",
                                f"pass {opt('data', '<problems>')} to render them in a format, or drop {opt_name('prompt_format')}")
    prompts = read_prompts(cfg.prompts)
    return (PromptSet(prompts[: cfg.stats_traces], None, cfg.max_new_tokens or 64, None),
            PromptSet(prompts[: cfg.n_prompts], None, cfg.max_new_tokens or 64, None))


def run(config: SteerJobConfig, ctx: JobContext) -> dict[str, Any]:
    """Pick the feature, build the equal-norm arms, sweep the coefficients for every seed; returns the summary."""
    import torch  # lazy: CLI start-up (torch)

    from thinklens.steering import figures  # lazy: CLI start-up (torch)
    from thinklens.steering.effects import mean_norm, steer_sweep  # lazy: CLI start-up (torch)
    from thinklens.steering.feature_steering import equal_norm_arms  # lazy: CLI start-up (torch)
    from thinklens.steering.features import THINKING_WORDS, FeatureStats, feature_stats  # lazy: CLI start-up (torch)
    from thinklens.steering.sae import check_feature, check_sae, load_sae, sae_folder  # lazy: CLI start-up (torch)

    model, log, cfg = ctx.model, ctx.progress.log, config
    sae_dir, sae_run = sae_folder(cfg.sae)
    sae = load_sae(sae_dir, device=str(model.device))
    site = check_sae(model, sae, cfg.site)
    stats_file = sae_run / "results" / "feature_stats.json" if sae_run else None
    sampling = HELD_OUT["sampling"]
    stats_set, steer_set = prompt_sets(cfg, model, log)
    stats_prompts, max_new0 = stats_set.prompts, stats_set.max_new_tokens

    def traces(prompts):
        return model.generate(prompts, max_new_tokens=max_new0, capture=[site], batch_size=64, do_sample=cfg.sample,
                              seed=sampling, temperature=1.0)

    trs = traces(stats_prompts[: max(8, min(cfg.stats_traces, 64))])
    unit = mean_norm([t.hidden[site] for t in trs])
    saved = FeatureStats.from_json(json.loads(stats_file.read_text())) if stats_file is not None and stats_file.is_file() \
        else None
    word = stats_word(saved, cfg) if saved is not None else None
    if word is not None:
        stats, word_source = saved, "sae run"
    else:  # no saved statistics, or they did not score --word: score it (and the thinking words) on the model's traces
        if saved is not None:
            log(f"{cfg.word!r} is not among the words the SAE run scored ({', '.join(saved.corr_words)}): scoring it "
                f"on {len(stats_prompts)} traces of the model")
        word_source = "scored on the fly"
        trs = traces(stats_prompts)
        fmt = stats_set.fmt
        reasoning = [fmt.split_trace(t).reasoning for t in trs] if fmt is not None and fmt.span is not None else None
        stats = feature_stats(sae, trs, site, tokenizer=model.tokenizer, correct=stats_set.correct([t.text for t in trs]),
                              words=(cfg.word, *(w for w in THINKING_WORDS if w != cfg.word.lower())), reasoning=reasoning,
                              span=fmt.span.family if reasoning else None)
        word = stats_word(stats, cfg)  # scored now, so found; refused when the model never writes it
    feature = check_feature(sae, cfg.feature) if cfg.feature is not None else stats.best_for_word(word)
    top = stats.top_activating(exclude=[feature])
    alive = torch.tensor(stats.freq) > 0
    warnings: list[str] = []
    dom = diff_of_means_arm(model, cfg, site, trs if cfg.sample else None, stats_prompts, max_new0, log, warnings) \
        if cfg.diff_of_means else None
    prompts, answers, max_new = steer_set.prompts, steer_set.golds, steer_set.max_new_tokens
    per_seed: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []  # every steered text with its grade (results/steer_problems.json)
    random_features: list[int | None] = []
    for seed in range(cfg.seed, cfg.seed + cfg.n_seeds):
        arms = equal_norm_arms(sae, feature, top_feature=top, seed=seed, alive=alive)
        if dom is not None:
            arms["diff_of_means"] = (dom / dom.norm(), None)
        random_features.append(arms["random_feature"][1])
        log(f"seed {seed}: feature {feature}: corr with next {cfg.word!r} {stats.corr_words[word][feature]:.3f}; "
            f"baselines random feature {arms['random_feature'][1]}, top-activating {top}; unit norm {unit:.3f}")
        outcomes: list[dict[str, Any]] = []
        rows = steer_sweep(model, prompts, answers, site, arms, cfg.grid, unit_norm=unit, mode=cfg.mode, sae=sae,
                           max_acts=stats.max_act, max_new_tokens=max_new, word=cfg.word, do_sample=cfg.sample,
                           seed=seed, log=log, outcomes=outcomes)
        problems += problem_records(outcomes, list(prompts), None if answers is None else list(answers), seed=seed)
        per_seed += [{**r, "seed": seed} for r in rows]
    rows = aggregate_seeds(per_seed, cfg.word)
    chosen = {"feature": feature, "word": cfg.word, "word_stats": word_source, "corr": stats.corr_words[word][feature],
              "top_activating": top, "random_feature": random_features[0], "random_features": random_features,
              "unit_norm": unit, "mode": cfg.mode, "coeffs": list(cfg.grid), "top_contexts": stats.top_contexts.get(feature, [])[:8],
              "diff_of_means_cos_feature": None if dom is None else
              float(torch.nn.functional.cosine_similarity(dom, arms["feature"][0], dim=0))}
    fmt = steer_set.fmt
    ctx.run.write_result("steer", {"rows": rows, "rows_by_seed": per_seed, "chosen": chosen, "site": str(site),
                                   "seeds": list(range(cfg.seed, cfg.seed + cfg.n_seeds)),
                                   "data": cfg.data or cfg.prompts, "prompt_format": fmt.name if fmt else None,
                                   "max_new_tokens": max_new})
    ctx.run.write_result(PROBLEMS, problems)
    ctx.run.write_figure("steer", figures.figure_steer(rows, cfg.word))
    found = steer_findings(per_seed, cfg.word, feature, harm=harm_bound(cfg), mode=cfg.mode)
    summary = {"feature": feature, "corr": chosen["corr"], "site": str(site), "mode": cfg.mode, "coeffs": list(cfg.grid),
               "findings": findings_doc(found),
               "rates": word_rates(per_seed, cfg.word), "harm_bound": harm_bound(cfg), "warnings": warnings}
    summary["headlines"] = headlines(found, cfg.word, feature)
    ctx.run.finish(summary)
    return summary


def stats_word(stats: "FeatureStats", cfg: SteerJobConfig) -> str | None:
    """The statistics' own spelling of ``cfg.word`` (words match case-insensitively), or None when they did not score
    it (the job then scores it on the model's traces); refused when they scored it and cannot pick a feature for it
    (:func:`check_word_seen`: the model never wrote it; with ``cfg.feature`` given, only its spelling is looked up).
    One rule for the job and its preflight (which reads an SAE run's saved statistics before the model loads)."""
    word = next((w for w in stats.corr_words if w.lower() == cfg.word.lower()), None)
    if word is not None and cfg.feature is None:
        check_word_seen(stats, word, cfg.word)
    return word


def preflight(cfg: SteerJobConfig) -> None:
    """What can be refused before the model loads: the SAE folder, the problems or prompts, and ``--word`` against the
    SAE run's saved feature statistics when they scored it (a word they did not score is scored once the model has
    loaded)."""
    from thinklens.steering.features import FeatureStats  # lazy: CLI start-up (torch)
    from thinklens.steering.sae import sae_folder  # lazy: CLI start-up (torch)

    _, sae_run = sae_folder(cfg.sae)
    if cfg.data:
        cfg.load()
    elif cfg.prompts.startswith("zoo:"):
        check_style(cfg.prompts[4:])
    elif cfg.prompt_format == "auto":  # another format with a prompt file is refused by prompt_sets, as before
        read_prompts(cfg.prompts)
    stats_file = sae_run / "results" / "feature_stats.json" if sae_run else None
    if stats_file is not None and stats_file.is_file():
        stats_word(FeatureStats.from_json(json.loads(stats_file.read_text())), cfg)


def check_word_seen(stats: "FeatureStats", word: str, asked: str) -> None:
    """Refuse to pick a feature for a word the model never wrote in the scanned traces (every feature's
    correlation with it is 0, so "the best" would be feature 0 by accident), or that no feature predicts."""
    seen = [f"{w} ({n})" for w, n in stats.word_counts.items() if n > 0]
    if stats.word_counts.get(word, 0) == 0:
        raise ThinklensError.of(opt_name("word"), asked, f"a word the model writes: it starts none of the {stats.n_tokens} generated "
                                f"tokens of the {stats.n_traces} scanned traces, so no feature correlates with it",
                                f"pick a word it writes{' (' + ', '.join(seen) + ')' if seen else ''}, or pass {opt('feature', '<N>')}")
    if max(stats.corr_words[word]) <= 0:
        raise ThinklensError.of(opt_name("word"), asked, f"a word some feature predicts: no feature's activation correlates "
                                f"positively with the next token being {word!r}", f"pass {opt('feature', '<N>')}, or train the SAE on "
                                "texts where the model writes the word")


def harm_bound(cfg: SteerJobConfig) -> dict[str, float]:
    """The harm bound of a run, as its config states it before any steering."""
    return {"max_accuracy_drop": cfg.max_accuracy_drop, "max_degenerate_rise": cfg.max_degenerate_rise}


def diff_of_means_arm(model: "HookedModel", cfg: SteerJobConfig, site: "Site", traces, prompts, max_new: int, log,
                      warnings: list[str] | None = None):
    """The difference-of-means direction for ``cfg.word`` (un-normalised): the mean state before the word
    (where it starts on the decoded text) minus the mean state before any other token; None with a log line, and a
    line in ``warnings``, when it cannot be built or rests on fewer than ``cfg.min_dom_states`` states before the word."""
    from thinklens.steering.features import token_separator, word_starts  # lazy: CLI start-up (torch)
    from thinklens.steering.vectors import marked_diff_of_means  # lazy: CLI start-up (torch)

    if traces is None:  # greedy sweep: the direction still needs traces that say the word
        traces = model.generate(prompts[:64], max_new_tokens=max_new, capture=[site], batch_size=64, do_sample=True,
                                seed=HELD_OUT["sampling"], temperature=1.0)
    separator = token_separator(model.tokenizer, traces)
    marks = [word_starts(t.tokens, [cfg.word], separator=separator)[cfg.word] for t in traces]
    try:
        sv = marked_diff_of_means(traces, site, marks, what=repr(cfg.word))
    except ThinklensError as e:
        log(f"diff_of_means arm skipped: {e}")
        if warnings is not None:
            warnings.append(f"difference-of-means baseline not run: {e}")
        return None
    if sv.n_a < cfg.min_dom_states:
        msg = (f"difference-of-means baseline not run: {sv.n_a} states before {cfg.word!r} in the sampled traces, fewer "
               f"than {cfg.min_dom_states} (a mean of so few is mostly noise); scan more traces "
               f"({opt('stats_traces', 400)}) or lower {opt_name('min_dom_states')}")
        log(msg)
        if warnings is not None:
            warnings.append(msg)
        return None
    log(f"diff_of_means: {sv.n_a} states before {cfg.word!r} vs {sv.n_b} others, |v| {sv.norm:.3f}")
    return sv.vector


def report(summary: dict[str, Any]) -> str:
    lines = [f"steered feature {summary['feature']} at {summary['site']} (corr with the next word {summary['corr']:.3f})"]
    if summary.get("mode"):
        lines.append(f"mode {summary['mode']} ({MODE_UNITS.get(summary['mode'], '')}), coefficients "
                     f"{', '.join(f'{c:g}' for c in summary.get('coeffs', []))}")
    bound = summary.get("harm_bound")
    if bound:
        lines.append(f"harm bound (stated before the run): accuracy drop <= {bound['max_accuracy_drop']:g}, degenerate "
                     f"share rise <= {bound['max_degenerate_rise']:g} against the unsteered run")
    lines += [f"warning: {w}" for w in summary.get("warnings", [])]
    return "\n".join(lines + list(summary.get("headlines", [])))


def headline(summary: dict, folder: Path) -> str:
    """The run in a line (Home, ``thinklens runs``): the steered feature, its correlation with the next word, and what
    its findings show (never more than their verdicts)."""
    word = ((result_json(folder, "steer") or {}).get("chosen") or {}).get("word")
    where = f"feature {summary.get('feature', '?')} at {summary.get('site', '?')}"
    line = (f"{where}: correlation {num(summary.get('corr'))} with the next {word!r}" if word
            else f"{where}, correlation {num(summary.get('corr'))}")
    found = summary.get("findings") or []
    if found:
        shown = [f"c={f['extra']['coeff']:g}" for f in found if f.get("verdict") == "effect"]
        line += (f"; steering effect at {', '.join(shown)}" if shown
                 else "; no steering effect shown (every control and the harm bound considered)")
    if summary.get("warnings"):
        line += f"; {len(summary['warnings'])} warning(s)"
    return line


DEMO = (DemoRun(("--sae", "data/saes/tiny-think-resid_post.2-topk32", "--n-prompts", "30", "--coeffs=-1,0,1"), progress=True),)


JOB = Job("steer", SteerJobConfig, run, preflight=preflight, order=70, page="pages/4_Steering.py", demo=DEMO, headline=headline,
          report=report, help="steer generation with an SAE feature vs equal-norm baselines",
          findings="thinklens.steering.steer_findings:steer_findings", capability="Steering",
          validations={"steering": "thinklens.steering.validation:SETTINGS"}, traces="thinklens.steering.steer_traces:READER",
          compare="thinklens.steering.steering_comparisons:STEER", headline_traces="thinklens.steering.steer_traces:headline_traces",
          smallest=("--model", "tiny-think", "--sae", "data/saes/tiny-think-resid_post.2-topk32", "--n-prompts", "4", "--stats-traces", "8",
                    "--coeffs", "0,1", "--min-dom-states", "1000000", "--max-new-tokens", "12"))
