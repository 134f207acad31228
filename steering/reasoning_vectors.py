"""Reasoning vectors: task arithmetic in weight space between checkpoints of one lineage.

Zbeeb et al. (arXiv 2509.01363): ``v = theta_a - theta_b`` from two fine-tunes of one init on the same
data (GRPO minus SFT), then ``theta_target + alpha * v`` on a sibling. Only meaningful within one
lineage: mismatched architectures or shapes raise a :class:`ThinklensError`; deltas that look like
unrelated inits (relative to a shared base) raise a :class:`LineageWarning`.

Tensor groups (``all``, ``attention``, ``mlp``, ``no_embeddings``) select which parameters get
``alpha * v``; which parameter is in which group comes from the model family's adapter
(:meth:`thinklens.engine.adapters.Adapter.parameter_group`); tied parameters are counted once
(``named_parameters``).

Example:
    >>> import torch
    >>> a = {"model.layers.0.mlp.up_proj.weight": torch.ones(2, 2)}
    >>> b = {"model.layers.0.mlp.up_proj.weight": torch.zeros(2, 2)}
    >>> ReasoningVector.between(a, b, model_type="llama").norm("mlp")
    2.0
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from transformers import AutoModelForCausalLM

from thinklens.calibration import stats
from thinklens.calibration.findings import paired_finding
from thinklens.data.answers import is_correct
from thinklens.engine.adapters import PARAMETER_KINDS, Adapter, adapter_for
from thinklens.engine.model import HookedModel, resolve_model_path
from thinklens.errors import ThinklensError, did_you_mean, opt
from thinklens.generation.decode_loop import generate_texts
from thinklens.tasks import render_prompt
from thinklens.tasks.protocol import token_budget, zoo_meta
from thinklens.zoo.registry import repo_root

#: Tensor groups a vector can be applied to (CLI choices derive from this registry).
GROUPS: dict[str, str] = {
    "all": "every parameter",
    "attention": "self-attention projections only",
    "mlp": "MLP weights only",
    "no_embeddings": "everything except token/position embeddings and the LM head",
}
#: The adapter's parameter kinds in each group (``all``: every parameter, whatever its kind).
GROUP_KINDS: dict[str, frozenset[str]] = {
    "all": frozenset(PARAMETER_KINDS),
    "attention": frozenset({"attention"}),
    "mlp": frozenset({"mlp"}),
    "no_embeddings": frozenset(PARAMETER_KINDS) - {"embedding"},
}


class LineageWarning(UserWarning):
    """The two checkpoints do not look like fine-tunes of one shared init."""


def check_group(group: str) -> str:
    """``group`` if it names a tensor group; else a clear error with a did-you-mean."""
    if group not in GROUPS:
        raise ThinklensError.of("tensor group", group, f"one of {', '.join(GROUPS)}", did_you_mean(str(group), list(GROUPS)))
    return group


def in_group(name: str, group: str, adapter: Adapter | None) -> bool:
    """Whether parameter ``name`` (of a model of ``adapter``'s family) belongs to tensor ``group``.

    Example:
        >>> llama = adapter_for("llama")
        >>> in_group("model.layers.1.self_attn.q_proj.weight", "attention", llama)
        True
        >>> in_group("model.embed_tokens.weight", "no_embeddings", llama)
        False
    """
    if check_group(group) == "all":
        return True
    if adapter is None:
        raise ThinklensError.of("tensor group", group, "'all' for tensors of an unknown model family",
                                "pass the checkpoints' model_type (ReasoningVector.between(..., model_type='llama'))")
    return adapter.parameter_group(name).kind in GROUP_KINDS[group]


def load_weights(model_or_path: Any) -> tuple[dict[str, Tensor], Any]:
    """``({name: float32 tensor}, config)`` of an HF model, a HookedModel, a zoo name or a model folder."""
    if hasattr(model_or_path, "hf"):
        model_or_path = model_or_path.hf
    if isinstance(model_or_path, torch.nn.Module):
        return {n: p.detach().float().cpu() for n, p in model_or_path.named_parameters()}, model_or_path.config
    return load_weights(load_causal_lm(str(model_or_path)))


def load_causal_lm(name_or_path: str):
    """An HF causal LM (float32, eval) from a zoo name or a local folder (offline)."""
    p = Path(name_or_path)
    if not p.exists() and not p.is_absolute() and (repo_root() / p / "config.json").is_file():
        name_or_path = str(repo_root() / p)  # e.g. data/zoo/tiny-grpo from any working directory
    path = resolve_model_path(name_or_path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return model.eval()


def check_lineage_shapes(a: Mapping[str, Tensor], b: Mapping[str, Tensor], cfg_a: Any = None, cfg_b: Any = None,
                         what: str = "checkpoints") -> None:
    """Raise a clear error when two checkpoints have different architectures or tensor shapes."""
    if cfg_a is not None and cfg_b is not None:
        for key in ("model_type", "hidden_size", "num_hidden_layers", "intermediate_size", "vocab_size"):
            va, vb = getattr(cfg_a, key, None), getattr(cfg_b, key, None)
            if va != vb:
                raise ThinklensError.of(f"{what} architecture", f"{key}={va} vs {key}={vb}",
                                        "checkpoints of one architecture (same config shapes)",
                                        "use checkpoints fine-tuned from one init (e.g. zoo siblings of tiny-pre)")
    if set(a) != set(b):
        only = sorted(set(a) ^ set(b))[:3]
        raise ThinklensError.of(f"{what} tensors", f"names present in only one: {only}", "the same parameter names",
                                "use checkpoints of one architecture")
    for n in a:
        if a[n].shape != b[n].shape:
            raise ThinklensError.of(f"{what} tensor {n}", f"shape {tuple(a[n].shape)} vs {tuple(b[n].shape)}",
                                    "equal shapes", "use checkpoints of one architecture and size")


def _flat(d: Mapping[str, Tensor], names: Iterable[str]) -> Tensor:
    return torch.cat([d[n].double().flatten() for n in names])


def cosine(a: Mapping[str, Tensor], b: Mapping[str, Tensor], group: str = "all", adapter: Adapter | None = None) -> float:
    """Cosine similarity of two same-named tensor dicts flattened over ``group``."""
    names = [n for n in sorted(a) if in_group(n, group, adapter)]
    x, y = _flat(a, names), _flat(b, names)
    den = float(x.norm() * y.norm())
    return float(x @ y) / den if den > 0 else 0.0


@dataclass(frozen=True)
class LineageReport:
    """How related two checkpoints look (deltas relative to a shared base, when given)."""

    cos_weights: float
    """cos(theta_a, theta_b): near 1 for siblings, near 0 for unrelated inits."""
    cos_deltas: float | None
    """cos(theta_a - base, theta_b - base)."""
    rel_delta_a: float | None
    """||theta_a - base|| / ||base||."""
    rel_delta_b: float | None
    """||theta_b - base|| / ||base||."""
    related: bool
    """Whether the checks passed (else a LineageWarning was raised)."""


def lineage_report(a: Mapping[str, Tensor], b: Mapping[str, Tensor], base: Mapping[str, Tensor] | None = None, *,
                   min_cos_deltas: float = 0.02, max_rel_delta: float = 0.75, min_cos_weights: float = 0.5) -> LineageReport:
    """Check that ``a`` and ``b`` look like fine-tunes of one init; warns (:class:`LineageWarning`) if not.

    With a ``base``: each delta must be small relative to the base (an unrelated init is about
    ``sqrt(2)`` times the base's norm away) and the two deltas not orthogonal. Without: the raw weights
    must be close (cosine >= ``min_cos_weights``). Only weight matrices count (norm gains start at one
    in every model).
    """
    # Matrices only: norm gains are initialised to ones in every model and would make any two inits look alike.
    names = [n for n in sorted(a) if a[n].ndim >= 2]
    cw = float(_flat(a, names) @ _flat(b, names)) / float(_flat(a, names).norm() * _flat(b, names).norm())
    cd = ra = rb = None
    reasons = []
    if base is not None:
        check_lineage_shapes(a, base, what="base")
        fb = _flat(base, names)
        da, db = _flat(a, names) - fb, _flat(b, names) - fb
        den = float(da.norm() * db.norm())
        cd = float(da @ db) / den if den > 0 else 0.0
        ra, rb = float(da.norm() / fb.norm()), float(db.norm() / fb.norm())
        if max(ra, rb) > max_rel_delta:
            reasons.append(f"a delta is {max(ra, rb):.2f}x the base's norm (> {max_rel_delta})")
        if min(ra, rb) < 1e-6:
            cd = None  # one checkpoint is the base itself: the cosine is undefined, the norm check suffices
        elif cd < min_cos_deltas:
            reasons.append(f"cos of the deltas is {cd:.3f} (< {min_cos_deltas})")
    elif cw < min_cos_weights:
        reasons.append(f"cos of the weights is {cw:.3f} (< {min_cos_weights})")
    if reasons:
        warnings.warn(f"checkpoints look unrelated ({'; '.join(reasons)}): a reasoning vector is only meaningful "
                      "between fine-tunes of one init", LineageWarning, stacklevel=2)
    return LineageReport(cw, cd, ra, rb, not reasons)


@dataclass(frozen=True)
class ReasoningVector:
    """``delta = theta_a - theta_b`` per parameter name (float32, CPU)."""

    delta: dict[str, Tensor]
    """Parameter name -> difference tensor."""
    label: str = "a - b"
    """What was subtracted from what."""
    model_type: str | None = None
    """HF ``model_type`` of the checkpoints (its adapter groups the parameters; None: only group ``all``)."""

    @classmethod
    def between(cls, a: Mapping[str, Tensor], b: Mapping[str, Tensor], label: str = "a - b",
                model_type: str | None = None) -> "ReasoningVector":
        check_lineage_shapes(a, b)
        return cls({n: (a[n].float() - b[n].float()) for n in a}, label, model_type)

    @property
    def adapter(self) -> Adapter | None:
        return adapter_for(self.model_type) if self.model_type else None

    def norm(self, group: str = "all") -> float:
        names = [n for n in sorted(self.delta) if in_group(n, group, self.adapter)]
        return float(_flat(self.delta, names).norm()) if names else 0.0

    def groups(self) -> list[str]:
        """The tensor groups this vector can be split into (only ``all`` without a model type)."""
        return list(GROUPS) if self.model_type else ["all"]

    def norms(self) -> dict[str, float]:
        return {g: self.norm(g) for g in self.groups()}

    def random_like(self, seed: int) -> "ReasoningVector":
        """The control: a random direction with every tensor's norm equal to this vector's (seeded, local generator).

        Example:
            >>> v = ReasoningVector({"w": torch.tensor([[3.0, 4.0]])})
            >>> r = v.random_like(0)
            >>> round(r.norm(), 4), bool(torch.equal(r.delta["w"], v.random_like(0).delta["w"]))
            (5.0, True)
        """
        g = torch.Generator().manual_seed(seed)
        out = {}
        for n, d in self.delta.items():
            x = torch.randn(d.shape, generator=g)
            out[n] = x * (d.norm() / x.norm().clamp_min(1e-12))
        return ReasoningVector(out, f"random, |.| of {self.label}", self.model_type)


def reasoning_vector(a: Any, b: Any, base: Any = None) -> tuple[ReasoningVector, LineageReport]:
    """``theta_a - theta_b`` from models, zoo names or folders, with the lineage checks.

    Example:
        >>> # v, report = reasoning_vector("data/zoo/tiny-grpo", "tiny-cot", base="tiny-pre")
    """
    wa, ca = load_weights(a)
    wb, cb = load_weights(b)
    check_lineage_shapes(wa, wb, ca, cb)
    wbase = None
    if base is not None:
        wbase, cbase = load_weights(base)
        check_lineage_shapes(wa, wbase, ca, cbase, what="base")
    report = lineage_report(wa, wb, wbase)
    return ReasoningVector.between(wa, wb, label=f"{a} - {b}", model_type=getattr(ca, "model_type", None)), report


def zoo_lineage(models: Mapping[str, str]) -> dict[str, Any]:
    """The recorded init chains of the zoo models among ``models`` (role -> zoo name or folder; others are left
    out) and whether they share one root; warns (:class:`LineageWarning`) when they do not.

    Example:
        >>> zoo_lineage({"a": "org/not-a-zoo-model"})
        {'chains': {}, 'roots_match': None}
    """
    def meta_of(name: str) -> dict:
        meta = zoo_meta(name)
        if not meta and not Path(name).is_absolute() and (repo_root() / name / "zoo.json").is_file():
            meta = zoo_meta(repo_root() / name)  # e.g. data/zoo/tiny-grpo from any working directory
        return meta

    chains: dict[str, list[str]] = {}
    for role, name in models.items():
        meta = meta_of(str(name))
        if not meta:
            continue
        chain = [str(meta.get("name") or Path(str(name)).name)]
        while meta.get("init") and meta["init"] not in chain:
            chain.append(str(meta["init"]))
            meta = meta_of(chain[-1])
        chains[role] = chain
    roots = {c[-1] for c in chains.values()}
    if len(roots) > 1:
        warnings.warn(f"zoo models of different lineages ({', '.join(f'{r}: {c}' for r, c in chains.items())}): a reasoning "
                      "vector is only meaningful between fine-tunes of one init", LineageWarning, stacklevel=2)
    return {"chains": chains, "roots_match": (len(roots) <= 1) if chains else None}


def _check_alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha):
        raise ThinklensError.of("alpha", alpha, "a finite number", f"pass e.g. {opt('alphas', (-1, 0, 0.5, 1))}")
    return float(alpha)


@torch.no_grad()
def apply_vector(target: torch.nn.Module, v: ReasoningVector, alpha: float, group: str = "all") -> torch.nn.Module:
    """A copy of ``target`` with ``alpha * v`` added to the parameters of ``group`` (target untouched)."""
    alpha = _check_alpha(alpha)
    params = dict(target.named_parameters())
    check_lineage_shapes({n: p for n, p in params.items()}, v.delta, what="target")
    adapter = adapter_for(target.config.model_type) if group != "all" else None
    merged = copy.deepcopy(target)
    for name, p in merged.named_parameters():
        if in_group(name, group, adapter):
            p.add_(alpha * v.delta[name].to(p.device, p.dtype))
    return merged.eval()


def vector_stats(v: ReasoningVector, target: Mapping[str, Tensor], base: Mapping[str, Tensor] | None = None) -> dict[str, Any]:
    """Norms per group, the target's norm, and cosines of v with the target's own delta from ``base``."""
    out: dict[str, Any] = {"label": v.label, "norms": v.norms(),
                           "target_norm": float(_flat(target, sorted(target)).norm())}
    out["relative_norm"] = out["norms"]["all"] / out["target_norm"]
    if base is not None:
        own = {n: target[n] - base[n] for n in target}
        out["cos_with_target_delta"] = {g: cosine(v.delta, own, g, v.adapter) for g in v.groups()}
    return out


def alpha_sweep(target: torch.nn.Module, v: ReasoningVector, alphas: Sequence[float], evaluate: Callable[[Any], dict[str, Any]],
                groups: Sequence[str] = ("all",), progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Evaluate ``target + alpha * v`` for every group and alpha; one row per pair with the
    ``evaluate(model)`` fields (e.g. accuracy). Alpha 0 is the target itself."""
    alphas = [_check_alpha(a) for a in alphas]
    for g in groups:
        check_group(g)  # before any work
    rows = []
    at_zero: dict[str, Any] | None = None  # alpha 0 is the target itself in every group: evaluate it once
    for g in groups:
        for a in alphas:
            if a == 0 and at_zero is not None:
                row = {"group": g, "alpha": a, **at_zero}
            else:
                model = apply_vector(target, v, a, g)
                res = evaluate(model)
                del model
                at_zero = res if a == 0 else at_zero
                row = {"group": g, "alpha": a, **res}
            rows.append(row)
            if progress:
                progress(f"{g} alpha={a:+.2f} " + " ".join(f"{k}={val:.3f}" for k, val in row.items()
                                                            if isinstance(val, float) and k != "alpha"))
    return rows


def save_merged(model: torch.nn.Module, tokenizer: Any, out_dir: str | Path, meta: dict[str, Any] | None = None) -> Path:
    """Save a merged model in HF format (``save_pretrained`` + tokenizer), loadable by ``HookedModel.load``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    if meta is not None:
        (out / "merge.json").write_text(json.dumps(meta, indent=2))
    return out


# ---------------------------------------------------------------- findings: alpha chosen on one split, reported on another


def alpha_point(group: str, alpha: float) -> str:
    """The name of one (group, α) of the sweep in its per-problem records: ``<group> α <alpha>``.

    >>> alpha_point("mlp", -0.5)
    'mlp α -0.5'
    """
    return f"{group} α {float(alpha):g}"


def zoo_scorer(tokenizer: Any, problems: Sequence[Any], style: str, batch_size: int = 64) -> Callable[[Any], dict[str, Any]]:
    """``score(model) -> {accuracy, by_steps, correct, texts, prompts, golds}``: greedy per-problem correctness on zoo
    ``problems`` in ``style``, with the texts it graded.

    Problems are generated per step count with the zoo evaluator's token budget (:func:`thinklens.tasks.protocol.token_budget`),
    so ``correct[i]`` is problem ``i``'s outcome, the unit of the paired tests."""
    by_steps: dict[int, list[int]] = {}
    for i, p in enumerate(problems):
        by_steps.setdefault(int(p.n_steps), []).append(i)

    prompts = [render_prompt(p, style) for p in problems]

    def score(model: Any) -> dict[str, Any]:
        hooked = HookedModel(model, tokenizer)
        correct = [False] * len(problems)
        out = [""] * len(problems)
        for s, idx in sorted(by_steps.items()):
            texts = generate_texts(hooked, [prompts[i] for i in idx], max_new_tokens=token_budget(style, s),
                                   batch_size=batch_size)
            for i, t in zip(idx, texts):
                correct[i] = bool(is_correct(t, problems[i].answer))
                out[i] = t
        return {"accuracy": sum(correct) / max(1, len(correct)),
                "by_steps": {str(s): sum(correct[i] for i in idx) / len(idx) for s, idx in sorted(by_steps.items())},
                "correct": correct, "texts": out, "prompts": prompts, "golds": [str(p.answer) for p in problems]}

    return score


def choose_alpha(correct_by_alpha: Mapping[float, Sequence[bool]], select: Sequence[int]) -> float:
    """The alpha whose accuracy on the ``select`` problems is highest (ties: the smallest ``|alpha|``, so alpha 0
    wins a tie and a sweep that changes nothing chooses nothing).

    Example:
        >>> choose_alpha({0.0: [1, 0, 0, 1], 1.0: [1, 1, 0, 0], 2.0: [1, 1, 1, 0]}, [0, 1])
        1.0
    """
    sel = list(select)
    if not sel:
        raise ThinklensError.of("selection split", "no problems", "at least one problem to choose alpha on", "score more problems")
    return max(correct_by_alpha, key=lambda a: (sum(bool(correct_by_alpha[a][i]) for i in sel), -abs(a), -a))


def sweep_findings(method: Mapping[float, Sequence[bool]], controls: Mapping[str, Mapping[float, Sequence[bool]]] | None = None,
                   *, label: str = "v", seed: int = 0, fraction: float = 0.5, min_gain: float = 0.0) -> tuple[list[Any], dict[str, Any]]:
    """Findings of an alpha sweep: alpha chosen on one split of the problems, the gain reported on the other.

    ``method`` maps alpha -> per-problem correctness (the same problems at every alpha; alpha 0 is the target
    itself); ``controls`` maps a control's name (``"norm-matched random direction"``, ``"continued-SFT delta"``) to
    its own sweep over the same problems and alphas. The problems are split by :func:`thinklens.calibration.stats.split_indices`
    (``seed``); on the selection split the best alpha of the method and of every control is chosen
    (:func:`choose_alpha`); on the reporting split, paired McNemar tests: the method at its alpha against alpha 0,
    and against every control at the control's own chosen alpha. ``min_gain``: an effect against alpha 0 must also
    gain at least this much accuracy on the reporting split.

    Returns ``(findings, choice)``: :class:`thinklens.calibration.findings.Finding` s and ``{alpha, select, report, select_accuracy,
    control_alphas}``.

    Example:
        >>> noise = {a: [(i * 7 + int(a * 10)) % 3 == 0 for i in range(40)] for a in (0.0, 1.0)}
        >>> fs, choice = sweep_findings(noise, seed=0)
        >>> fs[0].verdict, len(set(choice["select"]) & set(choice["report"]))
        ('no effect', 0)
    """
    if 0.0 not in method:
        raise ThinklensError.of("alpha sweep", sorted(method), "a sweep that includes alpha 0 (the target itself)",
                                f"pass {opt('alphas', (-1, 0, 1))}")
    n = len(method[0.0])
    for name, sweep in {"v": method, **(controls or {})}.items():
        for a, c in sweep.items():
            if len(c) != n:
                raise ThinklensError.of(f"{name} at alpha {a}", f"{len(c)} outcomes", f"{n}, one per problem of alpha 0",
                                        "score every alpha on the same problems")
    select, report = stats.split_indices(n, fraction=fraction, seed=seed)
    alpha = choose_alpha(method, select)

    def on(sweep: Mapping[float, Sequence[bool]], a: float, idx: Any) -> Any:
        return np.asarray(sweep[a], dtype=float)[idx]

    ceiling = dict(ceiling=1.0, ceiling_margin=0.02)
    gain = paired_finding(f"{label} at alpha {alpha:+g} (chosen on {len(select)} other problems) raises accuracy over alpha 0",
                          on(method, alpha, report), on(method, 0.0, report), control="alpha 0", statistic="accuracy",
                          binary=True, seed=seed, **ceiling)
    extra = {**gain.extra, "alpha": alpha, "select_accuracy": float(on(method, alpha, select).mean()),
             "otherwise": f"{label} does not raise accuracy over alpha 0 on held-out problems"}
    verdict = gain.verdict
    if verdict == "effect" and (extra["diff"] or 0.0) < min_gain:
        verdict = "no effect"
        extra["min_gain"] = min_gain
    findings = [dataclasses.replace(gain, verdict=verdict, extra=extra)]
    control_alphas: dict[str, float] = {}
    for name, sweep in (controls or {}).items():
        ca = control_alphas[name] = choose_alpha(sweep, select)
        f = paired_finding(f"{label} at alpha {alpha:+g} beats the {name} (its alpha {ca:+g}, chosen on the same split)",
                           on(method, alpha, report), on(sweep, ca, report), control=f"{name} at alpha {ca:+g}",
                           statistic="accuracy", binary=True, seed=seed)
        otherwise = "random vectors do as well" if "random" in name else f"the {name} does as well"
        findings.append(dataclasses.replace(f, extra={**f.extra, "control_alpha": ca, "otherwise": otherwise}))
    choice = {"alpha": alpha, "select": [int(i) for i in select], "report": [int(i) for i in report],
              "select_accuracy": extra["select_accuracy"], "control_alphas": control_alphas}
    return findings, choice
