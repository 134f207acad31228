"""Hybrid base/thinking steering, part 2: generation, evaluation and ablations.

Per token (greedy, both models read the same generated tokens, each after its own prompt in its own
format): the thinking model's and the base model's top tokens are compared. Where they agree the base
token is emitted unsteered. Where they disagree the steering fires: the thinking model's activation over
the sentence so far (mean of its positions, normalised like training) picks a category through the
clustering SAE; the base model is re-run with ``bias + v_category`` added over the last w positions at
every candidate strength; among the candidate tokens that pass the perplexity guardrail (probability >=
``min_base_prob`` under the *unsteered* base model, so steering only chooses among tokens the base model
finds plausible), the one the thinking model finds most likely is kept if the thinking model prefers it
to the base token.

Modes: ``base``, ``thinking`` (each model alone), ``hybrid``, and the ablations ``bias_only`` (the bias
vector for every category), ``random_category`` (category drawn at random), ``random_firing`` (steer at
random tokens at the rate the hybrid fired, not where the models disagree), ``random_vectors`` (random
directions with the norms of the trained vectors). The hybrid trains nothing at generation time.

Two fractions of the generated tokens are reported per mode: ``fired_fraction``, where steering was
attempted (the models disagree; random tokens for ``random_firing``), and ``changed_fraction``, where the
emitted token differs from the base model's own (:data:`TOKEN_CHOICE` says who picks it).

Example:
    >>> MODES[:3]
    ('base', 'thinking', 'hybrid')
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor

from thinklens.calibration.findings import Finding, _fmt, accuracy_finding, paired_finding, verdict_from_interval
from thinklens.calibration.stats import bootstrap_ci
from thinklens.engine.hooks import ForwardContext
from thinklens.engine.interventions import HookFn
from thinklens.engine.sites import Site
from thinklens.engine.tokenization import prompt_ids as tokenized
from thinklens.errors import ThinklensError
from thinklens.generation.decode_loop import DecodeState, Greedy, Guided, decode
from thinklens.generation.kv_batch import Decoder, eos_ids
from thinklens.steering.features import THINKING_WORDS
from thinklens.steering.hybrid import HybridConfig, HybridVectors, categorise, normalise, segment_sentences
from thinklens.steering.problems import graded

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel

MODES: tuple[str, ...] = ("base", "thinking", "hybrid", "bias_only", "random_category", "random_firing", "random_vectors")
#: Which model picks the token, in the words the results and the report use.
TOKEN_CHOICE = (
    "Where the two models' greedy tokens agree, the base model's token is emitted unsteered. Where they disagree "
    "(fired_fraction), the base model is re-run with the steering vector at every candidate strength and window, "
    "and the THINKING model picks: among the steered base model's tokens that the unsteered base model finds "
    "plausible (probability >= min_base_prob), the one the thinking model finds most likely, emitted only if the "
    "thinking model also prefers it to the base model's own token (changed_fraction); otherwise the base model's "
    "token is kept. The thinking model never emits a token the steered base model did not propose."
)
_CLOSES = (">>", ".", "?", "!")


@dataclass
class HybridResult:
    """Generations of one mode and its counters."""

    mode: str
    texts: list[str]
    n_tokens: int
    """Generated tokens in all."""
    fired: int
    """Tokens where steering was attempted."""
    changed: int
    """Tokens where the emitted token differs from the base model's own."""


def _open_sentence_start(tokens: list[str]) -> int | None:
    """Index (in ``tokens``) where the still-open sentence starts, or None if the last token closed one."""
    spans = segment_sentences(tokens)
    if not spans or spans[-1][1] != len(tokens):
        return None
    last = tokens[-1].strip()

    if last in THINKING_WORDS or last == "</think>" or last.endswith(_CLOSES):
        return None
    return spans[-1][0]


def _random_vectors(hv: HybridVectors, seed: int) -> Tensor:
    """Random directions with the norms of ``bias + v_c`` (one per category), from a local generator."""
    g = torch.Generator().manual_seed(seed + 7919)
    full = hv.bias[None] + hv.vectors  # [category, d]
    r = torch.randn(full.shape, generator=g)
    return r / r.norm(dim=-1, keepdim=True) * full.norm(dim=-1, keepdim=True)


