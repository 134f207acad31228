"""Estimator settings for the normalised HSIC of MI peaks, the registry of named variants, and the settings of
``thinklens run mi-peaks`` (:class:`MIPeaksJobConfig`, read by the MI modules; the job is
:mod:`thinklens.analyses.jobs.mi_peaks`).

The reference estimator (Qian et al. 2025, ChnQ/MI-Peaks) uses a fixed kernel width sigma = 50, set for the
paper's 8B models. Its score grows with activation magnitude relative to sigma: on a model whose residual stream
is hundreds of times wider (Gemma-3-270M: max|x - mean| / sigma ~ 669) every kernel entry off the diagonal is ~0,
and its "MI" measures the kernel's saturation, not the answer. So the job's default (:data:`DEFAULT_ESTIMATOR`) scales
the kernel to the states: the median heuristic (sigma = the median pairwise coordinate distance of each vector),
under which MI is the same number for activations rescaled by any factor, on any model. The reference stays
registered and scored side by side (``--estimators reference,...`` or ``--preset paper`` to reproduce the paper),
and a run whose fixed-sigma estimator is far outside its range says so (:data:`MAX_KERNEL_SCALE`).

Example:
    >>> ESTIMATORS["reference"].sigma
    50.0
    >>> estimator_config(DEFAULT_ESTIMATOR).bandwidth
    'median'
    >>> MIPeaksJobConfig().estimators[0] == DEFAULT_ESTIMATOR
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

from thinklens.analyses.mi.peaks import PEAK_RULES
from thinklens.analyses.mi.thinking_tokens import CI_METHODS
from thinklens.data.problemsets import DataOptions
from thinklens.errors import ThinklensError, did_you_mean, opt, opt_name
from thinklens.tasks import STYLES, StepRange

Bandwidth = Literal["fixed", "median"]
Normalize = Literal["none", "l2"]


@dataclass(frozen=True)
class NHSICConfig:
    """How one nHSIC score between two vectors (coordinates as samples) is computed."""

    sigma: float = 50.0
    """Gaussian kernel width used when ``bandwidth == "fixed"`` (reference: 50)."""
    eps: float = 1e-5
    """Ridge of R = Kc (Kc + eps m I)^-1, scaled by the number of coordinates m (reference: 1e-5)."""
    bandwidth: Bandwidth = "fixed"
    """"fixed": use ``sigma``; "median": per vector, the median pairwise coordinate distance."""
    normalize: Normalize = "none"
    """"none": raw vectors; "l2": every vector rescaled to the L2 norm ``norm`` before the kernel."""
    norm: float | None = None
    """Target L2 norm for ``normalize == "l2"``; None = the answer vector's own norm."""

    def __post_init__(self) -> None:
        if not (isinstance(self.sigma, (int, float)) and math.isfinite(self.sigma) and self.sigma > 0):
            raise ThinklensError.of("sigma", self.sigma, "a finite number > 0", "use the reference 50.0")
        if not (isinstance(self.eps, (int, float)) and math.isfinite(self.eps) and self.eps > 0):
            raise ThinklensError.of("eps", self.eps, "a finite number > 0", "use the reference 1e-5")
        if self.bandwidth not in ("fixed", "median"):
            raise ThinklensError.of("bandwidth", self.bandwidth, "'fixed' or 'median'", "pick one of the two")
        if self.normalize not in ("none", "l2"):
            raise ThinklensError.of("normalize", self.normalize, "'none' or 'l2'", "pick one of the two")
        if self.norm is not None and not (math.isfinite(self.norm) and self.norm > 0):
            raise ThinklensError.of("norm", self.norm, "None or a finite number > 0", "leave it None")


