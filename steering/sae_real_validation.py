"""SAE on real residuals as a positive control on any model (``thinklens run validate --model smollm2-135m``).

An SAE trained on a model's own text must reach what SAELens reaches on the same activations with the same config
(shared/specs/real-weights.md). The corpus is the model's sampled completions (seeded) of neutral sentence starts
(``data/real/neutral_prompts.json``), rendered with the chat template where the tokenizer has one, else plain;
the starts are split in two halves, and every completion of a start goes to its half (train or held out). Every row
starts with a token both paths exclude (the template's or the tokenizer's BOS, else its EOS is put in front), so
the attention sink, whose residual norm is ~30x the others' on SmolLM2, is never trained on nor scored. The site is
``resid_post.{n_layers // 3}`` (:func:`sae_site`). One topk config (``d_sae = 4 d_model``, ``k = 32``), trained twice
on the train half:

- A, thinklens's path: rows captured by the HookedModel (:func:`capture_rows`: every position but pad, bos and
  eos, exactly the ids sae-lens's ``exclude_special_tokens`` drops) fed to sae-lens's trainer
  (:func:`thinklens.steering.sae.train_sae_on_rows`);
- B, SAELens's own path: its ``LanguageModelSAETrainingRunner`` and activation store over the same token rows
  (:func:`thinklens.steering.sae.train_sae`).

Both are scored on the same held-out rows, the positions of the generated tokens (the chat scaffold, whose states
repeat those of the train half exactly, is left out): explained variance as a ratio of sums over held-out texts
(:func:`ev_sums`; its interval a bootstrap over texts), CE loss recovered on generated tokens only
(:mod:`thinklens.steering.sae_fidelity`), L0 and dead features. The control is SAE A with every decoder row turned
into a random unit vector of the same norm (:func:`random_decoder`): encoder, latents, L0 and norms unchanged, only
the directions broken.

- ``sae-real planted``: recovered when the interval of ``EV_A - EV_B`` (paired over texts) lies above
  ``-MARGIN``, ``EV_A >= MIN_EV`` and the random decoder's EV interval lies below ``RANDOM_MAX_EV``. Details give
  every number and the top-activating held-out contexts of 5 live features of SAE A (drawn at random, seeded).
- ``sae-real null-random-decoder``: the random decoder's EV. A broken dictionary adds variance rather than
  removing it, so its EV lies anywhere below 0 (the larger its latents, the lower): a two-sided equivalence to 0
  would fail a correct scorer. The claim "it reconstructs nothing" is one-sided: no effect when the interval's upper
  end lies below ``RANDOM_MAX_EV``. What the null catches is a scorer that credits reconstruction from anything but
  the directions (norms, L0, the bias, or x scored against itself).

The margins were fixed before any real-weight run: ``MARGIN`` 0.05 of variance is a tenth of what separates a
working SAE from none, and ``MIN_EV`` 0.6 is below what topk SAEs of this width reach on middle residuals when trained
on millions of tokens (here: tens of thousands of activations, a few thousand distinct). Both SAEs start their decoder
bias at the data's mean (:func:`thinklens.steering.sae.center_decoder_bias`).

Example:
    >>> [s.key for s in SETTINGS]
    ['sae-real/planted', 'sae-real/null-random-decoder']
    >>> res, tot = np.array([1.0, 3.0]), np.array([4.0, 4.0])
    >>> float(ev_stat(res, tot)(np.arange(2)[None])[0])
    0.5
"""

from __future__ import annotations

import copy
import dataclasses
import json
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.calibration.stats import bootstrap_units
from thinklens.data.formats import format_for
from thinklens.engine.interventions import HookFn
from thinklens.engine.tokenization import prompt_ids
from thinklens.steering.configs import SAETrainConfig
from thinklens.steering.corpora import generated_rows, special_ids
from thinklens.steering.sae import row_metrics, train_sae, train_sae_on_rows
from thinklens.steering.sae_fidelity import sae_fidelity
from thinklens.steering.sae_findings import recovered_finding
from thinklens.zoo.registry import repo_root

if TYPE_CHECKING:
    from sae_lens import SAE

    from thinklens.engine.model import HookedModel

MARGIN = 0.05
"""Explained variance thinklens's SAE may lose to SAELens's: the gap's interval must lie above ``-MARGIN``."""
MIN_EV = 0.6
"""Held-out explained variance thinklens's SAE must reach."""
RANDOM_MAX_EV = 0.1
"""The random-decoder control's EV interval must lie below this (planted and null)."""
EXPANSION, K = 4, 32
"""``d_sae = EXPANSION * d_model``; active latents per token."""
N_FEATURES, N_TOP, WIDTH = 5, 3, 6
"""Live features shown, top contexts each, tokens per context (the activating one last)."""


