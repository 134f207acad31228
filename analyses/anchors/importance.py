"""Black-box thought-anchor importance: forced answers after each prefix, and counterfactual resampling.

Both read the answer distribution that follows a prefix of the trace (``prompt + sentences[:i]``, :class:`Sentences`):

- **forced-answer importance** (:func:`forced_importance`): the prefix, then the format's exit string (the thinking
  span's close and ``Final Answer: \\boxed{``, or the zoo's), then ``n_forced`` answers sampled at ``temperature``
  (greedy when it is 0) through one decoder whose prefill is forked ``n_forced`` times (the prefix's KV cache is
  computed once). Sentence ``i``'s importance is the accuracy after prefix ``i + 1`` minus the accuracy after prefix
  ``i`` (Newcombe's interval), and the KL divergence of the two answer distributions (bootstrap over answers).
- **resampling importance** (:func:`resampling_importance`): ``n_rollouts`` continuations of ``rollout_tokens``
  tokens from each prefix (one prefill, forked), each ended by the forced answer (or the answer it states when it
  stops by itself). Rollouts from prefix ``i`` whose first sentence overlaps sentence ``i`` by less than
  ``similarity`` (:func:`~thinklens.analyses.anchors.sentences.word_overlap`, the stated substitute of the paper's
  embedding cosine) replaced it; the rollouts from prefix ``i + 1`` kept it. Importance: accuracy kept minus accuracy
  replaced (Newcombe), and KL(kept || replaced) (bootstrap over rollouts).

Answer distributions are counts of the extracted answers themselves; a KL divergence adds one pseudo-count to every
answer seen in either distribution (the reference code's ``calculate_kl_divergence`` with ``use_prob_true=False`` and
``laplace_smooth=True``; its defaults, a binary correct/incorrect distribution smoothed by 1e-9, suit 100 samples).

Example:
    >>> round(answer_kl(["7", "7", "8"], ["7", "8", "8"]), 4)
    0.0811
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from thinklens.analyses.anchors.sentences import Sentences, first_sentence, word_overlap
from thinklens.calibration.stats import rate_difference
from thinklens.data.answers import answers_equal, extract_answer
from thinklens.errors import ThinklensError
from thinklens.generation.decode_loop import Greedy, Sample, decode
from thinklens.generation.kv_batch import Decoder, eos_ids

SIMILARITY = 0.8
"""Word overlap at or above which a rollout's new sentence counts as the same sentence (kept, not replaced)."""
NO_ANSWER = "<none>"
"""The answer of a continuation that states none (a value of the distribution like any other)."""


def answer_kl(p_answers: Sequence[str], q_answers: Sequence[str], *, pseudo: float = 1.0) -> float:
    """``KL(P || Q)`` in nats between two samples of answers, ``pseudo`` counts added to every answer seen in either."""
    if not p_answers or not q_answers:
        return float("nan")
    keys = sorted(set(p_answers) | set(q_answers))
    cp, cq = Counter(p_answers), Counter(q_answers)
    p = np.array([cp[k] + pseudo for k in keys], dtype=float)
    q = np.array([cq[k] + pseudo for k in keys], dtype=float)
    p, q = p / p.sum(), q / q.sum()
    return float((p * np.log(p / q)).sum())


def _kl_ci(p: Sequence[str], q: Sequence[str], *, seed: int, n_boot: int = 500) -> tuple[float, float]:
    """Percentile bootstrap interval (95%) of :func:`answer_kl`, each sample resampled on its own."""
    if not p or not q:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    pa, qa = np.asarray(p, dtype=object), np.asarray(q, dtype=object)
    boots = [answer_kl(list(pa[rng.integers(0, len(pa), len(pa))]), list(qa[rng.integers(0, len(qa), len(qa))]))
             for _ in range(n_boot)]
    return float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975))


@dataclass(frozen=True)
class SentenceScore:
    """One sentence's importance by one measure."""

    accuracy_diff: float
    """Accuracy with the sentence minus without it."""
    accuracy_ci: tuple[float, float]
    """Its 95% interval (Newcombe's, the two samples independent)."""
    kl: float
    """KL(with || without) of the answer distributions (nats)."""
    kl_ci: tuple[float, float]
    """Its 95% bootstrap interval over the samples."""
    n_with: int
    """Answers sampled with the sentence."""
    n_without: int
    """Answers sampled without it (resampling: the rollouts that replaced it)."""


