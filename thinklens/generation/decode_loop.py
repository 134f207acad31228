"""The one decode loop, with a pluggable token choice.

:func:`decode` runs a :class:`~thinklens.generation.kv_batch.Decoder` step by step: a :class:`TokenChoice`
picks each step's tokens (:class:`Greedy`, :class:`Sample` with a local ``torch.Generator``,
:class:`Forced` tokens, or :class:`Guided` by a second model decoding the same tokens in lockstep);
rows stop at EOS or a stop string and are padded after that; per-step statistics and site states
can be recorded. Every generator of the project (traced generation, representation recycling,
LatentSeek, latent inference, hybrid steering, the zoo evaluation) is this loop with its own choice.

Example:
    >>> # dec = Decoder(model, ["Q: 3+4 ="])                  # prompts, token-id rows or an encoding
    >>> # out = decode(dec, Greedy(), max_new_tokens=8)
    >>> # out.row(0)                                          # generated ids, stop token included
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch
from jaxtyping import Float, Int
from torch import Tensor

from thinklens.engine.interventions import intervene
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.generation.kv_batch import Decoder, eos_ids


# ---- token choices ---------------------------------------------------------------------------------
@dataclass
class DecodeState:
    """What a :class:`TokenChoice` sees at step ``t``."""

    t: int
    decoder: Decoder
    done: Tensor
    """``[batch]`` bool (CPU): rows already stopped (their token is replaced by padding)."""
    tokens: list[Tensor]
    """Tokens chosen at steps ``0..t-1``, each ``[batch]`` (CPU)."""


class TokenChoice:
    """Picks each step's tokens. Subclasses implement :meth:`choose`; :meth:`start`, :meth:`advance`
    and :meth:`hooks` let a choice keep state in step with the decoder (a guide model, a log)."""

    def start(self, decoder: Decoder) -> None:
        """Called once, after the prefill."""

    def choose(self, logits: Float[Tensor, "batch vocab"], state: DecodeState) -> Int[Tensor, " batch"]:  # pragma: no cover
        raise NotImplementedError

    def advance(self, tokens: Int[Tensor, " batch"]) -> None:
        """Called after the decoder appended ``tokens`` (padding on stopped rows)."""

    def hooks(self) -> Any:
        """A context manager open for the whole loop (e.g. hooks on a guide model)."""
        return nullcontext()


class Greedy(TokenChoice):
    """Argmax."""

    def choose(self, logits: Tensor, state: DecodeState) -> Tensor:
        return logits.argmax(-1)


@dataclass
class Sample(TokenChoice):
    """Sampling at ``temperature`` with nucleus ``top_p`` from a local generator (no global RNG).

    With ``top_p = 1`` the softmax goes to ``torch.multinomial`` as HF ``generate`` passes it, so
    the same seed gives HF's samples.
    """

    generator: torch.Generator
    temperature: float = 1.0
    top_p: float = 1.0

    def choose(self, logits: Tensor, state: DecodeState) -> Tensor:
        probs = torch.softmax(logits / self.temperature, dim=-1)  # [batch, vocab]
        if self.top_p < 1.0:
            sp, si = probs.sort(-1, descending=True)
            keep = sp.cumsum(-1) - sp < self.top_p  # always keeps the top token
            probs = torch.zeros_like(probs).scatter(-1, si, sp * keep)
            probs = probs / probs.sum(-1, keepdim=True)
        return torch.multinomial(probs, 1, generator=self.generator)[:, 0]


@dataclass
class Forced(TokenChoice):
    """The given ``tokens`` (``[k]`` for every row or ``[batch, k]``) for the first k steps, then ``then``."""

    tokens: Tensor
    then: TokenChoice = field(default_factory=Greedy)

    def start(self, decoder: Decoder) -> None:
        self.then.start(decoder)

    def choose(self, logits: Tensor, state: DecodeState) -> Tensor:
        forced = self.tokens if self.tokens.ndim == 2 else self.tokens[None].expand(logits.shape[0], -1)
        if state.t < forced.shape[1]:
            return forced[:, state.t].to(logits.device)
        return self.then.choose(logits, state)

    def advance(self, tokens: Tensor) -> None:
        self.then.advance(tokens)

    def hooks(self) -> Any:
        return self.then.hooks()


class Guided(TokenChoice):
    """Choose with a second model that reads the same tokens (a KV-cached ``guide`` decoder in lockstep).

    ``combine(logits, guide_logits, state) -> tokens``; the default takes the guide's argmax.
    """

    def __init__(self, guide: Decoder, combine: "Callable[[Tensor, Tensor, DecodeState], Tensor] | None" = None):
        self.guide = guide
        self.combine = combine or (lambda logits, g, state: g.argmax(-1).to(logits.device))
        self.guide_logits: Tensor | None = None

    def start(self, decoder: Decoder) -> None:
        self.guide_logits = self.guide.prefill()

    def choose(self, logits: Tensor, state: DecodeState) -> Tensor:
        return self.combine(logits, self.guide_logits, state)

    def advance(self, tokens: Tensor) -> None:
        self.guide_logits = self.guide.step(tokens.to(self.guide.model.device))


# ---- the loop --------------------------------------------------------------------------------------
@runtime_checkable
class StateSink(Protocol):
    """Where :func:`decode` hands captured states while it runs instead of keeping them (e.g.
    :class:`thinklens.engine.activation_store.TraceStream`, which writes them into an activation store)."""

    def write(self, states: dict[Site, Float[Tensor, "batch n d"]], first: int, tokens: Int[Tensor, "batch n"],
              lengths: list[int]) -> None:  # pragma: no cover
        """``states[site][:, j]`` produced token ``first + j`` (``tokens[:, j]``); ``lengths`` are the rows'
        lengths so far (``max_new_tokens`` for rows still running), so steps at or past a row's end are padding."""


