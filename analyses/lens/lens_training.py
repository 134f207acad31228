"""Training and measuring a tuned lens: the states of texts at every block, translators fit to the model's final output
distribution (KL), and the held-out KL of each lens per block.

The states are every block's output (``resid_post.*``, captured by :meth:`~thinklens.engine.model.HookedModel.capture`)
at the tokens of some texts, the first position of each text left out: it is the attention sink, whose residual norm
is orders of magnitude above the others' on most pretrained models (SmolLM2), and would dominate the loss. The target
of block ``l``'s lens at a token is the model's own next-token distribution there: the last block read through the
final norm and the unembedding, which is the model's output (``tests/analyses/test_lens.py`` holds it against the raw
Hugging Face forward). The loss is Belrose et al.'s: ``KL(final || lens)``, summed over the vocabulary, averaged over
tokens and over the blocks that have a translator.

Example:
    >>> import torch
    >>> kl = torch.tensor([[1.0, 0.5], [3.0, 1.5], [2.0, 0.0]])   # [tok, layer]
    >>> per_text(kl, torch.tensor([0, 0, 1]), 2).tolist()         # [text, layer]: each text's mean over its tokens
    [[2.0, 1.0], [2.0, 0.0]]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Float, Int
from torch import Tensor

from thinklens.analyses.lens.translators import TunedLens
from thinklens.engine.sites import Site
from thinklens.engine.tokenization import prompt_ids
from thinklens.engine.training import adamw, set_lr, warmup_cosine_lr
from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.engine.interventions import Intervention
    from thinklens.engine.model import HookedModel


@dataclass
class LensTexts:
    """The states of some texts at every block: what a tuned lens trains and is measured on."""

    states: Float[Tensor, "tok layer d"]
    """Every block's output at every kept token (float32, CPU)."""
    text: Int[Tensor, " tok"]
    """The text each token belongs to (0 .. n_texts - 1)."""
    n_texts: int
    """How many texts."""

    def __len__(self) -> int:
        return int(self.states.shape[0])


@dataclass
class TrainRecord:
    """How a tuned lens was trained."""

    steps: int
    """Optimizer steps."""
    tokens: int
    """Training tokens (each seen once per epoch)."""
    loss: list[float] = field(default_factory=list)
    """Mean KL over the translated blocks, per optimizer step (nats)."""
    shuffled_targets: bool = False
    """Whether each token was fit to another token's final distribution (the null control)."""


def own_texts(model: "HookedModel", prompts: Sequence[str], *, max_new_tokens: int, seed: int, temperature: float = 1.0,
              top_p: float = 1.0, batch_size: int = 16) -> tuple[list[list[int]], list[int]]:
    """The model's own text: its completions of ``prompts`` (sampled at ``temperature`` from ``seed``; 0: greedy), as
    token-id rows (prompt and completion) with the index where each completion starts."""
    sampled = temperature > 0
    traces = model.generate(list(prompts), max_new_tokens=max_new_tokens, batch_size=batch_size, do_sample=sampled,
                            seed=seed if sampled else None, temperature=temperature if sampled else 1.0, top_p=top_p)
    rows = [list(t.prompt_ids) + list(t.token_ids) for t in traces]
    return rows, [len(t.prompt_ids) for t in traces]