ESTIMATORS: dict[str, NHSICConfig] = {
    # The faithful estimator of the paper's code.
    "reference": NHSICConfig(),
    # Scale-free: sigma follows each vector's spread, so multiplying a vector by a constant
    # leaves its score unchanged.
    "median_sigma": NHSICConfig(bandwidth="median"),
    # Norm-controlled: every step is brought to the answer's norm, fixed sigma kept.
    "l2": NHSICConfig(normalize="l2"),
}
"""Named estimator variants; CLI choices and app menus derive from this registry."""


DEFAULT_ESTIMATOR = "median_sigma"
"""The job's estimator unless one is chosen: the kernel scaled to the states (module docstring)."""
MAX_KERNEL_SCALE = 10.0
"""A fixed-sigma estimator whose states reach max|x - mean| / sigma above this (median over steps) has a saturated
kernel: its MI findings carry a flag with the measured scale (the zoo's: ~0.05; Gemma-3-270M's at sigma 50: ~669)."""


def estimator_config(name: str) -> NHSICConfig:
    """Look up a registered estimator variant by name, with a helpful error on typos."""
    if name not in ESTIMATORS:
        raise ThinklensError.of(
            "estimator", name, f"one of {sorted(ESTIMATORS)}", "pick a registered name or pass an NHSICConfig"
        )
    return ESTIMATORS[name]