@dataclass(frozen=True)
class Plan:
    """How much a setting generates and trains."""

    n_prompts: int
    """Neutral starts used (half train, half held out)."""
    samples: int
    """Sampled completions per start."""
    max_new_tokens: int
    """Tokens per completion."""
    training_tokens: int
    """Activations each SAE trains on."""
    batch_tokens: int
    """Activations per optimizer step."""
    lr: float
    """Adam learning rate of both SAEs."""
    fidelity_texts: int | None = None
    """Held-out texts CE loss recovered is scored on (three full forwards per SAE each; None: all)."""


# Sizes chosen on a corpus of their own (seed 1), never on the reported one: on SmolLM2 the held-out EV rose from 0.58
# (61k tokens, lr 1e-3) to 0.61 (lr 2e-3) and 0.62 (123k tokens); 40-token completions gave ~0.05 less.
QUICK = Plan(n_prompts=48, samples=2, max_new_tokens=64, training_tokens=81_920, batch_tokens=512, lr=2e-3, fidelity_texts=24)
FULL = Plan(n_prompts=88, samples=4, max_new_tokens=64, training_tokens=307_200, batch_tokens=1024, lr=2e-3, fidelity_texts=96)


def sae_site(model: "HookedModel") -> str:
    """The site of both SAEs: the residual a third of the way up (``resid_post.10`` of 30 layers)."""
    return f"resid_post.{model.n_layers // 3}"


def neutral_prompts() -> list[str]:
    """The neutral sentence starts of ``data/real/neutral_prompts.json`` (its ``prompts`` then its ``held_out``)."""
    doc = json.loads((repo_root() / "data" / "real" / "neutral_prompts.json").read_text())
    return list(doc["prompts"]) + list(doc.get("held_out", []))


Row = tuple[list[int], list[int]]  # (prompt ids, generated ids)


def corpus(model: "HookedModel", plan: Plan, seed: int) -> tuple[list[Row], list[Row]]:
    """``(train, held_out)``: sampled completions of the neutral starts, split by start (seeded)."""
    tok, exclude = model.tokenizer, set(special_ids(model.tokenizer))
    starts = neutral_prompts()[: plan.n_prompts]
    fmt = format_for(model, "chat" if getattr(tok, "chat_template", None) else "plain", instruction="")
    rendered = fmt.render_all(starts)
    if prompt_ids(tok, rendered[:1])[0][0] not in exclude:  # put the sink on a token both paths drop
        first = tok.bos_token or tok.eos_token
        rendered = [first + p for p in rendered]
    order = np.random.default_rng(seed).permutation(len(starts))
    prompts = [rendered[i] for i in order for _ in range(plan.samples)]
    rows = generated_rows(model, prompts, max_new_tokens=plan.max_new_tokens, seed=seed, batch_size=128)
    split = [(r[:len(p)], r[len(p):]) for r, p in zip(rows, prompt_ids(tok, prompts))]
    cut = len(starts) // 2 * plan.samples
    return split[:cut], split[cut:]


@dataclass(frozen=True)
class SiteRows:
    """Activation rows of some positions of some texts."""

    acts: torch.Tensor
    """``[rows, d]`` float32."""
    text: torch.Tensor
    """``[rows]``: the text (index into the captured rows) of each activation."""
    pos: torch.Tensor
    """``[rows]``: its position in that text."""

    def where(self, keep: torch.Tensor) -> "SiteRows":
        return SiteRows(self.acts[keep], self.text[keep], self.pos[keep])


class _Stop(Exception):
    """Raised by the capture hook: nothing above the site is needed (sae-lens stops there too)."""