@torch.no_grad()
def collect_states(model: "HookedModel", rows: Sequence[Sequence[int]], starts: Sequence[int] | None = None, *,
                   batch_size: int = 8, interventions: "Sequence[Intervention]" = ()) -> LensTexts:
    """Every block's output at the tokens of ``rows`` from ``starts[i]`` on (default: all but the first).

    Args:
        rows: token-id rows (texts), each at least 2 tokens.
        starts: per row, the first position kept (at least 1: the first position is never kept).
        interventions: applied while capturing (the planted setting's map).
    """
    starts = [1] * len(rows) if starts is None else [max(1, int(s)) for s in starts]
    if len(starts) != len(rows) or not rows:
        raise ThinklensError.of("texts", f"{len(rows)} rows and {len(starts)} starts", "one start per row, at least one row",
                                "pass one start per text")
    sites = [Site("resid_post", li) for li in range(model.n_layers)]
    states, text = [], []
    for k in range(0, len(rows), batch_size):
        chunk = [list(r) for r in rows[k:k + batch_size]]
        batch = model.capture(chunk, sites, interventions=interventions)
        mask = batch.attention_mask.bool()  # [batch, pos], left padded
        pos = model.position_ids(batch.attention_mask)  # [batch, pos] logical positions
        first = torch.tensor(starts[k:k + batch_size], device=pos.device)[:, None]  # [batch, 1]
        keep = mask & (pos >= first)  # [batch, pos]
        acts = torch.stack([batch.acts[s] for s in sites], 2)  # [batch, pos, layer, d]
        if acts.ndim != 4:
            raise ThinklensError.of("residual shape", tuple(acts.shape), "[batch, pos, layer, d] (one residual stream)",
                                    "a tuned lens of a multi-stream residual is not supported")
        states.append(acts[keep].float().cpu())  # [tok, layer, d]
        rows_of = torch.arange(k, k + len(chunk), device=pos.device)[:, None].expand_as(keep)  # [batch, pos]
        text.append(rows_of[keep].cpu())
    out = LensTexts(torch.cat(states), torch.cat(text), len(rows))
    if len(out) == 0:
        raise ThinklensError.of("texts", f"{len(rows)} rows", "tokens after each row's start", "pass longer texts")
    return out


@dataclass(frozen=True)
class FinalDistribution:
    """The model's own next-token distribution at some tokens, kept in the two forms every KL against it needs."""

    probs: Float[Tensor, "tok vocab"]
    """Probabilities."""
    neg_entropy: Float[Tensor, " tok"]
    """``sum p log p`` per token."""

    @classmethod
    def of(cls, model: "HookedModel", states: Float[Tensor, "tok layer d"]) -> "FinalDistribution":
        """At these tokens: the last block through the final norm and the head (the model's output)."""
        logp = torch.log_softmax(model.unembed(states[:, -1].to(model.device)).float(), -1)  # [tok, vocab]
        probs = logp.exp()
        return cls(probs, (probs * logp).sum(-1))

    def kl(self, logits: Float[Tensor, "tok vocab"]) -> Float[Tensor, " tok"]:
        """``KL(final || lens)`` per token (nats) from a lens's logits: ``sum p log p - sum p logits + logsumexp``,
        which needs no ``[tok, vocab]`` log-softmax of the lens."""
        logits = logits.float()
        kl = self.neg_entropy - (self.probs * logits).sum(-1) + torch.logsumexp(logits, -1)
        return kl.clamp_min(0.0)  # >= 0 exactly; rounding leaves -1e-7 where the lens is the model's output


