"""Hybrid base/thinking steering (Venhoff et al., arXiv 2510.07364), part 1: behaviours and vectors.

1. Sentences of the thinking model's traces. On the zoo a "sentence" is one ``<< a op b = c >>`` step
   or one reflection/marker span (``hmm``, ``wait``, ``so``, ``</think>``, ``#### 36``); elsewhere the
   text is split after ``. ? ! newline``, and only the reasoning (inside the prompt format's thinking
   span) is segmented when the job passes it. A sentence's activation is the mean of the thinking
   model's site activation over the sentence's token positions, centered (training mean) and
   L2-normalised.
2. Behaviours: a top-k SAE (k=3, sae-lens's ``TopKTrainingSAE`` trained by its ``SAETrainer``) with a
   few latents used as clustering; a sentence's category is its argmax latent.
3. One steering vector per category for the *base* model, trained by gradient descent (Adam, lr 1e-2,
   50 iterations) to raise the base model's likelihood of that category's sentences, added at the
   positions that produce the sentence's tokens; plus a general bias vector trained on all sentences
   first (category vectors are trained on top of it). Vectors are parametrised in units of the site's
   per-coordinate RMS, so the paper's lr means the same relative step on any residual scale. The base
   model reads each sentence after its own prompt (its own format) and the trace before the sentence.

The two models may differ in prompt format, width and chat template, not in vocabulary: both read the
same generated token ids (:func:`check_pair`, before anything is generated).

Generation and the ablations are in :mod:`thinklens.steering.hybrid_generate`.

Example:
    >>> segment_sentences(["hmm", "<<", "1", "+", "2", "=", "3", ">>", "wait", "</think>", "so", "####", "3"])
    [(0, 1), (1, 8), (8, 9), (9, 10), (10, 11), (11, 13)]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from thinklens.engine.hooks import ForwardContext
from thinklens.engine.interventions import HookFn
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError, opt
from thinklens.steering.configs import HybridConfig
from thinklens.steering.features import THINKING_WORDS
from thinklens.steering.sae import quiet_training

if TYPE_CHECKING:
    from thinklens.engine.model import HookedModel
    from thinklens.generation.trace import Trace

_STARTS = {"<<", "</think>", "####", *THINKING_WORDS}
_ENDS = (">>", ".", "?", "!", "\n")


def segment_sentences(tokens: Sequence[str]) -> list[tuple[int, int]]:
    """``[start, end)`` token spans: a new sentence starts at ``<<``, a reflection word, ``</think>`` or
    ``####``, and after ``>>``, a reflection word or sentence punctuation. Special tokens (``<eos>``,
    ``<pad>``) are left out."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for i, raw in enumerate(tokens):
        t = raw.strip()
        special = t.startswith("<") and t.endswith(">") and t not in ("<<", ">>", "</think>")
        if not t or special or (t in _STARTS and start is not None):
            if start is not None:
                spans.append((start, i))
                start = None
            if not t or special:
                continue
        if start is None:
            start = i
        if t in THINKING_WORDS or t == "</think>" or t.endswith(_ENDS):
            spans.append((start, i + 1))
            start = None
    if start is not None:
        spans.append((start, len(tokens)))
    return spans


@dataclass
class Sentences:
    """Sentences of thinking traces: where they are, their activations and (once clustered) categories."""

    seqs: list[list[int]]
    """Full token ids (prompt + generated) of each trace."""
    spans: list[tuple[int, int, int]]
    """``(trace, start, end)`` absolute token positions of each sentence in ``seqs[trace]``."""
    texts: list[str]
    """Each sentence's text."""
    acts: Tensor
    """``[sentence, d]`` centered, L2-normalised mean activations."""
    mean: Tensor
    """``[d]`` the training mean removed before normalising (reused at generation time)."""
    categories: Tensor | None = None
    """``[sentence]`` argmax latent of the clustering SAE."""
    extra: dict[str, Any] = field(default_factory=dict)
    prompt_lens: list[int] = field(default_factory=list)
    """Prompt tokens at the start of each of ``seqs``."""

    def with_prompts(self, prompts: Sequence[Sequence[int]]) -> "Sentences":
        """The same sentences after other prompts (one per trace, e.g. the base model's own format): every
        trace's generated tokens follow its new prompt and the spans move with them."""
        if len(prompts) != len(self.seqs):
            raise ThinklensError.of("prompts", len(prompts), f"{len(self.seqs)} (one per trace)", "pass one prompt per trace")
        seqs = [list(pr) + seq[n:] for pr, seq, n in zip(prompts, self.seqs, self.prompt_lens)]
        shift = [len(pr) - n for pr, n in zip(prompts, self.prompt_lens)]
        spans = [(k, st + shift[k], en + shift[k]) for k, st, en in self.spans]
        return Sentences(seqs, spans, self.texts, self.acts, self.mean, self.categories, dict(self.extra),
                         [len(pr) for pr in prompts])