@torch.no_grad()
def capture_rows(model: "HookedModel", site: str, rows: Sequence[Sequence[int]], exclude: Sequence[int], *,
                 batch_size: int = 16) -> SiteRows:
    """Activations at ``site`` of every position of ``rows`` whose token is not in ``exclude`` (sae-lens's
    ``exclude_special_tokens``), in row-major order, as sae-lens's store yields them before shuffling.

    Example: ``capture_rows(m, "resid_post.0", [[4, 5, 1]], [0, 1]).acts.shape`` is ``(2, d_model)``.
    """
    s, drop = model.resolve_site(site), torch.tensor(sorted(exclude), dtype=torch.long)
    acts, text, pos = [], [], []
    seen: dict[str, torch.Tensor] = {}

    def stop(act: torch.Tensor, ctx: Any) -> None:
        seen["x"] = act.detach()
        raise _Stop

    for start in range(0, len(rows), batch_size):
        chunk = [list(r) for r in rows[start: start + batch_size]]
        enc = model.tokenize(chunk)  # left-padded: the same batch forward_with builds
        try:
            model.forward_with(chunk, [HookFn(s, stop)])
        except _Stop:
            pass
        ids, mask = enc["input_ids"].cpu(), enc["attention_mask"].cpu().bool()  # [batch, pos]
        keep = mask & ~torch.isin(ids, drop)
        col = torch.arange(ids.shape[1]) - (ids.shape[1] - mask.sum(1, keepdim=True))  # [batch, pos]: logical position
        acts.append(seen["x"].cpu().float()[keep])
        text.append((torch.arange(len(chunk))[:, None] + start).expand_as(ids)[keep])
        pos.append(col[keep])
    return SiteRows(torch.cat(acts), torch.cat(text), torch.cat(pos))


def random_decoder(sae: "SAE", seed: int) -> "SAE":
    """A copy of ``sae`` whose decoder rows are random unit vectors times the original rows' norms (seeded)."""
    out = copy.deepcopy(sae)
    w = out.W_dec.data  # [feature, d]
    r = torch.randn(w.shape, generator=torch.Generator().manual_seed(seed)).to(w)  # [feature, d]
    out.W_dec.data = r / r.norm(dim=1, keepdim=True) * w.norm(dim=1, keepdim=True)
    return out


@torch.no_grad()
def ev_sums(sae: "SAE", rows: SiteRows, n_texts: int) -> tuple[np.ndarray, np.ndarray]:
    """Per text: ``res_ss = sum |x - x_hat|^2`` and ``tot_ss = sum |x - mean|^2`` over its rows (mean: pooled over all
    rows, as in :func:`thinklens.steering.sae.row_metrics`), two ``[n_texts]`` float64 arrays."""
    x = rows.acts.double()  # [rows, d]
    x_hat = sae.decode(sae.encode(rows.acts.float())).double()  # [rows, d]
    res = torch.zeros(n_texts, dtype=torch.float64).index_add(0, rows.text, (x - x_hat).pow(2).sum(-1))
    tot = torch.zeros(n_texts, dtype=torch.float64).index_add(0, rows.text, (x - x.mean(0)).pow(2).sum(-1))
    return res.numpy(), tot.numpy()


def ev_stat(res: np.ndarray, tot: np.ndarray):
    """``idx [n_boot, n] -> [n_boot]`` explained variance of resampled texts (a ratio of sums); at ``idx = arange``
    it is the pooled EV."""
    return lambda idx: 1.0 - res[idx].sum(1) / tot[idx].sum(1)


def gap_stat(res_a: np.ndarray, res_b: np.ndarray, tot: np.ndarray):
    """``EV_A - EV_B`` of resampled texts, the same texts for both (paired)."""
    return lambda idx: (res_b[idx].sum(1) - res_a[idx].sum(1)) / tot[idx].sum(1)


def _interval(stat, n: int, seed: int) -> tuple[float, tuple[float, float]]:
    return float(stat(np.arange(n)[None])[0]), bootstrap_units(n, stat, seed=seed)


@torch.no_grad()
def top_contexts(sae: "SAE", rows: SiteRows, texts: Sequence[Sequence[int]], tokenizer: Any, *, seed: int) -> list[str]:
    """The top-activating contexts of :data:`N_FEATURES` live latents of ``sae`` (drawn at random, seeded), each
    ``feature F (n active): ...ctx[token] | ...``."""
    z = sae.encode(rows.acts.float())  # [rows, feature]
    live = torch.nonzero((z > 0).sum(0) >= N_TOP).ravel().numpy()
    pick = np.random.default_rng(seed).choice(live, size=min(N_FEATURES, len(live)), replace=False)
    out = []
    for f in sorted(int(f) for f in pick):
        shown = []
        for r in torch.topk(z[:, f], N_TOP).indices.tolist():
            t, p = int(rows.text[r]), int(rows.pos[r])
            before = tokenizer.decode(list(texts[t][max(0, p - WIDTH + 1): p]))
            shown.append(repr(f"{before}[{tokenizer.decode([texts[t][p]])}]")[1:-1])
        out.append(f"feature {f} ({int((z[:, f] > 0).sum())} active): " + " | ".join(shown))
    return out


