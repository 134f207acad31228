"""Traced, KV-cached, batched generation.

Greedy decoding gives the same tokens as HF ``generate`` (same left padding, same position ids);
per step it records the hidden state that produced each token at the requested sites, and the
entropy and top-k of the next-token distribution. :class:`Decoder` exposes single steps and a
rollback, for analyses that re-run a step (representation recycling).

Example:
    >>> # traces = model.generate(["Q: 3+4 ="], max_new_tokens=8, capture=["resid_post.-1"])
    >>> # traces[0].hidden[Site("resid_post", 3)].shape == (len(traces[0]), model.d_model)
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Float, Int
from torch import Tensor
from tqdm.auto import tqdm

from thinklens.errors import ThinklensError
from thinklens.hooks import ForwardContext, site_hooks
from thinklens.interventions import Intervention
from thinklens.sites import Site
from thinklens.trace import Trace

if TYPE_CHECKING:
    from thinklens.model import HookedModel


@dataclass(frozen=True)
class GenerateConfig:
    """Decoding settings."""

    max_new_tokens: int = 64
    """Upper bound on generated tokens per prompt."""
    do_sample: bool = False
    """Sample (True) or greedy argmax (False)."""
    seed: int | None = None
    """Seed of the local torch.Generator used for sampling."""
    temperature: float = 1.0
    """Softmax temperature when sampling."""
    top_p: float = 1.0
    """Nucleus mass when sampling (1.0 = off)."""
    stop: tuple[str, ...] = ()
    """Stop once the generated text contains any of these strings."""
    top_k_stats: int = 5
    """How many top tokens (ids, probabilities) to record per step."""
    batch_size: int | None = None
    """Prompts per batch (None = all at once)."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ThinklensError.of("max_new_tokens", self.max_new_tokens, "an integer >= 1", "pass e.g. max_new_tokens=64")
        if not (self.temperature > 0 and math.isfinite(self.temperature)):
            raise ThinklensError.of("temperature", self.temperature, "a finite number > 0", "use do_sample=False for greedy")
        if not 0 < self.top_p <= 1:
            raise ThinklensError.of("top_p", self.top_p, "a number in (0, 1]", "pass top_p=0.95")
        if self.batch_size is not None and self.batch_size < 1:
            raise ThinklensError.of("batch_size", self.batch_size, "an integer >= 1 or None", "pass batch_size=16")
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ThinklensError.of("stop strings", self.stop, "non-empty strings", "remove empty stop strings")


_CACHE_KW: dict[type, str] = {}


def cache_kwarg(hf: torch.nn.Module) -> str:
    """``cache`` in transformers >= 5.2x, ``past_key_values`` before."""
    cls = type(hf)
    if cls not in _CACHE_KW:
        params = inspect.signature(hf.forward).parameters
        _CACHE_KW[cls] = "cache" if "cache" in params else "past_key_values"
    return _CACHE_KW[cls]


