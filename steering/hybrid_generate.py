"""Hybrid base/thinking steering, part 2: generation, evaluation and ablations.

Per token (greedy, both models read the same text): the thinking model's and the base model's top
tokens are compared. Where they agree the base token is emitted unsteered. Where they disagree the
steering fires: the thinking model's activation over the sentence so far (mean of its positions,
normalised like training) picks a category through the clustering SAE; the base model is re-run with
``bias + v_category`` added over the last w positions at every candidate strength; among the candidate
tokens that pass the perplexity guardrail (probability >= ``min_base_prob`` under the *unsteered* base
model, so steering only chooses among tokens the base model finds plausible), the one the thinking model
finds most likely is kept if the thinking model prefers it to the base token.

Modes: ``base``, ``thinking`` (each model alone), ``hybrid``, and the ablations ``bias_only`` (the bias
vector for every category), ``random_category`` (category drawn at random), ``random_firing`` (steer at
random tokens at the rate the hybrid fired, not where the models disagree), ``random_vectors`` (random
directions with the norms of the trained vectors). The hybrid trains nothing at generation time.

Example:
    >>> MODES[:3]
    ('base', 'thinking', 'hybrid')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from steering.hybrid import HybridConfig, HybridVectors, categorise, normalise, segment_sentences
from thinklens.answers import parse_answer
from thinklens.errors import ThinklensError
from thinklens.hooks import ForwardContext
from thinklens.interventions import HookFn
from thinklens.sites import Site

if TYPE_CHECKING:
    from thinklens.model import HookedModel

MODES: tuple[str, ...] = ("base", "thinking", "hybrid", "bias_only", "random_category", "random_firing", "random_vectors")
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


def _left_pad(seqs: Sequence[list[int]], pad: int) -> dict[str, Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)  # [batch, pos]
    mask = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        ids[i, width - len(s):] = torch.tensor(s)
        mask[i, width - len(s):] = 1
    return {"input_ids": ids, "attention_mask": mask}


def _open_sentence_start(tokens: list[str]) -> int | None:
    """Index (in ``tokens``) where the still-open sentence starts, or None if the last token closed one."""
    spans = segment_sentences(tokens)
    if not spans or spans[-1][1] != len(tokens):
        return None
    last = tokens[-1].strip()
    from steering.features import THINKING_WORDS

    if last in THINKING_WORDS or last == "</think>" or last.endswith(_CLOSES):
        return None
    return spans[-1][0]


def _random_vectors(hv: HybridVectors, seed: int) -> Tensor:
    """Random directions with the norms of ``bias + v_c`` (one per category), from a local generator."""
    g = torch.Generator().manual_seed(seed + 7919)
    full = hv.bias[None] + hv.vectors  # [category, d]
    r = torch.randn(full.shape, generator=g)
    return r / r.norm(dim=-1, keepdim=True) * full.norm(dim=-1, keepdim=True)


@torch.no_grad()
def hybrid_generate(base: "HookedModel", thinking: "HookedModel", hv: HybridVectors | None, prompts: Sequence[str],
                    cfg: HybridConfig, *, mode: str = "hybrid", max_new_tokens: int = 64, fire_rate: float = 0.0,
                    batch_size: int = 32) -> HybridResult:
    """Greedy generation of ``prompts`` in one of :data:`MODES` (batched; no KV cache: each step re-reads
    the text, which the windows need anyway)."""
    if mode not in MODES:
        raise ThinklensError.of("hybrid mode", mode, f"one of {', '.join(MODES)}", "pass mode='hybrid'")
    if mode not in ("base", "thinking") and hv is None:
        raise ThinklensError.of("hybrid vectors", None, "trained vectors for a steered mode", "run train_hybrid_vectors first")
    texts, n_tok, fired, changed = [], 0, 0, 0
    for i in range(0, len(prompts), batch_size):
        r = _generate_chunk(base, thinking, hv, list(prompts[i:i + batch_size]), cfg, mode, max_new_tokens, fire_rate, seed=cfg.seed + i)
        texts += r.texts
        n_tok, fired, changed = n_tok + r.n_tokens, fired + r.fired, changed + r.changed
    return HybridResult(mode, texts, n_tok, fired, changed)


def _generate_chunk(base, thinking, hv, prompts, cfg: HybridConfig, mode, max_new_tokens, fire_rate, seed) -> HybridResult:
    tok = base.tokenizer
    site = base.resolve_site(cfg.site)
    logits_site = Site("logits")
    pad, eos = tok.pad_token_id, tok.eos_token_id
    prompt_ids = [list(ids) for ids in tok(prompts)["input_ids"]]
    gen: list[list[int]] = [[] for _ in prompts]
    done = [False] * len(prompts)
    g = torch.Generator().manual_seed(seed)
    rand_vecs = _random_vectors(hv, cfg.seed) if mode == "random_vectors" else None
    cands = [(s, w) for w in cfg.windows for s in cfg.strengths]
    fired = changed = 0
    min_lp = math.log(cfg.min_base_prob)
    for _ in range(max_new_tokens):
        live = [i for i, d in enumerate(done) if not d]
        if not live:
            break
        enc = _left_pad([prompt_ids[i] + gen[i] for i in live], pad)
        width = enc["input_ids"].shape[1]
        b_logits = base.forward_with(enc)[:, -1].float()  # [live, vocab]
        if mode == "base":
            nxt = b_logits.argmax(-1)
        else:
            tb = thinking.capture(enc, [site, logits_site])
            t_lp = torch.log_softmax(tb.acts[logits_site][:, -1].float(), -1)  # [live, vocab]
            nxt = t_lp.argmax(-1) if mode == "thinking" else b_logits.argmax(-1)
        if mode not in ("base", "thinking"):
            b_tok = b_logits.argmax(-1)
            if mode == "random_firing":
                fire = torch.rand(len(live), generator=g) < fire_rate
            else:
                fire = t_lp.argmax(-1) != b_tok
            rows = torch.nonzero(fire).flatten().tolist()
            if rows:
                fired += len(rows)
                vecs = []
                for r in rows:
                    i = live[r]
                    toks = [tok.decode([t]) for t in gen[i]]
                    st = _open_sentence_start(toks)
                    start = width - 1 if st is None else width - len(gen[i]) + st
                    x = tb.acts[site][r, start:width].float().mean(0)  # [d]: the sentence so far
                    c = int(categorise(hv.sae, normalise(x[None], hv.mean))[0])
                    if mode == "random_category":
                        c = int(torch.randint(len(hv.vectors), (1,), generator=g))
                    if mode == "bias_only":
                        vecs.append(hv.bias)
                    elif mode == "random_vectors":
                        vecs.append(rand_vecs[c])
                    else:
                        vecs.append(hv.bias + hv.vectors[c])
                nxt = nxt.clone()
                new = _steer_candidates(base, enc, rows, torch.stack(vecs), cands, site)  # [rows, cands]
                b_lp = torch.log_softmax(b_logits[rows], -1)
                for j, r in enumerate(rows):
                    ok = [int(t) for t in new[j] if float(b_lp[j, int(t)]) >= min_lp]
                    if not ok:
                        continue
                    best = max(ok, key=lambda t: float(t_lp[r, t]))
                    if float(t_lp[r, best]) > float(t_lp[r, int(b_tok[r])]):
                        nxt[r] = best
                        changed += int(best != int(b_tok[r]))
        for r, i in enumerate(live):
            t = int(nxt[r])
            gen[i].append(t)
            if t == eos:
                done[i] = True
    texts = [tok.decode([t for t in g_ if t != eos], skip_special_tokens=True) for g_ in gen]
    return HybridResult(mode, texts, sum(len(x) for x in gen), fired, changed)


def _steer_candidates(base: "HookedModel", enc: dict[str, Tensor], rows: list[int], vecs: Tensor,
                      cands: list[tuple[float, int]], site: Site) -> Tensor:
    """Base model's top token for every (row, strength, window): ``[rows, cands]``."""
    n = len(cands)
    ids = enc["input_ids"][rows].repeat_interleave(n, 0)  # [rows*cands, pos]
    mask = enc["attention_mask"][rows].repeat_interleave(n, 0)
    width = ids.shape[1]
    scale = torch.tensor([s for s, _ in cands]).repeat(len(rows))  # [rows*cands]
    win = torch.tensor([w for _, w in cands]).repeat(len(rows))
    add = vecs.repeat_interleave(n, 0) * scale[:, None]  # [rows*cands, d]
    cols = torch.arange(width)[None, :] >= (width - win)[:, None]  # [rows*cands, pos]: the last w positions

    def fn(act: Tensor, ctx: ForwardContext) -> Tensor:
        m = (cols.to(act.device) & ctx.token_mask)[..., None].to(act.dtype)
        return act + m * add[:, None, :].to(act.device, act.dtype)

    logits = base.forward_with({"input_ids": ids, "attention_mask": mask}, [HookFn(site, fn)])[:, -1]
    return logits.argmax(-1).view(len(rows), n)


