"""The three problem splits of the LYNX job (train, calibration, test) and what it computes for each.

Per split: its problems, sampled rollouts, cue events, then the states at the LYNX sites and the
forced-exit labels of every event from one pass over each rollout (:mod:`thinklens.probes.forced`: batched, each
forced exit continues from the rollout's KV cache). Rollouts, features and labels are cached batch by
batch in the run folder (:class:`~thinklens.runs.stages.StageCache`), so an interrupted job re-run with the
same config resumes where it stopped and computes what a straight run does.

Where the problems come from (:func:`split_problem_sets`): as the paper reuses one MATH-trained probe
across benchmarks, each split may have its own source: ``--data`` trains, ``--calibration-data`` and
``--test-data`` calibrate and test, each defaulting to a seeded split of ``--data`` disjoint from the
others; a question in two splits is an error unless ``--allow-overlap``. With no ``--data`` the splits
are the synthetic task's seeded streams (:meth:`thinklens.data.problemsets.ProblemSet.synthetic`, one per split).

Example:
    >>> # cache = StageCache(run)
    >>> # sets = split_problem_sets(config)
    >>> # prompts = fmt.render_problems(sets["train"], model.tokenizer)
    >>> # data = collect_split(model, config, "train", prompts, sets["train"].answers, cache)
    >>> # data.X, data.forced = split_features_and_labels(model, data, sites, config, cache, "train")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from thinklens.data.problemsets import ProblemSet, check_disjoint, load_problems
from thinklens.errors import ThinklensError, opt, opt_name
from thinklens.generation.trace import Trace
from thinklens.probes.datasets import ForcedExits, rollout_events
from thinklens.probes.forced import event_features_and_labels
from thinklens.probes.lynx import CueEvent
from thinklens.probes.rollouts import cached_rollouts, rollout_batch
from thinklens.runs.jobs import Progress, Shards
from thinklens.runs.stages import StageCache, batch_ranges, batch_seed

if TYPE_CHECKING:
    from thinklens.engine.sites import Site
    from thinklens.probes.config import LynxJobConfig

SPLITS: tuple[str, ...] = ("train", "calibration", "test")
#: Name of each split's features and labels in the stage cache (``features.<name>.<k>``): the test split's events
#: are real cues only, so a run folder cached when cue-less test rollouts had a fallback event recomputes them.
STAGE_NAMES: dict[str, str] = {"train": "train", "calibration": "calibration", "test": "test_cues"}


@dataclass
class SplitData:
    """Everything the job computed for one split."""

    traces: list[Trace]
    """The rollouts."""
    gold: list[str]
    """The gold answers, one per rollout (as the data set writes them; graded by thinklens.data.answers)."""
    events: list[list[CueEvent]]
    """Cue events per rollout (capped as the split says; a cue-less rollout has one fallback event in the train and
    calibration splits, none in the test split)."""
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

    @property
    def is_cue(self) -> np.ndarray:
        """Bool [event]: a real cue (False for a fallback), events flattened rollout by rollout as X and forced."""
        return np.array([not ev.is_fallback for evs in self.events for ev in evs], dtype=bool).reshape(-1)

    @property
    def rollout(self) -> np.ndarray:
        """Int [event]: the rollout of each event, events flattened as X and forced."""
        return np.repeat(np.arange(len(self.events)), [len(evs) for evs in self.events]).astype(np.int64)

    def calibration_events(self, fallback_positives: bool = True) -> np.ndarray:
        """Bool [event]: the events that calibrate the conformal thresholds (needs ``forced``).

        Negatives (y = 0) only at real cues: their threshold carries the per-event bound, and the test events LYNX is
        scanned at are real cues, so calibration negatives must be too (exchangeable with them). A fallback event
        sits at 0.7 of a cue-less rollout, where a wrong forced exit looks unlike one at a cue: on the demo's run
        their negatives had mean p 0.054 against 0.133 at cues, lowered the threshold at delta 0.1 from 0.62 to 0.51,
        and the bound was rejected (14 of 68 test negatives in the set {1}; 8 of 68 on cue negatives alone). Fallback
        positives (with ``fallback_positives``) only move the positive class's threshold, which decides whether 1 can
        be in a set and never lets a wrong exit through: they keep small deltas calibrated where cues are rarely
        right (tiny-r1).

        Example:
            >>> from thinklens.probes.datasets import ForcedExits
            >>> d = SplitData(traces=[], gold=[], events=[[CueEvent(3, 3, "wait"), CueEvent(6, 6, "hmm")],
            ...                                           [CueEvent(7, 7, None)], [CueEvent(7, 7, None)]])
            >>> d.forced = ForcedExits(label=np.array([0, 1, 0, 1]), answer=[""] * 4,
            ...                        answer_tokens=np.ones(4, dtype=np.int64), text=[""] * 4)
            >>> d.calibration_events().tolist(), d.calibration_events(False).tolist(), d.rollout.tolist()
            ([True, True, False, True], [True, True, False, False], [0, 0, 1, 2])
        """
        if self.forced is None:
            raise ThinklensError.of("calibration events", "a split without forced-exit labels", "a labelled split",
                                    "label the split first (labelled_split)")
        cue = self.is_cue
        return cue | (bool(fallback_positives) & (np.asarray(self.forced.label) == 1))


def split_problem_sets(config: LynxJobConfig) -> dict[str, ProblemSet]:
    """The problems of each split, from its source (see the module docstring), checked disjoint.

    Splits that share a source are cut from it by one seeded split (they must fit in it); a split with a
    source of its own takes a seeded sample of at most its size. ``--data-fields`` maps the fields of
    ``--data``; the other sources' fields are found by name.
    """
    sources = {"train": config.data, "calibration": config.calibration_data or config.data,
               "test": config.test_data or config.data}
    sets: dict[str, ProblemSet] = {}
    for source in dict.fromkeys(v for v in sources.values() if v):
        users = [s for s in SPLITS if sources[s] == source]
        problems = load_problems(source, mapping=(config.data_fields or None) if source == config.data else None)
        sizes = {s: config.n_problems(s) for s in users}
        if len(users) == 1 and source != config.data:  # a source of its own: at most all of it
            sizes = {users[0]: min(sizes[users[0]], len(problems))}
        sets.update(problems.split(sizes, seed=config.seed))
    for split in SPLITS:
        if not sources[split]:
            # the synthetic task's own streams: independent seeded draws, one per split
            sets[split] = ProblemSet.synthetic(config.n_problems(split), seed=(config.seed, SPLITS.index(split)),
                                               min_steps=config.min_steps, max_steps=config.max_steps,
                                               source=f"task#{split}", id_prefix=f"task-{config.seed}-{split}")
    for i, a in enumerate(SPLITS):  # the task's own streams are independent draws, as they always were
        for b in SPLITS[i + 1:]:
            if sources[a] or sources[b]:
                check_disjoint({a: sets[a], b: sets[b]}, allow_overlap=config.allow_overlap)
    return {s: sets[s] for s in SPLITS}


def collect_split(model, config: LynxJobConfig, split: str, prompts: list[str], gold: list[str], cache: StageCache,
                  *, progress: Progress | None = None, shards: Shards | None = None) -> SplitData:
    """Rollouts and cue events of one split (rollouts cached as ``rollouts.<split>.<k>``; each process generates
    its share of the batches under a multi-process launch); ``config`` holds the settings resolved for the
    prompt format (cue words, rollout length)."""
    traces = cached_rollouts(model, prompts, cache, name=f"rollouts.{split}", batch_size=config.batch_size,
                             seed=batch_seed(config.seed, SPLITS.index(split)), max_new_tokens=config.max_new_tokens,
                             **config.decoding(), progress=progress,
                             shards=shards)
    events = rollout_events(traces, model.tokenizer, config, split)
    return SplitData(traces=traces, gold=list(gold), events=events)


def split_features_and_labels(model, data: SplitData, sites: tuple[Site, ...], config: LynxJobConfig,
                              cache: StageCache, split: str, *, progress: Progress | None = None,
                              shards: Shards | None = None) -> tuple[np.ndarray, ForcedExits]:
    """Features and forced-exit labels of a split, one pass per rollout (cached batch by batch; each process
    computes its share of the batches under a multi-process launch, then every process reads them all)."""
    progress = progress or Progress(enabled=False)
    shards = shards or Shards()
    xs, label, answer, n_tok, text = [], [], [], [], []
    batches = batch_ranges(len(data.traces), config.batch_size)
    mine = shards.shard(range(len(batches)))
    for k in progress.iter(mine, desc=f"features+labels {split}", total=len(mine)):
        label_batch(model, data, sites, config, cache, split, k)
    if shards.size > 1:
        shards.merge()
        cache.refresh()
    for k in range(len(batches)):
        f_item, l_item = f"features.{STAGE_NAMES[split]}.{k:04d}", f"labels.{STAGE_NAMES[split]}.{k:04d}"
        xs.append(cache.arrays(f_item, _vanished)["X"])
        doc = cache.json(l_item, _vanished)
        label += doc["label"]
        answer += doc["answer"]
        n_tok += doc["answer_tokens"]
        text += doc["text"]
    forced = ForcedExits(label=np.asarray(label, dtype=np.int64), answer=answer,
                         answer_tokens=np.asarray(n_tok, dtype=np.int64), text=text)
    return np.concatenate(xs, axis=0), forced


def label_batch(model, data: SplitData, sites: tuple[Site, ...], config: LynxJobConfig, cache: StageCache, split: str,
                k: int) -> list[int]:
    """Features and forced-exit labels of batch ``k`` of a split's rollouts (``config.batch_size`` rollouts; cached as
    ``features.<split>.<k>`` and ``labels.<split>.<k>``, or read back); returns the batch's labels."""
    rows = batch_ranges(len(data.traces), config.batch_size)[k]
    f_item, l_item = f"features.{STAGE_NAMES[split]}.{k:04d}", f"labels.{STAGE_NAMES[split]}.{k:04d}"
    if not (cache.done(f_item) and cache.done(l_item)):
        X, f = event_features_and_labels(
            model, [data.traces[i] for i in rows], [data.events[i] for i in rows], [data.gold[i] for i in rows],
            sites, exit_string=config.exit_string, max_answer_tokens=config.max_answer_tokens,
            batch_size=config.label_batch_size)
        cache.arrays(f_item, lambda X=X: {"X": X.astype(np.float32)})
        cache.json(l_item, lambda f=f: {"label": f.label, "answer": f.answer, "answer_tokens": f.answer_tokens,
                                         "text": f.text})
    return [int(v) for v in cache.json(l_item, _vanished)["label"]]


