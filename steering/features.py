"""Feature statistics of an SAE over generated traces: the data behind a feature dashboard.

For every feature: firing frequency, mean and max activation, the top-activating contexts, the
correlation of its activation with the *next* token being a thinking word (``wait``, ``hmm``, ``so``,
...), and the correlation of its per-trace mean activation with the trace being correct.

Convention: activations are read from ``Trace.hidden[site][t]``, the state that *produced* generated
token t (row 0 is the last prompt token). So "correlation with wait" means "this feature is active
where the model is about to say wait", the quantity that matters for steering. Words are found on the
decoded text, case-insensitively and on word boundaries (`` Wait,``, ``Hmm,`` and a word split over
several tokens count), and belong to the token where they start (:func:`word_starts`).

With the traces' reasoning spans (a prompt format's thinking span, e.g. ``<think>`` ... ``</think>``),
the statistics also give each feature's firing frequency inside the reasoning.

Example:
    >>> import torch
    >>> pearson_columns(torch.tensor([[0., 1.], [1., 1.], [2., 1.]]), torch.tensor([0., 1., 2.]))
    tensor([1., 0.])
    >>> word_starts([" So", " W", "ait", ",", " wait"], ["wait"])["wait"]
    [False, True, False, False, True]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Float
from torch import Tensor

from thinklens.data.formats import token_separator as separator_of
from thinklens.data.words import find_words
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError, opt_name
from thinklens.generation.trace import Trace
from thinklens.steering.sae import check_feature, check_sae

if TYPE_CHECKING:
    from sae_lens import SAE

    from thinklens.engine.model import HookedModel

THINKING_WORDS: tuple[str, ...] = ("wait", "hmm", "so", "therefore")


@torch.no_grad()
def encode(sae: "SAE", acts: Float[Tensor, "*batch d"]) -> Float[Tensor, "*batch feature"]:
    """SAE feature activations of ``acts`` (any leading shape), in float32 on the CPU."""
    dev = next(sae.parameters()).device
    return sae.encode(acts.to(dev, torch.float32)).float().cpu()


def pearson_columns(x: Float[Tensor, "n feature"], y: Float[Tensor, " n"]) -> Float[Tensor, " feature"]:
    """Pearson correlation of every column of ``x`` with ``y`` (0 where either is constant)."""
    x = x.double()
    y = y.double()
    xc = x - x.mean(0)  # [n, feature]
    yc = y - y.mean()  # [n]
    num = (xc * yc[:, None]).sum(0)
    den = xc.norm(dim=0) * yc.norm()
    return torch.where(den > 0, num / den.clamp_min(1e-300), torch.zeros_like(num)).float()


@dataclass
class FeatureStats:
    """Per-feature statistics over a set of traces (JSON-able with :meth:`to_json`)."""

    site: str
    """The site the SAE reads."""
    n_traces: int
    """Traces scanned."""
    n_tokens: int
    """Generated tokens scanned (one activation row each)."""
    freq: list[float]
    """Fraction of tokens where the feature is active (> 0)."""
    mean_act: list[float]
    """Mean activation over all tokens."""
    max_act: list[float]
    """Largest activation seen."""
    corr_words: dict[str, list[float]]
    """Word -> per-feature correlation of the activation with "the next token is this word"."""
    word_counts: dict[str, int]
    """How often each word was generated (a correlation over 0 occurrences is 0)."""
    corr_correct: list[float] | None
    """Per-feature correlation of the trace's mean activation with the trace being correct."""
    accuracy: float | None
    """Fraction of traces that are correct (None without labels)."""
    top_contexts: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """Feature -> top-activating contexts ``{trace, step, act, context, token}``, best first."""
    span: str | None = None
    """The thinking span whose reasoning :attr:`freq_reasoning` counts (its family: think, harmony, ...)."""
    n_reasoning_tokens: int | None = None
    """Generated tokens inside the reasoning spans (None: no spans given)."""
    freq_reasoning: list[float] | None = None
    """Fraction of reasoning tokens where the feature is active (None: no spans given)."""

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["top_contexts"] = {str(k): v for k, v in self.top_contexts.items()}
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "FeatureStats":
        d = dict(d)
        d["top_contexts"] = {int(k): v for k, v in d.get("top_contexts", {}).items()}
        return cls(**d)

    def best_for_word(self, word: str, exclude: Sequence[int] = ()) -> int:
        """The feature most positively correlated with ``word`` being generated next."""
        if word not in self.corr_words:
            raise ThinklensError.of("thinking word", word, f"one of {', '.join(self.corr_words)}",
                                    f"recompute the stats with this word in {opt_name('words')}")
        c = torch.tensor(self.corr_words[word])
        if exclude:
            c[list(exclude)] = -float("inf")
        return int(c.argmax())

    def top_activating(self, exclude: Sequence[int] = ()) -> int:
        """The feature with the largest mean activation (a common, non-specific baseline)."""
        m = torch.tensor(self.mean_act)
        if exclude:
            m[list(exclude)] = -float("inf")
        return int(m.argmax())