def _config(model: "HookedModel", plan: Plan, seed: int):
    return SAETrainConfig(site=sae_site(model), architecture="topk", d_sae=EXPANSION * model.d_model, k=K,
                          training_tokens=plan.training_tokens, train_batch_size_tokens=plan.batch_tokens, lr=plan.lr,
                          store_batch_size_prompts=16, n_eval_batches=1, seed=seed)


@dataclass
class _Trained:
    """SAE A and what both settings score it on."""

    sae_a: Any
    train: list[Row]
    held: list[Row]
    held_rows: SiteRows
    generated: torch.Tensor
    folder: Any
    details: dict[str, Any]


_MEMO: "weakref.WeakKeyDictionary[Any, dict[tuple, Any]]" = weakref.WeakKeyDictionary()
"""Per loaded model (so one validate run: :meth:`SettingContext.hooked`), the trained SAEs by (stage, plan, seed):
the null reuses the planted setting's SAE A instead of training it again. Gone with the model."""


def _memo(ctx: SettingContext, key: tuple, make):
    model = ctx.hooked()
    store = _MEMO.setdefault(model.hf, {})
    if key not in store:
        store[key] = make(model)
    return store[key]


def _trained(ctx: SettingContext) -> _Trained:
    plan = QUICK if ctx.quick else FULL

    def make(model: "HookedModel") -> _Trained:
        folder = Path(ctx.workdir) if ctx.workdir is not None else Path(tempfile.mkdtemp(prefix="thinklens-sae-real-"))
        t0 = time.perf_counter()
        train, held = corpus(model, plan, ctx.seed)
        t1 = time.perf_counter()
        exclude, site = special_ids(model.tokenizer), sae_site(model)
        rows = capture_rows(model, site, [p + g for p, g in train], exclude)
        held_rows = capture_rows(model, site, [p + g for p, g in held], exclude)
        generated = held_rows.pos >= torch.tensor([len(p) for p, _ in held])[held_rows.text]  # [rows]
        t2 = time.perf_counter()
        sae_a, _ = train_sae_on_rows(rows.acts, _config(model, plan, ctx.seed), out_dir=folder / "thinklens-sae",
                                     source=f"sae-real train half, {len(train)} texts")
        t3 = time.perf_counter()
        details = {"model": ctx.model, "site": site, "plan": dataclasses.asdict(plan), "excluded_ids": exclude,
                   "first_tokens": sorted({p[0] for p, _ in train + held}),
                   "train_texts": len(train), "held_out_texts": len(held), "train_rows": int(len(rows.acts)),
                   "held_out_rows": int(len(held_rows.acts)), "held_out_generated_rows": int(generated.sum()),
                   "seconds": {"generate": round(t1 - t0, 1), "capture": round(t2 - t1, 1), "train_thinklens": round(t3 - t2, 1)}}
        return _Trained(sae_a, train, held, held_rows, generated, folder, details)

    return _memo(ctx, ("trained", plan, ctx.seed), make)


def random_scores(ctx: SettingContext) -> tuple[float, tuple[float, float], int, dict[str, Any]]:
    """The random-decoder control's held-out EV (generated positions), its interval over texts, texts, details."""
    t = _trained(ctx)
    rows = t.held_rows.where(t.generated)
    res, tot = ev_sums(random_decoder(t.sae_a, seed=ctx.seed + 1), rows, len(t.held))
    value, ci = _interval(ev_stat(res, tot), len(t.held), ctx.seed)
    return value, ci, len(t.held), t.details