def hybrid_generate(base: "HookedModel", thinking: "HookedModel", hv: HybridVectors | None, prompts: Sequence[str],
                    cfg: HybridConfig, *, mode: str = "hybrid", max_new_tokens: int = 64, fire_rate: float = 0.0,
                    batch_size: int = 32, thinking_prompts: Sequence[str] | None = None) -> HybridResult:
    """Greedy generation of ``prompts`` in one of :data:`MODES` (batched, KV-cached: the core decode loop
    with the thinking model in lockstep; a steered candidate re-runs only its window from the cache).

    ``prompts`` are the base model's; ``thinking_prompts`` the same problems in the thinking model's format
    (default: ``prompts``)."""
    if mode not in MODES:
        raise ThinklensError.of("hybrid mode", mode, f"one of {', '.join(MODES)}", "pass mode='hybrid'")
    if mode not in ("base", "thinking") and hv is None:
        raise ThinklensError.of("hybrid vectors", None, "trained vectors for a steered mode", "run train_hybrid_vectors first")
    thinking_prompts = prompts if thinking_prompts is None else thinking_prompts
    if len(thinking_prompts) != len(prompts):
        raise ThinklensError.of("thinking prompts", len(thinking_prompts), f"{len(prompts)} (one per base prompt)",
                                "render the same problems for both models")
    texts, n_tok, fired, changed = [], 0, 0, 0
    for i in range(0, len(prompts), batch_size):
        r = _generate_chunk(base, thinking, hv, list(prompts[i:i + batch_size]), list(thinking_prompts[i:i + batch_size]),
                            cfg, mode, max_new_tokens, fire_rate, seed=cfg.seed + i)
        texts += r.texts
        n_tok, fired, changed = n_tok + r.n_tokens, fired + r.fired, changed + r.changed
    return HybridResult(mode, texts, n_tok, fired, changed)


class HybridChoice(Guided):
    """The base model's token, unless the thinking model (the guide, reading the same tokens) disagrees
    and a steered candidate passes the guardrail and is preferred by the thinking model (module docstring)."""

    def __init__(self, base: Decoder, thinking: Decoder, hv: HybridVectors, cfg: HybridConfig, mode: str,
                 fire_rate: float, seed: int):
        super().__init__(thinking)
        self.base, self.hv, self.cfg, self.mode, self.fire_rate = base, hv, cfg, mode, fire_rate
        self.site = base.model.resolve_site(cfg.site)
        thinking.watch([self.site])  # the thinking model's state at every position it reads
        self.g = torch.Generator().manual_seed(seed)
        self.rand_vecs = _random_vectors(hv, cfg.seed) if mode == "random_vectors" else None
        self.min_lp = math.log(cfg.min_base_prob)
        self.fired = self.changed = 0
        self.combine = self._combine

    def _sentence_state(self, r: int, generated: list[int], t: int) -> Tensor:
        """Mean thinking state over the still-open sentence (else the last position) of row ``r``: ``[d]``."""
        tok = self.base.model.tokenizer
        st = _open_sentence_start([tok.decode([i]) for i in generated])
        states = self.guide.states[self.site]  # step k -> state at the input whose next token is generated[k]
        steps = [t] if st is None else list(range(st + 1, t + 1))
        return torch.stack([states[k][r] for k in steps]).float().mean(0)

    def _combine(self, b_logits: Tensor, t_logits: Tensor, state: DecodeState) -> Tensor:
        hv, cfg = self.hv, self.cfg
        t_lp = torch.log_softmax(t_logits.float(), -1)  # [batch, vocab]
        b_tok = b_logits.argmax(-1)
        nxt = b_tok.clone()
        live = (~state.done).nonzero()[:, 0]
        if self.mode == "random_firing":
            fire = torch.zeros(len(b_tok), dtype=torch.bool)
            fire[live] = torch.rand(len(live), generator=self.g) < self.fire_rate
        else:
            fire = (t_lp.argmax(-1) != b_tok).cpu() & ~state.done
        rows = torch.nonzero(fire).flatten().tolist()
        if not rows:
            return nxt
        self.fired += len(rows)
        vecs = []
        for r in rows:
            x = self._sentence_state(r, [int(x[r]) for x in state.tokens], state.t)
            c = int(categorise(hv.sae, normalise(x[None], hv.mean))[0])
            if self.mode == "random_category":
                c = int(torch.randint(len(hv.vectors), (1,), generator=self.g))
            if self.mode == "bias_only":
                vecs.append(hv.bias)
            elif self.mode == "random_vectors":
                vecs.append(self.rand_vecs[c])
            else:
                vecs.append(hv.bias + hv.vectors[c])
        new = _steer_candidates(self.base, rows, torch.stack(vecs), cfg, self.site)  # [rows, cands]
        b_lp = torch.log_softmax(b_logits[rows].float(), -1)
        for j, r in enumerate(rows):
            ok = [int(t) for t in new[j] if float(b_lp[j, int(t)]) >= self.min_lp]
            if not ok:
                continue
            best = max(ok, key=lambda t: float(t_lp[r, t]))
            if float(t_lp[r, best]) > float(t_lp[r, int(b_tok[r])]):
                nxt[r] = best
                self.changed += int(best != int(b_tok[r]))
        return nxt