@dataclass
class Decoded:
    """The outcome of :func:`decode` for one batch."""

    tokens: Int[Tensor, "batch step"]
    """Chosen ids (CPU), padding after a row's stop."""
    lengths: list[int]
    """Tokens per row, the stop token (EOS or the one completing a stop string) included."""
    stop_reasons: list[str]
    """``eos``, ``stop_string`` or ``max_new_tokens`` per row."""
    hidden: dict[Site, Float[Tensor, "batch step *d"]] = field(default_factory=dict)
    """Per captured site, the state that produced each token (row 0: the last prompt position); empty
    when the states went to a sink."""
    entropy: Float[Tensor, "batch step"] | None = None
    topk_ids: Int[Tensor, "batch step k"] | None = None
    topk_probs: Float[Tensor, "batch step k"] | None = None

    def row(self, r: int) -> list[int]:
        """Row ``r``'s generated ids, up to and including its stop token."""
        return self.tokens[r, : self.lengths[r]].tolist()


def mark_stops(tokenizer: Any, nxt: Tensor, tokens: list[Tensor], t: int, eos: set[int], stop: Sequence[str], tail: int,
               done: Tensor, lengths: list[int], reasons: list[str]) -> None:
    """Record the rows that stop at step ``t``: EOS, or a stop string within the last ``tail`` tokens."""
    for r in range(len(lengths)):
        if done[r]:
            continue
        if int(nxt[r]) in eos:
            done[r], lengths[r], reasons[r] = True, t + 1, "eos"
        elif stop and any(s in tokenizer.decode([int(x[r]) for x in tokens[-tail:]]) for s in stop):
            done[r], lengths[r], reasons[r] = True, t + 1, "stop_string"


