"""The feature page's data, in the manner of Neuronpedia: which SAE a run browses, a feature's activation
histogram and density, its top contexts with the activating token marked, the logits its decoder row
promotes and suppresses, a small coefficient sweep, and a word diff of steered against unsteered text.

Pure functions and small value objects (no Streamlit here), so they are tested directly; the pages
(``pages/7_Features.py``, ``pages/4_Steering.py``) only render what these return.

Which SAE: an ``sae`` run browses its own ``sae/`` folder; a ``steer`` run browses the SAE it steered
with (its config's ``--sae``: an sae-lens folder or an ``sae`` run folder), so the steer run's feature
indexes the SAE that is shown.

Convention (as :mod:`thinklens.steering.features`): ``Trace.hidden[site][t]`` is the state that *produced*
generated token t; that state sits at the position of the token before it (the last prompt token for
t = 0). A context shows the tokens up to that position, the position's own token marked, and the token
it produced next.

Example:
    >>> import torch
    >>> h = activation_histogram(torch.tensor([0.0, 0.0, 1.0, 3.0]), bins=2)
    >>> (h.n_tokens, h.n_active, h.density, h.counts)
    (4, 2, 0.5, [1, 1])
    >>> [(op, text) for op, text in word_diff("a b c", "a x c")]
    [('same', 'a'), ('removed', 'b'), ('added', 'x'), ('same', 'c')]
"""

from __future__ import annotations

import difflib
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Float
from torch import Tensor

from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from sae_lens import SAE

    from thinklens.engine.model import HookedModel
    from thinklens.runs.folders import RunFolder

SAE_KINDS: tuple[str, ...] = ("sae", "steer")
"""Run kinds whose SAE the feature page browses."""

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- which SAE a run browses

@dataclass(frozen=True)
class SaeSource:
    """The SAE a run browses, and what scanning it needs (the model, its site, the prompts' source)."""

    kind: str
    """The run's kind (``sae`` or ``steer``)."""
    run_id: str
    """The run's id."""
    sae_dir: Path
    """The sae-lens folder (cfg.json + sae_weights.safetensors)."""
    model: str
    """The model the SAE reads."""
    site: str | None
    """The site (None: read from the SAE's metadata)."""
    d_sae: int
    """Number of features (the largest index is d_sae - 1)."""
    data: str
    """Where the scanned prompts come from (``zoo:think``, a problem set, a text file)."""
    prompt_format: str = "auto"
    """The prompts' format."""
    min_steps: int = 2
    """Fewest reasoning steps of a synthetic problem."""
    max_steps: int = 6
    """Most reasoning steps of a synthetic problem."""
    feature: int | None = None
    """The run's own feature (a steer run's steered feature), if any."""
    stats_file: Path | None = None
    """``results/feature_stats.json`` of the SAE's ``sae`` run, when it has one."""
    metrics: dict[str, Any] = field(default_factory=dict)
    """sae-lens's metrics of the SAE (explained variance, L0, dead features, ...)."""

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.run_id}"


def _resolve(path: str) -> Path:
    """A path from a run's config: as given (relative to the working folder), else relative to the repo."""
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return p
    return REPO / p if (REPO / p).exists() else p


def _read_json(path: Path) -> dict[str, Any]:
    try:
        out = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return out if isinstance(out, dict) else {}