def _generate_chunk(base, thinking, hv, prompts, thinking_prompts, cfg: HybridConfig, mode, max_new_tokens, fire_rate,
                    seed) -> HybridResult:
    tok = base.tokenizer
    eos = eos_ids(base) | eos_ids(thinking)  # a row ends where either model would end it
    prompt_ids, thinking_ids = tokenized(tok, prompts), tokenized(thinking.tokenizer, thinking_prompts)  # one BOS each
    fired = changed = 0
    if mode in ("base", "thinking"):
        out = decode(Decoder(base, prompt_ids) if mode == "base" else Decoder(thinking, thinking_ids), Greedy(),
                     max_new_tokens=max_new_tokens, eos=eos)
    else:
        dec = Decoder(base, prompt_ids)
        choice = HybridChoice(dec, Decoder(thinking, thinking_ids), hv, cfg, mode, fire_rate, seed)
        out = decode(dec, choice, max_new_tokens=max_new_tokens, eos=eos)
        fired, changed = choice.fired, choice.changed
    rows = [out.row(r) for r in range(len(prompts))]
    texts = [tok.decode([t for t in row if t not in eos], skip_special_tokens=True) for row in rows]
    return HybridResult(mode, texts, sum(len(row) for row in rows), fired, changed)


def _steered_windows(dec: Decoder, rows: list[int], vecs: Tensor, cfg: HybridConfig, site: Site):
    """The steered base model's next-token logits of every (row, strength), one window at a time (``cfg.windows``
    order): yields ``[rows, strengths, vocab]``. The one place the vectors enter the base model at generation.

    The vector is added over the last w positions; the positions before are unchanged, so each
    candidate forks the row's cache, rolls back w positions and re-runs only those.
    """
    base, n_s = dec.model, len(cfg.strengths)
    scale = torch.tensor(cfg.strengths).repeat(len(rows))  # [rows*strengths]
    add = vecs.repeat_interleave(n_s, 0) * scale[:, None]  # [rows*strengths, d]

    def fn(act: Tensor, ctx: ForwardContext) -> Tensor:
        m = ctx.token_mask[..., None].to(act.dtype)  # [rows*strengths, w, 1]: the window's real tokens
        return act + m * add[:, None, :].to(act.device, act.dtype)

    for w in cfg.windows:
        fork = dec.fork(rows, repeats=n_s)
        w = min(w, fork.length)
        ids, mask = fork.ids[:, -w:], fork.mask[:, -w:]
        fork.rollback(w)
        with base.intervene([HookFn(site, fn)]):
            logits = fork.extend(ids, mask)  # [rows*strengths, vocab]
        yield logits.view(len(rows), n_s, -1)


def _steer_candidates(dec: Decoder, rows: list[int], vecs: Tensor, cfg: HybridConfig, site: Site) -> Tensor:
    """Base model's top token for every (row, window, strength), windows outer: ``[rows, cands]``."""
    return torch.cat([logits.argmax(-1) for logits in _steered_windows(dec, rows, vecs, cfg, site)], 1)


#: The least :func:`steering_reach` a method must show for a null's "no effect" to count: the RMS over the vocabulary
#: of the change in the base model's (centred) next-token log-probabilities at the largest strength, mean over
#: prompts, categories and windows, in nats. Vectors that change nothing score exactly 0 and pass a null only
#: vacuously. Measured on tiny-cot-short at a prompt's end: 0.11 after 2 training iterations, 0.38 after
#: 10, 0.84 after 50 (the total variation there is 1e-4 at most: the next token is all but certain, so the log-prob
#: shift is the measure that sees the vectors act).
MIN_REACH = 0.01