def word_starts(tokens: Sequence[str], words: Sequence[str], *, separator: str = "") -> dict[str, list[bool]]:
    """For each word, whether an occurrence of it starts in each token (case-insensitive, word boundaries,
    on the tokens joined by ``separator``: ``" "`` for word-level tokenizers such as the zoo's)."""
    out = {}
    for w in words:
        hits = [False] * len(tokens)
        for h in find_words(tokens, (w.strip().lower(),), separator=separator):
            hits[h.start_index] = True
        out[w] = hits
    return out


def token_separator(tokenizer: Any, traces: Sequence[Trace]) -> str:
    """What joins ``traces``' tokens into their text: ``" "`` for word-level tokenizers, else ``""``."""
    ids = next((t.token_ids[:16] for t in traces if len(t.token_ids) >= 2), [])
    return separator_of(tokenizer, ids)


def _context(model_tok, tr: Trace, step: int, width: int) -> tuple[str, str]:
    ids = tr.prompt_ids + tr.token_ids[:step]
    return model_tok.decode(ids[-width:], skip_special_tokens=False), tr.tokens[step]


def feature_stats(sae: "SAE", traces: Sequence[Trace], site: Site | str, *, tokenizer, correct: Sequence[bool] | None = None,
                  words: Sequence[str] = THINKING_WORDS, n_top: int = 8, context_tokens: int = 12,
                  reasoning: Sequence[range] | None = None, span: str | None = None) -> FeatureStats:
    """Statistics of every feature of ``sae`` over ``traces`` (captured at ``site``).

    Args:
        traces: generated with ``capture=[site]``.
        tokenizer: decodes the contexts.
        correct: one bool per trace (enables the correctness correlation).
        words: thinking words to correlate with.
        n_top: top-activating contexts kept per feature.
        reasoning: per trace, the generated-token indices inside its reasoning span
            (:meth:`thinklens.data.formats.PromptFormat.split_trace`); enables :attr:`FeatureStats.freq_reasoning`.
        span: the family of those spans, recorded with the statistics.
    """
    site = Site.parse(site) if isinstance(site, str) else site
    if not traces:
        raise ThinklensError.of("traces", 0, "at least one trace", "generate traces first")
    if any(site not in tr.hidden for tr in traces):
        raise ThinklensError.of("traces", f"without hidden states at {site}", f"traces generated with capture=[{site}]",
                                "pass capture=[site] to model.generate")
    if correct is not None and len(correct) != len(traces):
        raise ThinklensError.of("correctness labels", len(correct), f"{len(traces)} (one per trace)", "pass one bool per trace")
    if reasoning is not None and len(reasoning) != len(traces):
        raise ThinklensError.of("reasoning spans", len(reasoning), f"{len(traces)} (one per trace)", "pass one range per trace")
    separator = token_separator(tokenizer, traces)
    feats, per_trace, where, in_reasoning = [], [], [], []
    starts: dict[str, list[bool]] = {w: [] for w in words}
    for k, tr in enumerate(traces):
        f = encode(sae, tr.hidden[site])  # [steps, feature]
        feats.append(f)
        per_trace.append(f.mean(0))
        for w, hits in word_starts(tr.tokens, words, separator=separator).items():
            starts[w].extend(hits[: len(f)])
        where.extend((k, t) for t in range(len(tr)))
        if reasoning is not None:
            in_reasoning.extend(t in reasoning[k] for t in range(len(f)))
    acts = torch.cat(feats)  # [tokens, feature]
    n_tok, n_feat = acts.shape
    corr_words, counts = {}, {}
    for w in words:
        y = torch.tensor([float(h) for h in starts[w]])
        counts[w] = int(y.sum())
        corr_words[w] = pearson_columns(acts, y).tolist()
    corr_correct, acc = None, None
    if correct is not None:
        y = torch.tensor([float(c) for c in correct])
        acc = float(y.mean())
        corr_correct = pearson_columns(torch.stack(per_trace), y).tolist()
    top: dict[int, list[dict[str, Any]]] = {}
    k = min(n_top, n_tok)
    vals, idx = acts.topk(k, dim=0)  # [k, feature]
    for f in range(n_feat):
        rows = []
        for v, i in zip(vals[:, f].tolist(), idx[:, f].tolist()):
            if v <= 0:
                break
            ti, step = where[i]
            ctx, tok = _context(tokenizer, traces[ti], step, context_tokens)
            rows.append({"trace": ti, "step": step, "act": round(v, 5), "context": ctx, "token": tok})
        if rows:
            top[f] = rows
    freq_reasoning = n_reasoning = None
    if reasoning is not None:
        mask = torch.tensor(in_reasoning, dtype=torch.bool)  # [tokens]
        n_reasoning = int(mask.sum())
        freq_reasoning = ((acts[mask] > 0).float().mean(0) if n_reasoning else torch.zeros(n_feat)).tolist()
    return FeatureStats(site=str(site), n_traces=len(traces), n_tokens=n_tok, freq=(acts > 0).float().mean(0).tolist(),
                        mean_act=acts.mean(0).tolist(), max_act=acts.max(0).values.tolist(), corr_words=corr_words,
                        word_counts=counts, corr_correct=corr_correct, accuracy=acc, top_contexts=top,
                        span=span if reasoning is not None else None, n_reasoning_tokens=n_reasoning,
                        freq_reasoning=freq_reasoning)


