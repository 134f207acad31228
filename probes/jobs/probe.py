"""``thinklens run probe``: what a model's states encode, site by site: the task's ground truth, or whether
the model's own answer will be right.

``--target intermediate`` (synthetic problems only: the task's ground truth per word): at every token
of the teacher-forced reasoning text (thinklens.tasks renders it in a zoo style with per-word ground
truth), a ridge probe decodes the running intermediate value (R^2, cross-validated with all positions
of one problem in the same fold; :mod:`thinklens.probes.value_dataset`). Positions whose token IS the value are
dropped by default, so a probe must read the value from context, not from the token. Data without that
ground truth (GSM8K, MATH, your JSONL) is refused with a pointer to ``--target correct``.

``--target correct`` (any data with gold answers): at the last prompt token (in the model's prompt
format), a logistic probe predicts whether the model's own greedy answer will be correct, graded by
:func:`thinklens.data.answers.is_correct` against the gold answer (AUROC and accuracy, stratified CV); on
synthetic problems next to a control that sees only the number of steps (problem difficulty, which the
prompt reveals). ``--test-data`` scores the probes fitted on ``--data`` on other data sets (one probe
trained on MATH, tested on MATH-500 and GSM8K): AUROC and accuracy per site on each. With ``intention`` it
also computes the intention metrics per prompt format:
intention entropy (bits, top 100), effective dimensionality (90% variance) and recoverability (CV
AUROC with a bootstrap CI) at the last ``min(5, n_layers)`` hidden states.

Findings (the summary's ``findings``, :mod:`thinklens.probes.probe_findings`): the site is chosen on half of the problems and
its score reported on the other half, with a bootstrap interval over problems, against the shuffled-label probe
(or chance / predicting the mean), the majority class and, on synthetic problems, the steps-only control.

The probe at the best site is refitted on all rows and saved with :mod:`thinklens.probes.io`. A sweep whose best
site scores no better than chance (AUROC 0.5, R^2 0: e.g. only ``embed`` at the last prompt token, the same token in
every prompt) is flagged instead (:func:`at_chance`): ``best_site`` is None, ``degenerate`` says why, no probe is
saved, and the report says there is no best site. Results: ``results/sweep.json`` (and ``results/intention.json``;
with ``--target correct`` ``results/probe_problems.json``, each problem's answer and held-out probability,
:mod:`thinklens.probes.probe_traces`),
the figure ``layer_sweep``, ``probe/``.

Example:
    >>> JOB.name, ProbeJobConfig(target="correct").target
    ('probe', 'correct')
    >>> # doc = thinklens.run_job("probe", model="tiny-think", n_problems=200, run_id="demo")
    >>> # doc = thinklens.run_job("probe", model="tiny-r1", data="gsm8k_test.jsonl", target="correct", run_id="gsm8k")
    >>> # doc["best_site"], doc["sweeps"]["auroc"]["mean"]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from thinklens.calibration.findings import findings_doc
from thinklens.data.answers import is_correct
from thinklens.data.formats import ZOO_FORMATS, check_format, format_for
from thinklens.data.problemsets import DataOptions, check_disjoint, load_problems
from thinklens.engine.sites import Site, hidden_state_site, parse_sites
from thinklens.errors import ThinklensError, opt, opt_name
from thinklens.generation.budgets import ROLLOUT_TOKENS, budgets_for, new_token_budget
from thinklens.runs.headlines import num
from thinklens.runs.jobs import DemoRun, Job, JobContext, Progress
from thinklens.tasks import StepRange

if TYPE_CHECKING:
    from thinklens.data.formats import PromptFormat
    from thinklens.data.problemsets import ProblemSet

Target = Literal["intermediate", "correct"]


@dataclass(frozen=True)
class ProbeJobConfig(DataOptions, StepRange):
    """Settings of ``thinklens run probe``."""

    model: str = "tiny-think"
    """Zoo name, local model folder or hub id."""
    data: str = ""
    """Problems: a .jsonl/.json/.parquet/.csv file, a saved HF datasets folder, a cached hub id (a @split suffix picks a
    split) or synthetic:MIN-MAX[:N]; empty: the synthetic task, a seeded stream (--min-steps..--max-steps)."""
    target: Target = "intermediate"
    """intermediate: ridge on the running value at every token (synthetic problems only); correct: logistic on whether
    the model's answer is right (any data with gold answers)."""
    sites: tuple[str, ...] = ("embed", "resid_post.*")
    """Sites to sweep, in order (kind.* expands to every layer)."""
    n_problems: int = 300
    """Problems drawn (from --data: a seeded sample of this many, or all when it has fewer)."""
    test_data: tuple[str, ...] = ()
    """Correct target: data sets (comma-separated; fields found by name) the probes fitted on all of --data are scored
    on, e.g. HuggingFaceH4/MATH-500@test,openai/gsm8k:main@test."""
    n_test: int = 300
    """Problems per test data set (a seeded sample; all when it has fewer)."""
    allow_overlap: bool = False
    """Allow a question of --data in a test data set (refused by default)."""
    seed: int = 0
    """Seed of the problems and of the CV folds."""
    folds: int = 5
    """Cross-validation folds."""
    alpha: float = 1.0
    """Ridge regularisation (intermediate target)."""
    C: float = 1.0
    """Inverse regularisation of the logistic probe (correct target)."""
    exclude_value_tokens: bool = True
    """Intermediate target: drop positions whose token is the running value itself."""
    max_new_tokens: int | None = None
    """Correct target: greedy answer length cap; none: the task protocol's budget for a zoo style, else 4096 (or less
    when the model's context cannot hold the prompt and the answer)."""
    intention: bool = True
    """Correct target: also compute the intention metrics for each of intention_formats."""
    intention_formats: tuple[str, ...] = ()
    """Prompt formats compared by the intention metrics; empty: direct,cot,think for a zoo style, else the job's own
    format."""
    n_bootstrap: int = 1000
    """Bootstrap resamples of the recoverability CI."""
    batch_size: int = 32
    """Texts per forward pass / generation batch (and per cached batch of answers)."""

    def check(self) -> None:
        if self.target not in ("intermediate", "correct"):
            raise ThinklensError.of("target", self.target, "intermediate or correct", "pick one of the two")
        for name in self.intention_formats:
            if check_format(name) == "auto":
                raise ThinklensError.of("intention format", name, "chat, plain, direct, cot or think",
                                        "name the formats to compare")
        if self.test_data and self.target != "correct":
            raise ThinklensError.of("test_data", ",".join(self.test_data), f"test data sets with {opt('target', 'correct')}",
                                    f"pass {opt('target', 'correct')}, or drop {opt('test_data')}")
        if self.data_fields and not self.data:
            raise ThinklensError.of("data_fields", self.data_fields, f"a field mapping for {opt('data')}",
                                    f"pass {opt('data')} too, or drop {opt('data_fields')}")
        if not self.sites:
            raise ThinklensError.of("sites", self.sites, "at least one site", "use e.g. resid_post.*")
        for s in self.sites:
            if not s.strip().endswith(".*"):
                Site.parse(s)  # did-you-mean on typos before any work
        for name, low in (("n_problems", 10), ("folds", 2), ("batch_size", 1), ("n_bootstrap", 0), ("n_test", 1)):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < low:
                raise ThinklensError.of(name, getattr(self, name), f"an integer >= {low}", "use the default")
        if self.folds > self.n_problems:
            raise ThinklensError.of("folds", self.folds, f"at most n_problems ({self.n_problems})", "use 5")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise ThinklensError.of("max_new_tokens", self.max_new_tokens, "None or an integer >= 1", "use None")
        if not (self.alpha > 0 and self.C > 0):
            raise ThinklensError.of("alpha / C", (self.alpha, self.C), "positive numbers", "use 1.0")

    def problems(self) -> ProblemSet:
        """The job's problems: the synthetic task's own seeded stream without --data, else a seeded sample of
        --data."""
        return DataOptions.problems(self, self.n_problems, seed=(self.seed, 101), sample_seed=self.seed, part="probe",
                                    source="task", id_prefix=f"task-{self.seed}")

    def test_sets(self, problems: ProblemSet) -> list[ProblemSet]:
        """The test data sets (a seeded sample of ``n_test`` each), checked disjoint from ``problems``."""
        out = []
        for source in self.test_data:
            loaded = load_problems(source)
            out.append(loaded.split({"test": min(self.n_test, len(loaded))}, seed=self.seed)["test"])
            check_disjoint({"data": problems, source: out[-1]}, allow_overlap=self.allow_overlap)
        return out


