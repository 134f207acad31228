"""Probe datasets from a model: states at sites and cue events, forced-exit labels, layer sweeps.

Positions follow one rule: the state AT generated token t is the state after reading token t,
i.e. the one that produces token t + 1 (LYNX's feature at a cue event). In a :class:`Trace`,
``hidden[site][t]`` is the state that PRODUCED token t, so the state at token t is row t + 1; the
state at the last generated token is not in a trace, which is why :func:`event_features` runs one
forward pass over prompt + rollout (as the reference does) instead of reading the trace.

Example:
    >>> # traces = model.generate(prompts, max_new_tokens=512, do_sample=True, seed=0)
    >>> # events = rollout_events(traces, model.tokenizer, LynxConfig(), "train")
    >>> # X = event_features(model, traces, events, lynx_sites(model.n_layers))
    >>> # forced = forced_exit_labels(model, traces, events, gold, exit_string=" </think> ####")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import GroupKFold, KFold, StratifiedGroupKFold, StratifiedKFold, cross_val_score
from sklearn.utils.multiclass import type_of_target

from thinklens.data.answers import extract_answer, is_correct
from thinklens.data.formats import token_separator
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.generation.decode_loop import Greedy, decode
from thinklens.generation.kv_batch import Decoder, eos_ids, left_pad
from thinklens.generation.trace import Trace
from thinklens.probes.estimators import LinearProbe, RidgeProbe
from thinklens.probes.exits import EventTable, RolloutTable
from thinklens.probes.lynx import CueEvent, LynxConfig, find_cue_events
from thinklens.tasks import TaskConfig, generate_problems, render_prompt


def rollout_events(traces: Sequence[Trace], tokenizer, config: LynxConfig, split: str) -> list[list[CueEvent]]:
    """Cue events of every trace, capped per rollout as ``split`` ("train", "calibration", "test") says; a
    cue-less rollout gets a fallback event in "train" and "calibration" only (:meth:`LynxConfig.fallback`)."""
    cap = config.max_events(split)
    return [find_cue_events(tr.tokens, cue_words=config.resolved().cue_words, max_events=cap,
                            fallback_fraction=config.fallback(split),
                            separator=token_separator(tokenizer, tr.token_ids))
            for tr in traces]


def sampled_think_rollouts(model, n: int, *, max_steps: int, max_new_tokens: int, seed: int = 0,
                           temperature: float = 0.8, top_p: float = 0.95, cue_words: tuple[str, ...] = ("hmm", "wait"),
                           every: int | None = None) -> tuple[list[Trace], list[list[CueEvent]], list[int]]:
    """``n`` sampled think rollouts of zoo problems (1..``max_steps`` steps), their test-split cue events and gold
    answers: the inputs of a forced-exit labelling. With ``every``, events sit at fixed strides instead (one-token
    cues every ``every`` tokens: a random model writes few cue words)."""
    problems = generate_problems(n, seed=seed, config=TaskConfig(min_steps=1, max_steps=max_steps))
    traces = model.generate([render_prompt(p, "think") for p in problems], max_new_tokens=max_new_tokens,
                            do_sample=True, seed=seed, temperature=temperature, top_p=top_p)
    if every is None:
        events = rollout_events(traces, model.tokenizer, LynxConfig(cue_words=cue_words), "test")
    else:
        events = [[CueEvent(t, t - (t % 2), "x") for t in range(1, len(tr) - 1, every)] for tr in traces]
    return traces, events, [p.answer for p in problems]


def check_context_length(model, length: int, what: str) -> None:
    """Refuse a sequence of ``length`` tokens longer than the model's context (``what`` names it)."""
    ctx = model.max_context
    if ctx is not None and length > ctx:
        raise ThinklensError.of(what, f"{length} tokens", f"at most {ctx} tokens (the model's context)",
                                "generate shorter rollouts or lower max_answer_tokens")


def check_forced_exit_inputs(tokenizer: Any, traces: Sequence[Trace], events: Sequence[Sequence[CueEvent]],
                             gold: Sequence[Any], exit_string: str, max_answer_tokens: int) -> list[int]:
    """Check the inputs of a forced-exit labelling (events, one gold answer per trace, a positive answer budget,
    a non-empty exit string) and return the exit string's token ids."""
    check_events(traces, events)
    if len(gold) != len(traces):
        raise ThinklensError.of("gold answers", f"{len(gold)} for {len(traces)} traces", "one answer per trace",
                                "pass the problems' answers in trace order")
    if max_answer_tokens < 1:
        raise ThinklensError.of("max_answer_tokens", max_answer_tokens, "an integer >= 1", "use 64")
    exit_ids = tokenizer(exit_string, add_special_tokens=False)["input_ids"]
    if not exit_ids:
        raise ThinklensError.of("exit string", exit_string, "a non-empty string that closes the thinking",
                                "use e.g. '</think> ####'")
    return exit_ids


