"""LYNX, the model-free parts: configuration, cue events in decoded tokens, feature layers.

Paper: Akgul et al., "LYNX: Learning Dynamic Exits for Confidence-Controlled Reasoning"
(arXiv 2512.05325). Exit policies and their evaluation are in :mod:`thinklens.probes.exits`, the conformal step
in :mod:`thinklens.probes.conformal`, the job in :mod:`thinklens.probes.jobs.lynx`. This module imports no scikit-learn
at its top (the job's config builds on :class:`LynxConfig`, and ``thinklens run --help`` stays fast).

Deviation from the reference, on purpose: cue words match on WORD BOUNDARIES (case-insensitive),
so "await", "waiting" or "hmmm" do not fire for "wait" / "hmm". The reference lower-cases the text and
matches substrings, which fires inside those words. Add "hmmm" (or any word) to ``cue_words`` to
catch it. Two cues ending in the same token give one event (the reference would duplicate it).

Example:
    >>> tokens = ["We", " await", " it", ".", " Wait", ",", " 3", "+", "4", " hm", "m"]
    >>> [(e.token_index, e.cue) for e in find_cue_events(tokens)]
    [(4, 'wait'), (10, 'hmm')]
    >>> lynx_layers(28), lynx_layers(6)
    ((9, 16, 28), (2, 3, 5, 6))
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from thinklens.data.formats import ZOO_CUE_TOKENS
from thinklens.data.words import find_words
from thinklens.engine.sites import Site, hidden_state_site
from thinklens.errors import ThinklensError, opt_name
from thinklens.probes.grouped_split import validation_split
from thinklens.runs.configcli import ConfigGroup

if TYPE_CHECKING:
    from thinklens.data.formats import PromptFormat
    from thinklens.probes.mlp import LynxMLPProbe

DEFAULT_CUES: tuple[str, ...] = ("hmm", "wait", "alternatively")
#: The zoo's reflection cues that precede more thinking (``so``/``therefore`` follow ``</think>``).
ZOO_CUES: tuple[str, ...] = ("hmm", "wait")
DEFAULT_DELTAS: tuple[float, ...] = (0.01, 0.02, 0.03, 0.05, 0.10)
#: The levels a LYNX run sweeps and measures validity at (the reference's DEFAULT_DELTAS, with 0.2 and 0.3 added: the
#: zoo's small calibration splits make the lowest levels vacuous).
VALIDITY_DELTAS: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3)
#: The reference's forced-exit string (a chat model with a <think> span).
REFERENCE_EXIT = "</think>\n\nFinal Answer: \\boxed{"
#: Greedy tokens of a forced answer in the reference (room for a LaTeX answer and its closing brace).
REFERENCE_ANSWER_TOKENS = 64
#: Feature layers per depth from the reference, in HF ``hidden_states`` indexing (0 = embeddings).
LAYER_TABLE: dict[int, tuple[int, ...]] = {
    28: (9, 16, 28),
    32: (8, 16, 24, 32),
    36: (12, 18, 24, 36),
    64: (16, 32, 48, 64),
}
_CUE_RE = re.compile(r"^\w+(?:[ '\-]\w+)*$")


def check_cue_words(cue_words: Sequence[str]) -> tuple[str, ...]:
    """Lower-cased, de-duplicated cue words; errors on an empty list or a non-word entry.

    Example:
        >>> check_cue_words(["Wait", "hmm", "wait"])
        ('wait', 'hmm')
    """
    if isinstance(cue_words, str) or not isinstance(cue_words, Sequence) or len(cue_words) == 0:
        raise ThinklensError.of("cue words", cue_words, "a non-empty sequence of words, e.g. ('hmm', 'wait')",
                                "pass a tuple of words, not a single string")
    words: list[str] = []
    for word in cue_words:
        w = word.strip().lower() if isinstance(word, str) else word
        if not isinstance(w, str) or not _CUE_RE.match(w):
            raise ThinklensError.of(
                "cue word", word, "a word or phrase of letters/digits (e.g. 'wait', 'on second thought')",
                f"remove it from cue_words; the defaults are {DEFAULT_CUES}",
            )
        if w not in words:
            words.append(w)
    return tuple(words)


def check_cue_vocabulary(tokenizer, cue_words: Sequence[str]) -> None:
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
                                    f"{tokenizer.unk_token!r})", f"drop it from {opt_name('cue_words')} (the zoo's cues are "
                                    f"{', '.join(ZOO_CUES)})")


def format_settings(fmt: PromptFormat) -> dict[str, Any]:
    """The LYNX settings a prompt format implies: its forced-exit string (:attr:`PromptFormat.lynx_exit`),
    and the cue words and forced-answer tokens: the reference's (hmm, wait, alternatively; 64 tokens) for
    a real model's format, the zoo's (hmm, wait; a number after ``####``) for the zoo's styles.

    Example:
        >>> from thinklens.data.formats import SPANS, ZOO_THINK_SPAN, PromptFormat
        >>> format_settings(PromptFormat("chat", span=SPANS["think"]))
        {'cue_words': ('hmm', 'wait', 'alternatively'), 'exit_string': '</think>\\n\\nFinal Answer: \\\\boxed{', 'max_answer_tokens': 64}
        >>> format_settings(PromptFormat("think", span=ZOO_THINK_SPAN))
        {'cue_words': ('hmm', 'wait'), 'exit_string': '</think> ####', 'max_answer_tokens': 8}
    """
    if fmt.is_zoo:
        return {"cue_words": ZOO_CUES, "exit_string": fmt.lynx_exit, "max_answer_tokens": ZOO_CUE_TOKENS}
    return {"cue_words": DEFAULT_CUES, "exit_string": fmt.lynx_exit, "max_answer_tokens": REFERENCE_ANSWER_TOKENS}


@dataclass(frozen=True)
class LynxConfig(ConfigGroup):
    """Settings of a LYNX run; defaults are the reference's, and the three left to the prompt format (cue words, exit
    string, forced-answer tokens) are None: the job fills them from the format (:func:`format_settings`); a library
    call without a format reads them through :meth:`resolved` (the reference's)."""

    cue_words: tuple[str, ...] | None = None
    """Cue words marking candidate exits, matched on word boundaries (none: the prompt format's: hmm,wait,alternatively
    as the reference; hmm,wait for the zoo's styles)."""
    max_events_train: int = 200
    """Cap on events per rollout in the probe-training split (the first ones are kept)."""
    max_events_calibration: int = 100
    """Cap on events per rollout in the calibration split."""
    max_events_test: int | None = None
    """Cap on cue events per test rollout when evaluating exits (None: every cue event, as the reference scans at
    test time)."""
    fallback_fraction: float = 0.7
    """A training or calibration rollout without any cue gets one event at this fraction of its length (test rollouts
    never do: exits happen at real cues only)."""
    exit_string: str | None = None
    """Appended to the text before a cue to force an answer (none: the prompt format's, e.g. '</think>\\n\\nFinal
    Answer: \\boxed{' for a chat model with a <think> span, '</think> ####' for the zoo's think style)."""
    max_answer_tokens: int | None = None
    """Greedy tokens decoded after the exit string (none: the prompt format's: 64 as the reference; 8 for the zoo's
    styles)."""
    deltas: tuple[float, ...] = VALIDITY_DELTAS
    """Miscoverage levels of the sweep and of the validity measurement, each in (0, 1)."""
    sites: tuple[str, ...] | None = None
    """Sites whose states are concatenated, in order: site names (resid_post.8,final_norm) or HF hidden-state indices
    as the reference gives them (9 = resid_post.8, the depth = final_norm); none: the reference's for the depth
    (lynx_layers)."""
    val_fraction: float = 0.2
    """Share of the training rollouts (all their events) held out to report probe accuracy/AUROC, stratified by label
    as far as the rollouts allow."""
    probe_seed: int = 42
    """Seed of the probe's validation split and initialisation (reference: 42)."""
    renamed: ClassVar[dict[str, str]] = {"layers": "sites"}  # --layers took hidden-state indices, which sites takes too

    def check(self) -> None:
        # None (cue words, exit string, answer tokens): the job fills them in from the prompt format
        if self.cue_words is not None:
            object.__setattr__(self, "cue_words", check_cue_words(self.cue_words))
        if self.exit_string is not None and not (isinstance(self.exit_string, str) and self.exit_string):
            raise ThinklensError.of("exit_string", self.exit_string, "a non-empty string that closes the thinking",
                                    "leave it unset: the prompt format's exit is used")
        for name in ("max_events_train", "max_events_calibration", "max_answer_tokens"):
            if name == "max_answer_tokens" and self.max_answer_tokens is None:
                continue
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ThinklensError.of(name, getattr(self, name), "an integer >= 1", "use the default")
        if self.max_events_test is not None and self.max_events_test < 1:
            raise ThinklensError.of("max_events_test", self.max_events_test, "None or an integer >= 1",
                                    "use None to keep every event")
        for name in ("fallback_fraction", "val_fraction"):
            if not 0.0 < float(getattr(self, name)) < 1.0:
                raise ThinklensError.of(name, getattr(self, name), "a fraction in (0, 1)", "use the default")
        if not self.deltas:
            raise ThinklensError.of("deltas", self.deltas, "a non-empty tuple of levels in (0, 1)",
                                    f"use {VALIDITY_DELTAS}")
        for d in self.deltas:
            if not 0.0 < float(d) < 1.0:
                raise ThinklensError.of("delta", d, "every level of deltas strictly between 0 and 1", f"use {VALIDITY_DELTAS}")
        if self.sites is not None:  # a config file of an older run holds its hidden-state indices as ints
            object.__setattr__(self, "sites", tuple(str(s).strip() for s in self.sites))
            if not self.sites:
                raise ThinklensError.of("sites", self.sites, "None or at least one site", "use None for the depth's default")
            for s in self.sites:
                if not s.isdigit():  # a hidden-state index is checked against the depth once the model loads
                    Site.parse(s)  # did-you-mean on a typo before any work

    def resolved(self) -> LynxConfig:
        """This config with what it leaves to the prompt format set to the reference's (a call without a format).

        Example:
            >>> LynxConfig().resolved().cue_words, LynxConfig(cue_words=("wait",)).resolved().cue_words
            (('hmm', 'wait', 'alternatively'), ('wait',))
        """
        fill = {"cue_words": DEFAULT_CUES, "exit_string": REFERENCE_EXIT, "max_answer_tokens": REFERENCE_ANSWER_TOKENS}
        return dataclasses.replace(self, **{k: v for k, v in fill.items() if getattr(self, k) is None})

    def max_events(self, split: str) -> int | None:
        """Per-rollout event cap of a split: "train", "calibration" or "test"."""
        caps = {"train": self.max_events_train, "calibration": self.max_events_calibration,
                "test": self.max_events_test}
        if split not in caps:
            raise ThinklensError.of("split", split, f"one of {sorted(caps)}", "name the split events are for")
        return caps[split]

    def fallback(self, split: str) -> float | None:
        """Where a cue-less rollout of ``split`` gets its one fallback event: ``fallback_fraction`` for "train" and
        "calibration" (the reference builds its probe and calibration data so), None for "test" (the reference
        scans only real cue events when it exits: a made-up event is not a place a model can be stopped at).

        Example:
            >>> [LynxConfig().fallback(s) for s in ("train", "calibration", "test")]
            [0.7, 0.7, None]
        """
        self.max_events(split)  # validates the split's name
        return None if split == "test" else self.fallback_fraction


@dataclass(frozen=True)
class CueEvent:
    """One candidate exit point in a rollout."""

    token_index: int
    """0-based index (in the generated tokens) of the token where the cue ends."""
    start_index: int
    """Index of the token where the cue starts; the forced exit keeps the tokens before it."""
    cue: str | None
    """The matched cue word; None for the fallback event of a rollout without cues."""
    char_span: tuple[int, int] = field(default=(-1, -1))
    """Character span of the cue in the concatenated decoded text ((-1, -1) for the fallback)."""

    @property
    def is_fallback(self) -> bool:
        """True for the synthetic event of a cue-less rollout."""
        return self.cue is None

    def tokens_used(self, n_answer_tokens: int, n_exit_tokens: int) -> int:
        """Cost of exiting here, as the reference charges it: the tokens before the cue (the forced exit keeps
        them), the exit string's ``n_exit_tokens`` and the forced answer's ``n_answer_tokens``.

        Example:
            >>> CueEvent(token_index=6, start_index=5, cue="wait").tokens_used(n_answer_tokens=3, n_exit_tokens=2)
            10
        """
        return self.start_index + int(n_exit_tokens) + int(n_answer_tokens)


def find_cue_events(tokens: Sequence[str], *, cue_words: Sequence[str] = DEFAULT_CUES,
                    max_events: int | None = None, fallback_fraction: float | None = 0.7,
                    separator: str = "") -> list[CueEvent]:
    """Cue events of one rollout, in order.

    Args:
        tokens: the generated tokens, each decoded on its own (joined by ``separator``, the text).
        cue_words: words to match, case-insensitively, on word boundaries.
        max_events: keep only the first this many events (LYNX: train 200, calibration 100).
        fallback_fraction: with no cue, one event at token ``max(1, int(f * len)) - 1`` (the
            reference's 1-based ``max(1, int(0.7 L))``); None: no event (a test rollout, see
            :meth:`LynxConfig.fallback`).
        separator: put between tokens when joining them; ``" "`` for word-level tokenizers (the
            zoo's) whose tokens decode without spaces, so "so" + "wait" is not read as "sowait".

    Returns an empty list for an empty rollout, and for a cue-less one when ``fallback_fraction`` is None.

    Example:
        >>> [e.token_index for e in find_cue_events(["a"] * 10)]  # no cue: fallback at 0.7
        [6]
        >>> find_cue_events(["a"] * 10, fallback_fraction=None)  # a test rollout: real cues only
        []
        >>> [e.token_index for e in find_cue_events([" W", "ait", " no", " wait"], max_events=1)]
        [1]
        >>> [e.token_index for e in find_cue_events(["so", "wait", "<<"], separator=" ")]
        [1]
    """
    words = check_cue_words(cue_words)
    if max_events is not None and max_events < 1:
        raise ThinklensError.of("max_events", max_events, "None or an integer >= 1", "use None to keep all")
    if fallback_fraction is not None and not 0.0 < fallback_fraction < 1.0:
        raise ThinklensError.of("fallback_fraction", fallback_fraction, "a fraction in (0, 1)", "use 0.7")
    if len(tokens) == 0:
        return []

    events = [CueEvent(h.end_index, h.start_index, h.word, h.char_span) for h in find_words(tokens, words, separator=separator)]
    events = events[:max_events] if max_events is not None else events
    if not events and fallback_fraction is not None:
        index = max(1, int(Fraction(repr(fallback_fraction)) * len(tokens))) - 1
        events.append(CueEvent(index, index, None))
    return events


def lynx_layers(n_layers: int) -> tuple[int, ...]:
    """Hidden-state indices (HF ``hidden_states``: 0 = embeddings, ``n_layers`` = last) for LYNX.

    The reference's table for 28, 32, 36 and 64 layers; any other depth takes the quarter points
    ``round(n/4), round(n/2), round(3n/4), n`` (halves rounded up, duplicates dropped), which
    reproduces the 32- and 64-layer rows and gives the zoo's 4-8 layer models e.g.
    4 -> (1, 2, 3, 4), 6 -> (2, 3, 5, 6), 8 -> (2, 4, 6, 8).

    Example:
        >>> lynx_layers(32), lynx_layers(4), lynx_layers(2)
        ((8, 16, 24, 32), (1, 2, 3, 4), (1, 2))
    """
    if not isinstance(n_layers, (int, np.integer)) or n_layers < 1:
        raise ThinklensError.of("n_layers", n_layers, "a positive integer (the model's block count)",
                                "pass model.n_layers")
    n = int(n_layers)
    if n in LAYER_TABLE:
        return LAYER_TABLE[n]
    quarters = [max(1, math.floor(n * q / 4 + 0.5)) for q in (1, 2, 3)] + [n]
    return tuple(sorted(set(quarters)))


def lynx_sites(n_layers: int, sites: Sequence[int | str | Site] | None = None) -> tuple[Site, ...]:
    """Sites whose states LYNX concatenates, in order (default: :func:`lynx_layers`): site names, or HF
    ``hidden_states`` indices as the reference gives them (an int or a string of digits), mapped to sites by the core
    (:func:`thinklens.engine.sites.hidden_state_site`).

    Example:
        >>> [str(s) for s in lynx_sites(28)]
        ['resid_post.8', 'resid_post.15', 'final_norm']
        >>> [str(s) for s in lynx_sites(4, (0, 4))], [str(s) for s in lynx_sites(4, ("2", "resid_post.3"))]
        (['resid_pre.0', 'final_norm'], ['resid_post.1', 'resid_post.3'])
    """
    chosen = lynx_layers(n_layers) if sites is None else tuple(sites)
    out = []
    for s in chosen:
        if isinstance(s, Site) or (isinstance(s, str) and not s.strip().isdigit()):
            out.append(Site.parse(s, n_layers))
            continue
        i = int(s)
        if not 0 <= i <= n_layers:
            raise ThinklensError.of("LYNX layer", s, f"a hidden-state index in [0, {n_layers}]",
                                    "0 is the first block's input and n_layers the final (normed) state")
        out.append(hidden_state_site(i, n_layers))
    return tuple(out)


@dataclass(frozen=True)
class ProbeValidation:
    """Held-out quality of a LYNX probe (the reference's val metrics)."""

    accuracy: float
    """Accuracy of p >= 0.5 on the validation split."""
    auroc: float
    """AUROC on the validation split (nan with one class)."""
    n_train: int
    """Training events."""
    n_val: int
    """Validation events."""
    n_pos_train: int
    """Training events with y = 1."""
    n_val_rollouts: int = 0
    """Rollouts whose events form the validation share (none of them in the training share)."""


def train_lynx_probe(X: np.ndarray, y: np.ndarray, config: LynxConfig = LynxConfig(),
                     probe: LynxMLPProbe | None = None, *, groups: np.ndarray | None = None,
                     ) -> tuple[LynxMLPProbe, ProbeValidation]:
    """Train the LYNX probe on a ``1 - val_fraction`` share of the events, report accuracy and AUROC on the rest,
    and return the probe fitted on the training share (as the reference does). The split is grouped by rollout
    (:func:`validation_split`, seed ``config.probe_seed``): the reference's stratified event-level split puts events
    of one rollout on both sides.

    Args:
        X: [event, feature] event features; y: [event] forced-exit labels (0/1).
        probe: an unfitted probe to use instead of ``LynxMLPProbe(random_state=config.probe_seed)``.
        groups: [event] rollout id of every event; None: every event its own rollout (only for events that are
            independent).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(300, 4)); y = (X[:, 0] > 0).astype(int)
        >>> _, val = train_lynx_probe(X, y, groups=np.repeat(np.arange(60), 5))
        >>> (val.n_train, val.n_val), val.auroc > 0.9
        ((240, 60), True)
    """
    from thinklens.probes.intention import auroc_score  # lazy: CLI start-up (sklearn)
    from thinklens.probes.mlp import LynxMLPProbe  # lazy: CLI start-up (sklearn)

    X, y = np.asarray(X), np.asarray(y)
    counts = np.bincount(y.astype(np.int64), minlength=2) if y.size else np.zeros(2, int)
    if X.ndim != 2 or y.shape != (X.shape[0],) or counts.min() < 2:
        raise ThinklensError.of("probe training data", f"X {X.shape}, y {y.shape}, class counts {counts.tolist()}",
                                "X [event, feature] and 0/1 labels with at least 2 events of each class",
                                "label more rollouts; with no correct (or no wrong) forced exit there is nothing to learn")
    groups = np.arange(y.shape[0]) if groups is None else np.asarray(groups)
    tr, va = validation_split(y, groups, config.val_fraction, config.probe_seed)
    X_tr, X_val, y_tr, y_val = X[tr], X[va], y[tr], y[va]
    probe = LynxMLPProbe(random_state=config.probe_seed) if probe is None else probe
    if "groups" in inspect.signature(probe.fit).parameters:  # its own early-stopping split, grouped too
        probe.fit(X_tr, y_tr, groups=groups[tr])
    else:
        probe.fit(X_tr, y_tr)
    p = probe.predict_proba(X_val)[:, 1]
    both = 0 < int(y_val.sum()) < len(y_val)
    return probe, ProbeValidation(
        accuracy=float(np.mean((p >= 0.5).astype(int) == y_val)),
        auroc=auroc_score(y_val, p) if both else float("nan"),
        n_train=len(y_tr), n_val=len(y_val), n_pos_train=int(y_tr.sum()),
        n_val_rollouts=int(np.unique(groups[va]).size),
    )