@torch.no_grad()
def decode(decoder: Decoder, choice: TokenChoice | None = None, *, max_new_tokens: "int | Sequence[int]",
           eos: set[int] | None = None,
           stop: Sequence[str] = (), capture: Sequence[Site | str] = (), interventions: Sequence[Any] = (),
           top_k_stats: int | None = None, logits: Tensor | None = None, sink: StateSink | None = None,
           sink_every: int = 64, presize: bool = True) -> Decoded:
    """Decode up to ``max_new_tokens`` tokens per row of ``decoder``'s batch.

    Args:
        max_new_tokens: one budget for every row, or one per row (:func:`thinklens.generation.budgets.prompt_budgets`);
            a row past its own budget is fed masked padding, so its positions never pass its budget.
        choice: how each step's tokens are picked (default :class:`Greedy`).
        eos: ids that end a row (default :func:`eos_ids`); the EOS token is kept in the row.
        stop: strings that end a row once its decoded tail contains one.
        capture: sites whose state (at each step's last position) is recorded in ``hidden`` (with
            ``logits`` given, the decoder must have watched them from its first forward).
        interventions: applied to the model for the whole loop.
        top_k_stats: unless None, record the entropy and the top-k ids and probabilities of every step.
        logits: the next-token logits of a decoder that already ran its inputs (no prefill then).
        sink: receives the captured states every ``sink_every`` steps (and at the end), which the decoder
            then forgets: memory stays flat in the trace length (``hidden`` is then empty).
        presize: when this call runs the prefill, pre-size the decoder's KV cache for the prompt and the largest
            budget (:meth:`Decoder.reserve`: no ``torch.cat`` per step); False keeps transformers' dynamic cache.
    """
    model = decoder.model
    choice = choice or Greedy()
    eos = eos_ids(model) if eos is None else set(eos)
    pad = model.tokenizer.pad_token_id
    decoder.watch(capture)
    tokens: list[Tensor] = []
    ent: list[Tensor] = []
    tk_ids: list[Tensor] = []
    tk_p: list[Tensor] = []
    b = decoder.prompt["input_ids"].shape[0] if logits is None else logits.shape[0]
    done = torch.zeros(b, dtype=torch.bool)
    budgets = row_budgets(max_new_tokens, b)
    max_new_tokens = max(budgets)
    lengths = list(budgets)
    reasons = ["max_new_tokens"] * b
    tail = max((len(s) for s in stop), default=0) + 4  # tokens enough to hold any stop string
    if sink is not None and (not isinstance(sink_every, int) or sink_every < 1):
        raise ThinklensError.of("sink_every", sink_every, "an integer >= 1", "pass e.g. sink_every=64")
    sites = [model.resolve_site(s) for s in capture]
    first = 0  # the decoder's forward that chose token 0
    sunk = 0  # tokens whose states went to the sink

    def to_sink(upto: int) -> None:
        nonlocal sunk
        if sink is not None and sites and upto > sunk:
            states = _take_states(decoder, sites, range(first + sunk, first + upto), forget=True)
            sink.write(states, sunk, torch.stack(tokens[sunk:upto], 1), list(lengths))
        sunk = upto

    with ExitStack() as stack:
        stack.enter_context(intervene(model, interventions))
        stack.enter_context(choice.hooks())
        if logits is None:
            if presize:
                decoder.reserve(decoder.input_ids.shape[1] + max_new_tokens)
            logits = decoder.prefill()
        choice.start(decoder)
        first = decoder.step_index
        for t in range(max_new_tokens):
            if top_k_stats is not None:
                logp = torch.log_softmax(logits, -1)  # [batch, vocab]
                ent.append(-(logp.exp() * logp).sum(-1))  # kept on the device: no sync per step
                p, i = logp.exp().topk(min(top_k_stats, logp.shape[-1]), dim=-1)
                tk_ids.append(i)
                tk_p.append(p)
            nxt = choice.choose(logits, DecodeState(t, decoder, done, tokens))
            nxt = torch.where(done.to(nxt.device), torch.full_like(nxt, pad), nxt)
            tokens.append(nxt.cpu())
            mark_stops(model.tokenizer, tokens[-1], tokens, t, eos, stop, tail, done, lengths, reasons)  # the CPU copy
            spent = torch.tensor([t + 1 >= n for n in budgets])  # [batch] rows at their own budget
            done |= spent
            if (t + 1) % sink_every == 0:
                to_sink(t + 1)
            if bool(done.all()) or t == max_new_tokens - 1:
                break
            logits = decoder.step(nxt, mask=(~spent).long()[:, None] if bool(spent.any()) else None)
            choice.advance(nxt)
    if sink is not None:
        to_sink(len(tokens))
        hidden = {}
    else:
        hidden = _take_states(decoder, sites, range(first, first + len(tokens)), forget=False)
    out = Decoded(torch.stack(tokens, 1), lengths, reasons, hidden)
    if top_k_stats is not None:
        out.entropy, out.topk_ids, out.topk_probs = (torch.stack(x, 1).cpu() for x in (ent, tk_ids, tk_p))
    return out


