"""``thinklens run probe``: what a model's states encode, site by site, checked against the task's ground truth.

``--target intermediate``: at every token of the teacher-forced reasoning text (thinklens.tasks
renders it with per-word ground truth), a ridge probe decodes the running intermediate value (R^2,
cross-validated with all positions of one problem in the same fold; :mod:`probes.value_dataset`).
Positions whose token IS the value are dropped by default, so a probe must read the value from
context, not from the token.

``--target correct``: at the last prompt token, a logistic probe predicts whether the model's own
greedy answer will be correct (AUROC and accuracy, stratified CV), next to a control that sees only
the number of steps (problem difficulty, which the prompt reveals). With ``intention`` it also
computes the intention metrics per prompt style: intention entropy (bits, top 100), effective
dimensionality (90% variance) and recoverability (CV AUROC with a bootstrap CI) at the last
``min(5, n_layers)`` hidden states.

The probe at the best site is refitted on all rows and saved with :mod:`probes.io`. Results:
``results/sweep.json`` (and ``results/intention.json``), the figure ``layer_sweep``, ``probe/``.

Example:
    >>> JOB.name, ProbeJobConfig(target="correct").target
    ('probe', 'correct')
    >>> # doc = thinklens.run_job("probe", model="tiny-think", n_problems=200, run_id="demo")
    >>> # doc["best_site"], doc["sweeps"]["r2"]["mean"]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from thinklens.errors import ThinklensError
from thinklens.jobs import Job, JobContext, Progress
from thinklens.sites import Site
from thinklens.tasks import TaskConfig, check_style, generate_problems
from thinklens.tasks.protocol import token_budget

Target = Literal["intermediate", "correct"]




@dataclass(frozen=True)
class ProbeJobConfig:
    """Settings of ``thinklens run probe``."""

    model: str = "tiny-think"
    """Zoo name, local model folder or hub id."""
    target: Target = "intermediate"
    """intermediate: ridge on the running value at every token; correct: logistic on answer correctness."""
    sites: tuple[str, ...] = ("embed", "resid_post.*")
    """Sites to sweep, in order (kind.* expands to every layer)."""
    style: str = "think"
    """Prompt style of thinklens.tasks (direct, cot, think)."""
    n_problems: int = 300
    """Problems drawn."""
    min_steps: int = 1
    """Fewest arithmetic steps per problem."""
    max_steps: int = 4
    """Most arithmetic steps per problem."""
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
    intention: bool = True
    """Correct target: also compute the intention metrics for each of intention_styles."""
    intention_styles: tuple[str, ...] = ("direct", "cot", "think")
    """Prompt styles compared by the intention metrics."""
    n_bootstrap: int = 1000
    """Bootstrap resamples of the recoverability CI."""
    batch_size: int = 32
    """Texts per forward pass / generation batch (and per cached batch of answers)."""

    def __post_init__(self) -> None:
        if self.target not in ("intermediate", "correct"):
            raise ThinklensError.of("target", self.target, "intermediate or correct", "pick one of the two")
        check_style(self.style)
        for s in self.intention_styles:
            check_style(s)
        if not self.sites:
            raise ThinklensError.of("sites", self.sites, "at least one site", "use e.g. resid_post.*")
        for s in self.sites:
            if not s.strip().endswith(".*"):
                Site.parse(s)  # did-you-mean on typos before any work
        for name, low in (("n_problems", 10), ("folds", 2), ("batch_size", 1), ("n_bootstrap", 0)):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < low:
                raise ThinklensError.of(name, getattr(self, name), f"an integer >= {low}", "use the default")
        if self.folds > self.n_problems:
            raise ThinklensError.of("folds", self.folds, f"at most n_problems ({self.n_problems})", "use 5")
        TaskConfig(min_steps=self.min_steps, max_steps=self.max_steps)
        if not (self.alpha > 0 and self.C > 0):
            raise ThinklensError.of("alpha / C", (self.alpha, self.C), "positive numbers", "use 1.0")

    def problems(self) -> list:
        """The job's problems (a seeded stream of its own)."""
        import numpy as np

        return generate_problems(self.n_problems, seed=np.random.default_rng([self.seed, 101]),
                                 config=TaskConfig(min_steps=self.min_steps, max_steps=self.max_steps))


