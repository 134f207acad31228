"""Forced-exit labels with prefix sharing: each rollout is read once, every event continues from it.

:func:`thinklens.probes.datasets.forced_exit_labels` re-reads ``prompt + rollout[:cue]`` for every event. Events
of one rollout share that prefix, so here each rollout (up to its last event) goes through the model
once; for a batch of events, the key/value cache of each event's prefix is sliced out of its
rollout's cache, left padded, and decoding continues with the exit string and the greedy answer.
The work per event drops from a forward pass over the whole prefix to a few tokens, which matters
when rollouts are long and have many cues (LYNX caps them at 200 per rollout).

The same pass also yields the event features (the states at the cue tokens), so the LYNX job reads
each rollout once for both. Same outputs as :func:`thinklens.probes.datasets.event_features` and
:func:`thinklens.probes.datasets.forced_exit_labels` (checked in the tests against them and against a naive
loop); models with sliding-window caches fall back to those two.

Example:
    >>> # X, forced = event_features_and_labels(model, traces, events, gold, lynx_sites(model.n_layers),
    >>> #                                       exit_string="</think> ####")
    >>> # X.shape, forced.label
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from transformers import DynamicCache

from thinklens.data.answers import extract_answer, is_correct
from thinklens.engine.hooks import site_hooks
from thinklens.engine.sites import Site
from thinklens.generation.decode_loop import Greedy, decode
from thinklens.generation.kv_batch import Decoder, eos_ids, left_pad
from thinklens.generation.trace import Trace
from thinklens.probes.datasets import (
    ForcedExits,
    check_context_length,
    check_forced_exit_inputs,
    event_features,
    forced_exit_labels,
)
from thinklens.probes.lynx import CueEvent


def _event_cache(model, layers, rows_b: torch.Tensor, offsets: torch.Tensor, lengths: torch.Tensor):
    """A DynamicCache for a batch of event prefixes sliced from rollout caches.

    Args:
        layers: per layer ``(keys, values)`` of the rollout batch, each [rollout, head, pos, d_head].
        rows_b: [event] rollout row of each event; offsets: [event] column where that rollout's real
            tokens start; lengths: [event] prefix length L (prompt + tokens before the cue).
    Returns ``(cache, mask)`` with ``mask`` [event, Lmax], left padded.
    """
    width = int(lengths.max())
    col = torch.arange(width, device=lengths.device)[None]  # [1, Lmax]
    pad = (width - lengths)[:, None]  # [event, 1]
    src = (offsets[:, None] + col - pad).clamp(min=0)  # [event, Lmax]; padded slots read a real column, masked
    mask = (col >= pad).long()  # [event, Lmax]
    flat_index = (rows_b[:, None] * layers[0][0].shape[2] + src).reshape(-1)  # [event * Lmax] into rollout*pos
    data = []
    for keys, values in layers:
        pair = []
        for t in (keys, values):  # [rollout, head, pos, d_head] -> rows of (rollout, pos) -> [event, head, Lmax, d_head]
            rows = t.transpose(1, 2).reshape(-1, t.shape[1], t.shape[3])
            # no .contiguous(): the cache copies the tensors when it stores them
            pair.append(rows.index_select(0, flat_index).view(len(lengths), width, t.shape[1], t.shape[3])
                        .transpose(1, 2))
        data.append(tuple(pair))
    return DynamicCache(ddp_cache_data=data, config=model.config), mask


def _decode_events(model, dec: Decoder, exit_ids: list[int], n: int, max_answer_tokens: int, eos: set[int]) -> list[list[int]]:
    """Feed the exit string to every row of ``dec`` (already holding the prefixes), then decode greedily;
    each row's answer ids up to and including EOS."""
    logits = dec.extend(torch.tensor(exit_ids, dtype=torch.long, device=model.device)[None].expand(n, -1))
    out = decode(dec, Greedy(), max_new_tokens=max_answer_tokens, eos=eos, logits=logits)
    return [out.row(r) for r in range(n)]


def _groups(need: dict[int, int], batch_size: int, max_batch_tokens: int) -> list[list[int]]:
    """Rollouts sorted by length, cut into batches of at most batch_size rows and max_batch_tokens tokens."""
    groups: list[list[int]] = []
    for i in sorted(need, key=need.get):  # ascending: the newest member is the longest of its group
        if groups and len(groups[-1]) < batch_size and (len(groups[-1]) + 1) * need[i] <= max_batch_tokens:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


