"""Measure what steering does to generation: thinking-word frequency, accuracy, length.

:func:`steer_sweep` runs every (arm, coefficient) pair of a steering experiment on the same prompts;
:func:`steer_prompt` is the side-by-side (unsteered vs steered) call the app makes.

Example:
    >>> reflection_counts(["hmm << 1 + 1 = 3 >> wait << 1 + 1 = 2 >> so #### 2", "#### 4"])["wait"]
    0.5
    >>> reflection_counts(["Okay. Wait, 7. Hmm, awaiting... wait"], ("let me check",))["wait"]
    2.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from thinklens.data.words import word_pattern
from thinklens.engine.interventions import AddVector, Intervention, Positions
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError, opt
from thinklens.steering.contrast import is_degenerate
from thinklens.steering.feature_steering import ClampFeature, ScaleFeature
from thinklens.steering.problems import graded
from thinklens.tasks import REFLECTION_WORDS

if TYPE_CHECKING:
    from sae_lens import SAE

    from thinklens.engine.model import HookedModel


def reflection_counts(texts: Sequence[str], extra: Sequence[str] = ()) -> dict[str, float]:
    """Mean count per text of each reflection word (and of ``extra`` words or phrases), and the fraction of
    texts with any reflection word. Words are found on the decoded text, case-insensitively and on word
    boundaries, as real models write them (`` Wait,`` and ``Hmm,`` count; ``awaiting`` does not)."""
    n = max(1, len(texts))
    found = {w: [len(word_pattern(w).findall(t)) for t in texts] for w in dict.fromkeys([*REFLECTION_WORDS, *extra])}
    out = {w: sum(c) / n for w, c in found.items()}
    out["any_reflection"] = sum(any(found[w][i] for w in REFLECTION_WORDS) for i in range(len(texts))) / n
    return out


def traces_with(texts: Sequence[str], word: str) -> int:
    """How many of ``texts`` say ``word`` at least once (the count behind a word rate's Wilson interval).

    Example:
        >>> traces_with(["Wait, 2.", "so 3", "wait wait"], "wait")
        2
    """
    pattern = word_pattern(word)
    return sum(1 for t in texts if pattern.search(t))


@torch.no_grad()
def mean_norm(acts: Sequence[Tensor]) -> float:
    """Mean L2 norm of activation rows (the unit of steering coefficients)."""
    rows = torch.cat([a.float().reshape(-1, a.shape[-1]) for a in acts])
    return float(rows.norm(dim=-1).mean())


def steer_sweep(model: "HookedModel", prompts: Sequence[str], answers: Sequence[str | int] | None, site: Site | str,
                arms: dict[str, tuple[Tensor, int | None]], coeffs: Sequence[float], *, unit_norm: float = 1.0,
                mode: str = "add", sae: "SAE | None" = None, max_acts: Sequence[float] | None = None,
                positions: Positions = None, max_new_tokens: int = 64, batch_size: int = 64, word: str = "wait",
                do_sample: bool = False, seed: int = 0, log: Callable[[str], None] | None = None,
                outcomes: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Generate greedily under every (arm, coefficient) and measure the effect.

    ``mode="add"``: add ``coeff * unit_norm * direction`` (arms have unit directions, so every arm adds
    the same norm at a given coefficient). ``mode="scale"``: add ``coeff`` times the steered feature's own decoded
    activation, token by token, along each arm's direction (:class:`~thinklens.steering.feature_steering.ScaleFeature`
    gated by ``arms["feature"]``'s feature: every arm adds the same norm at the same tokens). ``mode="clamp"``: set the
    arm's feature to ``coeff * max_acts[feature]`` keeping the SAE error (arms without a feature are skipped).
    Coefficient 0 in ``add`` and ``scale`` mode is the unsteered baseline (computed once). With ``do_sample`` every
    arm samples with the same seed (common random numbers: differences come from the steering).
    ``answers``: gold answers (graded by :func:`thinklens.data.answers.is_correct`), or None. Each row counts the traces
    that say ``word``, the correct ones and the degenerate ones (:func:`thinklens.steering.contrast.is_degenerate`).
    ``outcomes``, when given, gets one entry per generation (``arm``, ``feature``, ``coeff``, ``texts``, ``correct``:
    per prompt; the unsteered baseline once, as arm ``None``), the texts behind each row's numbers.
    """
    s = model.resolve_site(site)
    if mode not in ("add", "scale", "clamp"):
        raise ThinklensError.of("steering mode", mode, "'add', 'scale' or 'clamp'", f"pass {opt('mode', 'scale')}")
    if mode == "clamp" and (sae is None or max_acts is None):
        raise ThinklensError.of("clamp steering", "no SAE", "an SAE and per-feature max activations", f"pass {opt('sae')}")
    gate = arms.get("feature", (None, None))[1]
    if mode == "scale" and (sae is None or gate is None):
        raise ThinklensError.of("scale steering", "no SAE" if sae is None else f"arms {sorted(arms)}",
                                "an SAE and a 'feature' arm (its activation sets every arm's norm, token by token)",
                                f"pass {opt('sae')} and the arms of equal_norm_arms")
    rows: list[dict[str, Any]] = []
    cache: dict[tuple, dict[str, Any]] = {}
    for arm, (direction, feature) in arms.items():
        if mode == "clamp" and feature is None:
            continue
        for c in coeffs:
            c = float(c)
            if mode == "add":
                key: tuple = ("base",) if c == 0 else (arm, c)
                ivs: list[Intervention] = [] if c == 0 else [AddVector(s, direction, positions=positions, scale=c * unit_norm)]
                norm = abs(c) * unit_norm * float(direction.norm())
            elif mode == "scale":
                key = ("base",) if c == 0 else (arm, c)
                ivs = [] if c == 0 else [ScaleFeature(s, sae, int(gate), c, direction, positions)]  # type: ignore[arg-type]
                norm = None  # per token: |c| times the feature's own decoded activation there
            else:
                value = c * float(max_acts[feature])  # type: ignore[index]
                key = (arm, c)
                ivs = [ClampFeature(s, sae, int(feature), value, "set", positions)]  # type: ignore[arg-type]
                norm = None
            if key not in cache:
                trs = model.generate(list(prompts), max_new_tokens=max_new_tokens, interventions=ivs, batch_size=batch_size,
                                     do_sample=do_sample, seed=seed, temperature=1.0)
                texts = [t.text for t in trs]
                res: dict[str, Any] = {**reflection_counts(texts, (word,)), "mean_tokens": sum(len(t) for t in trs) / len(trs),
                                       "sample": texts[0], "traces_with_word": traces_with(texts, word), "n_traces": len(texts),
                                       "degenerate_traces": sum(is_degenerate(t) for t in texts)}
                right = graded(texts, answers) if answers is not None else None
                if right is not None:
                    res["correct_traces"] = sum(right)
                    res["accuracy"] = res["correct_traces"] / len(answers)
                cache[key] = res
                if outcomes is not None:
                    base = key == ("base",)
                    outcomes.append({"arm": None if base else arm, "feature": None if base else feature, "coeff": c,
                                     "texts": texts, "correct": None if right is None else [bool(x) for x in right]})
            row = {"arm": arm, "feature": feature, "coeff": c, "added_norm": norm, **cache[key]}
            rows.append(row)
            if log:
                log(f"{arm:>16} c={c:+.2f} {word}/trace={row[word]:.3f} reflect={row['any_reflection']:.2f}"
                    + (f" acc={row['accuracy']:.3f}" if "accuracy" in row else ""))
    return rows


def steer_prompt(model: "HookedModel", prompt: str, interventions: Sequence[Intervention], *,
                 max_new_tokens: int = 64) -> tuple[str, str]:
    """``(unsteered, steered)`` greedy continuations of one prompt (the app's live steering call)."""
    plain = model.generate([prompt], max_new_tokens=max_new_tokens)[0].text
    steered = model.generate([prompt], max_new_tokens=max_new_tokens, interventions=list(interventions))[0].text
    return plain, steered
