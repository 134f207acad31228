"""``thinklens run lynx``: LYNX conformal early exit (arXiv 2512.05325) on any HookedModel, resumable.

Stages: sampled rollouts on three disjoint problem splits (train, calibration, test) -> cue events ->
states at the LYNX sites and forced-exit labels from one pass over each rollout
(:mod:`thinklens.probes.lynx_splits`) -> the MLP probe with class-balanced weights (train split) ->
class-conditional split conformal (calibration split; its negatives at real cues only,
:meth:`~thinklens.probes.lynx_splits.SplitData.calibration_events`) -> the discrimination gate (the probe's AUROC at
the calibration split's cue events must have its 95% interval above ``--gate-auroc``, else LYNX abstains:
:mod:`thinklens.probes.exit_gate`) -> the exit rule at every delta and the
baselines (first cue, fixed fraction, p > 0.5 uncalibrated), the Pareto front, and the validity
measurement P(S={1} | y=0) vs delta with binomial 95% bounds (test split). As in the reference, a
cue-less rollout's fallback event (at 0.7 of its length) only builds training and calibration data: the
test rollouts are scanned at their real cue events (all of them, uncapped, as the reference's evaluation
does), and an exit costs the tokens before the cue, the exit string and the forced answer. Rollouts,
features and labels are cached batch by batch in ``<run>/cache``, so an interrupted job re-run with the
same config resumes. Results: ``results/{lynx,per_delta,probe_validation}.json``, ``arrays/test_*.safetensors``,
the figures pareto, validity, exit_histogram and base_rate, and the probe in ``probe/``.

Problems: ``--data`` trains the probe; ``--calibration-data`` and ``--test-data`` calibrate and test it
(the paper trains one probe on MATH and reuses it on GSM8K, MATH-500, AIME); each defaults to a seeded
split of ``--data``, and a question in two splits is refused unless ``--allow-overlap``. Without
``--data``: the synthetic task (the zoo's default). Prompts come from ``--prompt-format`` (a real model's
chat template with the R1 instruction, or a zoo style); the forced-exit string, the cue words and the
forced-answer length come from the format unless given. Every answer is graded by
:func:`thinklens.data.answers.is_correct` against the gold answer.

The guarantee measured here is per cue event and needs calibration and test events to be
exchangeable; it is not a per-trajectory bound (see :mod:`thinklens.probes.conformal`). The splits are
disjoint problems with rollouts of their own (never one trajectory on two sides), and the negative class is
calibrated on real cue events only, as the test events are (a fallback event is not a place LYNX exits at).

Example:
    >>> JOB.name, JOB.config.__name__
    ('lynx', 'LynxJobConfig')
    >>> from thinklens.data.formats import ZOO_THINK_SPAN, PromptFormat
    >>> zoo = resolve_settings(LynxJobConfig(n_train=50, deltas=(0.1, 0.2)), PromptFormat("think", span=ZOO_THINK_SPAN))
    >>> zoo.max_new_tokens, zoo.exit_string, zoo.cue_words  # the task protocol's think budget
    (72, '</think> ####', ('hmm', 'wait'))
    >>> # result = thinklens.run_job("lynx", model="tiny-think", n_train=100, run_id="demo")
    >>> # result.per_delta[0]["saving"], result.validity.rate
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from thinklens.calibration.findings import findings_doc
from thinklens.data.answers import is_correct
from thinklens.data.formats import format_for
from thinklens.engine.tokenization import prompt_ids
from thinklens.errors import ThinklensError, opt, opt_name
from thinklens.generation.budgets import ROLLOUT_TOKENS, new_token_budget, prompt_budgets
from thinklens.probes.config import LynxJobConfig
from thinklens.probes.lynx import check_cue_vocabulary, format_settings, lynx_sites, train_lynx_probe
from thinklens.runs.headlines import num, result_json
from thinklens.runs.jobs import DemoRun, Job, JobContext

if TYPE_CHECKING:
    from thinklens.data.formats import PromptFormat
    from thinklens.probes.conformal import MondrianCalibrator
    from thinklens.probes.lynx_result import LynxResult

def resolve_settings(config: LynxJobConfig, fmt: PromptFormat, *, prompts: Sequence[str] = (), tokenizer=None,
                     max_context: int | None = None) -> LynxJobConfig:
    """``config`` with what it leaves to the prompt format filled in: cue words, exit string, forced-answer
    tokens (:func:`thinklens.probes.lynx.format_settings`) and the rollout cap (:func:`thinklens.generation.budgets.new_token_budget`,
    one for every rollout: the longest of ``prompts``, the rollout, the exit and the forced answer fit in
    ``max_context``)."""
    fill = {k: v for k, v in format_settings(fmt).items() if getattr(config, k) is None}
    if config.max_new_tokens is None:
        exit_string = fill.get("exit_string", config.exit_string)
        # a character per token bounds the exit string's length without a tokenizer
        exit_tokens = len(exit_string) if tokenizer is None else len(tokenizer(exit_string, add_special_tokens=False)["input_ids"])
        reserve = fill.get("max_answer_tokens", config.max_answer_tokens) + exit_tokens
        lengths = [len(ids) for ids in prompt_ids(tokenizer, list(prompts))] if prompts and tokenizer is not None else []
        budget = new_token_budget(fmt, None, max_steps=config.max_steps, default=ROLLOUT_TOKENS)
        fill["max_new_tokens"] = prompt_budgets(lengths, budget, max_context, reserve=reserve).shared
    return dataclasses.replace(config, **fill) if fill else config


def usable_deltas(config: LynxJobConfig, calibrator: MondrianCalibrator) -> tuple[list[float], list[float]]:
    """``(usable, skipped)`` deltas for the calibration class sizes; too small ones are an error unless
    ``config.skip_vacuous``."""
    usable, skipped = [], []
    for d in config.deltas:
        try:
            calibrator.thresholds(d)
            usable.append(float(d))
        except ThinklensError:
            if not config.skip_vacuous:
                from thinklens.probes.conformal import min_calibration_events  # lazy: CLI start-up (scipy)

                raise ThinklensError.of(
                    "calibration class size", f"{calibrator.n_pos} positive and {calibrator.n_neg} negative "
                    f"calibration events at delta={d}", f"at least {min_calibration_events(d)} events of each class "
                    "(ceil((n+1)(1-delta)) <= n)", f"add calibration problems ({opt_name('n_calibration')}), raise the "
                    f"smallest delta, or pass {opt('skip_vacuous', True)} to drop it") from None
            skipped.append(float(d))
    if not usable:
        raise ThinklensError.of("deltas", config.deltas, f"at least one delta usable with {calibrator.n_pos} "
                                f"positive / {calibrator.n_neg} negative calibration events",
                                "add calibration problems or use larger deltas")
    return usable, skipped


def label_need(config: LynxJobConfig, split: str) -> int:
    """Events of each class a split's labels must reach: 2 to train the probe (:func:`thinklens.probes.lynx.train_lynx_probe`),
    the calibration size of the smallest delta (of the largest with ``skip_vacuous``: one usable delta is enough) to
    calibrate, none to test.

    Example:
        >>> cfg = LynxJobConfig(deltas=(0.1, 0.3))
        >>> [label_need(cfg, s) for s in ("train", "calibration", "test")]
        [2, 9, 0]
        >>> label_need(dataclasses.replace(cfg, skip_vacuous=True), "calibration")
        3
    """
    from thinklens.probes.conformal import min_calibration_events  # lazy: CLI start-up (scipy)

    if split == "train":
        return 2 if config.probe is None else 0
    if split == "calibration":
        return min_calibration_events(max(config.deltas) if config.skip_vacuous else min(config.deltas))
    return 0


def preflight(config: LynxJobConfig) -> None:
    """Every split's problems loaded and checked disjoint before the model loads (a missing or malformed file, a
    question in two splits); a given probe's folder read."""
    from thinklens.probes.lynx_splits import split_problem_sets  # lazy: CLI start-up (torch)

    split_problem_sets(config)
    if config.probe is not None:
        from thinklens.probes.io import read_probe_meta  # lazy: CLI start-up (sklearn)

        read_probe_meta(config.probe)