def _sweep_doc(sweep) -> dict:
    return {"sites": list(sweep.sites), "scoring": sweep.scoring, "scores": sweep.scores.tolist(),
            "mean": sweep.mean.tolist(), "std": sweep.std.tolist(), "best": sweep.best}


def greedy_answers(model, prompts: list[str], cache, *, name: str, max_new_tokens: int, batch_size: int,
                   progress: Progress | None = None) -> list[str]:
    """Greedy continuations of ``prompts`` (cached batch by batch as ``<name>.<k>``)."""
    from probes.rollouts import cached_rollouts

    return [t.text for t in cached_rollouts(model, prompts, cache, name=name, batch_size=batch_size,
                                            max_new_tokens=max_new_tokens, progress=progress)]


def intention_metrics(model, problems, styles, cache, *, max_steps: int, n_bootstrap: int, seed: int,
                      batch_size: int, progress: Progress | None = None) -> dict:
    """Intention entropy, effective dimensionality and recoverability per prompt style."""
    import numpy as np

    from probes.datasets import prompt_states
    from probes.intention import effective_dimensionality, intention_entropy, recoverability
    from thinklens.answers import parse_answer
    from thinklens.sites import hidden_state_site
    from thinklens.stages import batch_ranges
    from thinklens.tasks import render_prompt

    last = [hidden_state_site(i, model.n_layers) for i in range(max(1, model.n_layers - 4), model.n_layers + 1)]
    out: dict[str, Any] = {"sites": [str(s) for s in last], "styles": {}}
    for style in styles:
        prompts = [render_prompt(p, style) for p in problems]
        texts = greedy_answers(model, prompts, cache, name=f"answers.{style}", batch_size=batch_size,
                               max_new_tokens=token_budget(style, max_steps), progress=progress)
        y = np.array([int(parse_answer(t) == p.answer) for t, p in zip(texts, problems)])
        logits = np.concatenate([model.capture([prompts[i] for i in part], [Site("logits")], positions="last")
                                 .acts[Site("logits")][:, -1].float().cpu().numpy()
                                 for part in batch_ranges(len(prompts), batch_size)])
        ent = intention_entropy(logits, top_k=100)
        states = prompt_states(model, prompts, last, batch_size=batch_size)
        doc = {"accuracy": float(y.mean()), "entropy_bits_mean": float(ent.mean()), "entropy_bits_std": float(ent.std()),
               "effective_dim": {s: effective_dimensionality(x) for s, x in states.items()}}
        try:
            r = recoverability(np.concatenate(list(states.values()), axis=1), y, n_bootstrap=n_bootstrap, seed=seed)
            doc["recoverability"] = {"auroc": r.auroc, "ci_low": r.ci_low, "ci_high": r.ci_high, "n": r.n,
                                     "n_positive": r.n_positive, "folds": r.folds}
        except ThinklensError as e:  # one outcome only (all right or all wrong): not decodable, say why
            doc["recoverability"] = {"error": str(e)}
        out["styles"][style] = doc
    return out