def steering_reach(base: "HookedModel", hv: HybridVectors, prompts: Sequence[str], cfg: HybridConfig, *,
                   n_prompts: int = 16) -> dict[str, Any]:
    """How far the vectors move the base model, through the generation's own steering path (:func:`_steered_windows`):
    on the first ``n_prompts`` prompts, the base model's next-token distribution at the prompt's end steered with
    ``bias + v_c`` of every category that has sentences, at every strength and window, against the same path with
    a zero vector. ``shift``: the RMS over the vocabulary of the change in centred log-probabilities at the largest
    strength (mean over prompts, categories and windows; nats); ``tv``: the total variation distance there;
    ``top_changed``: the fraction of (prompt, category) whose top token some candidate changes. Vectors that change
    nothing (untrained, zero, or a hook that adds nothing) give 0: a method that cannot move the base passes a null
    only vacuously, so the hybrid's null requires ``shift >= MIN_REACH``.

    Example:
        >>> # steering_reach(base, hv, prompts, HybridConfig())  ->  {"shift": 0.84, "tv": 1e-4, "top_changed": 0.0, ...}
    """
    prompts = list(prompts)[:n_prompts]
    cats = [c for c, k in enumerate(hv.counts) if k > 0] or list(range(len(hv.vectors)))
    site = base.resolve_site(cfg.site)
    top = max(cfg.strengths, key=abs)
    k = cfg.strengths.index(top)
    shifts, tvs, changed = [], [], 0
    with torch.no_grad():
        dec = Decoder(base, tokenized(base.tokenizer, prompts))
        dec.prefill()
        rows = list(range(len(prompts)))
        # the reference: the same path and batch shapes with a zero vector (so that nothing added is exactly nothing)
        ref = [lg.float().log_softmax(-1)  # per window [rows, strengths, vocab]
               for lg in _steered_windows(dec, rows, torch.zeros_like(hv.bias)[None].expand(len(rows), -1), cfg, site)]
        for c in cats:
            vecs = (hv.bias + hv.vectors[c])[None].expand(len(rows), -1)  # [rows, d]
            moved = torch.zeros(len(rows), dtype=torch.bool)
            for w, lg in enumerate(_steered_windows(dec, rows, vecs, cfg, site)):
                lp = lg.float().log_softmax(-1)  # [rows, strengths, vocab]
                d = lp[:, k] - ref[w][:, k]  # [rows, vocab]
                shifts.append((d - d.mean(-1, keepdim=True)).pow(2).mean(-1).sqrt())  # [rows]
                tvs.append(0.5 * (lp[:, k].exp() - ref[w][:, k].exp()).abs().sum(-1))  # [rows]
                moved |= (lp.argmax(-1) != ref[w].argmax(-1)).any(-1).cpu()
            changed += int(moved.sum())
    shift = float(torch.cat(shifts).mean()) if shifts else 0.0
    return {"shift": shift, "tv": float(torch.cat(tvs).mean()) if tvs else 0.0,
            "top_changed": changed / max(1, len(rows) * len(cats)), "n_prompts": len(prompts), "categories": len(cats),
            "strength": top, "min_reach": MIN_REACH, "moves_the_base": shift >= MIN_REACH}


