"""Settings of the steering algorithms: SAE training, hybrid steering (and its job's config, which
:mod:`thinklens.steering.hybrid_validation` reads); GRPO's (the reasoning vector's donor) are the zoo's
(:mod:`thinklens.zoo.grpo_config`).

Each is a frozen dataclass with a one-line docstring per field. They live apart from their algorithms
(which import torch) so that a job's config can subclass them and ``thinklens run --help`` stays fast:
the ``sae``, ``hybrid`` and ``grpo`` jobs' configs are these plus the job's own fields.

Example:
    >>> SAETrainConfig().site, HybridConfig().n_categories
    ('resid_post.2', 6)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from thinklens.data.formats import check_format, format_for
from thinklens.data.problemsets import DataOptions
from thinklens.errors import ThinklensError, opt, opt_name
from thinklens.runs.configcli import ConfigGroup
from thinklens.tasks import StepRange

if TYPE_CHECKING:
    from thinklens.data.formats import PromptFormat
    from thinklens.engine.model import HookedModel


def check_finite(what: str, values, fix: str) -> None:
    """A clear error unless ``values`` holds at least one number and every one is finite (no bools).

    Example:
        >>> check_finite("coefficient", (-1.0, 0, 1), "--coeffs=-1,0,1")
        >>> check_finite("coefficient", (0.0, float("inf")), "--coeffs=0,1")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        thinklens.errors.ThinklensError: bad coefficient: received inf; expected finite numbers (at least one); ...
    """
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)]
    if bad or not values:
        raise ThinklensError.of(what, bad[0] if bad else "nothing", "finite numbers (at least one)", f"pass e.g. {fix}")


@dataclass(frozen=True)
class SAETrainConfig(ConfigGroup):
    """How to train one SAE with sae-lens (tiny CPU-friendly defaults). The SAE lives on the model's device."""

    site: str = "resid_post.2"
    """Where the SAE reads (a block output such as resid_post.2, or mlp_out/attn_out/embed/final_norm)."""
    architecture: str = "topk"
    """An sae-lens training architecture (topk, batchtopk, standard, jumprelu, gated, ...)."""
    d_sae: int = 1024
    """Number of SAE features (latents)."""
    k: int = 32
    """Active features per token for topk-style architectures (the L0 budget)."""
    l1_coefficient: float = 5.0
    """Sparsity penalty for the standard (L1) architecture."""
    l0_coefficient: float = 1.0
    """Sparsity penalty for jumprelu."""
    training_tokens: int = 1_000_000
    """Activations seen in training (pad/bos/eos positions excluded)."""
    train_batch_size_tokens: int = 4096
    """Activations per optimizer step."""
    lr: float = 1e-3
    """Adam learning rate."""
    lr_warm_up_steps: int = 20
    """Linear warmup steps."""
    context_size: int | None = None
    """Row width in tokens (None: the longest text)."""
    store_batch_size_prompts: int = 32
    """Rows per model forward when filling the activation buffer."""
    n_batches_in_buffer: int = 8
    """Buffer size in rows of ``context_size`` tokens (sae-lens's unit); raised to hold two training
    batches, since sae-lens refuses a buffer smaller than one. Keep it small on small datasets."""
    n_eval_batches: int = 8
    """Batches of ``store_batch_size_prompts`` rows used by the metrics."""
    seed: int = 0
    """Seed of the SAE init and of the buffer shuffling (a forked RNG; global state untouched)."""

    def check(self) -> None:
        for name in ("d_sae", "k", "training_tokens", "train_batch_size_tokens", "store_batch_size_prompts",
                     "n_batches_in_buffer", "n_eval_batches"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ThinklensError.of(f"SAETrainConfig.{name}", v, "a positive integer", f"pass e.g. {name}=32")
        if self.k > self.d_sae:
            raise ThinklensError.of("SAETrainConfig.k", self.k, f"at most d_sae={self.d_sae}", "lower k or raise d_sae")
        if not self.lr > 0:
            raise ThinklensError.of("SAETrainConfig.lr", self.lr, "a positive number", f"pass {opt('lr', 0.001)}")


@dataclass(frozen=True)
class HybridConfig(ConfigGroup):
    """Settings of hybrid steering (paper values where they apply; sizes for the CPU zoo)."""

    site: str = "resid_post.2"
    """Site read on the thinking model (sentence activations) and steered on the base model."""
    n_categories: int = 6
    """SAE latents used as behaviour categories (the paper uses 5-50)."""
    k: int = 3
    """Top-k of the clustering SAE."""
    sae_steps: int = 600
    """Training steps of the clustering SAE (batches of 128 sentences)."""
    vector_iters: int = 50
    """Adam iterations per steering vector."""
    vector_lr: float = 1e-2
    """Adam learning rate of the steering vectors."""
    vector_batch: int = 48
    """Sentences per vector-training iteration (a seeded random subset)."""
    strengths: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    """Candidate strengths tried where the two models disagree."""
    windows: tuple[int, ...] = (1, 3)
    """Candidate windows: the steering vector is added to the last w positions."""
    min_base_prob: float = 1e-3
    """Perplexity guardrail: a steered token must have at least this probability under the unsteered base
    model (-log p <= log(1/min_base_prob)); otherwise the base model's own token is kept."""
    open_token: bool = False
    """Also train each vector on the token before its sentence (the previous sentence's last generated token):
    byte-level BPE merges a full stop with the newline that closes a span ('.' against '.\n'), so the choice to
    open another sentence is made there, one token before the sentence's first token."""
    seed: int = 0
    """Seed of every random choice (local generators)."""

    def check(self) -> None:
        if not 2 <= self.n_categories <= 64 or not 1 <= self.k <= self.n_categories:
            raise ThinklensError.of("HybridConfig", (self.n_categories, self.k), "2 <= n_categories <= 64, 1 <= k <= n_categories",
                                    f"pass {opt('n_categories', 6)} {opt('k', 3)}")
        if not self.strengths or not self.windows or min(self.windows) < 1:
            raise ThinklensError.of("HybridConfig candidates", (self.strengths, self.windows),
                                    "non-empty strengths and windows >= 1", f"pass {opt('strengths', (0.5, 1.0))} {opt('windows', (1,))}")


@dataclass(frozen=True)
class HybridJobConfig(HybridConfig, DataOptions, StepRange):
    """``thinklens run hybrid``: the hybrid-steering settings, plus the two models, their formats, the problems and the seeds."""

    seed: int = 0
    """First seed of the clustering SAE, the vector training and the ablations' random choices (one full
    train + evaluation per seed: seed, seed+1, ...; mean and standard deviation reported)."""
    model: str = "tiny-cot"
    """The base model (steered)."""
    thinking: str = "tiny-think"
    """The thinking model (decides when and which behaviour)."""
    data: str = ""
    """Problems evaluated (paper: GSM8K, MATH-500): a .jsonl/.json/.parquet/.csv file, a saved HF datasets folder, a
    cached hub id or synthetic:MIN-MAX[:N]; empty: the synthetic task's zoo stream (held-out seeds)."""
    vector_data: str = ""
    """Problems whose thinking-model traces build the categories and vectors (paper: MMLU-Pro); empty: problems of
    --data not evaluated (the zoo stream's own seeds without --data). Must not share questions with --data."""
    prompt_format: str = "auto"
    """The thinking model's prompt format: auto (a zoo model's own style, else its chat template when it has one, else
    plain), chat, plain, direct, cot or think."""
    base_format: str = "same"
    """The base model's prompt format: same (the thinking model's prompt format, rendered with the base's tokenizer), auto,
    chat, plain, direct, cot or think."""
    max_new_tokens: int | None = None
    """New tokens per completion; None: the task protocol's budget for a zoo style and max_steps, 1024 for a real
    model's format (capped by the contexts)."""
    n_train: int = 150
    """Thinking-model traces whose sentences train the categories and vectors."""
    n_eval: int = 120
    """Held-out problems evaluated per mode (the unit of the paired tests and of the gap's bootstrap interval)."""
    min_steps: int = 2
    max_steps: int = 5
    modes: tuple[str, ...] = ("base", "thinking", "hybrid", "bias_only", "random_category", "random_firing", "random_vectors")
    """Modes evaluated (base and thinking alone, the hybrid, and the ablations)."""
    n_seeds: int = 1
    """Seeds run (seed, seed+1, ...)."""

    def check(self) -> None:
        if self.base_format != "same":
            check_format(self.base_format)
        if self.n_seeds < 1:
            raise ThinklensError.of(opt_name("n_seeds"), self.n_seeds, "an integer >= 1", f"pass {opt('n_seeds', 3)}")
        if self.n_train < 1 or self.n_eval < 1 or (self.max_new_tokens is not None and self.max_new_tokens < 1):
            raise ThinklensError.of(f"{opt_name('n_train')} / {opt_name('n_eval')} / {opt_name('max_new_tokens')}",
                                    (self.n_train, self.n_eval, self.max_new_tokens),
                                    "integers >= 1", f"pass {opt('n_train', 150)} {opt('n_eval', 60)}")

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.seed, self.seed + self.n_seeds))


def base_format(job: HybridJobConfig, base: "HookedModel", thinking_fmt: "PromptFormat") -> "PromptFormat":
    """The base model's prompt format (``same``: the thinking model's prompt format, resolved with the base's tokenizer)."""
    return format_for(base, thinking_fmt.name if job.base_format == "same" else job.base_format)