def check_intermediate(config: ProbeJobConfig, fmt: PromptFormat, problems: ProblemSet) -> None:
    """Refuse the intermediate target where its ground truth does not exist: data without the task's per-step
    values, or a prompt format other than the zoo's styles (the values are aligned to their renderings)."""
    if not problems.is_synthetic:
        raise ThinklensError.of(
            "target intermediate", f"data {config.data!r} (gold answers only, no value at every step)",
            f"the synthetic task's problems (no {opt_name('data')}, or {opt('data', 'synthetic:MIN-MAX')}), whose running value is known "
            "at every word", f"use {opt('target', 'correct')}: it probes whether the model's answer will be right, graded "
            "against the gold answers")
    if not fmt.is_zoo:
        raise ThinklensError.of(
            "target intermediate", f"prompt format {fmt.name}", f"a zoo style ({', '.join(ZOO_FORMATS)}): the running "
            "value is aligned to the words of the zoo's renderings", f"pass {opt('prompt_format', 'think')} (or cot), or use "
            f"{opt('target', 'correct')}")


def _sweep_doc(sweep) -> dict:
    return {"sites": list(sweep.sites), "scoring": sweep.scoring, "scores": sweep.scores.tolist(),
            "mean": sweep.mean.tolist(), "std": sweep.std.tolist(), "best": sweep.best}