def evaluate_hybrid(base: "HookedModel", thinking: "HookedModel", hv: HybridVectors | None, prompts: Sequence[str],
                    answers: Sequence[str | int], cfg: HybridConfig, *, modes: Sequence[str] = MODES, max_new_tokens: int = 64,
                    log: Any = None, done: dict[str, dict[str, Any]] | None = None,
                    on_mode: Any = None, thinking_prompts: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """Accuracy (:func:`thinklens.data.answers.is_correct` against ``answers``) with every problem's outcome
    (``correct``, for the paired tests) and text (``texts``), the fractions of tokens where steering fired and where the token changed,
    and the fraction of the base->thinking gap recovered per mode.

    ``done``: results of modes already evaluated (a resumed run), not recomputed; ``on_mode(mode, row)``
    is called after each new mode (to record it). ``hv`` may be a zero-argument callable returning the
    vectors, called only when a steered mode still has to run.
    """
    out: dict[str, dict[str, Any]] = {}
    order = [m for m in MODES if m in modes]
    if "random_firing" in order and "hybrid" not in order:
        order.insert(order.index("random_firing"), "hybrid")  # its firing rate is the hybrid's
    for m in order:
        if done and m in done:
            out[m] = {k: v for k, v in done[m].items() if k != "gap_recovered"}
            continue
        rate = out["hybrid"]["fired_fraction"] if m == "random_firing" else 0.0
        if callable(hv) and m not in ("base", "thinking"):
            hv = hv()
        r = hybrid_generate(base, thinking, None if callable(hv) else hv, prompts, cfg, mode=m,
                            max_new_tokens=max_new_tokens, fire_rate=rate, thinking_prompts=thinking_prompts)
        correct = [bool(x) for x in graded(r.texts, answers)]  # per problem: the unit of the paired tests
        out[m] = {"accuracy": sum(correct) / max(1, len(correct)), "tokens": r.n_tokens,
                  "fired_fraction": r.fired / max(1, r.n_tokens), "changed_fraction": r.changed / max(1, r.n_tokens),
                  "samples": r.texts[:3], "correct": correct, "texts": list(r.texts)}
        if on_mode:
            on_mode(m, out[m])
        if log:
            log(f"{m}: accuracy {out[m]['accuracy']:.3f} fired {out[m]['fired_fraction']:.3f} "
                f"changed {out[m]['changed_fraction']:.3f}")
    if "base" in out and "thinking" in out:
        gap = out["thinking"]["accuracy"] - out["base"]["accuracy"]
        for row in out.values():
            row["gap_recovered"] = (row["accuracy"] - out["base"]["accuracy"]) / gap if gap > 0 else None
    return out


#: What each ablation's finding says when the hybrid does not beat it.
CONTROL_WORDS: dict[str, str] = {
    "bias_only": "the bias vector alone does as well",
    "random_category": "a random category does as well",
    "random_firing": "steering at random tokens does as well",
    "random_vectors": "random vectors do as well",
}


def _gap_codes(method: Sequence[bool], base: Sequence[bool], thinking: Sequence[bool]) -> Any:
    """One code per problem, ``method + 2 base + 4 thinking``, so a bootstrap over problems resamples the three
    outcomes of a problem together (:func:`gap_recovered_of`)."""
    return (np.asarray(method, dtype=int) + 2 * np.asarray(base, dtype=int) + 4 * np.asarray(thinking, dtype=int)).astype(float)


def gap_recovered_of(codes: Any, axis: int = -1) -> Any:
    """Gap recovered ``(acc_method - acc_base) / (acc_thinking - acc_base)`` of coded problems (:func:`_gap_codes`),
    along ``axis``; 0 where a resample has no gap (the thinking model no better than the base).

    Example:
        >>> import numpy as np
        >>> float(gap_recovered_of(_gap_codes([1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 0, 0])))
        0.5
    """
    c = np.asarray(codes, dtype=int)
    m, b, t = (c % 2).mean(axis), ((c // 2) % 2).mean(axis), ((c // 4) % 2).mean(axis)
    gap = t - b
    return np.where(gap > 0, (m - b) / np.where(gap > 0, gap, 1.0), 0.0)


def hybrid_findings(rows: dict[str, dict[str, Any]], *, seed: int = 0, own_style: dict[str, Any] | None = None) -> list[Any]:
    """Findings of one seed's modes (each row with its per-problem ``correct``), on the same problems:

    - the thinking model beats the base (the gap exists; McNemar);
    - the hybrid raises accuracy over the base (McNemar), and the gap it recovers, with its bootstrap interval over
      problems;
    - the hybrid beats every ablation (``bias_only``, ``random_category``, ``random_firing``, ``random_vectors``;
      McNemar on the same problems), each with both gaps recovered and their intervals in ``extra``;
    - with ``own_style`` (the base model on its own prompt format, the job's ``base_own_style`` row): the hybrid
      beats it (McNemar when the row has its per-problem ``correct``, else Wilson intervals).

    One rule: the hybrid's own claims (accuracy over the base, gap recovered) are ``effect`` only when the
    hybrid also beats every control the run has (each ablation and ``own_style``); otherwise ``no effect``, with
    ``extra["otherwise"]`` naming the controls not beaten and their accuracies (``controls_not_beaten``). Accuracy
    is the claim itself, so its harm bound is the claim's; the job measures no other harm.

    Example:
        >>> r = {"base": {"correct": [0] * 30}, "thinking": {"correct": [1] * 30}, "hybrid": {"correct": [1] * 20 + [0] * 10}}
        >>> [f.verdict for f in hybrid_findings(r)]
        ['effect', 'effect', 'effect']
    """
    have = {m: np.asarray(r["correct"], dtype=float) for m, r in rows.items() if r.get("correct") is not None}
    if "base" not in have or "thinking" not in have:
        return []
    base, thinking = have["base"], have["thinking"]
    findings = [with_extra(paired_finding("the thinking model beats the base model (there is a gap to recover)",
                                                 thinking, base, control="base model", statistic="accuracy", binary=True,
                                                 seed=seed), otherwise="the thinking model is no better than the base")]

    def gap(mode: str) -> tuple[float, tuple[float, float]]:
        codes = _gap_codes(have[mode], base, thinking)
        return float(gap_recovered_of(codes)), bootstrap_ci(codes, stat=gap_recovered_of, seed=seed)

    if "hybrid" not in have:
        return findings
    hybrid = have["hybrid"]
    acc = paired_finding("the hybrid raises accuracy over the base model", hybrid, base, control="base model",
                         statistic="accuracy", binary=True, seed=seed)
    findings.append(with_extra(acc, otherwise="the hybrid is no more accurate than the base model"))
    g, gci = gap("hybrid")
    findings.append(Finding("the hybrid recovers part of the base-to-thinking gap", "gap recovered", g, gci, int(hybrid.size),
                            "no recovery", 0.0, verdict_from_interval(gci, 0.0, n=int(hybrid.size)),
                            extra={"interval": "bootstrap over problems", "fired_fraction": rows["hybrid"].get("fired_fraction"),
                                   "otherwise": "the hybrid recovers none of the gap"}))
    controls = []
    for mode, words in CONTROL_WORDS.items():
        if mode not in have:
            continue
        f = paired_finding(f"the hybrid beats its ablation {mode}", hybrid, have[mode], control=mode, statistic="accuracy",
                           binary=True, seed=seed)
        cg, cgci = gap(mode)
        controls.append(with_extra(f, otherwise=words, gap_recovered=g, gap_recovered_ci=list(gci),
                                   control_gap_recovered=cg, control_gap_recovered_ci=list(cgci)))
    if own_style is not None and own_style.get("accuracy") is not None:
        controls.append(_own_style_finding(hybrid, own_style, seed))
    findings += controls
    return _claims_beat_every_control(findings, controls, float(hybrid.mean()))


#: The base model on its own prompt format: a control the hybrid must beat (the base in the thinking model's format
#: may simply be handicapped by a format it was not trained on).
OWN_STYLE = "base model in its own prompt format"


def _own_style_finding(hybrid: Any, own: dict[str, Any], seed: int) -> Any:
    """The hybrid against the base model on its own prompt format, on the same problems."""
    claim = "the hybrid beats the base model in its own prompt format"
    words = "the base model in its own prompt format does as well"
    correct = own.get("correct")
    if correct is not None and len(correct) == len(hybrid):
        f = paired_finding(claim, hybrid, [float(x) for x in correct], control=OWN_STYLE, statistic="accuracy",
                           binary=True, seed=seed)
    else:  # a run recorded before the row kept its outcomes: unpaired, conservative
        n = len(hybrid)
        f = accuracy_finding(claim, int(round(float(hybrid.sum()))), n, control=OWN_STYLE,
                             control_k=int(round(float(own["accuracy"]) * n)), control_n=n)
    return with_extra(f, otherwise=words)


def _claims_beat_every_control(findings: list[Any], controls: list[Any], hybrid_accuracy: float) -> list[Any]:
    """The hybrid's claims (accuracy over the base, gap recovered) stay ``effect`` only if every control is beaten."""
    lost = [c for c in controls if c.verdict != "effect"]
    if not lost:
        return findings
    why = ", ".join(f"{c.control} {_fmt(c.control_value)} ({c.verdict})" for c in lost)
    out = []
    for f in findings:
        if any(f is c for c in controls) or f.verdict != "effect" or not f.claim.startswith(("the hybrid raises", "the hybrid recovers")):
            out.append(f)
            continue
        out.append(dataclasses.replace(f, verdict="no effect", extra={
            **f.extra, "verdict_before_controls": f.verdict, "controls_not_beaten": [c.control for c in lost],
            "otherwise": f"not shown: the hybrid ({_fmt(hybrid_accuracy)}) does not beat every control it ran: {why}"}))
    return out


def with_extra(f: Any, **extra: Any) -> Any:
    """``f`` (a frozen :class:`thinklens.calibration.findings.Finding`) with ``extra`` added to its ``extra``."""
    return dataclasses.replace(f, extra={**f.extra, **extra})
