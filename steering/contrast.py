"""Contrastive activation addition (ActAdd, Turner et al. 2023; CAA, Rimsky et al. 2024) on any causal LM.

A contrast vector is ``mean(last-token state | A) - mean(last-token state | B)`` at one site: A and B are one text
each (a pair, `` Love`` vs `` Hate``) or two sets of sentences. Steering adds it at every position, prompt and
generated: ``x + c * unit_norm * v / |v|`` (the ``steer`` job's convention, so that a coefficient means the same on
every site and model: ``c = 1`` adds one typical token-state norm, :func:`token_norm`). The controls: the unsteered
model (``c = 0``) and an equal-norm random direction (:func:`random_like`) at the same coefficients.

Position 0 is never read. A tokenizer that adds no BOS (SmolLM2) puts a one-token text's only state at position 0,
the attention sink: its norm is ~8x an ordinary state's, so `` Love`` minus `` Hate`` there is a vector of norm ~600
that turns every coefficient into garbage. :func:`read_prefix` puts a neutral context first (the BOS where the
tokenizer adds one, else a newline), :func:`last_states` refuses a position-0 read and any read state far above
the typical norm (a massive activation, e.g. SmolLM2's first `` the``).

Scoring (:func:`score_arm`): VADER compound of each continuation (a lexicon nobody here wrote); fluency as the
perplexity of the steered continuation under the unsteered model and the share of degenerate continuations
(:func:`is_degenerate`). :func:`sweep` runs every arm and coefficient on the same prompts with the same sampling
seed (common random numbers) and returns its rows and findings.

Example:
    >>> repeated_ngram_share("love love love love love love"), is_degenerate("love love love love love love")
    (0.75, True)
    >>> is_degenerate("and then we walked home through the park, talking about the day")
    False
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from thinklens.calibration.findings import MIN_N, Finding
from thinklens.calibration.stats import bootstrap_ci, paired_bootstrap, wilson
from thinklens.engine.interventions import AddVector
from thinklens.engine.sites import Site
from thinklens.engine.tokenization import adds_bos, prompt_ids
from thinklens.errors import ThinklensError
from thinklens.steering.vectors import SteeringVector

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel
    from thinklens.generation.trace import Trace

#: The neutral context before a contrast text when the tokenizer adds no BOS (one newline: no sentiment, one token).
NEUTRAL_PREFIX = "\n"
#: A read state whose norm exceeds this multiple of the typical token norm is a massive activation (a sink), not a
#: word's state: SmolLM2's position 0 is ~7x (layers 2-8) to ~160x (layers 12+) its ordinary states.
MASSIVE = 4.0
#: Where steering goes by default: resid_post at this fraction of the depth (early-to-middle, as ActAdd and CAA do;
#: on SmolLM2 it was chosen on the held-out prompts of data/real/neutral_prompts.json, :mod:`thinklens.steering.actadd_validation`).
AUTO_DEPTH = 0.3
#: Degenerate continuation: no word at all, or more than this share of its word 3-grams repeat an earlier one.
REPEAT_SHARE = 0.3
NGRAM = 3
_WORD = re.compile(r"[a-z']+")


# ---------------------------------------------------------------- vectors


def read_prefix(model: "HookedModel", prefix: str | None = "auto") -> list[int]:
    """Token ids put before every contrast text (after the BOS, where the tokenizer adds one) so that its last token
    is never at position 0.

    ``auto``: none when the tokenizer adds a BOS (the BOS sits at position 0), else :data:`NEUTRAL_PREFIX`'s ids
    (the BOS or EOS id when a tokenizer drops the newline); a string: its ids; None or "": nothing (a one-token text
    is then refused by :func:`last_states`).
    """
    tok = model.tokenizer
    if prefix is None or prefix == "":
        return []
    if prefix != "auto":
        return list(tok(prefix, add_special_tokens=False)["input_ids"])
    if adds_bos(tok):
        return []
    ids = tok(NEUTRAL_PREFIX, add_special_tokens=False)["input_ids"]
    return list(ids) if ids else [int(tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id)]


def default_site(model: "HookedModel") -> Site:
    """resid_post at :data:`AUTO_DEPTH` of the depth: layer round(0.3 * n_layers) (9 of SmolLM2's 30, 5 of Gemma-3-270M's 18).

    Example:
        >>> from types import SimpleNamespace
        >>> str(default_site(SimpleNamespace(n_layers=30, resolve_site=Site.parse)))
        'resid_post.9'
    """
    return model.resolve_site(f"resid_post.{max(0, min(model.n_layers - 1, round(model.n_layers * AUTO_DEPTH)))}")


def read_rows(model: "HookedModel", texts: Sequence[str], prefix: str | None = "auto") -> list[list[int]]:
    """The token ids each text is read from: ``[BOS] + prefix + text``."""
    pre, bos = read_prefix(model, prefix), model.tokenizer.bos_token_id
    rows = []
    for ids in prompt_ids(model.tokenizer, list(texts)):
        head = ids[:1] if ids and bos is not None and ids[0] == bos and pre else []
        rows.append(head + pre + ids[len(head):])
    return rows


@torch.no_grad()
def last_states(model: "HookedModel", texts: Sequence[str], site: Site | str, *, prefix: str | None = "auto",
                typical_norm: float | None = None, batch_size: int = 32) -> Tensor:
    """``[n, d]``: the state at ``site`` of each text's last token, read after :func:`read_prefix`.

    Refuses a read at position 0 (the attention sink) and a read state above ``MASSIVE * typical_norm``
    (default: the median norm of the batch's states at positions >= 1).
    """
    if not texts or any(not isinstance(t, str) or not t.strip() for t in texts):
        raise ThinklensError.of("contrast texts", list(texts)[:3], "non-empty strings (at least one per side)",
                                "pass e.g. pair=(' Love', ' Hate') or two non-empty sentence files")
    s = model.resolve_site(site)
    rows = read_rows(model, texts, prefix)
    out = []
    for i in range(0, len(rows), batch_size):
        chunk = rows[i:i + batch_size]
        for text, row in zip(texts[i:i + batch_size], chunk):
            if len(row) < 2:  # the last token would sit at position 0: the attention sink, not the word
                raise ThinklensError.of("contrast read position", f"{text!r} alone at position 0",
                                        "a text read after a context (position >= 1)", "keep prefix='auto' or give a prefix")
        b = model.capture(chunk, [s])
        acts = b.acts[s].float()  # [batch, pos, d], left padded: column -1 is every row's last token
        pos = model.position_ids(b.attention_mask)  # [batch, pos]
        real = b.attention_mask.bool() & (pos >= 1)
        ref = typical_norm if typical_norm is not None else float(acts[real].norm(dim=-1).median())
        last = acts[:, -1]  # [batch, d]
        norms = last.norm(dim=-1)
        for text, n in zip(texts[i:i + batch_size], norms.tolist()):
            if n > MASSIVE * ref:
                raise ThinklensError.of("contrast state", f"{text!r}: norm {n:.0f} at {s}, {n / ref:.1f}x the typical {ref:.0f}",
                                        f"an ordinary state (under {MASSIVE:g}x the typical norm; a massive activation is a sink)",
                                        "end that text with another token, or drop it")
        out.append(last.cpu())
    return torch.cat(out)


def contrast_vector(model: "HookedModel", site: Site | str, positive: str | Sequence[str], negative: str | Sequence[str],
                    *, prefix: str | None = "auto", typical_norm: float | None = None) -> SteeringVector:
    """``mean(last state | positive) - mean(last state | negative)`` at ``site``: a pair (two strings) or two sets.

    Example:
        >>> # sv = contrast_vector(model, "resid_post.6", " Love", " Hate")
        >>> # model.generate(prompts, interventions=[actadd(sv.site, sv.vector, 4.0, unit_norm=token_norm(model, prompts, sv.site))])
    """
    a = [positive] if isinstance(positive, str) else list(positive)
    b = [negative] if isinstance(negative, str) else list(negative)
    if not a or not b:
        raise ThinklensError.of("contrast sets", f"{len(a)} positive, {len(b)} negative texts", "at least one text per side",
                                "pass a pair or two non-empty sets")
    s = model.resolve_site(site)
    # one read of both sides: the massive-activation check then compares with the states of both
    states = last_states(model, [*a, *b], s, prefix=prefix, typical_norm=typical_norm).double()  # [n_a + n_b, d]
    v = states[: len(a)].mean(0) - states[len(a):].mean(0)
    return SteeringVector(str(s), v.float(), len(a), len(b), "last")


@torch.no_grad()
def token_norm(model: "HookedModel", prompts: Sequence[str], site: Site | str) -> float:
    """The unit of coefficients: the median L2 norm of the prompts' token states at ``site``, position 0 excluded
    (a median, not a mean: one massive activation would otherwise set the unit)."""
    s = model.resolve_site(site)
    b = model.capture(list(prompts), [s])
    real = b.attention_mask.bool() & (model.position_ids(b.attention_mask) >= 1)  # [batch, pos]
    if not bool(real.any()):
        raise ThinklensError.of("prompts", list(prompts)[:3], "prompts of at least two tokens", "use longer prompts")
    return float(b.acts[s].float()[real].norm(dim=-1).median())


def random_like(vector: Tensor, seed: int) -> Tensor:
    """A Gaussian direction with ``vector``'s norm, drawn from a local generator (the equal-norm random control).

    Example:
        >>> v = torch.tensor([3.0, 4.0])
        >>> float(random_like(v, 0).norm())
        5.0
    """
    g = torch.Generator().manual_seed(int(seed))
    r = torch.randn(vector.shape[-1], generator=g, dtype=torch.float64)
    return (r * (float(vector.double().norm()) / float(r.norm()))).float()


def actadd(site: Site | str, direction: Tensor, coeff: float, *, unit_norm: float, ref_norm: float | None = None) -> AddVector:
    """Add ``coeff * unit_norm * direction / ref_norm`` at every position (``ref_norm`` default ``|direction|``; the
    random arm passes the contrast vector's norm, so that an unmatched norm would show in what is added)."""
    ref = float(direction.norm()) if ref_norm is None else float(ref_norm)
    if not ref > 0:
        raise ThinklensError.of("contrast vector", "norm 0", "a non-zero vector", "use two different texts")
    return AddVector(Site.parse(site) if isinstance(site, str) else site, direction, positions=None,
                     scale=float(coeff) * float(unit_norm) / ref)


# ---------------------------------------------------------------- scoring


@lru_cache(maxsize=1)
def _vader() -> Any:
    return SentimentIntensityAnalyzer()


def vader_compound(texts: Sequence[str]) -> np.ndarray:
    """VADER's compound sentiment in [-1, 1] of each text."""
    return np.array([_vader().polarity_scores(t)["compound"] for t in texts], dtype=np.float64)


def repeated_ngram_share(text: str, n: int = NGRAM) -> float:
    """The share of a text's word n-grams (lowercased) that repeat an earlier one: ``(total - distinct) / total``; 0 when it
    has no n-gram."""
    words = _WORD.findall(text.lower())
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    return (len(grams) - len(set(grams))) / len(grams) if grams else 0.0


def is_degenerate(text: str, *, max_share: float = REPEAT_SHARE) -> bool:
    """No word at all (garbage, or an immediate stop), or a repeated 3-gram share above ``max_share``."""
    return not _WORD.search(text.lower()) or repeated_ngram_share(text) > max_share


@torch.no_grad()
def continuation_nll(model: "HookedModel", traces: Sequence["Trace"], *, batch_size: int = 16) -> np.ndarray:
    """Mean negative log-likelihood (nats per token) of each trace's generated tokens under ``model`` as it is (no
    interventions: the unsteered model); NaN for a trace that generated nothing."""
    out = np.full(len(traces), np.nan)
    for i in range(0, len(traces), batch_size):
        chunk = [(k, t) for k, t in enumerate(traces[i:i + batch_size], start=i) if t.token_ids]
        if not chunk:
            continue
        enc = model.tokenize([list(t.prompt_ids) + list(t.token_ids) for _, t in chunk])
        logp = model.forward(enc).logits[:, :-1].float().log_softmax(-1)  # [batch, pos-1, vocab]
        nll = -logp.gather(-1, enc["input_ids"][:, 1:, None])[..., 0]  # [batch, pos-1]: token j+1 given 0..j
        for row, (k, t) in enumerate(chunk):
            out[k] = float(nll[row, -len(t.token_ids):].mean())  # left padding: the continuation is the tail
    return out


@dataclass(frozen=True)
class ArmScores:
    """One arm at one coefficient: per prompt (the unit of every interval), and per continuation."""

    texts: list[str]
    """Every continuation, prompt by prompt (``samples`` each)."""
    compound: np.ndarray
    """``[prompt]`` mean VADER compound of the prompt's continuations."""
    nll: np.ndarray
    """``[prompt]`` mean NLL per token of the prompt's continuations under the unsteered model."""
    degenerate: np.ndarray
    """``[continuation]`` whether each is degenerate (:func:`is_degenerate`)."""
    samples: int = 1
    """Continuations per prompt."""


def score_arm(model: "HookedModel", prompts: Sequence[str], interventions: Sequence[AddVector], *, max_new_tokens: int,
              decoding: dict[str, Any], seed: int, samples: int = 1, batch_size: int = 64) -> ArmScores:
    """Generate ``samples`` continuations per prompt under ``interventions`` (sampled with ``seed``: every arm draws the
    same random numbers row by row) and score them; a prompt's score is the mean over its continuations (sampling
    noise, not the prompts, dominates a single continuation's sentiment)."""
    rows = [p for p in prompts for _ in range(samples)]
    trs = model.generate(rows, max_new_tokens=max_new_tokens, interventions=list(interventions), seed=seed,
                         batch_size=batch_size, **decoding)
    texts = [t.text for t in trs]
    per_prompt = lambda x: np.nanmean(np.asarray(x, dtype=np.float64).reshape(len(prompts), samples), axis=1)  # noqa: E731
    return ArmScores(texts, per_prompt(vader_compound(texts)), per_prompt(continuation_nll(model, trs)),
                     np.array([is_degenerate(t) for t in texts], dtype=bool), samples)


# ---------------------------------------------------------------- the sweep and its findings


@dataclass(frozen=True)
class Fluency:
    """The fluency bound, stated before the run: a sentiment shift that breaks the text is not a finding."""

    max_ppl_ratio: float = 2.0
    """Most perplexity of the steered continuations under the unsteered model, over the unsteered continuations'."""
    max_degenerate: float = 0.2
    """Most share of degenerate continuations (:func:`is_degenerate`)."""

    def holds(self, ppl_ratio: float, degenerate: float) -> bool:
        return bool(ppl_ratio <= self.max_ppl_ratio and degenerate <= self.max_degenerate)


def _ppl(nll: np.ndarray) -> float:
    return float(math.exp(np.nanmean(nll))) if np.isfinite(nll).any() else float("nan")


def arm_row(arm: str, coeff: float, s: ArmScores, base: ArmScores, *, added_norm: float, seed: int) -> dict[str, Any]:
    """The summary of one arm at one coefficient against the unsteered arm on the same prompts."""
    shift = paired_bootstrap(s.compound, base.compound, seed=seed)
    k, total = int(s.degenerate.sum()), int(s.degenerate.size)
    return {"arm": arm, "coeff": float(coeff), "added_norm": float(added_norm), "n": len(s.compound), "samples": s.samples,
            "compound": float(s.compound.mean()), "compound_ci": list(bootstrap_ci(s.compound, seed=seed)),
            "shift": shift.diff, "shift_ci": list(shift.ci), "shift_p": shift.p,
            "perplexity": _ppl(s.nll), "ppl_ratio": _ppl(s.nll) / _ppl(base.nll),
            "degenerate": k / total, "degenerate_ci": list(wilson(k, total)), "examples": s.texts[::s.samples][:3]}


def coefficient_finding(coeff: float, contrast: ArmScores, random: ArmScores, base: ArmScores, fluency: Fluency,
                        *, seed: int = 0, what: str = "the contrast vector") -> Finding:
    """``effect`` only where the sentiment moves with the sign of ``coeff`` against the unsteered model (paired 95%
    interval excluding 0) and beyond the equal-norm random direction (paired interval of the difference excluding 0,
    same sign), with fluency within ``fluency``."""
    up = coeff > 0
    shift = paired_bootstrap(contrast.compound, base.compound, seed=seed)
    ctrl = paired_bootstrap(random.compound, base.compound, seed=seed)
    beyond = paired_bootstrap(contrast.compound, random.compound, seed=seed)
    ppl_ratio, degenerate = _ppl(contrast.nll) / _ppl(base.nll), float(contrast.degenerate.mean())
    moved = shift.ci[0] > 0 if up else shift.ci[1] < 0
    beats = beyond.ci[0] > 0 if up else beyond.ci[1] < 0
    fluent = fluency.holds(ppl_ratio, degenerate)
    n = len(contrast.compound)
    verdict = "too few samples" if n < MIN_N else "effect" if moved and beats and fluent else "no effect"
    broken = [w for ok, w in ((ppl_ratio <= fluency.max_ppl_ratio, f"perplexity ratio {ppl_ratio:.2f} > {fluency.max_ppl_ratio:g}"),
                              (degenerate <= fluency.max_degenerate, f"degenerate {degenerate:.2f} > {fluency.max_degenerate:g}"))
              if not ok]
    why = [w for ok, w in ((moved, "the shift's interval includes 0 or has the other sign"),
                           (beats, "the random direction does as well"),
                           (fluent, f"fluency out of bounds ({', '.join(broken)})")) if not ok]
    claim = f"{what} at c={coeff:+g} {'raises' if up else 'lowers'} VADER sentiment, fluently"
    extra = {"coeff": float(coeff), "vs_random": beyond.diff, "vs_random_ci": [beyond.ci[0], beyond.ci[1]], "vs_random_p": beyond.p,
             "control_ci": [ctrl.ci[0], ctrl.ci[1]], "ppl_ratio": ppl_ratio, "degenerate": degenerate, "fluent": fluent,
             "test": "paired bootstrap intervals (95%)"}
    if why:
        extra["otherwise"] = f"c={coeff:+g}: not shown: " + "; ".join(why)
    return Finding(claim, "sentiment_shift", shift.diff, shift.ci, n, "equal-norm random direction", ctrl.diff,
                   verdict, p=shift.p, extra=extra)


@dataclass
class SweepResult:
    """Every (arm, coefficient) row, the findings (one per non-zero coefficient) and the raw scores."""

    site: str
    rows: list[dict[str, Any]]
    findings: list[Finding]
    scores: dict[tuple[str, float], ArmScores]
    unit_norm: float
    vector_norm: float


def sweep(model: "HookedModel", prompts: Sequence[str], vector: SteeringVector, coeffs: Sequence[float], *, unit_norm: float,
          seed: int, max_new_tokens: int, decoding: dict[str, Any], fluency: Fluency = Fluency(), samples: int = 1,
          batch_size: int = 64, arms: Sequence[str] = ("contrast", "random"), log: Callable[[str], None] | None = None) -> SweepResult:
    """Generate and score the unsteered model once, then the contrast vector and the equal-norm random direction
    (seeded by ``seed``) at every non-zero coefficient, all with the sampling seed ``seed``; findings need both arms
    (``arms=("random",)`` runs the control alone).

    Example:
        >>> # res = sweep(model, prompts, contrast_vector(model, "resid_post.6", " Love", " Hate"), (-4, 0, 4),
        >>> #             unit_norm=token_norm(model, prompts, "resid_post.6"), seed=0, max_new_tokens=40,
        >>> #             decoding={"do_sample": True, "temperature": 0.7, "top_p": 0.9})
    """
    site, v = Site.parse(vector.site), vector.vector
    directions = {"contrast": v, "random": random_like(v, seed)}
    unknown = set(arms) - set(directions)
    if unknown or not arms:
        raise ThinklensError.of("sweep arms", tuple(arms), "contrast and/or random", "pass arms=('contrast', 'random')")
    kw = dict(max_new_tokens=max_new_tokens, decoding=decoding, seed=seed, samples=samples, batch_size=batch_size)
    base = score_arm(model, prompts, [], **kw)
    scores: dict[tuple[str, float], ArmScores] = {("unsteered", 0.0): base}
    rows = [arm_row("unsteered", 0.0, base, base, added_norm=0.0, seed=seed)]
    findings = []
    for c in sorted({float(c) for c in coeffs if float(c) != 0.0}):
        for arm in arms:
            direction = directions[arm]
            scores[(arm, c)] = score_arm(model, prompts, [actadd(site, direction, c, unit_norm=unit_norm,
                                                                 ref_norm=float(v.norm()))], **kw)
            added = abs(c) * unit_norm * float(direction.norm()) / float(v.norm())
            rows.append(arm_row(arm, c, scores[(arm, c)], base, added_norm=added, seed=seed))
            if log:
                r = rows[-1]
                log(f"{arm:>9} c={c:+g}: compound {r['compound']:+.3f} shift {r['shift']:+.3f} "
                    f"[{r['shift_ci'][0]:+.3f}, {r['shift_ci'][1]:+.3f}] ppl x{r['ppl_ratio']:.2f} degenerate {r['degenerate']:.2f}")
        if set(arms) == set(directions):
            findings.append(coefficient_finding(c, scores[("contrast", c)], scores[("random", c)], base, fluency,
                                                seed=seed))
    return SweepResult(str(site), rows, findings, scores, float(unit_norm), float(v.norm()))