def sae_source(run: "RunFolder") -> SaeSource:
    """The SAE that ``run`` browses: an ``sae`` run's own ``sae/``, a ``steer`` run's ``--sae``.

    Raises:
        ThinklensError: another kind of run, or an SAE folder that is not there.
    """
    from thinklens.steering.sae import read_metrics, sae_folder

    cfg = run.config()
    if run.kind == "sae":
        nested = {**cfg.get("job", {}), **cfg.get("sae", {})}  # runs made before the one-config `sae` job nested them
        sae_dir, sae_run = run.path / "sae", run.path
        model, site = cfg.get("model", nested.get("model")), cfg.get("site", nested.get("site"))
        data = cfg.get("data") or nested.get("data") or "zoo:think"
        steps = (cfg.get("stats_min_steps", 2), cfg.get("stats_max_steps", 6))
        feature = None
        metrics = _read_json(run.path / "results" / "metrics.json")
    elif run.kind == "steer":
        given = str(cfg.get("sae") or "")
        if not given:
            raise ThinklensError.of("steer run's --sae", None, "the SAE folder the run steered with",
                                    f"rerun it: thinklens run steer --config {run.path / 'config.json'}")
        sae_dir, sae_run = sae_folder(_resolve(given))
        model, site = cfg.get("model"), cfg.get("site")
        summary = run.meta().get("summary") or {}
        site = site or summary.get("site")
        data = cfg.get("data") or cfg.get("prompts") or "zoo:think"
        steps = (cfg.get("min_steps", 2), cfg.get("max_steps", 6))
        feature = summary.get("feature")
        if feature is None:
            chosen = _read_json(run.path / "results" / "steer.json").get("chosen") or {}
            feature = chosen.get("feature")
        metrics = (_read_json(sae_run / "results" / "metrics.json") if sae_run else {}) or read_metrics(sae_dir) or {}
    else:
        raise ThinklensError.of("run kind", run.kind, f"one of {', '.join(SAE_KINDS)} (a run with an SAE)",
                                "pick an sae or steer run")
    sae_cfg = _read_json(sae_dir / "cfg.json")
    if not sae_cfg:
        raise ThinklensError.of("SAE folder", str(sae_dir), "an sae-lens folder holding cfg.json",
                                "train one with `thinklens run sae`, or rerun the steer job with --sae pointing at one")
    site = site or (sae_cfg.get("metadata") or {}).get("thinklens_site")
    stats = sae_run / "results" / "feature_stats.json" if sae_run else None
    return SaeSource(kind=run.kind, run_id=run.run_id, sae_dir=sae_dir, model=str(model), site=site,
                     d_sae=int(sae_cfg.get("d_sae") or metrics.get("d_sae") or 0), data=str(data),
                     prompt_format=str(cfg.get("prompt_format") or "auto"), min_steps=int(steps[0]),
                     max_steps=int(steps[1]), feature=None if feature is None else int(feature),
                     stats_file=stats if stats is not None and stats.is_file() else None, metrics=dict(metrics))


def check_feature_index(source: SaeSource, feature: Any) -> int:
    """``feature`` as an int when it indexes the source's SAE; else an error naming the range."""
    if isinstance(feature, bool) or not isinstance(feature, int) or not 0 <= feature < source.d_sae:
        raise ThinklensError.of("feature", feature, f"an integer in 0..{source.d_sae - 1} ({source.label}'s SAE "
                                f"at {source.sae_dir} has {source.d_sae} features)", "pick a feature of this SAE")
    return feature


# ---------------------------------------------------------------- scanning traces

@dataclass
class FeatureScan:
    """The states of scanned traces at the SAE's site, with the tokens around each (any feature's
    activations are ``encode``-d from them on demand, so memory is tokens x d_model, not x d_sae)."""

    hidden: Float[Tensor, "row d"]
    """One row per generated token: the state that produced it."""
    rows: list[tuple[int, int]]
    """Row -> (trace, generated step)."""
    tokens: list[list[str]]
    """Per trace: prompt tokens then generated tokens, as text pieces."""
    n_prompt: list[int]
    """Per trace: the number of prompt tokens."""
    separator: str = ""
    """What joins tokens into text (``" "`` for word-level tokenizers such as the zoo's)."""

    def position(self, row: int) -> tuple[int, int]:
        """``(trace, index into tokens[trace])`` of the token at whose position row ``row`` sits."""
        k, step = self.rows[row]
        return k, self.n_prompt[k] - 1 + step