def check_tokenizers(base: Any, thinking: Any) -> None:
    """Refuse a base/thinking pair whose tokenizers give the same text other ids: both models read the same
    generated token ids. Added tokens (chat roles, ``<think>``) may differ, as between Qwen2.5-Math and the
    R1 distills; the regular vocabulary may not.

    Example:
        >>> from tools.testing import word_tokenizer
        >>> check_tokenizers(word_tokenizer(), word_tokenizer())
        >>> check_tokenizers(word_tokenizer(), word_tokenizer(40))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        thinklens.errors.ThinklensError: bad base/thinking tokenizers: ...
    """
    def regular(tok: Any) -> dict[str, int]:
        added = set(tok.get_added_vocab())
        return {t: i for t, i in tok.get_vocab().items() if t not in added}

    a, b = regular(base), regular(thinking)
    if a != b:
        differ = sorted(t for t in set(a) | set(b) if a.get(t) != b.get(t))
        raise ThinklensError.of(
            "base/thinking tokenizers", f"{len(differ)} tokens with other ids or in one vocabulary only (e.g. {differ[:3]})",
            "two tokenizers with the same vocabulary (both models read the same generated tokens)",
            "pair a thinking model with its base, e.g. DeepSeek-R1-Distill-Qwen-1.5B with Qwen2.5-Math-1.5B",
        )


def check_pair(base: "HookedModel", thinking: "HookedModel") -> None:
    """Refuse a base/thinking pair that cannot read each other's tokens: another vocabulary size (a fine-tune that
    added tokens, e.g. a latent trainer's ``--add-tokens``, beside its base) or tokenizers that differ
    (:func:`check_tokenizers`). The job calls it before generating anything."""
    if base.vocab_size != thinking.vocab_size:
        raise ThinklensError.of("base/thinking pair", f"vocab {base.vocab_size}/{thinking.vocab_size}",
                                "two models with one vocabulary (the thinking model generates ids the base model reads)",
                                f"pair a thinking model with its base; a fine-tune that added tokens ({opt('add_tokens', True)}) needs "
                                "a base with the same tokens")
    check_tokenizers(base.tokenizer, thinking.tokenizer)


@torch.no_grad()
def sentence_activations(model: "HookedModel", traces: Sequence["Trace"], site: Site | str,
                         reasoning: Sequence[range] | None = None) -> Sentences:
    """Segment each trace's generated tokens and average the site activation over each sentence.

    ``reasoning``: per trace, the generated-token indices of its reasoning (the prompt format's thinking
    span); only those are segmented (all tokens when a trace's range is empty: no span)."""
    s = model.resolve_site(site)
    seqs, spans, texts, rows = [], [], [], []
    for k, tr in enumerate(traces):
        ids = list(tr.prompt_ids) + list(tr.token_ids)
        seqs.append(ids)
        segs = segment_sentences(tr.tokens)
        if reasoning is not None and len(reasoning[k]):
            r = reasoning[k]
            segs = [(r.start + a, r.start + b) for a, b in segment_sentences(tr.tokens[r.start: r.stop])]
        if not segs:
            continue
        a = model.capture(torch.tensor([ids]), [s]).acts[s][0].float().cpu()  # [pos, d]
        off = len(tr.prompt_ids)
        for st, en in segs:
            spans.append((k, off + st, off + en))
            texts.append(" ".join(t.strip() for t in tr.tokens[st:en]))
            rows.append(a[off + st: off + en].mean(0))
    if not rows:
        raise ThinklensError.of("thinking traces", len(traces), "traces with at least one sentence",
                                "generate longer traces from the thinking model")
    x = torch.stack(rows)  # [sentence, d]
    mean = x.mean(0)
    return Sentences(seqs, spans, texts, normalise(x, mean), mean, prompt_lens=[len(tr.prompt_ids) for tr in traces])


def normalise(x: Tensor, mean: Tensor) -> Tensor:
    """Center by ``mean`` and scale rows to unit L2 norm (the SAE's input space)."""
    x = x - mean
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-8)