class Decoder:
    """Step-level KV-cached decoding of one left-padded batch.

    Example:
        >>> # dec = Decoder(model, model.tokenize(prompts)); logits = dec.prefill()
        >>> # logits = dec.step(logits.argmax(-1)); dec.rollback(1); logits = dec.step(tok)
    """

    def __init__(self, model: "HookedModel", enc: dict[str, Tensor]):
        from transformers import DynamicCache

        self.model = model
        self.input_ids = enc["input_ids"]
        self.mask = enc["attention_mask"]
        self.cache = DynamicCache(config=model.config)
        self.step_index = -1
        self._last_pos: Tensor | None = None

    @classmethod
    def from_cache(cls, model: "HookedModel", cache: Any, attention_mask: Tensor, last_positions: Tensor) -> "Decoder":
        """A decoder that continues after a prefix already in ``cache`` (e.g. a slice of a longer rollout's cache).

        Args:
            attention_mask: ``[batch, cached]`` mask of the cached positions.
            last_positions: ``[batch]`` logical position of each row's last cached token.
        """
        dec = cls(model, {"input_ids": torch.zeros_like(attention_mask), "attention_mask": attention_mask})
        dec.cache, dec.step_index, dec._last_pos = cache, 0, last_positions.reshape(-1, 1)
        return dec

    def _run(self, ids: Tensor, position_ids: Tensor, token_mask: Tensor, inputs_embeds: Tensor | None = None) -> Tensor:
        m = self.model
        ctx = ForwardContext(position_ids=position_ids, token_mask=token_mask, step=self.step_index, cache=self.cache)
        kw: dict[str, Any] = {"attention_mask": self.mask, "position_ids": position_ids, "use_cache": True,
                              cache_kwarg(m.hf): self.cache}
        if inputs_embeds is not None:
            kw["inputs_embeds"] = inputs_embeds
        else:
            kw["input_ids"] = ids
        with m.context.use(ctx):
            out = m.hf(**kw)
        return out.logits[:, -1].float()  # [batch, vocab]

    def prefill(self) -> Float[Tensor, "batch vocab"]:
        """Run the prompt; returns the logits for the first new token."""
        self.step_index = 0
        pos = self.model.position_ids(self.mask)
        self._last_pos = pos[:, -1:]
        return self._run(self.input_ids, pos, self.mask.bool())

    def step(self, tokens: Int[Tensor, " batch"], inputs_embeds: Tensor | None = None) -> Float[Tensor, "batch vocab"]:
        """Append ``tokens`` (or ``inputs_embeds`` ``[batch, 1, d]``) and return the next logits."""
        if self._last_pos is None:
            raise ThinklensError.of("decoder state", "step() before prefill()", "prefill() first", "call dec.prefill() once per batch")
        self.step_index += 1
        self.mask = torch.cat([self.mask, torch.ones_like(self.mask[:, :1])], dim=1)
        self._last_pos = self._last_pos + 1
        ones = torch.ones_like(self._last_pos, dtype=torch.bool)
        return self._run(tokens[:, None], self._last_pos, ones, inputs_embeds)

    def extend(self, tokens: Int[Tensor, "batch k"]) -> Float[Tensor, "batch vocab"]:
        """Append ``k`` tokens to every row in ONE forward (e.g. a fixed exit string); returns the next logits.

        Counts as ``k`` steps for :meth:`rollback`; the same logits as ``k`` calls of :meth:`step`.
        """
        if self._last_pos is None:
            raise ThinklensError.of("decoder state", "extend() before prefill()", "prefill() first", "call dec.prefill() once per batch")
        if tokens.ndim != 2 or tokens.shape[0] != self.mask.shape[0] or tokens.shape[1] < 1:
            raise ThinklensError.of("extend tokens", tuple(tokens.shape), f"[{self.mask.shape[0]}, k >= 1]", "pass one row per batch row")
        k = tokens.shape[1]
        self.step_index += k
        self.mask = torch.cat([self.mask, torch.ones_like(self.mask[:, :1]).expand(-1, k)], dim=1)
        pos = self._last_pos + torch.arange(1, k + 1, device=self._last_pos.device)[None]  # [batch, k]
        self._last_pos = pos[:, -1:]
        return self._run(tokens, pos, torch.ones_like(pos, dtype=torch.bool))

    def rollback(self, n: int = 1) -> None:
        """Undo the last ``n`` steps (KV cache, mask and positions), so a step can be re-run."""
        if not 1 <= n <= self.step_index:
            raise ThinklensError.of("rollback", n, f"1..{self.step_index} steps", "roll back only generated steps")
        self.cache.crop(-n)
        self.mask = self.mask[:, :-n]
        self._last_pos = self._last_pos - n
        self.step_index -= n

    @property
    def cache_length(self) -> int:
        return self.cache.get_seq_length()


def _choose(logits: Tensor, cfg: GenerateConfig, gen: torch.Generator | None) -> Tensor:
    if not cfg.do_sample:
        return logits.argmax(-1)
    probs = torch.softmax(logits / cfg.temperature, dim=-1)
    if cfg.top_p < 1.0:
        sp, si = probs.sort(-1, descending=True)
        keep = sp.cumsum(-1) - sp < cfg.top_p  # always keeps the top token
        sp = sp * keep
        probs = torch.zeros_like(probs).scatter(-1, si, sp)
    return torch.multinomial(probs / probs.sum(-1, keepdim=True), 1, generator=gen)[:, 0]


def eos_ids(model: "HookedModel") -> set[int]:
    ids: set[int] = set()
    for src in (model.tokenizer.eos_token_id, getattr(model.config, "eos_token_id", None),
                getattr(getattr(model.hf, "generation_config", None), "eos_token_id", None)):
        if isinstance(src, int):
            ids.add(src)
        elif isinstance(src, (list, tuple)):
            ids.update(int(x) for x in src)
    return ids


def mark_stops(tokenizer: Any, nxt: Tensor, tokens: list[Tensor], t: int, eos: set[int], stop: Sequence[str], tail: int,
               done: Tensor, lengths: list[int], reasons: list[str]) -> None:
    """Record the rows that stop at step ``t``: EOS, or a stop string within the last ``tail`` tokens.

    Updates ``done`` / ``lengths`` / ``reasons`` in place; shared by every decoding loop.
    """
    for r in range(len(lengths)):
        if done[r]:
            continue
        if int(nxt[r]) in eos:
            done[r], lengths[r], reasons[r] = True, t + 1, "eos"
        elif stop and any(s in tokenizer.decode([int(x[r]) for x in tokens[-tail:]]) for s in stop):
            done[r], lengths[r], reasons[r] = True, t + 1, "stop_string"