def check_events(traces: Sequence[Trace], events: Sequence[Sequence[CueEvent]]) -> None:
    """Refuse events that do not belong to ``traces``: one event list per trace, positions inside it."""
    if len(events) != len(traces):
        raise ThinklensError.of("events", f"{len(events)} event lists for {len(traces)} traces",
                                "one event list per trace", "pass rollout_events(traces, ...)")
    for tr, evs in zip(traces, events):
        for ev in evs:
            if not 0 <= ev.start_index <= ev.token_index < len(tr):
                raise ThinklensError.of("event position", ev.token_index, f"a token index in [0, {len(tr)})",
                                        "compute events from the same traces")


@torch.no_grad()
def event_features(model, traces: Sequence[Trace], events: Sequence[Sequence[CueEvent]],
                   sites: Sequence[Site | str], *, batch_size: int = 4) -> np.ndarray:
    """States at every event token, sites concatenated in order: float32 ``[event, site * d_model]``.

    Events are flattened trace by trace, each trace's in its own order. One forward pass per batch of
    rollouts (prompt + generated tokens, left padded) through ``model.capture``.
    """
    check_events(traces, events)
    site_list = [model.resolve_site(s) for s in sites]
    out: list[np.ndarray] = []
    pad = model.tokenizer.pad_token_id
    for lo in range(0, len(traces), batch_size):
        chunk = list(range(lo, min(lo + batch_size, len(traces))))
        chunk = [i for i in chunk if events[i]]
        if not chunk:
            continue
        rows = [traces[i].prompt_ids + traces[i].token_ids for i in chunk]
        check_context_length(model, max(len(r) for r in rows), "rollout length")
        enc = left_pad(rows, pad, device=model.device)
        acts = model.capture(enc, site_list).acts  # site -> [batch, pos, d]
        width = enc["input_ids"].shape[1]
        for b, i in enumerate(chunk):
            offset = width - len(rows[b]) + len(traces[i].prompt_ids)  # column of generated token 0
            cols = torch.tensor([offset + ev.token_index for ev in events[i]], device=model.device)
            feats = torch.cat([acts[s][b, cols] for s in site_list], dim=-1)  # [event, site * d]
            out.append(feats.float().cpu().numpy())
    n_feat = len(site_list) * model.d_model
    return np.concatenate(out, axis=0) if out else np.zeros((0, n_feat), dtype=np.float32)


def trace_states_at(trace: Trace, token_indices: Sequence[int], sites: Sequence[Site | str]) -> np.ndarray:
    """States at generated tokens read from a trace (row t + 1), sites concatenated: ``[n, site * d]``.

    Cheaper than :func:`event_features` when the trace captured those sites, but the state at the
    last generated token is not in a trace; asking for it is an error.
    """
    keys = [s if isinstance(s, Site) else Site.parse(s) for s in sites]
    missing = [str(k) for k in keys if k not in trace.hidden]
    if missing:
        raise ThinklensError.of("trace sites", missing, f"sites captured in the trace ({[str(k) for k in trace.hidden]})",
                                "generate with capture=[...] including them, or use event_features")
    rows = np.asarray(token_indices, dtype=np.int64) + 1
    if rows.size and (rows.min() < 1 or rows.max() >= len(trace)):
        raise ThinklensError.of("token index", int(rows.max() - 1), f"an index in [0, {len(trace) - 1})",
                                "the state after the last token is not recorded; use event_features")
    return torch.cat([trace.hidden[k][rows] for k in keys], dim=-1).float().numpy()


@dataclass(frozen=True, eq=False)
class ForcedExits:
    """Outcome of forcing an answer at every event (flattened trace by trace)."""

    label: np.ndarray
    """1 if the forced answer is the gold answer (:func:`thinklens.data.answers.is_correct`), [event]."""
    answer: list[str | None]
    """The forced answer as written (:func:`thinklens.data.answers.extract_answer`; None when there is none), [event]."""
    answer_tokens: np.ndarray
    """Tokens generated after the exit string (up to and including EOS), [event]."""
    text: list[str]
    """Exit string plus generated answer text, [event]."""

    def same_as(self, other: "ForcedExits") -> bool:
        """Whether two labellings agree exactly: labels, answers, answer token counts and texts."""
        return (self.answer == other.answer and self.text == other.text and np.array_equal(self.label, other.label)
                and np.array_equal(self.answer_tokens, other.answer_tokens))