def _train_or_load_probe(config: LynxJobConfig, model, ctx: JobContext, cache, sites, train):
    """The probe and its validation record: the given one, the one this run saved, or a new one trained on the
    train split's events (``train``: its SplitData; None with a given probe)."""
    from thinklens.probes.io import load_probe, save_probe  # lazy: CLI start-up (sklearn)
    from thinklens.probes.mlp import LynxMLPProbe  # lazy: CLI start-up (sklearn)

    site_names = [str(s) for s in sites]
    if config.probe is not None:
        return load_probe(config.probe, expect_site=site_names, expect_d_model=model.d_model), {"source": str(config.probe)}
    folder = ctx.run.path / "probe"
    if cache.done("probe") and (folder / "probe.json").is_file():
        return load_probe(folder, expect_site=site_names), ctx.run.read_result("probe_validation")
    probe, val = train_lynx_probe(train.X, train.forced.label, config, LynxMLPProbe(hidden_layer_sizes=tuple(config.hidden_layer_sizes),
                                                             random_state=config.probe_seed), groups=train.rollout)
    save_probe(probe, folder, site=site_names, model_name=config.model)
    info = {"source": "trained", "accuracy": val.accuracy, "auroc": val.auroc, "n_train": val.n_train,
            "n_val": val.n_val, "n_val_rollouts": val.n_val_rollouts, "split": "grouped by rollout",
            "n_pos_train": val.n_pos_train, "n_iter": probe.n_iter_}
    ctx.run.write_result("probe_validation", info)  # auroc is nan (null) when the validation share has one class
    cache.finish("probe")
    return load_probe(folder, expect_site=site_names), info  # the saved one: identical on resume