class _Row:
    """One prompt's record in :func:`decode_queue`: its tokens, statistics and states so far."""

    def __init__(self, budget: int, sites: list[Site]):
        self.budget, self.reason = budget, "max_new_tokens"
        self.tokens: list[int] = []
        self.stats: list[tuple[Tensor, Tensor, Tensor]] = []  # (entropy [], top-k ids [k], top-k probs [k]) per step
        self.states: dict[Site, list[Tensor]] = {s: [] for s in sites}  # [d] per step not yet handed to a sink
        self.sunk = 0

    def hand_over(self, sink: StateSink | None, upto_end: bool) -> None:
        """Give the states held so far to ``sink`` (the row's stream)."""
        held = len(self.tokens) - self.sunk
        if sink is None or held == 0 or not self.states:
            return
        states = {s: torch.stack(v, 0)[None].cpu() for s, v in self.states.items()}  # [1, held, d]
        tokens = torch.tensor(self.tokens[self.sunk:], dtype=torch.long)[None]
        sink.write(states, self.sunk, tokens, [len(self.tokens) if upto_end else self.budget])
        self.states = {s: [] for s in self.states}
        self.sunk = len(self.tokens)

    def decoded(self, top_k_stats: int | None) -> Decoded:
        n = len(self.tokens)
        out = Decoded(torch.tensor([self.tokens], dtype=torch.long), [n], [self.reason],
                      {s: torch.stack(v, 0)[None].cpu() for s, v in self.states.items()} if not self.sunk else {})
        if top_k_stats is not None:
            out.entropy, out.topk_ids, out.topk_probs = (torch.stack([st[i] for st in self.stats])[None] for i in range(3))
        return out


def continuous_ready(model: Any, choice: TokenChoice | None, interventions: Sequence[Any] = ()) -> bool:
    """Whether :func:`decode_queue` can run ``model`` with ``choice``: a token choice with no state per row
    (:class:`Greedy`, :class:`Sample`), no interventions (they may read the step, which differs per row), and a
    cache whose rows can be replaced (:meth:`Decoder.can_splice`)."""
    if interventions or type(choice) not in (Greedy, Sample, type(None)):
        return False
    return Decoder(model).can_splice()