@torch.no_grad()
def event_features_and_labels(model, traces: Sequence[Trace], events: Sequence[Sequence[CueEvent]],
                              gold: Sequence[str | int], sites: Sequence[Site | str] = (), *, exit_string: str,
                              max_answer_tokens: int = 64, batch_size: int = 16,
                              max_batch_tokens: int = 1024) -> tuple[np.ndarray | None, ForcedExits]:
    """Event features and forced-exit labels from ONE pass over each rollout.

    The pass over ``prompt + rollout`` (up to the last event) records the states at ``sites`` (what
    :func:`thinklens.probes.datasets.event_features` returns) and the key/value cache from which every event's
    forced exit continues (what :func:`thinklens.probes.datasets.forced_exit_labels` returns).

    Args:
        sites: sites whose states at the event tokens are concatenated; empty: labels only (features None).
        batch_size: most rollouts read together, and most events decoded together.
        max_batch_tokens: most (padded) tokens in one rollout batch; rollouts are sorted by length, so
            a batch of short rollouts holds more of them.

    Returns ``(X [event, site * d_model] float32 or None, ForcedExits)``, events flattened trace by trace.
    """
    exit_ids = check_forced_exit_inputs(model.tokenizer, traces, events, gold, exit_string, max_answer_tokens)
    site_list = [model.resolve_site(s) for s in sites]
    flat = [(i, ev) for i, evs in enumerate(events) for ev in evs]
    first = np.cumsum([0] + [len(evs) for evs in events])  # flat index of each rollout's first event
    X = np.zeros((len(flat), len(site_list) * model.d_model), dtype=np.float32) if site_list else None
    eos, pad_id = eos_ids(model), model.tokenizer.pad_token_id
    answers: list[str | None] = [None] * len(flat)
    n_tokens = [0] * len(flat)
    texts = [""] * len(flat)
    # features need the state AT the cue's last token; labels only the prefix before the cue
    last = (lambda ev: ev.token_index + 1) if site_list else (lambda ev: ev.start_index)
    need = {i: len(traces[i].prompt_ids) + max(last(ev) for ev in evs) for i, evs in enumerate(events) if evs}
    for group in _groups(need, batch_size, max_batch_tokens):
        rows = [traces[i].prompt_ids + traces[i].token_ids[:need[i] - len(traces[i].prompt_ids)] for i in group]
        check_context_length(model, max(len(r) for r in rows), "rollout length")
        enc = left_pad(rows, pad_id, device=model.device)
        acts: dict[Site, torch.Tensor] = {}

        def saver(site: Site):
            def fn(act: torch.Tensor, ctx) -> None:
                acts[site] = act.detach()  # [rollout, pos, d]
            return fn

        dec0 = Decoder(model, enc)
        with site_hooks(model, [(s, saver(s)) for s in site_list]):
            dec0.prefill()
        if any(getattr(layer, "is_sliding", False) for layer in dec0.cache.layers):
            forced = forced_exit_labels(model, traces, events, gold, exit_string=exit_string,
                                        max_answer_tokens=max_answer_tokens, batch_size=batch_size)
            return (event_features(model, traces, events, site_list) if site_list else None), forced
        layers = [(layer.keys, layer.values) for layer in dec0.cache.layers]  # [rollout, head, pos, d_head]
        width = enc["input_ids"].shape[1]
        items = []  # (flat index, row in group, prefix length, column where the row starts)
        cue_cols = []  # column of each event's cue token (its features)
        for b, i in enumerate(group):
            offset, plen = width - len(rows[b]), len(traces[i].prompt_ids)
            for j, ev in enumerate(events[i]):
                items.append((int(first[i]) + j, b, plen + ev.start_index, offset))
                cue_cols.append(offset + plen + ev.token_index)
        if X is not None:
            at_b = torch.tensor([t[1] for t in items], device=model.device)
            at_col = torch.tensor(cue_cols, device=model.device)
            feats = torch.cat([acts[s][at_b, at_col] for s in site_list], dim=-1)  # [event, site * d]
            X[[t[0] for t in items]] = feats.float().cpu().numpy()
        items.sort(key=lambda t: t[2])  # similar lengths together: little padding
        for lo in range(0, len(items), batch_size):
            part = items[lo:lo + batch_size]
            check_context_length(model, max(t[2] for t in part) + len(exit_ids) + max_answer_tokens, "forced-exit length")
            rows_b, lengths, offsets = (torch.tensor([t[j] for t in part], device=model.device) for j in (1, 2, 3))
            cache, mask = _event_cache(model, layers, rows_b, offsets, lengths)
            # continue after the prefix: its cache is in place, its last logical position is L - 1
            dec = Decoder.from_cache(model, cache, mask, lengths - 1)
            generated = _decode_events(model, dec, exit_ids, len(part), max_answer_tokens, eos)
            for (k, *_), row in zip(part, generated):
                text = model.tokenizer.decode(exit_ids + row, skip_special_tokens=True)
                answers[k], n_tokens[k], texts[k] = extract_answer(text), len(row), text
    label = np.array([int(is_correct(t, gold[i])) for (i, _), t in zip(flat, texts)], dtype=np.int64)
    return X, ForcedExits(label=label, answer=answers, answer_tokens=np.array(n_tokens, dtype=np.int64), text=texts)


def forced_exit_labels_shared(model, traces: Sequence[Trace], events: Sequence[Sequence[CueEvent]],
                              gold: Sequence[str | int], *, exit_string: str, max_answer_tokens: int = 64,
                              batch_size: int = 16, max_batch_tokens: int = 1024) -> ForcedExits:
    """:func:`thinklens.probes.datasets.forced_exit_labels`, reading each rollout once (see the module docstring)."""
    return event_features_and_labels(model, traces, events, gold, (), exit_string=exit_string,
                                     max_answer_tokens=max_answer_tokens, batch_size=batch_size,
                                     max_batch_tokens=max_batch_tokens)[1]