@torch.no_grad()
def _generate_batch(model: "HookedModel", prompts: list[str], cfg: GenerateConfig, sites: list[Site],
                    interventions: Sequence[Intervention], gen: torch.Generator | None) -> list[Trace]:
    enc = model.tokenize(prompts)
    b = len(prompts)
    dec = Decoder(model, enc)
    buf: dict[Site, dict[int, Tensor]] = {s: {} for s in sites}

    def saver(site: Site):
        def fn(act: Tensor, ctx: ForwardContext) -> None:
            buf[site][ctx.step] = act[:, -1].detach()  # a re-run step overwrites its own row
        return fn

    eos = eos_ids(model)
    pad = model.tokenizer.pad_token_id
    tokens: list[Tensor] = []
    ent: list[Tensor] = []
    tk_ids: list[Tensor] = []
    tk_p: list[Tensor] = []
    done = torch.zeros(b, dtype=torch.bool)
    lengths = [cfg.max_new_tokens] * b
    reasons = ["max_new_tokens"] * b
    stop_chars = max((len(s) for s in cfg.stop), default=0)
    with model.intervene(interventions), site_hooks(model, [(s, saver(s)) for s in sites]):
        logits = dec.prefill()
        for t in range(cfg.max_new_tokens):
            logp = torch.log_softmax(logits, -1)  # [batch, vocab]
            ent.append(-(logp.exp() * logp).sum(-1).cpu())
            p, i = logp.exp().topk(min(cfg.top_k_stats, logp.shape[-1]), dim=-1)
            tk_ids.append(i.cpu())
            tk_p.append(p.cpu())
            nxt = _choose(logits, cfg, gen)
            nxt = torch.where(done.to(nxt.device), torch.full_like(nxt, pad), nxt)
            tokens.append(nxt.cpu())
            mark_stops(model.tokenizer, nxt, tokens, t, eos, cfg.stop, stop_chars + 4, done, lengths, reasons)
            if bool(done.all()) or t == cfg.max_new_tokens - 1:
                break
            logits = dec.step(nxt)
    tok_mat = torch.stack(tokens, 1)  # [batch, steps]
    ent_mat, ids_mat, p_mat = torch.stack(ent, 1), torch.stack(tk_ids, 1), torch.stack(tk_p, 1)
    hid = {s: torch.stack([buf[s][k] for k in sorted(buf[s])], 1).cpu() for s in sites}  # [batch, steps, d]
    out = []
    for r in range(b):
        n = lengths[r]
        ids = tok_mat[r, :n].tolist()
        plen = int(enc["attention_mask"][r].sum())
        out.append(Trace(
            prompt=prompts[r], prompt_ids=enc["input_ids"][r, -plen:].tolist(), token_ids=ids,
            tokens=[model.tokenizer.decode([i]) for i in ids],
            text=model.tokenizer.decode(ids, skip_special_tokens=True), stop_reason=reasons[r],
            hidden={s: hid[s][r, :n].clone() for s in sites}, entropy=ent_mat[r, :n].clone(),
            topk_ids=ids_mat[r, :n].clone(), topk_probs=p_mat[r, :n].clone(),
        ))
    return out


def generate(model: "HookedModel", prompts: "str | Sequence[str]", cfg: GenerateConfig, *, capture: Sequence[Site | str] = (),
             interventions: Sequence[Intervention] = (), progress: bool = False) -> list[Trace]:
    """Generate for every prompt; see :class:`GenerateConfig` and :class:`thinklens.trace.Trace`."""
    prompts = [prompts] if isinstance(prompts, str) else list(prompts)
    if not prompts:
        raise ThinklensError.of("prompts", prompts, "at least one prompt", "pass a non-empty list")
    sites = model.resolve_sites(capture) if capture else []
    gen = None
    if cfg.do_sample:
        gen = torch.Generator(device=model.device)
        gen.manual_seed(0 if cfg.seed is None else cfg.seed)
    bs = cfg.batch_size or len(prompts)
    chunks = [prompts[i:i + bs] for i in range(0, len(prompts), bs)]
    out: list[Trace] = []
    for chunk in tqdm(chunks, desc="generate", disable=not progress or len(chunks) < 2):
        out.extend(_generate_batch(model, chunk, cfg, sites, interventions, gen))
    return out