def train_category_sae(acts: Tensor, cfg: HybridConfig):
    """A top-k SAE (sae-lens ``TopKTrainingSAE``, trained by sae-lens's ``SAETrainer``) over sentence
    activations; its argmax latent is the category. Returns the SAE in eval mode."""
    from sae_lens import TopKTrainingSAE, TopKTrainingSAEConfig  # lazy: import cost (sae_lens: seconds)
    from sae_lens.config import LoggingConfig, SAETrainerConfig  # lazy: import cost (sae_lens: seconds)
    from sae_lens.training.sae_trainer import SAETrainer  # lazy: import cost (sae_lens: seconds)

    batch = min(128, len(acts))
    gen = torch.Generator().manual_seed(cfg.seed)

    def batches() -> Iterator[Tensor]:
        while True:
            yield acts[torch.randint(len(acts), (batch,), generator=gen)]

    with quiet_training(cfg.seed):
        sae = TopKTrainingSAE(TopKTrainingSAEConfig(d_in=acts.shape[1], d_sae=cfg.n_categories, k=cfg.k,
                                                    decoder_init_norm=None))
        tcfg = SAETrainerConfig(total_training_samples=cfg.sae_steps * batch, train_batch_size_samples=batch, lr=3e-3,
                                lr_end=3e-4, logger=LoggingConfig(log_to_wandb=False), dead_feature_window=10**9,
                                feature_sampling_window=10**9)
        SAETrainer(tcfg, sae, batches()).fit()
    return sae.eval()


@torch.no_grad()
def categorise(sae, acts: Tensor) -> Tensor:
    """Argmax latent per row of (normalised) activations: ``[n]`` long."""
    return sae.encode(acts.float()).argmax(-1)


def _sentence_batch(sent: Sentences, idx: list[int], pad: int, open_token: bool = False) -> dict[str, Tensor]:
    """Right-padded sequences cut after each sentence; labels on its tokens, steering on the positions
    producing them (start-1 .. end-2). ``open_token``: the token before the sentence too, when it is a
    generated one (steering from start-2), where a merged '.\n' against '.' decides whether a sentence opens."""
    rows = [sent.seqs[sent.spans[i][0]][: sent.spans[i][2]] for i in idx]
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)  # [batch, pos]
    attn = torch.zeros_like(ids)
    steer = torch.zeros_like(ids, dtype=torch.bool)
    for j, (i, r) in enumerate(zip(idx, rows)):
        _, st, en = sent.spans[i]
        ids[j, : len(r)] = torch.tensor(r)
        attn[j, : len(r)] = 1
        first = st - 2 if open_token and st - 1 >= _prompt_len(sent, i) else st - 1
        steer[j, first: en - 1] = True
    return {"input_ids": ids, "attention_mask": attn, "steer": steer}


def _prompt_len(sent: Sentences, i: int) -> int:
    """Tokens of the prompt before sentence ``i``'s trace (0 when the sentences do not record them)."""
    return sent.prompt_lens[sent.spans[i][0]] if sent.prompt_lens else 0