@dataclass(frozen=True)
class MIPeaksJobConfig(DataOptions, StepRange):
    """Settings of ``thinklens run mi-peaks`` (one option per field)."""

    data: str = ""
    """Problems: a .jsonl/.json/.parquet/.csv file (GSM8K, MATH-500, AIME fields), a saved HF datasets folder, a cached
    hub id, synthetic:MIN-MAX[:N]; empty: n synthetic problems drawn with --seed between --min-steps and --max-steps."""
    model: str = "tiny-think"
    """The reasoning model under test: zoo name, local model folder or hub id."""
    compare: tuple[str, ...] = ()
    """Non-reasoning siblings scored on the same problems, e.g. tiny-cot,tiny-direct."""
    prompt_formats: tuple[str, ...] = ()
    """Prompt format per model (model, then compare), a zoo style, where --prompt-format resolves to a zoo style for it;
    empty: each model's own."""
    gold_format: str = "cot"
    """Zoo style of a synthetic problem's solution text whose last state is the answer vector h_gt (zoo formats)."""
    renamed: ClassVar[dict[str, str]] = {"styles": "prompt_formats", "gold_style": "gold_format"}
    n_problems: int = 32
    """Problems (the first n of --data, or n synthetic problems)."""
    seed: int = 0
    """Seed of the problem stream, the shuffled control, bootstrap and random tokens."""
    min_steps: int = 2
    sites: tuple[str, ...] = ("resid_post.-1",)
    """Blocks to score (the first drives peaks, variants and controls; -1 = last block, before the final norm)."""
    max_new_tokens: int = 128
    """Generation budget per problem (512 in the paper)."""
    batch_size: int = 32
    """Problems generated and scored at once (bounds the memory held by captured states)."""
    estimators: tuple[str, ...] = (DEFAULT_ESTIMATOR, "reference", "l2")
    """Estimator variants scored side by side (the first drives peaks and the findings): median_sigma scales the kernel
    to the states; reference is the paper's fixed sigma = 50 (set for 8B models); l2 brings each step to the answer's
    norm."""
    peak_rule: str = "top_k"
    """Rule whose peaks choose the thinking words (top_k or iqr; both are always stored)."""
    k: int = 20
    """Peaks per trajectory for top_k (shorter trajectories keep all their steps)."""
    whisker: float = 1.5
    """IQR multiple for the iqr rule."""
    lowercase: bool = False
    """Merge the case of words in the enrichment."""
    ci: str = "bootstrap"
    """Enrichment interval: bootstrap (over trajectories) or wilson."""
    top_words: int = 5
    """Thinking words (most frequent at peaks) used by the suppression test, RR and TTTS."""
    thinking_words: tuple[str, ...] = ()
    """Use these thinking words instead of the enrichment's top words."""
    suppression: bool = False
    """Run the suppression test on the reasoning model."""
    n_random: int = 3
    """Random-token draws of the suppression test."""
    random_pool: str = "words"
    """Where random tokens are drawn from: words (alphabetic tokens, the paper) or any token."""
    recycling: bool = False
    """Run Representation Recycling vs greedy on the reasoning model."""
    rr_layer: int | None = None
    """Recycled block (default about 0.72 of the depth)."""
    rr_layers: tuple[int, ...] = ()
    """More blocks to sweep RR over (besides rr_layer)."""
    rr_probability: float = 0.5
    """Chance to recycle at a thinking token (seeded)."""
    ttts: bool = False
    """Run thinking-token test-time scaling vs plain continuation on the reasoning model."""
    ttts_words: tuple[str, ...] = ()
    """Words appended by TTTS; empty: the two top thinking words."""
    ttts_budgets: tuple[int, ...] = (0, 16, 32)
    """Extra-token budgets of TTTS."""

    def check(self) -> None:
        bad = [e for e in self.estimators if e not in ESTIMATORS]
        if bad or not self.estimators:
            raise ThinklensError.of("estimators", self.estimators, f"names among {sorted(ESTIMATORS)}",
                                    f"e.g. {opt('estimators', ('reference', 'median_sigma'))}")
        if self.peak_rule not in PEAK_RULES:
            raise ThinklensError.of("peak rule", self.peak_rule, f"one of {sorted(PEAK_RULES)}", "use top_k")
        if self.ci not in CI_METHODS:
            raise ThinklensError.of("ci", self.ci, f"one of {CI_METHODS}", "use bootstrap")
        if self.n_problems < 2:
            raise ThinklensError.of("n_problems", self.n_problems, "at least 2 (the shuffled control needs two)",
                                    f"pass {opt('n_problems', 8)}")
        if not self.sites:
            raise ThinklensError.of("sites", self.sites, "at least one site", "use resid_post.-1")
        if self.prompt_formats and len(self.prompt_formats) != len(self.models):
            raise ThinklensError.of("prompt_formats", self.prompt_formats,
                                    f"{len(self.models)} prompt formats (model, then compare) or none",
                                    f"e.g. {opt('prompt_formats', ('think', 'cot', 'direct'))}, or leave it empty")
        for name, values in (("prompt_formats", self.prompt_formats), ("gold_format", (self.gold_format,))):
            bad = [s for s in values if s not in STYLES]
            if bad:
                raise ThinklensError.of(opt_name(name), bad[0], f"a zoo prompt format: one of {', '.join(STYLES)}",
                                        did_you_mean(bad[0], STYLES) or "use think, cot or direct")
        if self.random_pool not in ("words", "any"):
            raise ThinklensError.of("random_pool", self.random_pool, "'words' or 'any'", "use words")
        if self.k < 1 or self.batch_size < 1 or self.max_new_tokens < 1 or self.top_words < 1:
            raise ThinklensError.of("k / batch_size / max_new_tokens / top_words",
                                    (self.k, self.batch_size, self.max_new_tokens, self.top_words),
                                    "ints >= 1", "pass positive values")
        if not 0.0 <= self.rr_probability <= 1.0:
            raise ThinklensError.of("rr_probability", self.rr_probability, "a number in [0, 1]", "use 0.5")
        if any(b < 0 for b in self.ttts_budgets) or not self.ttts_budgets:
            raise ThinklensError.of("ttts_budgets", self.ttts_budgets, "non-negative ints", "e.g. 0,16,32")
        if len(set(self.models)) != len(self.models):
            raise ThinklensError.of("compare", self.compare, f"models other than {opt('model')}, each once",
                                    "drop the duplicate")

    @property
    def models(self) -> tuple[str, ...]:
        """The reasoning model first, then its siblings."""
        return (self.model, *self.compare)