def events_per_rollout(config: LynxJobConfig, split: str) -> int:
    """The most events one rollout of ``split`` can add: its cap, and at most one per generated token (a cue-less
    rollout's fallback is one)."""
    cap = config.max_events(split)
    return max(1, min(cap if cap is not None else config.max_new_tokens, config.max_new_tokens))


def labelled_split(model, config: LynxJobConfig, split: str, prompts: list[str], gold: list[str], sites: tuple[Site, ...],
                   cache: StageCache, *, need: int, earlier: dict[str, SplitData] | None = None,
                   progress: Progress | None = None, shards: Shards | None = None) -> SplitData:
    """Rollouts, cue events, features and labels of a split, batch after batch, stopping as soon as its labels
    cannot reach ``need`` events of each class (the rollouts left could not add enough of the rarer one even if
    every event they can hold had its label): a model that never (or always) answers at a forced exit is refused
    after the batches that show it, not after every rollout of every split.

    The batches, their seeds and cache items are :func:`collect_split`'s and :func:`split_features_and_labels`'s,
    so the split it returns is theirs. Under a multi-process launch the processes split the whole split first
    (as those do) and the classes are checked after it. When no rollout so far (``earlier`` splits' and this one's)
    holds a cue word, the refusal says that (:func:`check_cues_found`): the labels are all fallback events.
    """
    progress = progress or Progress(enabled=False)
    shards = shards or Shards()
    batches = batch_ranges(len(prompts), config.batch_size)
    counts = np.zeros(2, dtype=np.int64)
    if shards.size > 1:
        data = collect_split(model, config, split, prompts, gold, cache, progress=progress, shards=shards)
        data.X, data.forced = split_features_and_labels(model, data, sites, config, cache, split, progress=progress,
                                                        shards=shards)
        counts += np.bincount(data.forced.label, minlength=2)[:2]
        if int(counts.min()) < need:
            check_cues_found(config, {**(earlier or {}), split: data})
        check_label_classes(split, counts, need, len(prompts), len(prompts), 0)
        return data

    traces: list[Trace] = []
    events: list[list[CueEvent]] = []
    seed = batch_seed(config.seed, SPLITS.index(split))
    most = events_per_rollout(config, split)
    for k in progress.iter(range(len(batches)), desc=f"rollouts+labels {split}", total=len(batches)):
        trs = rollout_batch(model, prompts, cache, k, name=f"rollouts.{split}", batch_size=config.batch_size, seed=seed,
                            max_new_tokens=config.max_new_tokens, **config.decoding())
        traces += trs
        events += rollout_events(trs, model.tokenizer, config, split)
        part = SplitData(traces=traces, gold=list(gold[: len(traces)]), events=events)
        counts += np.bincount(np.asarray(label_batch(model, part, sites, config, cache, split, k), dtype=np.int64),
                              minlength=2)[:2]
        left = len(prompts) - batches[k].stop
        if int(counts.min()) + left * most < need:
            check_cues_found(config, {**(earlier or {}), split: part})
        check_label_classes(split, counts, need, len(traces), len(prompts), left * most)
    data = SplitData(traces=traces, gold=list(gold), events=events)
    data.X, data.forced = split_features_and_labels(model, data, sites, config, cache, split)  # every batch cached
    return data