def sentence_nll(model: "HookedModel", batch: dict[str, Tensor], vec: Tensor | None, site: Site) -> Tensor:
    """Mean NLL of the sentence tokens under ``model`` with ``vec`` added at the steered positions."""
    steer = batch["steer"].to(model.device)

    def add(act: Tensor, ctx: ForwardContext) -> Tensor:
        return act + steer[..., None].to(act.dtype) * vec.to(act.dtype)

    ivs = [HookFn(site, add)] if vec is not None else []
    at = steer.clone()
    at[:, -1] = False  # position t predicts token t+1: the last position predicts nothing here
    with model.intervene(ivs):
        # the LM head on the sentence positions only: [tokens, vocab], not [batch, pos, vocab]
        logits = model.forward({"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]},
                               logits_at=at).logits
    tgt = batch["input_ids"].to(model.device)[:, 1:][at[:, :-1]]  # [tokens]
    lp = torch.log_softmax(logits.float(), -1)
    return -lp.gather(-1, tgt[:, None]).mean()


@torch.no_grad()
def site_rms(model: "HookedModel", sent: Sentences, site: Site | str, n: int = 16) -> float:
    """Root-mean-square per coordinate of ``model``'s activation at ``site`` over a few sentence sequences."""
    s = model.resolve_site(site)
    rows = [model.capture(torch.tensor([seq]), [s]).acts[s][0] for seq in sent.seqs[:n]]
    x = torch.cat(rows).float()  # [tokens, d]
    return float(x.pow(2).mean().sqrt())


def train_vector(model: "HookedModel", sent: Sentences, idx: list[int], cfg: HybridConfig, *, unit: float = 1.0,
                 base: Tensor | None = None, seed: int = 0) -> tuple[Tensor, list[float]]:
    """Adam on one vector ``u`` to lower the base model's NLL of sentences ``idx``; ``base + unit * u`` is added.

    ``unit`` (the site's per-coordinate RMS, :func:`site_rms`) makes Adam's lr 1e-2 mean 1% of a typical
    coordinate per step whatever the residual scale: in raw units, 50 steps at 1e-2 move a vector by about
    0.5 per coordinate, under 4% of a zoo residual (RMS about 13), and the vectors would barely act.
    Returns ``unit * u`` and the loss before and after (on one fixed batch)."""
    if not idx:
        raise ThinklensError.of("category", "no sentences", "at least one sentence per category", "use fewer categories")
    site = model.resolve_site(cfg.site)
    d = model.site_width(site)
    u = torch.zeros(d, device=model.device, requires_grad=True)
    fixed = base.to(model.device) if base is not None else torch.zeros(d, device=model.device)
    opt = torch.optim.Adam([u], lr=cfg.vector_lr)
    gen = torch.Generator().manual_seed(seed)
    pad = model.tokenizer.pad_token_id

    def pick() -> list[int]:
        if len(idx) <= cfg.vector_batch:
            return idx
        return [idx[i] for i in torch.randperm(len(idx), generator=gen)[: cfg.vector_batch]]

    probe = pick()
    curve = []
    with model.frozen():
        with torch.no_grad():
            curve.append(float(sentence_nll(model, _sentence_batch(sent, probe, pad, cfg.open_token), fixed + unit * u, site)))
        for _ in range(cfg.vector_iters):
            loss = sentence_nll(model, _sentence_batch(sent, pick(), pad, cfg.open_token), fixed + unit * u, site)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            curve.append(float(sentence_nll(model, _sentence_batch(sent, probe, pad, cfg.open_token), fixed + unit * u, site)))
    return (unit * u).detach().cpu(), curve


@dataclass
class HybridVectors:
    """What hybrid generation needs: the category SAE, the normalisation mean, bias and category vectors."""

    site: str
    sae: Any
    mean: Tensor
    bias: Tensor
    vectors: Tensor
    """``[category, d]`` category vectors (bias not included)."""
    counts: list[int]
    """Training sentences per category."""
    examples: dict[int, list[str]]
    """A few training sentences per category (the paper names categories with an LLM; we show them)."""
    losses: dict[str, list[float]]
    """NLL before/after per vector (``bias`` and ``cat<i>``)."""


def train_hybrid_vectors(base: "HookedModel", thinking: "HookedModel", traces: Sequence["Trace"], cfg: HybridConfig,
                         log: Any = None, *, base_prompts: Sequence[Sequence[int]] | None = None,
                         reasoning: Sequence[range] | None = None) -> HybridVectors:
    """Sentences of ``traces`` (from the thinking model) -> categories -> bias + per-category vectors for ``base``.

    ``base_prompts``: the base model's own prompt ids for each trace's problem (default: the traces' prompts);
    ``reasoning``: the traces' reasoning spans (:func:`sentence_activations`)."""
    check_pair(base, thinking)
    sent = sentence_activations(thinking, traces, cfg.site, reasoning)
    sae = train_category_sae(sent.acts, cfg)
    cats = categorise(sae, sent.acts)
    sent.categories = cats
    if base_prompts is not None and [list(p) for p in base_prompts] != [list(t.prompt_ids) for t in traces]:
        sent = sent.with_prompts(base_prompts)
    all_idx = list(range(len(sent.spans)))
    unit = site_rms(base, sent, cfg.site)
    bias, bcurve = train_vector(base, sent, all_idx, cfg, unit=unit, seed=cfg.seed)
    losses = {"bias": bcurve}
    vecs, counts, examples = [], [], {}
    for c in range(cfg.n_categories):
        idx = [i for i in all_idx if int(cats[i]) == c]
        counts.append(len(idx))
        examples[c] = [sent.texts[i] for i in idx[:6]]
        if not idx:  # an unused latent: a zero vector (never selected by argmax over live latents in practice)
            vecs.append(torch.zeros_like(bias))
            continue
        v, curve = train_vector(base, sent, idx, cfg, unit=unit, base=bias, seed=cfg.seed + 1 + c)
        vecs.append(v)
        losses[f"cat{c}"] = curve
        if log:
            log(f"category {c}: {len(idx)} sentences, nll {curve[0]:.3f} -> {curve[-1]:.3f}, e.g. {examples[c][:3]}")
    return HybridVectors(str(base.resolve_site(cfg.site)), sae, sent.mean, bias, torch.stack(vecs), counts, examples, losses)