def measure(ctx: SettingContext) -> dict[str, Any]:
    """Train SAELens's SAE B beside A and score A, B and the random decoder on the held-out rows: every number the
    planted verdict reads (``ev_a``, ``ev_b``, ``gap``, ``ev_random``: ``(value, (lo, hi))``) and the details."""
    t = _trained(ctx)
    plan = QUICK if ctx.quick else FULL

    def make(model: "HookedModel") -> dict[str, Any]:
        t0 = time.perf_counter()
        sae_b, _ = train_sae(model, [p + g for p, g in t.train], _config(model, plan, ctx.seed), out_dir=t.folder / "saelens-sae")
        t1 = time.perf_counter()
        rows, n = t.held_rows.where(t.generated), len(t.held)
        sums = {arm: ev_sums(sae, rows, n) for arm, sae in (("a", t.sae_a), ("b", sae_b))}
        out: dict[str, Any] = {f"ev_{arm}": _interval(ev_stat(*sums[arm]), n, ctx.seed) for arm in sums}
        out["gap"] = _interval(gap_stat(sums["a"][0], sums["b"][0], sums["a"][1]), n, ctx.seed)
        value, ci, _, _ = random_scores(ctx)
        out["ev_random"] = (value, ci)
        d = dict(t.details)
        scored = t.held[: plan.fidelity_texts]
        # three [batch, pos, vocab] logits at once: ~1 GB each for 16 rows of Gemma-3's 262k vocabulary
        batch = max(1, min(16, 50_000_000 // (model.vocab_size * max(len(p) + len(g) for p, g in scored))))
        for arm, sae in (("thinklens", t.sae_a), ("saelens", sae_b)):
            m = row_metrics(sae, t.held_rows.acts)  # every held-out position: L0, dead latents, EV with the scaffold
            fid = sae_fidelity(model, sae, scored, site=sae_site(model), batch_size=batch)
            c = fid["per_row"]
            ce = recovered_finding("CE recovered", "ce_loss_recovered", np.array(c["ce_zero"]), np.array(c["ce_sae"]),
                                   np.array(c["ce_clean"]), seed=ctx.seed, what_costs="cross-entropy")
            d[arm] = {"l0": m["l0"], "dead_fraction": m["dead_fraction"], "ev_all_positions": m["explained_variance"],
                      "ce_loss_recovered": ce.value, "ce_loss_recovered_ci": list(ce.ci), "ce_tokens": fid["fidelity_tokens"],
                      "ce_clean": fid["ce_loss_without_sae"], "ce_with_sae": fid["ce_loss_with_sae"],
                      "ce_zero_ablation": fid["ce_loss_with_ablation"]}
        d["contexts_thinklens"] = top_contexts(t.sae_a, rows, [p + g for p, g in t.held], model.tokenizer, seed=ctx.seed)
        d["seconds"] = d["seconds"] | {"train_saelens": round(t1 - t0, 1), "score": round(time.perf_counter() - t1, 1)}
        out["details"] = d
        return out

    return _memo(ctx, ("measured", plan, ctx.seed), make)


def planted_check(m: dict[str, Any], n: int) -> Check:
    """The planted verdict on :func:`measure`'s numbers."""
    (ev_a, ci_a), (ev_b, ci_b), (gap, ci_gap), (ev_r, ci_r) = m["ev_a"], m["ev_b"], m["gap"], m["ev_random"]
    ok = ci_gap[0] > -MARGIN and ev_a >= MIN_EV and ci_r[1] < RANDOM_MAX_EV
    details = dict(m.get("details", {})) | {"ev_thinklens": ev_a, "ev_thinklens_ci": list(ci_a), "ev_saelens": ev_b,
                                            "ev_saelens_ci": list(ci_b), "ev_random_decoder": ev_r,
                                            "ev_random_decoder_ci": list(ci_r), "margin": MARGIN, "min_ev": MIN_EV}
    return Check("ev_gap", gap, ci_gap, "recovered" if ok else "failed", n=n,
                 target=f"EV(thinklens) - EV(SAELens) interval above -{MARGIN}, EV(thinklens) >= {MIN_EV}, random-decoder "
                        f"EV interval below {RANDOM_MAX_EV} (held-out generated tokens, bootstrap over texts)", details=details)


def null_check(value: float, ci: tuple[float, float], n: int, details: dict[str, Any]) -> Check:
    """The null verdict: the random decoder shown to explain less than :data:`RANDOM_MAX_EV` of the variance."""
    return Check("ev_random_decoder", value, ci, "no-effect" if ci[1] < RANDOM_MAX_EV else "failed", n=n,
                 target=f"random-decoder EV interval below {RANDOM_MAX_EV} (one-sided: a broken dictionary adds variance)",
                 details=dict(details))


def _planted(ctx: SettingContext) -> Check:
    m = measure(ctx)
    return planted_check(m, m.get("details", {}).get("held_out_texts", 0))


def _null(ctx: SettingContext) -> Check:
    return null_check(*random_scores(ctx))


SETTINGS = [
    Setting("sae-real", "planted", "recovered", _planted, kind="benchmark", on_model=True,
            help=f"thinklens's SAE on the model's own text reaches SAELens's held-out EV (gap above -{MARGIN}, "
                 f"EV >= {MIN_EV}); a random decoder stays below {RANDOM_MAX_EV}"),
    Setting("sae-real", "null-random-decoder", "no-effect", _null, on_model=True,
            help=f"SAE decoder rows replaced by random directions of the same norms: EV interval below {RANDOM_MAX_EV}"),
]