def run(config: LynxJobConfig, ctx: JobContext) -> LynxResult:
    """Run (or resume) the LYNX job in ``ctx.run``; writes results, arrays, figures and the probe."""
    from thinklens.probes.conformal import MondrianCalibrator, validity_curve  # lazy: CLI start-up (scipy)
    from thinklens.probes.datasets import exit_tables  # lazy: CLI start-up (torch)
    from thinklens.probes.exit_gate import GatedCalibrator, auroc_gate  # lazy: CLI start-up (scipy)
    from thinklens.probes.exits import base_rate_by_position, evaluate_exit_policies  # lazy: CLI start-up (scipy)
    from thinklens.probes.intention import auroc_score  # lazy: CLI start-up (sklearn)
    from thinklens.probes.io import load_probe  # lazy: CLI start-up (sklearn)
    from thinklens.probes.lynx_findings import lynx_findings  # lazy: CLI start-up (scipy)
    from thinklens.probes.lynx_result import LynxResult, write_lynx_result  # lazy: CLI start-up (scipy)
    from thinklens.probes.lynx_splits import SPLITS, check_cues_found, labelled_split, split_problem_sets  # lazy: CLI start-up (torch)
    from thinklens.runs.stages import StageCache  # lazy: CLI start-up (safetensors)

    model = ctx.model
    fmt = format_for(model, config.prompt_format)
    problems = split_problem_sets(config)
    active = SPLITS if config.probe is None else SPLITS[1:]  # a given probe needs no training rollouts
    prompts = {s: fmt.render_problems(problems[s], model.tokenizer) for s in active}
    settings = resolve_settings(config, fmt, prompts=[p for s in active for p in prompts[s]], tokenizer=model.tokenizer,
                                max_context=model.max_context)
    check_cue_vocabulary(model.tokenizer, settings.cue_words)
    sites = lynx_sites(model.n_layers, settings.sites)
    if settings.probe is not None:  # a mismatching probe fails now, not after the rollouts
        load_probe(settings.probe, expect_site=[str(s) for s in sites], expect_d_model=model.d_model)
    cache = StageCache(ctx.run)
    # split after split, each labelled batch by batch: a split whose labels cannot reach both classes stops its rollouts
    # there, before the next split's (several processes split each split's batches; the main one fits, calibrates and
    # writes)
    data = {}
    for s in active:
        data[s] = labelled_split(model, settings, s, prompts[s], problems[s].answers, sites, cache,
                                 need=label_need(settings, s), earlier=data, progress=ctx.progress, shards=ctx.shards)
        if s == "calibration":  # the class sizes every delta needs, known before any test rollout
            keep = data[s].calibration_events(settings.calibration_fallbacks)  # [event]
            usable_deltas(settings, MondrianCalibrator.fit(np.zeros(int(keep.sum())), data[s].forced.label[keep]))
    check_cues_found(settings, data)
    if not ctx.shards.is_main:
        return ctx.shards.share(None)
    train, cal, test = data.get("train"), data["calibration"], data["test"]
    probe, validation = _train_or_load_probe(settings, model, ctx, cache, sites, train)
    p_cal = probe.predict_proba(cal.X)[:, 1]  # [event]
    keep = cal.calibration_events(settings.calibration_fallbacks)  # [event] cue negatives (+ positives)
    conformal = MondrianCalibrator.fit(p_cal[keep], cal.forced.label[keep])
    deltas, skipped = usable_deltas(settings, conformal)
    # the gate reads the calibration split's cue events: held out from training, and the kind LYNX exits at
    gate = auroc_gate(p_cal[cal.is_cue], cal.forced.label[cal.is_cue], cal.rollout[cal.is_cue], min_auroc=settings.gate_auroc)
    calibrator = GatedCalibrator.behind(conformal, gate)  # no exits while the gate is closed
    if test.n_events == 0:
        raise ThinklensError.of("test cue events", f"none in {len(test.traces)} test rollouts", "test rollouts that "
                                "contain the cue words (exits happen at real cues only)", "draw more test problems "
                                f"({opt_name('n_test')}) or use cue words the model writes ({opt_name('cue_words')})")
    p_test = probe.predict_proba(test.X)[:, 1]
    n_exit_string = len(model.tokenizer(settings.exit_string, add_special_tokens=False)["input_ids"])
    table, rollouts = exit_tables(test.traces, test.events, test.gold, test.forced, p_test,
                                  exit_string_tokens=n_exit_string)
    # the usable deltas were checked above; skipping here again lists the same skipped ones in the report, so the
    # result's skipped_deltas and the summary's are one list
    report = evaluate_exit_policies(table, rollouts, calibrator, settings.deltas, fractions=settings.fractions,
                                    threshold=settings.threshold, skip_vacuous=True)
    y_test = test.forced.label
    validity = validity_curve(p_test, y_test, calibrator, deltas)
    findings = lynx_findings(report, validity, table, rollouts, seed=settings.seed, gate=gate)
    ungated = validity_curve(p_test, y_test, conformal, deltas)  # what the sets say whatever the gate
    summary = {
        "model": settings.model, "sites": [str(s) for s in sites], "skipped_deltas": list(report.skipped_deltas),
        "prompt_format": fmt.name, "exit_string": settings.exit_string, "cue_words": list(settings.cue_words),
        "max_answer_tokens": settings.max_answer_tokens, "max_new_tokens": settings.max_new_tokens,
        "exit_string_tokens": n_exit_string,
        "splits": {s: {"source": problems[s].source, "rollouts": len(d.traces), "events": d.n_events, "cue_events": d.n_cues,
                       "fallback_events": d.n_events - d.n_cues, "events_cap": settings.max_events(s),
                       "most_cue_events_per_rollout": max((sum(not e.is_fallback for e in evs) for evs in d.events),
                                                          default=0),
                       "label_base_rate": float(d.forced.label.mean()) if d.n_events else None,
                       "full_accuracy": float(np.mean([is_correct(t.text, g) for t, g in zip(d.traces, d.gold)])),
                       "mean_rollout_tokens": float(np.mean([len(t) for t in d.traces]))}
                   for s, d in data.items()},
        "probe": validation,
        "test_auroc": auroc_score(y_test, p_test) if 0 < y_test.sum() < len(y_test) else None,
        "calibration": {"n_pos": calibrator.n_pos, "n_neg": calibrator.n_neg, "fallbacks": settings.calibration_fallbacks,
                        "negatives": "real cue events only", "events": int(keep.sum()),
                        "fallback_negatives_left_out": int((~cal.is_cue & (cal.forced.label == 0)).sum()),
                        "thresholds": {str(d): list(calibrator.thresholds(d)) for d in deltas}},
        "exit_gate": gate.to_dict() | {"ungated_rate": {str(d): [int(k), ungated.n_neg] for d, k in
                                                        zip(deltas, ungated.n_neg_set_one.tolist())}},
        "findings": findings_doc(findings),
    }
    if list(report.skipped_deltas) != skipped:  # pragma: no cover - one rule decides both
        raise RuntimeError(f"skipped deltas disagree: report {report.skipped_deltas}, calibration {skipped}")
    result = LynxResult.build(report=report, validity=validity,
                              base_rate=base_rate_by_position(table, rollouts), summary=summary,
                              thresholds={d: calibrator.thresholds(d) for d in deltas})
    write_lynx_result(ctx.run, result, events=table, rollouts=rollouts)
    ctx.run.finish({k: summary[k] for k in ("model", "test_auroc", "skipped_deltas", "findings", "exit_gate")} | {"per_delta": [
        {k: r[k] for k in ("delta", "accuracy", "saving", "n_exit", "n_rollouts", "rate", "consistent", "power",
                           "validity_shown")}
        for r in result.per_delta]})
    return ctx.shards.share(result)


