"""Results of capture and generation: :class:`ActivationBatch` and :class:`Trace`, and a trace's JSON form.

A trace keeps two texts of its generated tokens: ``text`` without special tokens (what answers are read and
graded from, what a reader sees) and ``text_with_specials`` with them (``</think>`` where the tokenizer makes it a
special token, the end-of-turn token), which its JSON keeps, so a completion exported from it and imported again
still closes its thinking span. :func:`open_span_warning` says when traces end inside a thinking span they opened.

Example:
    >>> t = Trace(prompt="Q:", prompt_ids=[1, 2], token_ids=[5], tokens=["4"], text="4", stop_reason="eos")
    >>> trace_from_json(trace_to_json(t)) == t
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from jaxtyping import Float, Int
from torch import Tensor

from thinklens.data.formats import detect_span, prompt_opens_span, split_thinking
from thinklens.engine.sites import LAYER_KINDS, SITE_KINDS, Site
from thinklens.errors import ThinklensError, did_you_mean


@dataclass
class ActivationBatch:
    """Activations of one forward pass over a (left-padded) batch.

    Attributes:
        input_ids: ``[batch, pos]`` token ids (left padded).
        attention_mask: ``[batch, pos]`` 1 for real tokens.
        acts: site -> ``[batch, pos, d]`` (or ``[batch, n, d]`` when positions were chosen; ``[batch, pos, streams, d]``
            at the residual sites of a multi-stream residual, DeepSeek-V4).
        positions: the logical positions kept (None = every position of the padded batch).
        n_layers: the model's number of blocks, so that ``batch["resid_post.-1"]`` finds the last one.
    """

    input_ids: Int[Tensor, "batch pos"]
    attention_mask: Int[Tensor, "batch pos"]
    acts: dict[Site, Float[Tensor, "batch n *d"]]
    positions: list[int] | str | None = None
    n_layers: int | None = None

    def __getitem__(self, site: Site | str) -> Tensor:
        return self.acts[Site.parse(site, self.n_layers)]

    def layers(self, kind: str) -> list[int]:
        """The layers of ``kind`` this capture holds, ascending: the rows of :meth:`stack`."""
        return sorted(s.layer for s in self.acts if s.kind == kind and s.layer is not None)

    def stack(self, kind: str, layers: Sequence[int] | None = None) -> Float[Tensor, "layer batch n *d"]:
        """One per-layer site kind stacked across layers, ``[layer, batch, pos, d]`` (TransformerLens's
        ``cache.stack_activation``, for a capture).

        Args:
            kind: a per-layer kind the capture holds (``resid_pre``, ``resid_post``, ``attn_out``, ``mlp_out``, ...).
            layers: the layers to stack, in this order (negative ones count from the end); None: every layer of
                ``kind`` the capture holds, ascending (:meth:`layers`; on a hybrid model ``attn_out`` is on some
                blocks only).

        Example:
            >>> acts = {Site("resid_post", i): torch.full((2, 3, 4), float(i)) for i in range(3)}
            >>> b = ActivationBatch(torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.long), acts, n_layers=3)
            >>> b.stack("resid_post").shape, b.stack("resid_post")[:, 0, 0, 0].tolist(), b.stack("resid_post", [-1, 0])[:, 0, 0, 0].tolist()
            (torch.Size([3, 2, 3, 4]), [0.0, 1.0, 2.0], [2.0, 0.0])
        """
        held = [k for k in SITE_KINDS if any(s.kind == k for s in self.acts)]
        stackable = [k for k in held if k in LAYER_KINDS]
        if kind not in stackable:
            if kind in held:
                fix = f"{kind} has no layers: read batch[{kind!r}]"
            elif kind in LAYER_KINDS:
                fix = f"capture it: model.capture(inputs, [{kind + '.*'!r}])"
            else:
                fix = did_you_mean(kind, stackable or sorted(LAYER_KINDS))
            raise ThinklensError.of("site kind", kind, "a per-layer kind this capture holds: "
                                    f"{', '.join(stackable) or 'none (it holds ' + ', '.join(held) + ')'}", fix)
        have = self.layers(kind)
        if layers is None:
            picked = have
        else:
            picked = [Site.parse(Site(kind, int(i)), self.n_layers).layer for i in layers]
            missing = [i for i in picked if i not in have]
            if missing or not picked:
                raise ThinklensError.of(f"{kind} layers", list(layers), f"layers this capture holds: {have}",
                                        f"pick among them, or capture {kind}.* (every layer)")
        return torch.stack([self.acts[Site(kind, i)] for i in picked])  # [layer, batch, n, *d]


@dataclass
class Trace:
    """One generated trajectory.

    ``hidden[site][t]`` is the state that *produced* generated token ``t`` (row 0 is the state at
    the last prompt token), the convention of the MI-peaks measurement. ``entropy[t]`` (nats) and
    ``topk_*[t]`` describe the next-token distribution from which token ``t`` was chosen.
    """

    prompt: str
    prompt_ids: list[int]
    token_ids: list[int]
    tokens: list[str]
    text: str
    stop_reason: str
    hidden: Mapping[Site, Float[Tensor, " step *d"]] = field(default_factory=dict)
    """Per site ``[step, d]``: a dict, or a :class:`thinklens.engine.activation_store.StoredStates` reading a store (streamed)."""
    entropy: Float[Tensor, " step"] | None = None
    topk_ids: Int[Tensor, "step k"] | None = None
    topk_probs: Float[Tensor, "step k"] | None = None
    text_with_specials: str | None = None
    """The generated tokens decoded with their special tokens kept (``</think>`` where it is a special token, the EOS);
    None for a trace built without it (by hand, or read from JSON written before it was kept)."""

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def full_text(self) -> str:
        """The prompt followed by the generated text."""
        return self.prompt + self.text


def decoded_texts(tokenizer: Any, ids: list[int]) -> dict[str, str]:
    """A trace's two texts of generated ``ids``: ``text`` without the special tokens, ``text_with_specials`` with them."""
    return {"text": tokenizer.decode(ids, skip_special_tokens=True),
            "text_with_specials": tokenizer.decode(ids, skip_special_tokens=False)}