def greedy_answers(model, prompts: list[str], cache, *, name: str, max_new_tokens: int, batch_size: int,
                   progress: Progress | None = None) -> list[str]:
    """Greedy continuations of ``prompts`` (cached batch by batch as ``<name>.<k>``)."""
    from thinklens.probes.rollouts import cached_rollouts  # lazy: CLI start-up (torch)

    return [t.text for t in cached_rollouts(model, prompts, cache, name=name, batch_size=batch_size,
                                            max_new_tokens=max_new_tokens, progress=progress)]


def graded_answers(model, config: ProbeJobConfig, fmt: PromptFormat, problems: ProblemSet, cache, *,
                   name: str = "answers", progress: Progress | None = None) -> tuple[list[str], Any]:
    """The prompts of ``problems`` in ``fmt`` and whether the model's greedy answer to each is right
    (:func:`thinklens.data.answers.is_correct` against the gold answer): ``(prompts, y [problem] 0/1)``; the
    answers are cached as ``<name>.<format>.<k>``."""
    prompts = fmt.render_problems(problems, model.tokenizer)
    budget = budgets_for(model, prompts, new_token_budget(fmt, config.max_new_tokens, max_steps=config.max_steps,
                                                          default=ROLLOUT_TOKENS)).shared
    texts = greedy_answers(model, prompts, cache, name=f"{name}.{fmt.name}", batch_size=config.batch_size,
                           max_new_tokens=budget, progress=progress)
    return prompts, np.array([int(is_correct(t, p.answer)) for t, p in zip(texts, problems)]), texts


def intention_metrics(model, config: ProbeJobConfig, fmt: PromptFormat, problems: ProblemSet, cache, *,
                      progress: Progress | None = None) -> dict:
    """Intention entropy, effective dimensionality and recoverability per prompt format (``config.intention_formats``;
    by default the zoo's three styles for a zoo style, else ``fmt`` alone)."""
    from thinklens.probes.datasets import prompt_states  # lazy: CLI start-up (torch)
    from thinklens.probes.intention import effective_dimensionality, intention_entropy, recoverability  # lazy: CLI start-up (sklearn)
    from thinklens.runs.stages import batch_ranges  # lazy: CLI start-up (safetensors)

    names = config.intention_formats or (ZOO_FORMATS if fmt.is_zoo else (fmt.name,))
    last = [hidden_state_site(i, model.n_layers) for i in range(max(1, model.n_layers - 4), model.n_layers + 1)]
    out: dict[str, Any] = {"sites": [str(s) for s in last], "styles": {}}
    for name in names:
        prompts, y, _ = graded_answers(model, config, format_for(model, name), problems, cache, progress=progress)
        logits = np.concatenate([model.capture([prompts[i] for i in part], [Site("logits")], positions="last")
                                 .acts[Site("logits")][:, -1].float().cpu().numpy()
                                 for part in batch_ranges(len(prompts), config.batch_size)])
        ent = intention_entropy(logits, top_k=100)
        states = prompt_states(model, prompts, last, batch_size=config.batch_size)
        doc = {"accuracy": float(y.mean()), "entropy_bits_mean": float(ent.mean()), "entropy_bits_std": float(ent.std()),
               "effective_dim": {s: effective_dimensionality(x) for s, x in states.items()}}
        try:
            r = recoverability(np.concatenate(list(states.values()), axis=1), y, n_bootstrap=config.n_bootstrap,
                               seed=config.seed)
            doc["recoverability"] = {"auroc": r.auroc, "ci_low": r.ci_low, "ci_high": r.ci_high, "n": r.n,
                                     "n_positive": r.n_positive, "folds": r.folds}
        except ThinklensError as e:  # one outcome only (all right or all wrong): not decodable, say why
            doc["recoverability"] = {"error": str(e)}
        out["styles"][name] = doc
    return out