def accuracy(texts: Sequence[str], answers: Sequence[int]) -> float:
    """Fraction of texts whose parsed answer is right."""
    return sum(parse_answer(t) == a for t, a in zip(texts, answers)) / max(1, len(answers))


def evaluate_hybrid(base: "HookedModel", thinking: "HookedModel", hv: HybridVectors | None, prompts: Sequence[str],
                    answers: Sequence[int], cfg: HybridConfig, *, modes: Sequence[str] = MODES, max_new_tokens: int = 64,
                    log: Any = None, done: dict[str, dict[str, Any]] | None = None,
                    on_mode: Any = None) -> dict[str, dict[str, Any]]:
    """Accuracy, fraction of tokens steered and fraction of the base->thinking gap recovered per mode.

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
                            max_new_tokens=max_new_tokens, fire_rate=rate)
        out[m] = {"accuracy": accuracy(r.texts, answers), "tokens": r.n_tokens, "fired_fraction": r.fired / max(1, r.n_tokens),
                  "changed_fraction": r.changed / max(1, r.n_tokens), "samples": r.texts[:3]}
        if on_mode:
            on_mode(m, out[m])
        if log:
            log(f"{m}: accuracy {out[m]['accuracy']:.3f} fired {out[m]['fired_fraction']:.3f}")
    if "base" in out and "thinking" in out:
        gap = out["thinking"]["accuracy"] - out["base"]["accuracy"]
        for row in out.values():
            row["gap_recovered"] = (row["accuracy"] - out["base"]["accuracy"]) / gap if gap > 0 else None
    return out