@torch.no_grad()
def forced_exit_labels(model, traces: Sequence[Trace], events: Sequence[Sequence[CueEvent]],
                       gold: Sequence[str | int], *, exit_string: str, max_answer_tokens: int = 64,
                       batch_size: int = 16) -> ForcedExits:
    """Label events by forcing an exit: keep the rollout's tokens before the cue, append
    ``exit_string``, decode greedily (KV-cached, batched) up to ``max_answer_tokens``, and grade the
    exit string plus the answer with :func:`thinklens.data.answers.is_correct` against the trace's gold answer
    (an integer, or a data set's answer such as ``\\frac{14}{3}``).

    Works on token ids (prompt ids + rollout ids + the exit string's ids), so the prefix is exactly
    what the model generated; the reference re-tokenizes decoded text instead.
    """
    exit_ids = check_forced_exit_inputs(model.tokenizer, traces, events, gold, exit_string, max_answer_tokens)
    items = [(i, ev) for i, evs in enumerate(events) for ev in evs]
    prefixes = [traces[i].prompt_ids + traces[i].token_ids[:ev.start_index] + exit_ids for i, ev in items]
    # batch rows of similar length together: left padding then costs little compute
    order = sorted(range(len(items)), key=lambda k: len(prefixes[k]))
    eos = eos_ids(model)
    answers: list[str | None] = [None] * len(items)
    n_tokens: list[int] = [0] * len(items)
    texts: list[str] = [""] * len(items)
    for lo in range(0, len(items), batch_size):
        chunk = order[lo:lo + batch_size]
        rows = [prefixes[k] for k in chunk]
        check_context_length(model, max(len(r) for r in rows) + max_answer_tokens, "forced-exit length")
        out = decode(Decoder(model, rows), Greedy(), max_new_tokens=max_answer_tokens, eos=eos)
        for r, k in enumerate(chunk):
            stop = out.lengths[r]
            text = model.tokenizer.decode(exit_ids + out.row(r), skip_special_tokens=True)
            answers[k], n_tokens[k], texts[k] = extract_answer(text), stop, text
    label = np.array([int(is_correct(t, gold[i])) for (i, _), t in zip(items, texts)], dtype=np.int64)
    return ForcedExits(label=label, answer=answers, answer_tokens=np.array(n_tokens, dtype=np.int64), text=texts)


def exit_tables(traces: Sequence[Trace], events: Sequence[Sequence[CueEvent]], gold: Sequence[str | int],
                forced: ForcedExits, prob: np.ndarray, *, exit_string_tokens: int) -> tuple[EventTable, RolloutTable]:
    """Event and rollout tables for :mod:`thinklens.probes.exits` (probe probabilities ``prob`` [event]).

    Exit cost (:meth:`CueEvent.tokens_used`, the reference's) = the tokens before the cue + the exit string's
    ``exit_string_tokens`` + the forced answer's tokens; full cost = the rollout's generated tokens. A full
    rollout is correct when ``is_correct(trace.text, gold)``.
    """
    if not isinstance(exit_string_tokens, (int, np.integer)) or exit_string_tokens < 1:
        raise ThinklensError.of("exit_string_tokens", exit_string_tokens, "the exit string's token count (>= 1)",
                                "pass len(tokenizer(exit_string, add_special_tokens=False)['input_ids'])")
    check_events(traces, events)
    flat = [(i, ev) for i, evs in enumerate(events) for ev in evs]
    n = len(flat)
    if forced.label.shape[0] != n or np.asarray(prob).shape != (n,):
        raise ThinklensError.of("event arrays", f"{forced.label.shape[0]} labels, {np.asarray(prob).shape} probs",
                                f"{n} of each (one per event)", "compute them from the same events")
    table = EventTable(
        rollout=np.array([i for i, _ in flat], dtype=np.int64),
        position=np.array([ev.token_index for _, ev in flat], dtype=np.int64),
        label=forced.label, prob=np.asarray(prob, dtype=np.float64),
        exit_tokens=np.array([ev.tokens_used(k, exit_string_tokens) for (_, ev), k in zip(flat, forced.answer_tokens)],
                             dtype=np.int64).reshape(n),
        is_cue=np.array([not ev.is_fallback for _, ev in flat], dtype=bool),
    )
    rollouts = RolloutTable(
        length=np.array([len(tr) for tr in traces]),
        correct=np.array([int(is_correct(tr.text, g)) for tr, g in zip(traces, gold)]),
        tokens=np.array([len(tr) for tr in traces], dtype=np.float64),
    )
    return table, rollouts