@dataclass(frozen=True)
class Importance:
    """Per-sentence importance of one trace by one black-box measure."""

    method: str
    """``forced`` or ``resampling``."""
    scores: tuple[SentenceScore, ...]
    """One per sentence."""
    answers: tuple[tuple[str, ...], ...]
    """The answers sampled after each prefix ``0 .. S`` (``S + 1`` rows)."""
    accuracy: tuple[float, ...]
    """Accuracy after each prefix (``S + 1``)."""
    details: dict[str, Any] = field(default_factory=dict)
    """Rollout texts, the replaced shares, the settings."""

    @property
    def accuracy_diff(self) -> np.ndarray:
        """``[sentence]`` accuracy differences (NaN where a side had no samples)."""
        return np.array([s.accuracy_diff for s in self.scores], dtype=float)

    @property
    def kl(self) -> np.ndarray:
        """``[sentence]`` KL importances."""
        return np.array([s.kl for s in self.scores], dtype=float)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data."""
        return asdict(self)


def _score(with_: Sequence[str], without: Sequence[str], gold: Any, *, seed: int) -> SentenceScore:
    kw, kn = sum(_right(a, gold) for a in with_), sum(_right(a, gold) for a in without)
    if with_ and without:
        diff, ci = rate_difference(kw, len(with_), kn, len(without))
    else:
        diff, ci = float("nan"), (float("nan"), float("nan"))
    return SentenceScore(float(diff), (float(ci[0]), float(ci[1])), answer_kl(with_, without), _kl_ci(with_, without, seed=seed),
                         len(with_), len(without))


def _right(answer: str, gold: Any) -> bool:
    return answer != NO_ANSWER and answers_equal(answer, gold)


def _choice(temperature: float, seed: int):
    if temperature == 0:
        return Greedy()
    return Sample(torch.Generator().manual_seed(seed), temperature=temperature)


@torch.no_grad()
def _forked(model: Any, ids: list[int], n: int, *, max_new_tokens: int, temperature: float, seed: int) -> list[list[int]]:
    """``n`` continuations of one prefix: its prefill runs once and its KV cache is forked ``n`` times."""
    dec = Decoder(model, [ids])
    logits = dec.prefill()  # [1, vocab]
    fork = dec.fork([0], repeats=n)
    out = decode(fork, _choice(temperature, seed), max_new_tokens=max_new_tokens, eos=eos_ids(model),
                 logits=logits.expand(n, -1))
    return [out.row(r) for r in range(n)]


def _ids(model: Any, text: str) -> list[int]:
    return model.tokenize([text])["input_ids"][0].tolist()


def _answer_text(model: Any, exit_string: str, rows: list[list[int]]) -> list[str]:
    eos = eos_ids(model)
    texts = [model.tokenizer.decode([t for t in r if t not in eos], skip_special_tokens=True) for r in rows]
    return [extract_answer(exit_string + t) or NO_ANSWER for t in texts]


def forced_answers(model: Any, prefix: str, *, exit_string: str, n: int, temperature: float, seed: int,
                   max_answer_tokens: int = 10) -> list[str]:
    """``n`` answers forced right after ``prefix`` (the exit string appended, the answer read with
    :func:`~thinklens.data.answers.extract_answer`); greedy (every answer the same) at ``temperature`` 0."""
    ids = _ids(model, prefix + exit_string)
    rows = _forked(model, ids, 1 if temperature == 0 else n, max_new_tokens=max_answer_tokens, temperature=temperature, seed=seed)
    answers = _answer_text(model, exit_string, rows)
    return answers * n if temperature == 0 else answers


def forced_importance(model: Any, sents: Sentences, gold: Any, *, exit_string: str, n_forced: int = 8,
                      temperature: float = 1.0, seed: int = 0, max_answer_tokens: int = 10,
                      log: Callable[[str], None] | None = None) -> Importance:
    """Forced-answer importance of every sentence (the module's docstring)."""
    if n_forced < 1:
        raise ThinklensError.of("n_forced", n_forced, "an integer >= 1", "pass e.g. n_forced=8")
    answers = [forced_answers(model, sents.prefix(i), exit_string=exit_string, n=n_forced, temperature=temperature,
                              seed=seed + i, max_answer_tokens=max_answer_tokens) for i in range(len(sents) + 1)]
    if log is not None:
        log(f"forced answers after {len(answers)} prefixes")
    scores = tuple(_score(answers[i + 1], answers[i], gold, seed=seed + i) for i in range(len(sents)))
    acc = tuple(float(np.mean([_right(a, gold) for a in row])) for row in answers)
    return Importance("forced", scores, tuple(tuple(r) for r in answers), acc,
                      {"n_forced": n_forced, "temperature": temperature, "exit_string": exit_string})


@dataclass(frozen=True)
class Rollout:
    """One continuation from a prefix."""

    prefix: int
    """The prefix it continues (sentences before it)."""
    text: str
    """Its text."""
    first: str
    """Its first sentence (the replacement of sentence ``prefix``)."""
    overlap: float
    """Word overlap of that sentence with the original sentence ``prefix`` (NaN after the last sentence)."""
    answer: str
    """The answer it ends in (stated, or forced)."""


def rollouts(model: Any, sents: Sentences, i: int, *, exit_string: str, n: int, rollout_tokens: int, temperature: float,
             seed: int, max_answer_tokens: int = 10) -> list[Rollout]:
    """``n`` rollouts from prefix ``i`` (one prefill, forked), each ended by its stated or forced answer."""
    prefix = sents.prefix(i)
    eos = eos_ids(model)
    rows = _forked(model, _ids(model, prefix), n, max_new_tokens=rollout_tokens, temperature=temperature, seed=seed)
    texts = [model.tokenizer.decode([t for t in r if t not in eos], skip_special_tokens=True) for r in rows]
    stated = [extract_answer(t) if r and r[-1] in eos else None for t, r in zip(texts, rows)]
    need = [k for k, a in enumerate(stated) if a is None]
    forced: dict[int, str] = {}
    if need:  # the forced answer after each unfinished rollout, batched (no sampling: greedy)
        exit_ids = model.tokenizer(exit_string, add_special_tokens=False)["input_ids"]
        pre = _ids(model, prefix)
        body = [pre + [t for t in rows[k] if t not in eos] + exit_ids for k in need]
        dec = Decoder(model, body)
        out = decode(dec, Greedy(), max_new_tokens=max_answer_tokens, eos=eos)
        got = _answer_text(model, exit_string, [out.row(r) for r in range(len(need))])
        forced = dict(zip(need, got))
    original = sents.sentences[i] if i < len(sents) else ""
    out_rows = []
    for k, t in enumerate(texts):
        first = first_sentence(t)
        out_rows.append(Rollout(i, t, first, word_overlap(first, original) if original else float("nan"),
                                stated[k] if stated[k] is not None else forced[k]))
    return out_rows


def resampling_importance(model: Any, sents: Sentences, gold: Any, *, exit_string: str, n_rollouts: int = 8,
                          rollout_tokens: int = 48, temperature: float = 1.0, similarity: float = SIMILARITY, seed: int = 0,
                          max_answer_tokens: int = 10, log: Callable[[str], None] | None = None) -> Importance:
    """Counterfactual (resampling) importance of every sentence (the module's docstring)."""
    if n_rollouts < 2 or rollout_tokens < 1 or not 0 < similarity <= 1:
        raise ThinklensError.of("n_rollouts / rollout_tokens / similarity", (n_rollouts, rollout_tokens, similarity),
                                "n_rollouts >= 2, rollout_tokens >= 1, 0 < similarity <= 1", "pass e.g. n_rollouts=8")
    rolls = []
    for i in range(len(sents) + 1):
        rolls.append(rollouts(model, sents, i, exit_string=exit_string, n=n_rollouts, rollout_tokens=rollout_tokens,
                              temperature=temperature, seed=seed + 1000 * i, max_answer_tokens=max_answer_tokens))
        if log is not None:
            log(f"rollouts from prefix {i}/{len(sents)}")
    scores = []
    for i in range(len(sents)):
        replaced = [r.answer for r in rolls[i] if r.overlap < similarity]
        kept = [r.answer for r in rolls[i + 1]]
        scores.append(_score(kept, replaced, gold, seed=seed + i))
    answers = tuple(tuple(r.answer for r in row) for row in rolls)
    acc = tuple(float(np.mean([_right(a, gold) for a in row])) for row in answers)
    replaced_share = [float(np.mean([r.overlap < similarity for r in row])) for row in rolls[:-1]]
    return Importance("resampling", tuple(scores), answers, acc,
                      {"n_rollouts": n_rollouts, "rollout_tokens": rollout_tokens, "temperature": temperature,
                       "similarity": similarity, "replaced_share": replaced_share,
                       "rollouts": [[{"first": r.first, "overlap": r.overlap, "answer": r.answer} for r in row] for row in rolls]})
