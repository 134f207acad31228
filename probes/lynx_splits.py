"""The three problem splits of the LYNX job (train, calibration, test) and what it computes for each.

Per split: its own seeded problems, sampled rollouts, cue events, then the states at the LYNX sites
and the forced-exit labels of every event from one pass over each rollout (:mod:`probes.forced`:
batched, each forced exit continues from the rollout's KV cache). Rollouts, features and labels are
cached batch by batch in the run folder (:class:`~thinklens.stages.StageCache`), so an interrupted
job re-run with the same config resumes where it stopped and computes what a straight run does.

Example:
    >>> # cache = StageCache(run)
    >>> # data = collect_split(model, config, "train", cache)
    >>> # data.X, data.forced = split_features_and_labels(model, data, sites, config, cache, "train")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from probes.datasets import ForcedExits, rollout_events
from probes.forced import event_features_and_labels
from probes.lynx import CueEvent
from probes.rollouts import cached_rollouts
from thinklens.errors import ThinklensError
from thinklens.jobs import Progress
from thinklens.stages import StageCache, batch_ranges, batch_seed
from thinklens.tasks import TaskConfig, generate_problems, render_prompt
from thinklens.trace import Trace

if TYPE_CHECKING:
    from probes.jobs.lynx import LynxJobConfig
    from thinklens.sites import Site

SPLITS: tuple[str, ...] = ("train", "calibration", "test")


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


def split_problems(config: LynxJobConfig, split: str) -> list:
    """The problems of one split: independent seeded streams, one per split."""
    rng = np.random.default_rng([config.seed, SPLITS.index(split)])
    return generate_problems(config.n_problems(split), seed=rng,
                             config=TaskConfig(min_steps=config.min_steps, max_steps=config.max_steps))


def collect_split(model, config: LynxJobConfig, split: str, cache: StageCache, *,
                  progress: Progress | None = None) -> SplitData:
    """Rollouts and cue events of one split (rollouts cached as ``rollouts.<split>.<k>``)."""
    problems = split_problems(config, split)
    prompts = [render_prompt(p, config.style) for p in problems]
    traces = cached_rollouts(model, prompts, cache, name=f"rollouts.{split}", batch_size=config.batch_size,
                             seed=batch_seed(config.seed, SPLITS.index(split)), max_new_tokens=config.new_tokens,
                             do_sample=True, temperature=config.temperature, top_p=config.top_p, progress=progress)
    events = rollout_events(traces, model.tokenizer, config, split)
    return SplitData(traces=traces, gold=[p.answer for p in problems], events=events)


def split_features_and_labels(model, data: SplitData, sites: tuple[Site, ...], config: LynxJobConfig,
                              cache: StageCache, split: str, *,
                              progress: Progress | None = None) -> tuple[np.ndarray, ForcedExits]:
    """Features and forced-exit labels of a split, one pass per rollout (cached batch by batch)."""
    progress = progress or Progress(enabled=False)
    xs, label, answer, n_tok, text = [], [], [], [], []
    batches = batch_ranges(len(data.traces), config.batch_size)
    for k, rows in enumerate(progress.iter(batches, desc=f"features+labels {split}", total=len(batches))):
        f_item, l_item = f"features.{split}.{k:04d}", f"labels.{split}.{k:04d}"
        if not (cache.done(f_item) and cache.done(l_item)):
            X, f = event_features_and_labels(
                model, [data.traces[i] for i in rows], [data.events[i] for i in rows], [data.gold[i] for i in rows],
                sites, exit_string=config.exit_string, max_answer_tokens=config.max_answer_tokens,
                batch_size=config.label_batch_size)
            cache.arrays(f_item, lambda X=X: {"X": X.astype(np.float32)})
            cache.json(l_item, lambda f=f: {"label": f.label, "answer": f.answer, "answer_tokens": f.answer_tokens,
                                             "text": f.text})
        xs.append(cache.arrays(f_item, _vanished)["X"])
        doc = cache.json(l_item, _vanished)
        label += doc["label"]
        answer += doc["answer"]
        n_tok += doc["answer_tokens"]
        text += doc["text"]
    forced = ForcedExits(label=np.asarray(label, dtype=np.int64), answer=answer,
                         answer_tokens=np.asarray(n_tok, dtype=np.int64), text=text)
    return np.concatenate(xs, axis=0), forced


def _vanished():  # pragma: no cover - both items were just written
    raise RuntimeError("stage item vanished from the run folder while the job was running")


def check_cues_found(config: LynxJobConfig, data: dict[str, SplitData]) -> None:
    """Stop with a clear error when no rollout of any split contains a cue word."""
    if sum(d.n_cues for d in data.values()) == 0:
        sample = data["train"].traces[0].text[:80] if data["train"].traces else ""
        n = sum(len(d.traces) for d in data.values())
        raise ThinklensError.of(
            "cue events", f"no {'/'.join(config.cue_words)} in {n} rollouts (e.g. {sample!r})",
            "rollouts containing the cue words", "use the think prompt style, a reasoning model, or cue words that "
            "the model writes (--cue-words)")