@dataclass(frozen=True)
class FeatureTrace:
    """Activation of chosen features at every generated step of one trace."""

    tokens: list[str]
    """Generated tokens (token t was produced by the state of row t)."""
    features: list[int]
    """The features shown."""
    acts: list[list[float]]
    """``[step][j]`` activation of ``features[j]`` at the state producing token ``step``."""
    text: str
    """The generated text."""


def feature_trace(sae: "SAE", trace: Trace, site: Site | str, features: Sequence[int]) -> FeatureTrace:
    """Per-step activation of ``features`` along a trace generated with ``capture=[site]``."""
    site = Site.parse(site) if isinstance(site, str) else site
    if site not in trace.hidden:
        raise ThinklensError.of("trace", f"without hidden states at {site}", f"a trace generated with capture=[{site}]",
                                "pass capture=[site] to model.generate")
    fs = [check_feature(sae, int(f)) for f in features]
    acts = encode(sae, trace.hidden[site])[:, fs]  # [steps, len(fs)]
    return FeatureTrace(tokens=list(trace.tokens), features=fs, acts=acts.tolist(), text=trace.text)


def trace_prompt(model: "HookedModel", sae: "SAE", prompt: str, features: Sequence[int], *, site: Site | str | None = None,
                 max_new_tokens: int = 64) -> FeatureTrace:
    """Generate greedily from ``prompt`` and return the features' activations along the trace."""
    s = check_sae(model, sae, site)
    tr = model.generate([prompt], max_new_tokens=max_new_tokens, capture=[s])[0]
    return feature_trace(sae, tr, s, features)