def transfer_scores(model, config: ProbeJobConfig, fmt: PromptFormat, X: dict, y, sites: list[str], tests: list,
                    cache, *, progress: Progress | None = None) -> list[dict]:
    """Per test data set: a logistic probe per site fitted on all of ``X``/``y`` (the --data rows), scored by
    AUROC (None with one outcome only) and accuracy on that set's rows."""
    from thinklens.probes.datasets import prompt_states  # lazy: CLI start-up (torch)
    from thinklens.probes.estimators import LinearProbe  # lazy: CLI start-up (sklearn)
    from thinklens.probes.intention import auroc_score  # lazy: CLI start-up (sklearn)

    fitted = {site: LinearProbe(C=config.C).fit(X[site], y) for site in sites}
    out = []
    for i, test in enumerate(tests):
        prompts, y_test, _ = graded_answers(model, config, fmt, test, cache, name=f"test{i}", progress=progress)
        X_test = prompt_states(model, prompts, sites, batch_size=config.batch_size)
        both = 0 < int(y_test.sum()) < len(y_test)
        p = {site: fitted[site].predict_proba(X_test[site])[:, 1] for site in sites}
        out.append({"data": test.source, "n_problems": len(test), "model_accuracy": float(y_test.mean()),
                    "auroc": {site: auroc_score(y_test, p[site]) if both else None for site in sites},
                    "accuracy": {site: float(np.mean((p[site] >= 0.5) == y_test)) for site in sites}})
    return out


CHANCE = {"roc_auc": 0.5, "r2": 0.0}
"""What a probe that reads nothing scores (AUROC of a constant prediction; R^2 of predicting the mean)."""


def at_chance(sweep: Any, features: dict) -> dict | None:
    """Why the best site of a layer sweep reads nothing, or None: its mean CV score is at or below chance
    (:data:`CHANCE`), e.g. because its features are the same in every row.

    Example:
        >>> import numpy as np
        >>> from thinklens.probes.datasets import LayerSweep
        >>> sw = LayerSweep(("embed", "resid_post.0"), np.array([[0.5, 0.5], [0.4, 0.48]]), "roc_auc")
        >>> at_chance(sw, {"embed": np.ones((4, 2)), "resid_post.0": np.eye(4)})["reason"][:60]
        'no site reads the target above chance: the best, embed, scor'
    """
    chance = CHANCE.get(sweep.scoring)
    score = float(np.max(sweep.mean))
    if chance is None or score > chance:
        return None
    best = sweep.best
    X = np.asarray(features[best])
    why = " (its features are the same in every row)" if X.size and np.ptp(X, axis=0).max() == 0 else ""
    return {"site": best, "score": score, "scoring": sweep.scoring, "chance": chance,
            "reason": f"no site reads the target above chance: the best, {best}, scores {sweep.scoring} {score:.3f} "
                      f"against chance {chance:g}{why}"}


