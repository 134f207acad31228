"""Rollouts of the probe jobs, generated one cached batch at a time (resumable, reproducible); their prompts
come from :meth:`thinklens.data.formats.PromptFormat.render_problems` and their length cap from
:func:`thinklens.generation.budgets.new_token_budget` (default :data:`thinklens.generation.budgets.ROLLOUT_TOKENS`).

Batch ``k`` of a stage named ``name`` is the stage item ``<name>.<k:04d>`` of a
:class:`~thinklens.runs.stages.StageCache`, and samples with ``batch_seed(seed, k)``: a resumed job gets
exactly the traces of an uninterrupted one, whichever batches were already cached. Only the
token-level part of each trace is kept (``thinklens.generation.trace.trace_to_json``).

Example:
    >>> # traces = cached_rollouts(model, prompts, StageCache(run), name="rollouts.train", seed=7,
    >>> #                          batch_size=32, max_new_tokens=64, do_sample=True, temperature=0.6, top_p=0.95)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from thinklens.generation.trace import Trace, trace_from_json, trace_to_json
from thinklens.runs.jobs import Progress, Shards
from thinklens.runs.stages import StageCache, batch_ranges, batch_seed


def cached_rollouts(model, prompts: Sequence[str], cache: StageCache, *, name: str, batch_size: int, seed: int = 0,
                    max_new_tokens: int, do_sample: bool = False, temperature: float = 1.0, top_p: float = 1.0,
                    progress: Progress | None = None, shards: Shards | None = None) -> list[Trace]:
    """Traces of ``prompts`` (greedy, or sampled with ``temperature`` / ``top_p``), cached batch by batch.

    Args:
        model: a HookedModel.
        name: the stage's name; batch ``k`` is cached as ``<name>.<k:04d>``.
        seed: the stage's seed; batch ``k`` samples with ``batch_seed(seed, k)``.
        progress: a bar over the batches (none by default).
        shards: under a multi-process launch, each process generates its share of the batches, then every
            process reads them all.
    """
    progress = progress or Progress(enabled=False)
    shards = shards or Shards()
    batches = batch_ranges(len(prompts), batch_size)
    mine = shards.shard(range(len(batches)))
    for k in progress.iter(mine, desc=name, total=len(mine)):
        rollout_batch(model, prompts, cache, k, name=name, batch_size=batch_size, seed=seed, max_new_tokens=max_new_tokens,
                      do_sample=do_sample, temperature=temperature, top_p=top_p)
    if shards.size > 1:
        shards.merge()
        cache.refresh()
    return [trace_from_json(d) for k in range(len(batches)) for d in cache.json(f"{name}.{k:04d}", _not_cached)]


def rollout_batch(model, prompts: Sequence[str], cache: StageCache, k: int, *, name: str, batch_size: int, seed: int = 0,
                  max_new_tokens: int, do_sample: bool = False, temperature: float = 1.0,
                  top_p: float = 1.0) -> list[Trace]:
    """The traces of batch ``k`` of :func:`cached_rollouts` (computed and cached as ``<name>.<k:04d>``, or read back):
    for a caller that looks at each batch before drawing the next."""
    rows = batch_ranges(len(prompts), batch_size)[k]

    def compute() -> list[dict[str, Any]]:
        traces = model.generate([prompts[i] for i in rows], max_new_tokens=max_new_tokens, do_sample=do_sample,
                                seed=batch_seed(seed, k), temperature=temperature, top_p=top_p, top_k_stats=1)
        return [trace_to_json(t) for t in traces]
    return [trace_from_json(d) for d in cache.json(f"{name}.{k:04d}", compute)]


def _not_cached():  # pragma: no cover - every batch was cached above, by this process or another
    raise RuntimeError("a rollout batch is missing from the run folder's cache")
