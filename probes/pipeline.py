"""The end-to-end LYNX job on any HookedModel, resumable, writing a run folder.

Stages (specs/lynx.md): sampled rollouts on three disjoint problem splits (train, calibration,
test) -> cue events -> hidden states at the LYNX layers and forced-exit labels, from one pass over
each rollout (:mod:`probes.forced`: batched, each forced exit continues from the rollout's KV
cache) -> the MLP
probe with class-balanced weights (train split) -> class-conditional split conformal (calibration
split) -> the exit rule at every delta and the baselines (first cue, fixed fraction, p > 0.5
uncalibrated), the Pareto front, and the validity measurement P(S={1} | y=0) vs delta with binomial
95% bounds (test split, the third one). Rollouts, features and labels are cached chunk by chunk in
``<run>/cache`` (JSON and safetensors), so an interrupted job re-run with the same config resumes.

The guarantee measured here is per cue event and needs calibration and test events to be
exchangeable; it is not a per-trajectory bound (see :mod:`probes.conformal`).

Example:
    >>> # model = HookedModel.load("tiny-think")
    >>> # run = RunFolder.create("lynx", cfg := LynxJobConfig(n_train=100), run_id="demo")
    >>> # result = run_lynx(model, cfg, run, progress=True)
    >>> # result.per_delta[0]["saving"], result.validity.rate
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from probes.conformal import MondrianCalibrator, min_calibration_events, validity_curve
from probes.datasets import ForcedExits, exit_tables, rollout_events
from probes.estimators import LynxMLPProbe
from probes.exits import base_rate_by_position, evaluate_exit_policies
from probes.forced import event_features_and_labels
from probes.intention import auroc_score
from probes.io import load_probe, save_probe
from probes.lynx import CueEvent, LynxConfig, check_cue_words, lynx_sites, train_lynx_probe
from probes.lynx_result import LynxResult, json_safe, write_lynx_result
from probes.stages import SamplingConfig, StageCache, chunk_seed, chunks, sample_rollouts
from thinklens.answers import parse_answer
from thinklens.errors import ThinklensError
from thinklens.runs import RunFolder
from thinklens.tasks import TaskConfig, check_style, generate_problems, render_prompt
from thinklens.trace import Trace

SPLITS: tuple[str, ...] = ("train", "calibration", "test")
#: The zoo's reflection cues that precede more thinking (``so``/``therefore`` follow ``</think>``).
ZOO_CUES: tuple[str, ...] = ("hmm", "wait")
VALIDITY_DELTAS: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3)


@dataclass(frozen=True)
class LynxJobConfig:
    """Settings of ``thinklens run lynx``; defaults suit the zoo (tiny-think) on a CPU."""

    model: str = "tiny-think"
    """Zoo name, local model folder or hub id (recorded; the CLI loads it)."""
    style: str = "think"
    """Prompt style of thinklens.tasks (think: the model reasons with hmm / wait cues)."""
    n_train: int = 200
    """Problems (one rollout each) whose events train the probe."""
    n_calibration: int = 200
    """Problems whose events calibrate the conformal thresholds (disjoint from training)."""
    n_test: int = 200
    """Problems whose events evaluate exits and measure validity (the third split)."""
    min_steps: int = 1
    """Fewest arithmetic steps per problem."""
    max_steps: int = 4
    """Most arithmetic steps per problem."""
    seed: int = 0
    """Seed of the problems and of the sampling (each chunk derives its own)."""
    temperature: float = 0.6
    """Sampling temperature of the rollouts (LYNX reference: 0.6)."""
    top_p: float = 0.95
    """Nucleus mass of the rollouts (LYNX reference: 0.95)."""
    max_new_tokens: int | None = None
    """Rollout length cap; None: 13 * max_steps + 12 (enough for the longest zoo think trace)."""
    cue_words: tuple[str, ...] = ZOO_CUES
    """Cue words marking candidate exits, matched on word boundaries (reference: hmm,wait,alternatively)."""
    max_events_train: int = 200
    """Cap on events per rollout in the training split."""
    max_events_calibration: int = 100
    """Cap on events per rollout in the calibration split."""
    max_events_test: int | None = None
    """Cap on events per rollout in the test split (None: all)."""
    fallback_fraction: float = 0.7
    """A rollout without cues gets one event at this fraction of its length."""
    exit_string: str = "</think> ####"
    """Appended to the text before a cue to force an answer (reference: '</think> Final Answer: \\boxed{')."""
    max_answer_tokens: int = 8
    """Greedy tokens decoded after the exit string."""
    layers: tuple[int, ...] | None = None
    """HF hidden-state indices concatenated as features; None: the LYNX table for the model's depth."""
    hidden_layer_sizes: tuple[int, ...] = (256, 64)
    """Hidden widths of the probe MLP (reference: 256,64)."""
    val_fraction: float = 0.2
    """Stratified share of training events held out to report probe accuracy / AUROC."""
    probe_seed: int = 42
    """Seed of the probe's validation split and initialisation (reference: 42)."""
    deltas: tuple[float, ...] = VALIDITY_DELTAS
    """Miscoverage levels of the sweep and of the validity measurement, each in (0, 1)."""
    fractions: tuple[float, ...] = (0.25, 0.5, 0.75)
    """Fixed-fraction baselines: exit at the first event past this share of the rollout."""
    threshold: float = 0.5
    """Uncalibrated baseline: exit at the first event with probe p above this."""
    skip_vacuous: bool = False
    """Drop deltas too small for the calibration class sizes instead of stopping with an error."""
    probe: str | None = None
    """Folder of a saved LYNX probe to use instead of training one (must match the sites)."""
    batch_size: int = 32
    """Rollouts per cached chunk (generation and feature capture)."""
    label_batch_size: int = 64
    """Forced exits decoded together."""

    def __post_init__(self) -> None:
        check_style(self.style)
        object.__setattr__(self, "cue_words", check_cue_words(self.cue_words))  # lower-cased, de-duplicated
        for name in ("n_train", "n_calibration", "n_test", "batch_size", "label_batch_size"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ThinklensError.of(name, getattr(self, name), "an integer >= 1", "use the default")
        TaskConfig(min_steps=self.min_steps, max_steps=self.max_steps)  # validates the step range
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise ThinklensError.of("max_new_tokens", self.max_new_tokens, "None or an integer >= 1", "use None")
        if not self.deltas:
            raise ThinklensError.of("deltas", self.deltas, "at least one level in (0, 1)", f"use {VALIDITY_DELTAS}")
        need = max(min_calibration_events(d) for d in self.deltas)  # also rejects deltas outside (0, 1)
        most = self.n_calibration * self.max_events_calibration
        if most < need and not self.skip_vacuous:
            raise ThinklensError.of(
                "calibration size", f"at most {most} calibration events ({self.n_calibration} problems x "
                f"{self.max_events_calibration} events)", f"at least {need} events of each class for "
                f"delta={min(self.deltas)}", "draw more calibration problems (--n-calibration; a rollout gives a few "
                "events), raise the smallest delta, or pass --skip-vacuous")
        if any(not 0.0 <= f <= 1.0 for f in self.fractions):
            raise ThinklensError.of("fractions", self.fractions, "fractions in [0, 1]", "use 0.25,0.5,0.75")
        if not 0.0 < self.threshold < 1.0:
            raise ThinklensError.of("threshold", self.threshold, "a probability in (0, 1)", "use 0.5")
        if not self.hidden_layer_sizes or min(self.hidden_layer_sizes) < 1:
            raise ThinklensError.of("hidden_layer_sizes", self.hidden_layer_sizes, "positive widths", "use 256,64")
        self.lynx()  # validates the LYNX fields (caps, fractions, layers)

    def lynx(self) -> LynxConfig:
        """The model-free LYNX settings of this job."""
        return LynxConfig(
            cue_words=self.cue_words, max_events_train=self.max_events_train,
            max_events_calibration=self.max_events_calibration, max_events_test=self.max_events_test,
            fallback_fraction=self.fallback_fraction, exit_string=self.exit_string,
            max_answer_tokens=self.max_answer_tokens, deltas=self.deltas, layers=self.layers,
            val_fraction=self.val_fraction, seed=self.probe_seed,
        )

    @property
    def new_tokens(self) -> int:
        """The rollout length cap actually used."""
        return self.max_new_tokens or 13 * self.max_steps + 12

    def n_problems(self, split: str) -> int:
        """Problems of ``split``."""
        return {"train": self.n_train, "calibration": self.n_calibration, "test": self.n_test}[split]


def check_cue_vocabulary(tokenizer, cue_words: tuple[str, ...]) -> None:
    """Refuse cue words the model cannot emit: words whose every casing tokenizes to the unknown token
    (matching is case-insensitive, so "tom" is fine when the vocabulary has "Tom").

    Example:
        >>> from thinklens.zoo.tokenizer import build_zoo_tokenizer
        >>> check_cue_vocabulary(build_zoo_tokenizer(), ("hmm", "wait"))
        >>> check_cue_vocabulary(build_zoo_tokenizer(), ("hmm", "alternatively"))
        Traceback (most recent call last):
        ...
        thinklens.errors.ThinklensError: bad cue word: received 'alternatively'; expected a word in the model's ...
    """
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None:
        return
    for word in cue_words:
        variants = {word, word.capitalize(), word.title(), word.upper()}
        if all(unk in tokenizer(v, add_special_tokens=False)["input_ids"] for v in variants):
            raise ThinklensError.of("cue word", word, f"a word in the model's vocabulary (it tokenizes to "
                                    f"{tokenizer.unk_token!r})", f"drop it from --cue-words (the zoo's cues are "
                                    f"{', '.join(ZOO_CUES)})")


def split_problems(config: LynxJobConfig, split: str) -> list:
    """The problems of one split: independent seeded streams, one per split."""
    rng = np.random.default_rng([config.seed, SPLITS.index(split)])
    return generate_problems(config.n_problems(split), seed=rng,
                             config=TaskConfig(min_steps=config.min_steps, max_steps=config.max_steps))


@dataclass
class SplitData:
    """Everything the job computed for one split."""

    traces: list[Trace]
    """The rollouts."""
    gold: list[int]
    """The true answers, one per rollout."""
    events: list[list[CueEvent]]
    """Cue events per rollout (capped as the split says)."""
    X: np.ndarray | None = None
    """Features per event, [event, site * d_model]."""
    forced: ForcedExits | None = None
    """Forced-exit outcomes per event."""

    @property
    def n_events(self) -> int:
        """Events of the split."""
        return sum(len(e) for e in self.events)

    @property
    def n_cues(self) -> int:
        """Real cue events (not fallbacks)."""
        return sum(not ev.is_fallback for evs in self.events for ev in evs)


def _events_stage(model, data: SplitData, sites, config: LynxJobConfig, cache: StageCache, split: str,
                  progress: bool) -> tuple[np.ndarray, ForcedExits]:
    """Features and forced-exit labels of a split, one pass per rollout (cached chunk by chunk)."""
    from tqdm.auto import tqdm

    xs, label, answer, n_tok, text = [], [], [], [], []
    for k, rows in enumerate(tqdm(chunks(len(data.traces), config.batch_size), desc=f"features+labels {split}",
                                  disable=not progress)):
        f_item, l_item = f"features.{split}.{k:04d}", f"labels.{split}.{k:04d}"
        if not (cache.done(f_item) and cache.done(l_item)):
            X, f = event_features_and_labels(
                model, [data.traces[i] for i in rows], [data.events[i] for i in rows], [data.gold[i] for i in rows],
                sites, exit_string=config.exit_string, max_answer_tokens=config.max_answer_tokens,
                batch_size=config.label_batch_size)
            cache.arrays(f_item, lambda X=X: {"X": X.astype(np.float32)})
            cache.json(l_item, lambda f=f: {"label": f.label, "answer": f.answer, "answer_tokens": f.answer_tokens,
                                             "text": f.text})
        xs.append(cache.arrays(f_item, _missing)["X"])
        doc = cache.json(l_item, _missing)
        label += doc["label"]
        answer += doc["answer"]
        n_tok += doc["answer_tokens"]
        text += doc["text"]
    forced = ForcedExits(label=np.asarray(label, dtype=np.int64), answer=answer,
                         answer_tokens=np.asarray(n_tok, dtype=np.int64), text=text)
    return np.concatenate(xs, axis=0), forced


def _missing():  # pragma: no cover - both items were just written
    raise RuntimeError("stage item vanished from the run folder while the job was running")


def collect_split(model, config: LynxJobConfig, split: str, cache: StageCache, *, progress: bool = False) -> SplitData:
    """Rollouts and cue events of one split (cached)."""
    problems = split_problems(config, split)
    prompts = [render_prompt(p, config.style) for p in problems]
    sampling = SamplingConfig(max_new_tokens=config.new_tokens, temperature=config.temperature, top_p=config.top_p)
    traces = sample_rollouts(model, prompts, sampling, cache, name=f"rollouts.{split}",
                             seed=chunk_seed(config.seed, SPLITS.index(split)), batch_size=config.batch_size,
                             progress=progress)
    events = rollout_events(traces, model.tokenizer, config.lynx(), split)
    return SplitData(traces=traces, gold=[p.answer for p in problems], events=events)


def _check_cues(config: LynxJobConfig, data: dict[str, SplitData]) -> None:
    n_cues = sum(d.n_cues for d in data.values())
    if n_cues == 0:
        sample = data["train"].traces[0].text[:80] if data["train"].traces else ""
        n = sum(len(d.traces) for d in data.values())
        raise ThinklensError.of(
            "cue events", f"no {'/'.join(config.cue_words)} in {n} rollouts (e.g. {sample!r})",
            "rollouts containing the cue words", "use the think prompt style, a reasoning model, or cue words that "
            "the model writes (--cue-words)")


def _train_or_load_probe(config: LynxJobConfig, model, run: RunFolder, cache: StageCache, sites, X: np.ndarray,
                         y: np.ndarray) -> tuple[LynxMLPProbe, dict]:
    site_names = [str(s) for s in sites]
    if config.probe is not None:
        probe = load_probe(config.probe, expect_site=site_names, expect_d_model=model.d_model)
        return probe, {"source": str(config.probe)}
    folder = run.path / "probe"
    if cache.done("probe") and (folder / "probe.json").is_file():
        return load_probe(folder, expect_site=site_names), run.read_result("probe_validation")
    probe, val = train_lynx_probe(X, y, config.lynx(), LynxMLPProbe(
        hidden_layer_sizes=tuple(config.hidden_layer_sizes), random_state=config.probe_seed))
    save_probe(probe, folder, site=site_names, model_name=config.model)
    info = {"source": "trained", "accuracy": val.accuracy, "auroc": val.auroc, "n_train": val.n_train,
            "n_val": val.n_val, "n_pos_train": val.n_pos_train, "n_iter": probe.n_iter_}
    run.write_result("probe_validation", json_safe(info))  # auroc is nan when the validation share has one class
    cache.finish("probe")
    return load_probe(folder, expect_site=site_names), info  # the saved one: identical on resume


def _usable_deltas(config: LynxJobConfig, calibrator: MondrianCalibrator) -> tuple[list[float], list[float]]:
    usable, skipped = [], []
    for d in config.deltas:
        try:
            calibrator.thresholds(d)
            usable.append(float(d))
        except ThinklensError:
            if not config.skip_vacuous:
                need = min_calibration_events(d)
                raise ThinklensError.of(
                    "calibration class size", f"{calibrator.n_pos} positive and {calibrator.n_neg} negative "
                    f"calibration events at delta={d}", f"at least {need} events of each class "
                    "(ceil((n+1)(1-delta)) <= n)", "add calibration problems (--n-calibration), raise the "
                    "smallest delta, or pass --skip-vacuous to drop it") from None
            skipped.append(float(d))
    if not usable:
        raise ThinklensError.of("deltas", config.deltas, f"at least one delta usable with {calibrator.n_pos} "
                                f"positive / {calibrator.n_neg} negative calibration events",
                                "add calibration problems or use larger deltas")
    return usable, skipped


def run_lynx(model, config: LynxJobConfig, run: RunFolder, *, progress: bool = False) -> LynxResult:
    """Run (or resume) the LYNX job in ``run``; writes results, arrays, figures and the probe.

    Args:
        model: a HookedModel (the one ``config.model`` names).
        config: the job settings.
        run: the run folder (``RunFolder.create("lynx", config, ...)``); finished stages are reused.
        progress: show progress bars.
    """
    check_cue_vocabulary(model.tokenizer, config.cue_words)
    sites = lynx_sites(model.n_layers, config.layers)
    if config.probe is not None:  # a mismatching probe fails now, not after the rollouts
        load_probe(config.probe, expect_site=[str(s) for s in sites], expect_d_model=model.d_model)
    cache = StageCache(run)
    data = {s: collect_split(model, config, s, cache, progress=progress) for s in SPLITS}
    _check_cues(config, data)
    for split, d in data.items():
        d.X, d.forced = _events_stage(model, d, sites, config, cache, split, progress)
    train, cal, test = data["train"], data["calibration"], data["test"]
    probe, validation = _train_or_load_probe(config, model, run, cache, sites, train.X, train.forced.label)
    p_cal = probe.predict_proba(cal.X)[:, 1]
    calibrator = MondrianCalibrator.fit(p_cal, cal.forced.label)
    deltas, skipped = _usable_deltas(config, calibrator)
    p_test = probe.predict_proba(test.X)[:, 1]
    table, rollouts = exit_tables(test.traces, test.events, test.gold, test.forced, p_test)
    report = evaluate_exit_policies(table, rollouts, calibrator, deltas, fractions=config.fractions,
                                    threshold=config.threshold)
    validity = validity_curve(p_test, test.forced.label, calibrator, deltas)
    base_rate = base_rate_by_position(table, rollouts)
    y_test = test.forced.label
    summary = {
        "model": config.model, "sites": [str(s) for s in sites], "skipped_deltas": skipped,
        "splits": {s: {"rollouts": len(d.traces), "events": d.n_events, "cue_events": d.n_cues,
                       "label_base_rate": float(d.forced.label.mean()) if d.n_events else None,
                       "full_accuracy": float(np.mean([_correct(t, g) for t, g in zip(d.traces, d.gold)])),
                       "mean_rollout_tokens": float(np.mean([len(t) for t in d.traces]))}
                   for s, d in data.items()},
        "probe": validation,
        "test_auroc": auroc_score(y_test, p_test) if 0 < y_test.sum() < len(y_test) else None,
        "calibration": {"n_pos": calibrator.n_pos, "n_neg": calibrator.n_neg,
                        "thresholds": {str(d): list(calibrator.thresholds(d)) for d in deltas}},
    }
    result = LynxResult.build(report=report, validity=validity, base_rate=base_rate, summary=summary,
                              thresholds={d: calibrator.thresholds(d) for d in deltas})
    write_lynx_result(run, result, events=table, rollouts=rollouts)
    run.finish({k: summary[k] for k in ("model", "test_auroc")} | {"per_delta": [
        {k: r[k] for k in ("delta", "accuracy", "saving", "rate")} for r in result.per_delta]})
    return result


def _correct(trace: Trace, gold: int) -> bool:
    return parse_answer(trace.text) == int(gold)