def run(config: ProbeJobConfig, ctx: JobContext) -> dict:
    """Run (or resume) the probe job into ``ctx.run``; returns the sweep result written to results/sweep.json."""
    from thinklens.probes.datasets import layer_sweep, prompt_states  # lazy: CLI start-up (torch)
    from thinklens.probes.estimators import LinearProbe, RidgeProbe  # lazy: CLI start-up (sklearn)
    from thinklens.probes.figures import figure_layer_sweep  # lazy: CLI start-up (scipy)
    from thinklens.probes.io import save_probe  # lazy: CLI start-up (sklearn)
    from thinklens.probes.probe_findings import probe_findings  # lazy: CLI start-up (torch)
    from thinklens.runs.stages import StageCache  # lazy: CLI start-up (safetensors)

    model, run_folder = ctx.model, ctx.run
    fmt = format_for(model, config.prompt_format)
    sites = [str(s) for s in parse_sites(list(config.sites), n_layers=model.n_layers)]
    problems = config.problems()
    tests = config.test_sets(problems)  # a bad test source or an overlap fails before any work
    cache = StageCache(run_folder)
    if config.target == "intermediate":
        from thinklens.probes.value_dataset import value_dataset  # lazy: CLI start-up (safetensors)

        check_intermediate(config, fmt, problems)
        ds = value_dataset(model, [p.ground_truth for p in problems], fmt.name, sites,
                           exclude_value_tokens=config.exclude_value_tokens, batch_size=config.batch_size)
        X, y, groups = ds["features"], ds["running"].astype(np.float64), ds["group"]
        sweeps = {"r2": layer_sweep(X, y, task="regression", probe=RidgeProbe(alpha=config.alpha),
                                    folds=config.folds, seed=config.seed, groups=groups)}
        extra = {"n_rows": int(len(y)), "target_std": float(y.std()),
                 "kinds": {k: ds["kind"].count(k) for k in sorted(set(ds["kind"]))}}
        best = sweeps["r2"].best
        found = probe_findings(X, y, target="intermediate", probe=RidgeProbe(alpha=config.alpha), folds=config.folds,
                               seed=config.seed, groups=groups)
        final = RidgeProbe(alpha=config.alpha).fit(X[best], y)
        title = f"Decoding the running value ({fmt.name} text, ridge R², grouped {config.folds}-fold CV)"
    else:
        prompts, y, texts = graded_answers(model, config, fmt, problems, cache, progress=ctx.progress)
        n_min = int(min(y.sum(), len(y) - y.sum()))
        if n_min < config.folds:
            raise ThinklensError.of("correctness labels", f"{int(y.sum())} correct of {len(y)} answers",
                                    f"at least {config.folds} of each outcome for {config.folds}-fold CV",
                                    f"draw more problems ({opt_name('n_problems')}), or harder/easier ones "
                                    f"({opt_name('max_steps')}, {opt_name('data')})")
        X = prompt_states(model, prompts, sites, batch_size=config.batch_size)
        probe = LinearProbe(C=config.C)
        sweeps = {"auroc": layer_sweep(X, y, task="classification", probe=probe, folds=config.folds,
                                       scoring="roc_auc", seed=config.seed),
                  "accuracy": layer_sweep(X, y, task="classification", probe=probe, folds=config.folds,
                                          scoring="accuracy", seed=config.seed)}
        extra = {"n_rows": int(len(y)), "model_accuracy": float(y.mean()),
                 "majority_accuracy": float(max(y.mean(), 1 - y.mean())), "steps_only_auroc": None}
        steps = None
        if problems.is_synthetic:
            # control: how much of "will it be right" is just "how many steps does the problem have"
            counts = [p.ground_truth.n_steps for p in problems]  # --data synthetic:MIN-MAX may pass --max-steps
            steps = np.eye(max(config.max_steps, *counts) + 1)[counts]  # one-hot [problem, steps]
            control = layer_sweep({"n_steps": steps}, y, task="classification", probe=LinearProbe(C=config.C),
                                  folds=config.folds, scoring="roc_auc", seed=config.seed)
            extra["steps_only_auroc"] = float(control.mean[0])
        best = sweeps["auroc"].best
        found = probe_findings(X, y, target="correct", probe=LinearProbe(C=config.C), folds=config.folds,
                               seed=config.seed, steps=steps)
        final = LinearProbe(C=config.C).fit(X[best], y)
        if tests:
            extra["transfer"] = transfer_scores(model, config, fmt, X, y, sites, tests, cache, progress=ctx.progress)
        title = f"Predicting answer correctness from the last prompt token ({fmt.name}, {config.folds}-fold CV)"
    primary = next(iter(sweeps.values()))
    degenerate = at_chance(primary, X)
    if degenerate is None:
        save_probe(final, run_folder.path / "probe", site=best, model_name=config.model)
    else:  # a probe at chance is no readout: flagged, never saved or reported as the best
        best = None
    findings_site = next((f.extra["site"] for f in found if "site" in f.extra), None)
    if config.target == "correct":  # the texts behind its score, the most wrong flagged (results/probe_problems.json)
        from thinklens.probes.probe_traces import PROBLEMS, held_out_probabilities, problem_records  # lazy: CLI start-up (sklearn)

        site = findings_site or best or sites[0]
        p = held_out_probabilities(LinearProbe(C=config.C), X[site], y, folds=config.folds, seed=config.seed)
        run_folder.write_result(PROBLEMS, problem_records(prompts, texts, y.tolist(), p.tolist(), ids=[q.id for q in problems],
                                                          golds=[q.answer for q in problems], site=site))
    doc = {"target": config.target, "best_site": best, "findings_site": findings_site, "degenerate": degenerate,
           "sweeps": {k: _sweep_doc(v) for k, v in sweeps.items()},
           "n_problems": len(problems), "data": problems.source, "prompt_format": fmt.name, **extra,
           "findings": findings_doc(found)}
    run_folder.write_result("sweep", doc)
    run_folder.write_figure("layer_sweep", figure_layer_sweep(sweeps, title=title))
    if config.target == "correct" and config.intention:
        run_folder.write_result("intention", intention_metrics(model, config, fmt, problems, cache,
                                                               progress=ctx.progress))
    run_folder.finish({"target": config.target, "best_site": best, "findings_site": findings_site,
                       "best_score": float(primary.mean.max()), "scoring": primary.scoring,
                       "degenerate": degenerate["reason"] if degenerate else None, "findings": doc["findings"]})
    return doc