@torch.no_grad()
def decode_queue(model: Any, inputs: Sequence[Any], choice: TokenChoice | None = None, *,
                 max_new_tokens: "int | Sequence[int]", slots: int, eos: set[int] | None = None, stop: Sequence[str] = (),
                 capture: Sequence[Site | str] = (), top_k_stats: int | None = None,
                 sinks: "Sequence[StateSink] | None" = None, sink_every: int = 64) -> list[Decoded]:
    """Continuous batching: decode every prompt of ``inputs`` with at most ``slots`` rows in flight; a row that stops
    frees its slot, and the next prompt's prefill takes it while the other rows go on. A batch of mixed-length traces
    then costs about its total tokens, not ``batches x longest``. Prompts are admitted largest budget first (a long
    trace admitted last would decode alone at the end). Returns one one-row :class:`Decoded` per prompt, in prompt
    order: the tokens and states :func:`decode` gives each prompt (greedy: the same tokens).

    Args:
        inputs: prompts or token-id rows, one per prompt (each as :meth:`HookedModel.tokenize` takes it).
        choice: :class:`Greedy` (default) or :class:`Sample` (see :func:`continuous_ready`).
        max_new_tokens: one budget, or one per prompt.
        slots: rows decoded together at most.
        sinks: one state sink per prompt (e.g. a :class:`~thinklens.engine.activation_store.TraceStream` of one trace),
            fed every ``sink_every`` tokens of its prompt and at its end; the results' ``hidden`` are then empty.
        eos, stop, capture, top_k_stats: as :func:`decode`.

    Columns that every row masks (left by finished rows) are dropped once they are half the width, so attention
    reads about the live rows' own lengths.
    """
    choice = choice or Greedy()
    if type(choice) not in (Greedy, Sample):
        raise ThinklensError.of("token choice", type(choice).__name__, "Greedy or Sample in continuous batching (a choice "
                                "that keeps state per row follows its batch)", "use decode() batch by batch")
    if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
        raise ThinklensError.of("slots", slots, "an integer >= 1", "pass e.g. slots=8")
    if sinks is not None and len(sinks) != len(inputs):
        raise ThinklensError.of("sinks", len(sinks), f"one per prompt ({len(inputs)})", "pass one TraceStream per prompt")
    if sinks is not None and (not isinstance(sink_every, int) or sink_every < 1):
        raise ThinklensError.of("sink_every", sink_every, "an integer >= 1", "pass e.g. sink_every=64")
    eos = eos_ids(model) if eos is None else set(eos)
    pad = model.tokenizer.pad_token_id
    budgets = row_budgets(max_new_tokens, len(inputs))
    sites = [model.resolve_site(s) for s in capture]
    rows = [_Row(n, sites) for n in budgets]
    # popped from the end: the largest budget first (ties in prompt order), so the longest traces start early and the
    # batch does not end with one long row decoding alone
    queue = sorted(range(len(inputs)), key=lambda p: (budgets[p], -p))
    tail = max((len(s) for s in stop), default=0) + 4
    dec: Decoder | None = None
    slot: list[int | None] = []  # prompt of each decoder row (None: finished, masked padding until replaced)
    logits = torch.empty(0)
    cur: dict[Site, Tensor] = {}  # [batch, d] the states that produced this step's logits
    t = 0
    while True:
        free = [r for r, p in enumerate(slot) if p is None]
        if queue and (dec is None or free):  # admit the next prompts: their prefill, spliced into the free rows
            take = [queue.pop() for _ in range(min(len(queue), slots if dec is None else len(free)))]
            new = Decoder(model, [inputs[p] for p in take], capture=sites)
            if dec is None:  # the batch's own cache (an admitted prompt's is copied into it)
                new.reserve(new.input_ids.shape[1] + max(budgets[p] for p in take))
            if not new.can_splice():
                raise ThinklensError.of("continuous batching", f"the cache of {model.family}", "full-attention layers "
                                        "only (no sliding windows or recurrent states)", "use decode() batch by batch")
            got = new.prefill()
            states = {s: new.states[s].pop(new.step_index) for s in sites}
            if dec is None:
                dec, slot, logits, cur = new, take, got, states
            else:
                dec.splice(free[:len(take)], new)
                at = torch.as_tensor(free[:len(take)], device=logits.device)
                logits[at] = got.to(logits.dtype)
                for s in sites:  # a copy: the step's tensor is a view of that forward's activation
                    cur[s] = cur[s].clone()
                    cur[s][at] = states[s].to(cur[s].dtype)
                for r, p in zip(free, take):
                    slot[r] = p
        live = torch.tensor([p is not None for p in slot])  # [batch]
        if top_k_stats is not None:
            logp = torch.log_softmax(logits, -1)  # [batch, vocab]
            ent = -(logp.exp() * logp).sum(-1)
            tk_p, tk_i = logp.exp().topk(min(top_k_stats, logp.shape[-1]), dim=-1)
            ent, tk_i, tk_p = ent.cpu(), tk_i.cpu(), tk_p.cpu()
        nxt = choice.choose(logits, DecodeState(t, dec, ~live, []))
        nxt = torch.where(live.to(nxt.device), nxt, torch.full_like(nxt, pad))
        got_tokens = nxt.cpu().tolist()
        for r, p in enumerate(slot):
            if p is None:
                continue
            row = rows[p]
            row.tokens.append(got_tokens[r])
            if top_k_stats is not None:
                row.stats.append((ent[r], tk_i[r], tk_p[r]))
            for s in sites:
                row.states[s].append(cur[s][r].clone())
            if got_tokens[r] in eos:
                row.reason = "eos"
            elif stop and any(x in model.tokenizer.decode(row.tokens[-tail:]) for x in stop):
                row.reason = "stop_string"
            elif len(row.tokens) < row.budget:
                if sinks is not None and len(row.tokens) - row.sunk >= sink_every:
                    row.hand_over(sinks[p], upto_end=False)
                continue
            row.hand_over(sinks[p] if sinks is not None else None, upto_end=True)
            slot[r] = None
        t += 1
        if all(p is None for p in slot) and not queue:
            break
        if not queue and any(p is None for p in slot):  # nothing left to admit: drop the finished rows
            keep = [r for r, p in enumerate(slot) if p is not None]
            dec = _kept_rows(dec, keep, sites)
            slot, nxt = [slot[r] for r in keep], nxt[torch.as_tensor(keep, device=nxt.device)]
            live = torch.ones(len(keep), dtype=torch.bool)
        dec.compact(at_least=max(16, dec.length // 2))
        logits = dec.step(nxt, mask=None if bool(live.all()) else live.long()[:, None])
        cur = {s: dec.states[s].pop(dec.step_index) for s in sites}
    return [row.decoded(top_k_stats) for row in rows]


def _kept_rows(dec: Decoder, keep: list[int], sites: list[Site]) -> Decoder:
    """A decoder of ``keep``'s rows only, watching ``sites``."""
    out = dec.fork(keep)
    out.watch(sites)
    return out


def row_budgets(max_new_tokens: "int | Sequence[int]", b: int) -> list[int]:
    """``max_new_tokens`` as one budget per row of a ``b``-row batch (checked)."""
    budgets = [max_new_tokens] * b if isinstance(max_new_tokens, int) else list(max_new_tokens)
    if len(budgets) != b or not budgets or any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in budgets):
        raise ThinklensError.of("max_new_tokens", max_new_tokens if isinstance(max_new_tokens, int) else budgets[:8],
                                f"an integer >= 1, or one such integer per row ({b} rows)", "pass e.g. max_new_tokens=64")
    return budgets


def _take_states(decoder: Decoder, sites: list[Site], steps: range, *, forget: bool) -> dict[Site, Tensor]:
    """``{site: [batch, len(steps), d]}`` (CPU) of the decoder's forwards ``steps``; ``forget`` drops them from the decoder."""
    if any(k not in decoder.states[s] for s in sites for k in steps):
        raise ThinklensError.of("capture", [str(s) for s in sites], "sites the decoder watched from its first forward",
                                "with logits= given, build the decoder with Decoder(model, inputs, capture=[...])")
    out = {}
    for s in sites:
        get = decoder.states[s].pop if forget else decoder.states[s].__getitem__
        out[s] = torch.stack([get(k) for k in steps], 1).cpu()
    return out


def generate_texts(model: Any, prompts: list[str], *, max_new_tokens: int, batch_size: int = 64,
                   sample_seed: int | None = None) -> list[str]:
    """Greedy continuations of ``prompts`` (the core decode loop, batched, left padded); text up to
    ``<eos>``, specials kept.

    ``sample_seed``: sample at temperature 1 instead, from a local generator seeded once per call (the
    same call gives the same texts; HF ``generate`` with that global seed gives them too).
    """
    tok = model.tokenizer
    choice = Greedy()
    if sample_seed is not None:
        choice = Sample(torch.Generator(device=model.device).manual_seed(sample_seed))
    out: list[str] = []
    for i in range(0, len(prompts), batch_size):
        res = decode(Decoder(model, prompts[i : i + batch_size]), choice, max_new_tokens=max_new_tokens,
                     eos={tok.eos_token_id})
        for r in range(len(res.lengths)):
            row = res.row(r)
            if tok.eos_token_id in row:
                row = row[: row.index(tok.eos_token_id)]
            out.append(tok.decode([t for t in row if t != tok.pad_token_id], skip_special_tokens=False))
    return out