def open_span_warning(traces: "list[Trace]", tokenizer: Any, *, what: str, labels: "list[str] | None" = None) -> str | None:
    """One line naming the traces that end inside a thinking span they (or their prompt) opened, or None.

    The span is the tokenizer's family's (:func:`thinklens.data.formats.detect_span`; None: the tokenizer has none)
    and each trace is split on its tokens (special tokens included). ``what`` says where the traces come from
    (``"generated"`` counts only traces that stopped on their own, at EOS or a stop string: a trace cut by its
    ``max_new_tokens`` says so in its ``stop_reason``; ``"imported"`` counts every trace). ``labels`` name the
    traces in the line (an imported file's ``line 3``; default: ``index 2``).
    """
    span = detect_span(tokenizer)
    if span is None or not span.open:
        return None
    left_open = []
    for k, tr in enumerate(traces):
        if what == "generated" and tr.stop_reason not in ("eos", "stop_string"):
            continue
        opened = prompt_opens_span(tr.prompt, span)
        if not opened and span.open not in "".join(tr.tokens):
            continue  # no span: an answer without reasoning
        if not split_thinking(list(tr.tokens), span, opened=opened).closed:
            left_open.append(k)
    if not left_open:
        return None
    names = [labels[k] if labels is not None else f"index {k}" for k in left_open]
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    return (f"{len(left_open)} of {len(traces)} {what} traces ({shown}) end inside their {span.open} span, "
            f"{span.close} never written: " + (
                "the model stopped inside its reasoning, so a split finds no answer after it (check the prompt format and the model)"
                if what == "generated" else
                f"cut short, or exported without the special tokens, which loses a {span.close} that is one (export "
                "Trace.text_with_specials, decode with skip_special_tokens=False, or give the token ids)"))


def trace_to_json(trace: Trace, *, logit_stats: bool = False) -> dict[str, Any]:
    """The token-level part of a trace as plain JSON values (no hidden states); with ``logit_stats`` also
    its per-step ``entropy``, ``topk_ids`` and ``topk_probs`` (when the trace has them)."""
    doc = {"prompt": trace.prompt, "prompt_ids": [int(i) for i in trace.prompt_ids],
           "token_ids": [int(i) for i in trace.token_ids], "tokens": list(trace.tokens), "text": trace.text,
           "stop_reason": trace.stop_reason}
    if trace.text_with_specials is not None:
        doc["text_with_specials"] = trace.text_with_specials
    if logit_stats and trace.entropy is not None:
        doc["entropy"] = trace.entropy.float().tolist()
        doc["topk_ids"] = trace.topk_ids.tolist() if trace.topk_ids is not None else None
        doc["topk_probs"] = trace.topk_probs.float().tolist() if trace.topk_probs is not None else None
    return doc


def trace_from_json(doc: dict[str, Any]) -> Trace:
    """Inverse of :func:`trace_to_json` (hidden states are not kept; logit statistics when ``doc`` has them)."""
    trace = Trace(prompt=doc["prompt"], prompt_ids=[int(i) for i in doc["prompt_ids"]],
                  token_ids=[int(i) for i in doc["token_ids"]], tokens=list(doc["tokens"]), text=doc["text"],
                  stop_reason=doc["stop_reason"], text_with_specials=doc.get("text_with_specials"))
    if doc.get("entropy") is not None:
        n = len(trace.token_ids)
        trace.entropy = torch.tensor(doc["entropy"], dtype=torch.float32)
        if doc.get("topk_ids") is not None:  # [step, k]; reshape keeps a 0-step trace 2-D
            trace.topk_ids = torch.tensor(doc["topk_ids"], dtype=torch.long).reshape(n, -1 if n else 0)
        if doc.get("topk_probs") is not None:
            trace.topk_probs = torch.tensor(doc["topk_probs"], dtype=torch.float32).reshape(n, -1 if n else 0)
    return trace