def check_label_classes(split: str, counts: np.ndarray, need: int, done: int, total: int, reachable: int) -> None:
    """Refuse a split whose forced-exit labels cannot reach ``need`` events of each class: ``counts`` [2] so far, after
    ``done`` of ``total`` rollouts whose rest can add at most ``reachable`` events.

    Example:
        >>> check_label_classes("train", np.array([33, 1]), 2, 8, 10, 4)  # 1 + 4 >= 2: not yet decided
        >>> check_label_classes("train", np.array([33, 1]), 2, 10, 10, 0)  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        thinklens.errors.ThinklensError: bad forced-exit labels of the train split: received
        'class counts [33, 1] after 10 of 10 rollouts'; ...
    """
    if int(counts.min()) + reachable >= need:
        return
    rare = "correct" if counts[1] < counts[0] else "wrong"
    left = f" (the {total - done} left could add at most {reachable} events)" if done < total else ""
    raise ThinklensError.of(
        f"forced-exit labels of the {split} split", f"class counts {counts.tolist()} after {done} of {total} rollouts{left}",
        f"at least {need} events of each class (a wrong and a correct forced answer) to "
        + ("train the probe" if split == "train" else f"calibrate the {split} split"),
        f"the model gives too few {rare} answers at a forced exit: use a model that solves some of these problems "
        f"(and misses others), easier or harder problems, or more of them ({opt_name('n_' + split)})")


def _vanished():  # pragma: no cover - both items were just written
    raise RuntimeError("stage item vanished from the run folder while the job was running")


def check_cues_found(config: LynxJobConfig, data: dict[str, SplitData]) -> None:
    """Stop with a clear error when no rollout of any split contains a cue word."""
    if sum(d.n_cues for d in data.values()) == 0:
        first = next(iter(data.values()))
        sample = first.traces[0].text[:80] if first.traces else ""
        n = sum(len(d.traces) for d in data.values())
        raise ThinklensError.of(
            "cue events", f"no {'/'.join(config.cue_words)} in {n} rollouts (e.g. {sample!r})",
            "rollouts containing the cue words", f"use a reasoning model in its own format ({opt('prompt_format', 'auto')}, or "
            f"think for the zoo), or cue words that the model writes ({opt_name('cue_words')})")