def scan_traces(model: "HookedModel", site: str, prompts: Sequence[str], *, max_new_tokens: int = 64,
                seed: int = 0, sample: bool = True) -> FeatureScan:
    """Generate from ``prompts`` capturing ``site`` (sampled at temperature 1 with ``seed``, as the ``sae`` job
    scans its statistics) and keep the states and tokens."""
    from thinklens.steering.features import token_separator

    if not prompts:
        raise ThinklensError.of("prompts", 0, "at least one prompt to scan", "pass more traces")
    s = model.resolve_site(site)
    trs = model.generate(list(prompts), max_new_tokens=max_new_tokens, capture=[s], batch_size=64, do_sample=sample,
                         seed=seed, temperature=1.0)
    tok = model.tokenizer
    hidden, rows, tokens, n_prompt = [], [], [], []
    for k, tr in enumerate(trs):
        h = tr.hidden[s].float().cpu()  # [steps, d]
        hidden.append(h)
        rows.extend((k, t) for t in range(len(h)))
        prompt = [tok.decode([i]) for i in tr.prompt_ids]
        tokens.append(prompt + list(tr.tokens))
        n_prompt.append(len(prompt))
    return FeatureScan(hidden=torch.cat(hidden), rows=rows, tokens=tokens, n_prompt=n_prompt,
                       separator=token_separator(tok, trs))


@torch.no_grad()
def feature_activations(sae: "SAE", hidden: Float[Tensor, "row d"], feature: int,
                        chunk: int = 4096) -> Float[Tensor, " row"]:
    """One feature's activation on every row (the whole SAE encodes: a TopK SAE needs every pre-activation)."""
    from thinklens.steering.features import encode

    out = [encode(sae, hidden[i:i + chunk])[:, feature] for i in range(0, len(hidden), chunk)]
    return torch.cat(out) if out else torch.zeros(0)


@dataclass(frozen=True)
class Histogram:
    """Activation histogram of one feature over scanned tokens (Neuronpedia's activation density)."""

    edges: list[float]
    """Bin edges over the nonzero activations (len(counts) + 1)."""
    counts: list[int]
    """Tokens per bin."""
    n_tokens: int
    """Tokens scanned."""
    n_active: int
    """Tokens where the feature is active (> 0)."""
    max_act: float
    """Largest activation."""

    @property
    def density(self) -> float:
        """Fraction of tokens where the feature is active."""
        return self.n_active / self.n_tokens if self.n_tokens else 0.0


def activation_histogram(acts: Float[Tensor, " row"], bins: int = 30) -> Histogram:
    """Histogram of the nonzero activations in ``bins`` equal bins from 0 to the maximum (the last bin
    includes the maximum), with the density over all tokens."""
    if bins < 1:
        raise ThinklensError.of("histogram bins", bins, "an integer >= 1", "pass bins=30")
    a = acts.detach().double().flatten()
    live = a[a > 0]
    top = float(live.max()) if len(live) else 0.0
    if not len(live):
        return Histogram(edges=[], counts=[], n_tokens=len(a), n_active=0, max_act=top)
    width = top / bins
    idx = (live / width).floor().long().clamp(max=bins - 1)  # [active]
    counts = torch.bincount(idx, minlength=bins)
    return Histogram(edges=[width * i for i in range(bins + 1)], counts=[int(c) for c in counts], n_tokens=len(a),
                     n_active=len(live), max_act=top)


@dataclass(frozen=True)
class Context:
    """One top-activating context: the tokens before the position, the position's token, the next token."""

    act: float
    """The feature's activation."""
    trace: int
    """Which scanned trace."""
    step: int
    """Which generated step (the state that produced generated token ``step``)."""
    before: list[str]
    """Tokens before the marked one."""
    token: str
    """The token at the activation's position (marked)."""
    next_token: str
    """The token that state produced."""
    after: list[str]
    """A few tokens after ``next_token``."""


def top_contexts(scan: FeatureScan, acts: Float[Tensor, " row"], n: int = 10, width: int = 12,
                 after: int = 4) -> list[Context]:
    """The ``n`` rows of largest positive activation, best first, with ``width`` tokens before them."""
    if len(acts) != len(scan.rows):
        raise ThinklensError.of("activations", len(acts), f"{len(scan.rows)} (one per scanned row)",
                                "compute them with feature_activations(sae, scan.hidden, feature)")
    k = min(n, len(acts))
    if k == 0:
        return []
    vals, idx = acts.topk(k)
    out = []
    for v, i in zip(vals.tolist(), idx.tolist()):
        if v <= 0:
            break
        t, pos = scan.position(i)
        toks = scan.tokens[t]
        out.append(Context(act=float(v), trace=t, step=scan.rows[i][1], before=toks[max(0, pos - width):pos],
                           token=toks[pos], next_token=toks[pos + 1] if pos + 1 < len(toks) else "",
                           after=toks[pos + 2:pos + 2 + after]))
    return out