@torch.no_grad()
def prompt_states(model, texts: Sequence[str], sites: Sequence[Site | str], *, batch_size: int = 16) -> dict[str, np.ndarray]:
    """State at the last token of each text, per site: ``{site string: float32 [text, d_model]}``."""
    site_list = [model.resolve_site(s) for s in sites]
    parts: dict[Site, list[np.ndarray]] = {s: [] for s in site_list}
    for lo in range(0, len(texts), batch_size):
        batch = model.capture(list(texts[lo:lo + batch_size]), site_list, positions="last")
        for s in site_list:
            parts[s].append(batch.acts[s][:, -1].float().cpu().numpy())
    return {str(s): np.concatenate(parts[s], axis=0) for s in site_list}


@dataclass(frozen=True, eq=False)
class LayerSweep:
    """Cross-validated probe scores per site."""

    sites: tuple[str, ...]
    """The sites, in the order given."""
    scores: np.ndarray
    """Score per site and fold, [site, fold]."""
    scoring: str
    """The scikit-learn scorer name (roc_auc, accuracy or r2 by default)."""

    @property
    def mean(self) -> np.ndarray:
        """Mean score per site, [site]."""
        return self.scores.mean(axis=1)

    @property
    def std(self) -> np.ndarray:
        """Standard deviation across folds per site, [site]."""
        return self.scores.std(axis=1)

    @property
    def best(self) -> str:
        """The site with the highest mean score."""
        return self.sites[int(np.argmax(self.mean))]


def layer_sweep(features: Mapping[str, np.ndarray], y: np.ndarray, *, task: str = "auto",
                probe: BaseEstimator | None = None, folds: int = 5, scoring: str | None = None,
                seed: int = 0, groups: np.ndarray | None = None) -> LayerSweep:
    """Fit one probe per site with ``folds``-fold CV (stratified for labels, shuffled, seeded).

    ``groups`` [n] keeps rows of one group (e.g. the positions of one problem) in the same fold,
    so a probe is never scored on an item it saw in training.

    ``task``: "classification", "regression", or "auto" (float targets regress, anything else
    classifies). Integer targets such as the running value are labels under "auto": pass
    ``task="regression"`` to regress them. Defaults: binary labels -> LinearProbe scored by roc_auc;
    multiclass -> LinearProbe by accuracy; regression -> RidgeProbe by r2.

    Example:
        >>> rng = np.random.default_rng(0); y = rng.integers(0, 2, 120)
        >>> feats = {"resid_post.0": rng.normal(size=(120, 4)), "resid_post.1": rng.normal(size=(120, 4))}
        >>> feats["resid_post.1"][:, 0] += 3 * y
        >>> layer_sweep(feats, y).best
        'resid_post.1'
    """
    y = np.asarray(y)
    if not features:
        raise ThinklensError.of("features", "no sites", "{site: [n, d] array} with at least one site",
                                "pass prompt_states(...) or event features per site")
    if task not in ("auto", "classification", "regression"):
        raise ThinklensError.of("task", task, "auto, classification or regression", "use task='regression' for values")
    continuous = task == "regression" or (task == "auto" and np.issubdtype(y.dtype, np.floating))
    kind = None if continuous else type_of_target(y)
    if probe is None:
        probe = RidgeProbe() if continuous else LinearProbe()
    scoring = scoring or ("r2" if continuous else "roc_auc" if kind == "binary" else "accuracy")
    if groups is None:
        splitter = (KFold if continuous else StratifiedKFold)(n_splits=folds, shuffle=True, random_state=seed)
    else:
        groups = np.asarray(groups)
        if groups.shape != y.shape:
            raise ThinklensError.of("groups", f"shape {groups.shape}", f"shape {y.shape}, one group per label",
                                    "pass one group id (e.g. the problem index) per row")
        splitter = (GroupKFold if continuous else StratifiedGroupKFold)(n_splits=folds, shuffle=True, random_state=seed)
    rows = []
    for site, X in features.items():
        X = np.asarray(X)
        if X.shape[0] != y.shape[0]:
            raise ThinklensError.of(f"features at {site}", f"{X.shape[0]} rows", f"{y.shape[0]} rows, one per label",
                                    "capture the features for the same items as the labels")
        rows.append(cross_val_score(clone(probe), X, y, cv=splitter, scoring=scoring, groups=groups))
    return LayerSweep(sites=tuple(str(s) for s in features), scores=np.array(rows), scoring=scoring)