def report(doc: dict) -> str:
    """The layer sweep the CLI prints after the run folder."""
    lines = []
    for name, sw in doc["sweeps"].items():
        cells = "  ".join(f"{site}={m:.3f}±{sd:.3f}" for site, m, sd in zip(sw["sites"], sw["mean"], sw["std"]))
        lines.append(f"{name}: {cells}")
    for t in doc.get("transfer", []):
        cells = "  ".join(f"{site}={'-' if a is None else format(a, '.3f')}" for site, a in t["auroc"].items())
        lines.append(f"test {t['data']} (model accuracy {t['model_accuracy']:.3f}) auroc: {cells}")
    if doc.get("degenerate"):
        lines.append(f"no best site: {doc['degenerate']['reason']}; no probe saved")
    else:
        lines.append(f"best site: {doc['best_site']} (the sweep's best mean CV score over all problems: the probe saved "
                     "in the run folder's probe/ is refitted there)")
    site = doc.get("findings_site")
    # the findings choose and score on disjoint halves; the sweep on the same rows
    if site and site != doc["best_site"] and not doc.get("degenerate"):
        lines.append(f"the findings report {site}: chosen on half of the problems, scored on the other half (the "
                     f"sweep's best site is chosen and scored on the same problems, so its score is optimistic)")
    return "\n".join(lines)


def headline(summary: dict, folder: Path) -> str:
    """The run in a line (Home, ``thinklens runs``): where the target is read best, and how well."""
    if summary.get("degenerate"):
        return f"{summary.get('target', '?')} value: {summary['degenerate']}"
    return (f"{summary.get('target', '?')} value read best at {summary.get('best_site', '?')} "
            f"({summary.get('scoring', 'score')} {num(summary.get('best_score'))})")


def preflight(config: ProbeJobConfig) -> None:
    """What the job reads, checked before the model loads: ``--data`` (a seeded sample of it) and each
    ``--test-data`` set, read, parsed and checked disjoint from it (a missing, malformed or empty file costs no load)."""
    if config.data or config.test_data:
        config.test_sets(config.problems())


DEMO = (DemoRun(("--model", "tiny-think", "--target", "intermediate", "--n-problems", "120"), progress=True),)


JOB = Job("probe", ProbeJobConfig, run, preflight=preflight, order=50, page="pages/3_Probes_and_LYNX.py", demo=DEMO, headline=headline,
          report=report,
          help="layer sweep of probes decoding the running value or answer correctness",
          findings="thinklens.probes.probe_findings:probe_findings", capability="Probes",
          validations={"readout": "thinklens.probes.readout_validation:SETTINGS"},
          headline_traces="thinklens.probes.probe_traces:headline_traces",
          smallest=("--model", "tiny-think", "--n-problems", "12", "--n-test", "6", "--max-steps", "1", "--folds", "2", "--n-bootstrap",
                    "20", "--sites", "resid_post.0,resid_post.1"))