def run(config: ProbeJobConfig, ctx: JobContext) -> dict:
    """Run (or resume) the probe job into ``ctx.run``; returns the sweep result written to results/sweep.json."""
    import numpy as np

    from probes.datasets import layer_sweep, prompt_states
    from probes.estimators import LinearProbe, RidgeProbe
    from probes.figures import figure_layer_sweep
    from probes.io import save_probe
    from probes.value_dataset import value_dataset
    from thinklens.answers import parse_answer
    from thinklens.sites import parse_sites
    from thinklens.stages import StageCache
    from thinklens.tasks import render_prompt

    model, run_folder = ctx.model, ctx.run
    sites = [str(s) for s in parse_sites(list(config.sites), n_layers=model.n_layers)]
    problems = config.problems()
    cache = StageCache(run_folder)
    if config.target == "intermediate":
        ds = value_dataset(model, problems, config.style, sites, exclude_value_tokens=config.exclude_value_tokens,
                           batch_size=config.batch_size)
        X, y, groups = ds["features"], ds["running"].astype(np.float64), ds["group"]
        sweeps = {"r2": layer_sweep(X, y, task="regression", probe=RidgeProbe(alpha=config.alpha),
                                    folds=config.folds, seed=config.seed, groups=groups)}
        extra = {"n_rows": int(len(y)), "target_std": float(y.std()),
                 "kinds": {k: ds["kind"].count(k) for k in sorted(set(ds["kind"]))}}
        best = sweeps["r2"].best
        final = RidgeProbe(alpha=config.alpha).fit(X[best], y)
        title = f"Decoding the running value ({config.style} text, ridge R², grouped {config.folds}-fold CV)"
    else:
        prompts = [render_prompt(p, config.style) for p in problems]
        texts = greedy_answers(model, prompts, cache, name=f"answers.{config.style}", batch_size=config.batch_size,
                               max_new_tokens=token_budget(config.style, config.max_steps), progress=ctx.progress)
        y = np.array([int(parse_answer(t) == p.answer) for t, p in zip(texts, problems)])
        n_min = int(min(y.sum(), len(y) - y.sum()))
        if n_min < config.folds:
            raise ThinklensError.of("correctness labels", f"{int(y.sum())} correct of {len(y)} answers",
                                    f"at least {config.folds} of each outcome for {config.folds}-fold CV",
                                    "draw more problems (--n-problems), or harder/easier ones (--max-steps)")
        X = prompt_states(model, prompts, sites, batch_size=config.batch_size)
        probe = LinearProbe(C=config.C)
        sweeps = {"auroc": layer_sweep(X, y, task="classification", probe=probe, folds=config.folds,
                                       scoring="roc_auc", seed=config.seed),
                  "accuracy": layer_sweep(X, y, task="classification", probe=probe, folds=config.folds,
                                          scoring="accuracy", seed=config.seed)}
        # control: how much of "will it be right" is just "how many steps does the problem have"
        steps = np.eye(config.max_steps + 1)[[p.n_steps for p in problems]]  # one-hot [problem, steps]
        control = layer_sweep({"n_steps": steps}, y, task="classification", probe=LinearProbe(C=config.C),
                              folds=config.folds, scoring="roc_auc", seed=config.seed)
        extra = {"n_rows": int(len(y)), "model_accuracy": float(y.mean()),
                 "majority_accuracy": float(max(y.mean(), 1 - y.mean())),
                 "steps_only_auroc": float(control.mean[0])}
        best = sweeps["auroc"].best
        final = LinearProbe(C=config.C).fit(X[best], y)
        title = f"Predicting answer correctness from the last prompt token ({config.style}, {config.folds}-fold CV)"
    save_probe(final, run_folder.path / "probe", site=best, model_name=config.model)
    doc = {"target": config.target, "best_site": best, "sweeps": {k: _sweep_doc(v) for k, v in sweeps.items()},
           "n_problems": len(problems), **extra}
    run_folder.write_result("sweep", doc)
    run_folder.write_figure("layer_sweep", figure_layer_sweep(sweeps, title=title))
    if config.target == "correct" and config.intention:
        run_folder.write_result("intention", intention_metrics(
            model, problems, config.intention_styles, cache, max_steps=config.max_steps,
            n_bootstrap=config.n_bootstrap, seed=config.seed, batch_size=config.batch_size, progress=ctx.progress))
    primary = next(iter(sweeps.values()))
    run_folder.finish({"target": config.target, "best_site": best, "best_score": float(primary.mean.max()),
                       "scoring": primary.scoring})
    return doc


def report(doc: dict) -> str:
    """The layer sweep the CLI prints after the run folder."""
    lines = []
    for name, sw in doc["sweeps"].items():
        cells = "  ".join(f"{site}={m:.3f}±{sd:.3f}" for site, m, sd in zip(sw["sites"], sw["mean"], sw["std"]))
        lines.append(f"{name}: {cells}")
    lines.append(f"best site: {doc['best_site']} (probe saved in the run folder's probe/)")
    return "\n".join(lines)


JOB = Job(
    "probe", ProbeJobConfig, run, report=report,
    help="layer sweep of probes decoding the running value or answer correctness",
    description="Per-site cross-validated probes against the task's ground truth: ridge R^2 of the running "
    "intermediate value, or logistic AUROC/accuracy of eventual correctness (with intention metrics). Saves the "
    "best probe (safetensors + JSON).",
)