def _fmt(x, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def report(result: LynxResult) -> str:
    """The per-delta table the CLI prints after the run folder."""
    s = result.summary
    lines = [f"label base rate (test): {_fmt(s['splits']['test']['label_base_rate'])}; probe test AUROC: "
             f"{_fmt(s['test_auroc'])}; calibration events: {s['calibration']['n_pos']} pos / {s['calibration']['n_neg']} neg",
             f"{'policy':<18}{'accuracy':>9}{'Δacc':>8}{'tokens':>8}{'saving':>8}{'exit':>7}  P(S={{1}}|y=0) [exact 95%]"]
    full = result.report.get("full").accuracy
    rows = {r["delta"]: r for r in result.per_delta}
    for o in result.report.outcomes:
        r = rows.get(o.param) if o.policy == "lynx" else None
        tail = (f"  {_fmt(r['rate'])} [{_fmt(r['lower'])}, {_fmt(r['upper'])}] "
                f"{'not rejected' if r['consistent'] else 'REJECTED'} at δ, power {_fmt(r.get('power'), '.2f')} against "
                f"δ+{r.get('violation', 0.02):g}: {'shown' if r.get('validity_shown') else 'not shown'}" if r else "")
        lines.append(f"{o.label:<18}{o.accuracy:>9.3f}{o.accuracy - full:>+8.3f}{o.mean_tokens:>8.1f}{o.saving:>8.1%}"
                     f"{o.exit_rate:>7.1%}{tail}")
    if s.get("skipped_deltas"):
        lines.append(f"skipped deltas (calibration too small): {s['skipped_deltas']}")
    if s.get("findings"):
        from thinklens.probes.lynx_findings import headline_lines  # lazy: CLI start-up (scipy)

        lines += headline_lines(s["findings"])
    return "\n".join(lines)


def headline(summary: dict, folder: Path) -> str:
    """The run in a line (Home, ``thinklens runs``): the most conservative δ whose bound is shown (not rejected by the
    one-sided exact binomial test, with power >= 0.8 against δ + 0.02) that saves tokens, and the probe. A bound
    that is merely not rejected is not called valid."""
    rows = result_json(folder, "per_delta") or []
    skipped = (summary.get("skipped_deltas") or ((result_json(folder, "lynx") or {}).get("summary") or {}).get("skipped_deltas")
               or [])
    valid = [r for r in rows if r.get("validity_shown")]
    auroc = f"probe AUROC {num(summary.get('test_auroc'))}"
    gate = summary.get("exit_gate") or {}
    if gate and not gate.get("open", True):  # an uninformative probe: no exits, whatever the deltas say
        ci = gate.get("ci") or [None, None]
        return (f"abstained (no exits): calibration-cue AUROC {num(gate.get('auroc'))} [{num(ci[0])}, {num(ci[1])}] not "
                f"above chance; {auroc}")
    unshown = sum(1 for r in rows if r.get("consistent") and not r.get("validity_shown"))
    tail = (f"{len(valid)}/{len(rows) + len(skipped)} δ shown valid"
            + (f" ({unshown} not rejected but underpowered)" if unshown else "")
            + (f" ({len(skipped)} skipped: calibration too small)" if skipped else ""))
    if not valid:
        return f"no δ shown within its bound; {tail}; {auroc}"
    saving = [r for r in valid if (r.get("saving") or 0) > 0] or valid
    best = min(saving, key=lambda r: r["delta"])
    change = best.get("accuracy_change")
    points = "?" if change is None else f"{100 * change:+.1f} points"
    return f"{100 * (best.get('saving') or 0):.1f}% fewer tokens at {points}, δ {best['delta']:g}, shown valid; {tail}; {auroc}"


DEMO = (
    # A second run on longer problems (before the main one): the app draws both Pareto curves on one chart.
    DemoRun(("--model", "tiny-think", "--min-steps", "3", "--max-steps", "6", "--n-train", "150", "--n-calibration", "150",
             "--n-test", "150", "--skip-vacuous"), run_id="demo-long"),
    # 500 calibration rollouts give each class of cue events >= 99 events: every delta of the sweep,
    # 0.01 included, has a defined conformal threshold.
    DemoRun(("--model", "tiny-think", "--n-train", "150", "--n-calibration", "500", "--n-test", "150", "--skip-vacuous")),
)


JOB = Job("lynx", LynxJobConfig, run, preflight=preflight, order=40, page="pages/3_Probes_and_LYNX.py", demo=DEMO, headline=headline,
          report=report, help="LYNX: conformal early exit from hidden-state probes",
          findings="thinklens.probes.lynx_findings:lynx_findings", capability="LYNX early exit",
          validations={"lynx": "thinklens.probes.validation:SETTINGS"}, traces="thinklens.probes.lynx_traces:READER",
          headline_traces="thinklens.probes.lynx_traces:headline_traces",
          smallest=("--model", "tiny-think", "--n-train", "8", "--n-calibration", "20", "--n-test", "8", "--max-steps", "2",
                    "--hidden-layer-sizes", "16", "--deltas", "0.3", "--skip-vacuous", "--batch-size", "4", "--label-batch-size", "8"))