def train_translators(model: "HookedModel", texts: LensTexts, *, epochs: int = 2, batch_tokens: int = 32, lr: float = 1e-3,
                      weight_decay: float = 0.01, grad_clip: float = 1.0, seed: int = 0, shuffle_targets: bool = False,
                      lens: TunedLens | None = None, log: Callable[[str], None] | None = None) -> tuple[TunedLens, TrainRecord]:
    """Fit the translators of a tuned lens (identity-initialised) to the model's final distribution on ``texts``.

    AdamW (weight decay on the matrices ``A_l``, pulling them towards the identity translator) with a linear warmup
    over the first tenth of the steps and a cosine decay to a tenth of ``lr``; the model's weights are frozen.

    Args:
        shuffle_targets: fit each token to the final distribution of another token (one fixed permutation): the null
            control, whose translators can learn nothing of the token's own state.
        lens: a lens to go on training (default: a new one).
    """
    if epochs < 1 or batch_tokens < 1:
        raise ThinklensError.of("epochs / batch_tokens", (epochs, batch_tokens), "both >= 1", "pass epochs=2, batch_tokens=32")
    g = torch.Generator().manual_seed(seed)
    lens = lens if lens is not None else TunedLens(model.d_model, model.n_layers, model=model.name)
    lens = lens.to(model.device)
    opt = adamw(lens.named_parameters(), lr=lr, weight_decay=weight_decay)
    n = len(texts)
    target_of = torch.randperm(n, generator=g) if shuffle_targets else torch.arange(n)  # [tok]
    per_epoch = math.ceil(n / batch_tokens)
    total = epochs * per_epoch
    warmup = max(1, total // 10)
    record = TrainRecord(steps=total, tokens=n, shuffled_targets=shuffle_targets)
    layers = lens.layers
    step = 0
    with model.frozen():
        for _ in range(epochs):
            order = torch.randperm(n, generator=g)  # [tok]
            for k in range(0, n, batch_tokens):
                idx = order[k:k + batch_tokens]
                h = texts.states[idx].to(model.device)  # [b, layer, d]
                with torch.no_grad():
                    target = FinalDistribution.of(model, texts.states[target_of[idx]])  # [b, vocab]
                set_lr(opt, warmup_cosine_lr(step, peak=lr, warmup_steps=warmup, decay_steps=max(1, total - warmup),
                                             floor_ratio=0.1))
                opt.zero_grad(set_to_none=True)
                total_kl = 0.0
                for li in layers:  # one block at a time: a [b, vocab] graph each, not [b, layer, vocab] at once
                    kl = target.kl(model.unembed(lens.translate(h[:, li], li))).mean()
                    (kl / len(layers)).backward()
                    total_kl += float(kl.detach())
                if grad_clip > 0:
                    torch.nn.utils.clip_grad_norm_(lens.parameters(), grad_clip)
                opt.step()
                record.loss.append(total_kl / len(layers))
                step += 1
                if log is not None and (step % max(1, total // 10) == 0 or step == total):
                    log(f"tuned lens: step {step}/{total}, mean KL {record.loss[-1]:.4f}")
    lens.eval()
    return lens, record


@torch.no_grad()
def kl_by_layer(model: "HookedModel", texts: LensTexts, lenses: dict[str, TunedLens | None], *,
                batch_tokens: int = 64) -> dict[str, Float[Tensor, "tok layer"]]:
    """``KL(final || lens)`` per token and block (nats) of each named lens (None: the logit lens); the last block's is
    0 for every lens (its translator is the identity)."""
    out: dict[str, list[Tensor]] = {name: [] for name in lenses}
    n_layers = texts.states.shape[1]
    for k in range(0, len(texts), batch_tokens):
        h = texts.states[k:k + batch_tokens].to(model.device)  # [b, layer, d]
        target = FinalDistribution.of(model, h)  # [b, vocab]
        for name, lens in lenses.items():
            cols = [target.kl(model.unembed(h[:, li] if lens is None else lens.translate(h[:, li], li)))
                    for li in range(n_layers)]  # per block [b]
            out[name].append(torch.stack(cols, 1).cpu())  # [b, layer]
    return {name: torch.cat(v) for name, v in out.items()}


@torch.no_grad()
def marginal_kl(model: "HookedModel", train: LensTexts, held: LensTexts, *, batch_tokens: int = 64) -> Float[Tensor, " tok"]:
    """``KL(final || marginal)`` per held-out token: the best lens that ignores the state, which predicts the mean final
    distribution of the training tokens everywhere (the control a lens must beat to be reading the state)."""
    total = None
    for k in range(0, len(train), batch_tokens):
        p = FinalDistribution.of(model, train.states[k:k + batch_tokens]).probs.sum(0)  # [vocab]
        total = p if total is None else total + p
    logits = torch.log(total / len(train)).clamp_min(-1e4)[None]  # [1, vocab]
    out = []
    for k in range(0, len(held), batch_tokens):
        target = FinalDistribution.of(model, held.states[k:k + batch_tokens])
        out.append(target.kl(logits.expand(target.probs.shape[0], -1)).cpu())  # [b]
    return torch.cat(out)


def per_text(values: Float[Tensor, "tok layer"], text: Int[Tensor, " tok"], n_texts: int) -> Float[Tensor, "text layer"]:
    """Each text's mean over its tokens (texts are the units of every interval: tokens of one text are not independent)."""
    sums = torch.zeros(n_texts, values.shape[1], dtype=torch.float64).index_add_(0, text, values.double())  # [text, layer]
    counts = torch.bincount(text, minlength=n_texts).double()[:, None]  # [text, 1]
    if bool((counts == 0).any()):
        raise ThinklensError.of("texts", f"{int((counts == 0).sum())} texts without a kept token", "tokens in every text",
                                "pass longer texts")
    return sums / counts


def text_rows(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """Token-id rows of provided texts, as generation reads a prompt (one BOS even when a text starts with one)."""

    rows = prompt_ids(tokenizer, list(texts))
    return [r for r in rows if len(r) >= 2]