def context_html(ctx: Context, separator: str = "") -> str:
    """A context as HTML: the marked token on a coloured background, the produced token underlined, the rest
    plain; every piece escaped (tokens are model output)."""
    def esc(pieces: Sequence[str]) -> str:
        return html.escape(separator.join(pieces))

    lead = esc(ctx.before) + (separator if ctx.before else "")
    mark = f'<mark style="background:#fdba74;padding:0 2px;border-radius:3px">{html.escape(ctx.token)}</mark>'
    nxt = (separator + f'<u title="the token this state produced">{html.escape(ctx.next_token)}</u>') if ctx.next_token else ""
    tail = (separator + f'<span style="color:#888">{esc(ctx.after)}</span>') if ctx.after else ""
    return f"<code>{ctx.act:.2f}</code> {lead}{mark}{nxt}{tail}"


def stored_contexts(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The feature statistics' stored contexts (``{trace, step, act, context, token}``, the context ending at the
    activation's position and ``token`` the token produced there) as labelled table rows."""
    return [{"activation": round(float(r["act"]), 3), "context (ends at the feature's position)": r.get("context", ""),
             "token produced next": r.get("token", ""), "trace": r.get("trace"), "step": r.get("step")} for r in rows]


def stat_rows(stats: Any, feature: int) -> list[dict[str, Any]]:
    """One feature's stored statistics (``thinklens.steering.features.FeatureStats``) as labelled rows, each with the
    feature's rank among all features (1 = highest) so a number says what it is against."""
    def rank(values: Sequence[float]) -> str:
        v = values[feature]
        return f"{1 + sum(1 for x in values if x > v)} of {len(values)}"

    rows = [{"statistic": f"firing frequency ({stats.n_tokens} tokens of {stats.n_traces} traces)",
             "value": round(stats.freq[feature], 4), "rank": rank(stats.freq)},
            {"statistic": "max activation", "value": round(stats.max_act[feature], 3), "rank": rank(stats.max_act)}]
    for w, corr in stats.corr_words.items():
        rows.append({"statistic": f"correlation with the next token being {w!r} ({stats.word_counts.get(w, 0)} times)",
                     "value": round(corr[feature], 4), "rank": rank(corr)})
    if stats.corr_correct is not None:
        rows.append({"statistic": "correlation of the trace's mean activation with the trace being correct",
                     "value": round(stats.corr_correct[feature], 4), "rank": rank(stats.corr_correct)})
    if stats.freq_reasoning is not None:
        rows.append({"statistic": f"firing frequency inside the reasoning ({stats.n_reasoning_tokens} tokens)",
                     "value": round(stats.freq_reasoning[feature], 4), "rank": rank(stats.freq_reasoning)})
    return rows


# ---------------------------------------------------------------- logits

def rank_logits(logits: Float[Tensor, " vocab"], vocab: Sequence[str], k: int = 10
                ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """``(promoted, suppressed)``: the ``k`` largest and the ``k`` smallest logits with their tokens."""
    if len(logits) != len(vocab):
        raise ThinklensError.of("logits", len(logits), f"{len(vocab)} (one per vocabulary token)",
                                "pass the model's whole vocabulary")
    k = min(k, len(vocab))
    up, down = logits.topk(k), (-logits).topk(k)
    return ([(vocab[i], float(v)) for v, i in zip(up.values.tolist(), up.indices.tolist())],
            [(vocab[i], -float(v)) for v, i in zip(down.values.tolist(), down.indices.tolist())])


def logit_effects(direction: Float[Tensor, " d"], unembed: Float[Tensor, "vocab d"], vocab: Sequence[str],
                  k: int = 10) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """``(promoted, suppressed)``: the ``k`` tokens whose logits the direction raises most and lowers most
    (``unembed @ direction``, Neuronpedia's top logits: the decoder row through the unembedding, no final norm)."""
    if unembed.shape[-1] != direction.shape[-1]:
        raise ThinklensError.of("unembedding", tuple(unembed.shape), f"[vocab, {direction.shape[-1]}] (the "
                                "direction's width)", "pass the model's lm_head weight")
    return rank_logits(unembed.double() @ direction.double(), vocab, k)  # [vocab]


@torch.no_grad()
def feature_logits(model: "HookedModel", sae: "SAE", feature: int, k: int = 10
                   ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """The feature's decoder row through the model's LM head, the head's bias taken out: ``(promoted, suppressed)``."""
    from thinklens.steering.sae import check_feature

    f = check_feature(sae, int(feature))
    direction = sae.W_dec[f].detach().float().to(model.device)[None]  # [1, d]
    logits = model.unembed(direction, apply_norm=False) - model.unembed(torch.zeros_like(direction), apply_norm=False)
    logits = logits[0].double().cpu()  # [vocab]
    return rank_logits(logits, _Vocab(model.tokenizer, len(logits)), k)


class _Vocab(Sequence[str]):
    """Token texts decoded on access (a real vocabulary has 150k tokens; only the top k are read)."""

    def __init__(self, tokenizer: Any, n: int):
        self.tokenizer, self.n = tokenizer, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):  # type: ignore[override]
        return self.tokenizer.decode([int(i)])


# ---------------------------------------------------------------- steering text

def word_diff(plain: str, steered: str) -> list[tuple[str, str]]:
    """Word-level diff of ``steered`` against ``plain``: ``(op, text)`` with op ``same``, ``removed`` or ``added``."""
    a, b = plain.split(), steered.split()
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.extend(("same", w) for w in a[i1:i2])
        else:
            out.extend(("removed", w) for w in a[i1:i2])
            out.extend(("added", w) for w in b[j1:j2])
    return out


def diff_html(ops: Sequence[tuple[str, str]]) -> str:
    """A word diff as HTML: removed words struck through on red, added words on green, all escaped, whole
    (wrapped, never cut off)."""
    style = {"removed": "background:#fecaca;text-decoration:line-through", "added": "background:#bbf7d0"}
    parts = [f'<span style="{style[op]}">{html.escape(w)}</span>' if op in style else html.escape(w) for op, w in ops]
    return ('<div style="font-family:monospace;white-space:pre-wrap;word-break:break-word;line-height:1.7">'
            + " ".join(parts) + "</div>")


def diff_counts(ops: Sequence[tuple[str, str]]) -> dict[str, int]:
    """How many words are kept, removed and added."""
    return {k: sum(1 for op, _ in ops if op == k) for k in ("same", "removed", "added")}


def sweep_rows(texts: dict[float, str], words: Sequence[str] = ("wait", "hmm", "so", "therefore")) -> list[dict[str, Any]]:
    """One row per coefficient of a sweep: words generated and the thinking words counted (decoded text, word
    boundaries, as the steer job counts them)."""
    from thinklens.data.words import word_pattern

    rows = []
    for c in sorted(texts):
        t = texts[c]
        rows.append({"coefficient": c, "words": len(t.split()), **{w: len(word_pattern(w).findall(t)) for w in words},
                     "text": t})
    return rows


def coefficient_sweep(model: "HookedModel", prompt: str, make_intervention, coeffs: Sequence[float], *,
                      max_new_tokens: int = 64) -> dict[float, str]:
    """Greedy continuation of ``prompt`` under ``make_intervention(c)`` at each coefficient (every one is applied:
    clamping to 0 ablates the feature, it is not the unsteered text, which the caller generates apart)."""
    out: dict[float, str] = {}
    for c in coeffs:
        ivs = [make_intervention(float(c))]
        out[float(c)] = model.generate([prompt], max_new_tokens=max_new_tokens, interventions=ivs)[0].text
    return out
