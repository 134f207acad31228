"""Frozen configs of the latent-reasoning trainers; each field's docstring is its CLI help.

Each class validates its own fields in ``check`` (no side effects); :class:`~thinklens.runs.configcli.ConfigGroup` runs
every group's check, so the CLI and the Python API reject the same inputs with the same message.

Example:
    >>> CODIConfig(n_latents=6).n_latents
    6
    >>> CODIConfig(n_latents=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    thinklens.errors.ThinklensError: bad n_latents: received 0; expected an integer >= 1 ...; fix: pass n_latents=6
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

from thinklens.data.problemsets import DataOptions
from thinklens.engine.training import OptimOptions
from thinklens.errors import ThinklensError, opt, opt_name
from thinklens.tasks import StepRange, check_step_range
from thinklens.tasks.protocol import HELD_OUT


def _positive(name: str, value: object, fix: str, *, what: str = "an integer >= 1") -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ThinklensError.of(name, value, what, fix)


def _check_data(data: str, data_fields: str, *, what: str) -> None:
    """``--data-fields`` needs ``--data``; a trainer's ``--data`` is never the held-out ``synthetic:`` source."""
    if data_fields and not data:
        raise ThinklensError.of("data_fields", data_fields, f"a mapping for a {opt('data')} source", f"pass {opt('data')} too")
    if what == "train" and data.strip().startswith("synthetic"):
        raise ThinklensError.of("data", data, "a file or data set with GSM8k-Aug chains (synthetic:... holds the "
                                "held-out evaluation problems)", f"leave {opt_name('data')} empty to train on fresh synthetic problems "
                                f"({opt_name('min_steps')}/{opt_name('max_steps')})")


@dataclass(frozen=True)
class TrainConfig(DataOptions, StepRange, OptimOptions):
    """Settings every trainer shares (model, data, optimiser, checkpoints)."""

    model: str = "tiny-cot"
    """Start model: a zoo name, a local model folder or a hub id. tiny-cot by default, a CoT-SFT model as Coconut's
    stage 0 and Latent-SFT start from; CODI's reference starts from the pretrained model instead (GPT-2, Llama) and
    trains the CoT teacher in the same run (pass --model tiny-pre for that)."""
    data: str = ""
    """Training problems: a GSM8k-Aug style file (question, cot of <<a*b=c>> steps, answer), or any source whose
    solutions hold <<...>> equations (GSM8K's answers do); empty: fresh synthetic problems for every batch."""
    prompt_format: str = "auto"
    """auto (a zoo model's own style, else the chat template when the tokenizer has one, else plain), chat, plain,
    direct, cot or think. The zoo's styles write zoo words and '#### N'; chat and plain write the equations as given
    and 'The answer is: N' (CODI's answer line), in the model's own tokens."""
    eval_data: str = ""
    """Problems the trained model is evaluated on (the first --n-eval; any --data source); empty: --n-eval held-out
    synthetic problems per step count."""
    min_steps: int = 3
    batch_size: int = 32
    """Global batch size (split evenly across processes)."""
    warmup_frac: float = 0.03
    """Fraction of each phase spent in linear warmup (then a cosine decay of --lr to a tenth)."""
    seed: int = 0
    """Data and init seed: batch k of a run draws from numpy default_rng([seed, k])."""
    lora_r: int = 0
    """LoRA rank (peft); 0 = full fine-tuning."""
    lora_alpha: float = 32.0
    """LoRA alpha (scale alpha / r)."""
    ckpt_every: int = 50
    """Optimizer steps between checkpoints (resume restarts from the last one)."""
    n_eval: int = 50
    """Held-out problems evaluated per step count after training (0 = skip)."""
    add_tokens: bool = False
    """Add missing special tokens (<bot> <eot> <latent> <think> </think> <compress>) and resize the embeddings."""
    publish: str | None = None
    """Also write the trained model folder here, e.g. data/zoo/tiny-codi (it is always in <run folder>/model)."""
    renamed: ClassVar[dict[str, str]] = {"eval_n": "n_eval"}

    def check(self) -> None:
        _check_data(self.data, self.data_fields, what="train")
        _positive("batch_size", self.batch_size, f"pass {opt('batch_size', 32)}")
        _positive("ckpt_every", self.ckpt_every, f"pass {opt('ckpt_every', 50)}")
        if not 0 <= self.warmup_frac < 1:
            raise ThinklensError.of("warmup_frac", self.warmup_frac, "a fraction in [0, 1)", f"pass {opt('warmup_frac', 0.03)}")
        if self.lora_r < 0:
            raise ThinklensError.of("lora_r", self.lora_r, "0 (full fine-tuning) or a rank >= 1", f"pass {opt('lora_r', 0)}")
        if self.n_eval < 0:
            raise ThinklensError.of("n_eval", self.n_eval, "an integer >= 0", f"pass {opt('n_eval', 50)}")


@dataclass(frozen=True)
class CoconutConfig(TrainConfig):
    """Coconut: a curriculum replacing the first s steps by s*c continuous thoughts."""

    c: int = 2
    """Latents per replaced reasoning step (c in the paper)."""
    max_stage: int = 3
    """Stages 1..max_stage replace the first s steps; max_stage*c latents at test."""
    stage_steps: int = 400
    """Optimizer steps per stage (the paper: 3 epochs); the optimizer is reset at every stage (400 + 800 final
    trained the committed tiny-coconut: its accuracy and training time are in docs/results.md "Latent reasoning",
    results/latent_table.json)."""
    final_stage_steps: int = 800
    """Steps of a last stage removing ALL steps with max_stage*c latents (the reference's
    pad_latent_to_max); 0 skips it."""

    def check(self) -> None:
        _positive("c", self.c, "pass --c 2")
        _positive("max_stage", self.max_stage, f"pass {opt('max_stage', 3)}")
        _positive("stage_steps", self.stage_steps, f"pass {opt('stage_steps', 150)}")
        if self.final_stage_steps < 0:
            raise ThinklensError.of("final_stage_steps", self.final_stage_steps, "an integer >= 0", "pass 150")

    @property
    def n_latents(self) -> int:
        return self.c * self.max_stage


@dataclass(frozen=True)
class CODISchedule(TrainConfig):
    """CODI's optimiser, the paper's values where they apply: shared by CODI and the token-level SFT baselines,
    which train on CODI's schedule so that the latent table compares like with like."""

    train_steps: int = 12000
    """Optimizer steps."""
    lr: float = 2e-3
    """Peak learning rate (3e-3 in the paper for GPT-2 with LoRA; 2e-3 for the zoo's full fine-tuning)."""
    weight_decay: float = 0.1
    """AdamW weight decay on matrices (0.1 in the paper)."""
    grad_clip: float = 2.0
    """Gradient-norm clip (2.0 in the paper)."""
    renamed: ClassVar[dict[str, str]] = {"steps": "train_steps"}

    def check(self) -> None:
        _positive("train_steps", self.train_steps, f"pass {opt('train_steps', 400)}")


@dataclass(frozen=True)
class CODIConfig(CODISchedule):
    """CODI: self-distillation from the CoT teacher into N continuous thoughts (shared weights)."""

    n_latents: int = 6
    """Latent steps between <bot> and <eot> (N in the paper)."""
    train_steps: int = 12000
    """Optimizer steps (the committed tiny-codi: 12000, then 3000 more at lr 5e-4; its accuracy and training
    time, and what fewer steps give, are in docs/results.md "Latent reasoning", results/latent_table.json)."""
    w_kd: float = 1.0
    """Weight of the distillation loss (1 for GPT-2, 20 for Llama-1B in the paper); 0 = ablation."""
    projection: bool = True
    """Feed latents through Dropout-Linear-GELU-Linear-LayerNorm; off = ablation (raw hidden state)."""
    prj_dim: int = 0
    """Hidden width of the projection (0 = d_model)."""
    prj_dropout: float = 0.0
    """Dropout of the projection (the reference's default is 0)."""
    prj_match_scale: bool = True
    """Initialise the projection's LayerNorm gain to the token embeddings' RMS, so latents start at the
    scale of token embeddings (off = the reference's gain 1, much larger on the zoo models)."""
    include_last_step: bool = False
    """Keep the chain's last step in the teacher's CoT (the reference's include_last_cot, off by default): off,
    the teacher computes the last step in one pass at the distillation token, so the state the student is pulled
    to is only as right as that one-pass step (docs/latent.md, "The teacher's last step")."""

    def check(self) -> None:
        _positive("n_latents", self.n_latents, f"pass {opt('n_latents', 6)}",
                  what="an integer >= 1 (latent steps between <bot> and <eot>)")
        if not (self.w_kd >= 0 and math.isfinite(self.w_kd)):
            raise ThinklensError.of("w_kd", self.w_kd, "a finite number >= 0", f"pass {opt('w_kd', 1)}")
        if self.prj_dim < 0 or not 0 <= self.prj_dropout < 1:
            raise ThinklensError.of("projection", (self.prj_dim, self.prj_dropout), "prj_dim >= 0, 0 <= dropout < 1",
                                    f"pass {opt('prj_dim', 0)} {opt('prj_dropout', 0)}")


@dataclass(frozen=True)
class LatentSFTConfig(TrainConfig):
    """Latent-SFT: a compress-token encoder makes top-K vocabulary superpositions; the model learns
    to generate them (stage 2)."""

    c: int = 2
    """CoT tokens per compress token (2 for GSM8k in the paper)."""
    top_k: int = 10
    """Vocabulary entries in each latent superposition (K)."""
    encoder_steps: int = 200
    """Stage-1 run 1: steps training the encoder only (200/200/200 + 800 trained the committed tiny-latent-sft:
    its accuracy and training time are in docs/results.md "Latent reasoning", results/latent_table.json)."""
    decoder_steps: int = 200
    """Stage-1 run 2: steps training the decoder only."""
    joint_steps: int = 200
    """Stage-1 run 3: steps training both."""
    stage2_steps: int = 800
    """Stage 2: steps training the model to generate its own latents (KL + CE)."""
    kl_weight: float = 1.0
    """Weight of KL(q || p) on the latent positions in stage 2."""
    ce_weight: float = 1.0
    """Weight of the CE on </think> + answer in stage 2."""
    gumbel: float = 0.0
    """Gumbel noise scale on the encoder scores before top-K in stage 2 (0 = off)."""
    max_latent_steps: int = 48
    """Inference cap on latent steps when </think> never wins."""

    def check(self) -> None:
        _positive("c", self.c, "pass --c 2")
        _positive("top_k", self.top_k, f"pass {opt('top_k', 10)}")
        _positive("max_latent_steps", self.max_latent_steps, f"pass {opt('max_latent_steps', 48)}")
        for name in ("encoder_steps", "decoder_steps", "joint_steps", "stage2_steps"):
            if getattr(self, name) < 0:
                raise ThinklensError.of(name, getattr(self, name), "an integer >= 0", f"pass --{name.replace('_', '-')} 100")


@dataclass(frozen=True)
class SFTConfig(CODISchedule):
    """Token-level SFT, the latent table's baselines: CoT-SFT (chain + answer) or No-CoT (answer only) after the prompt."""

    cot: bool = True
    """Train on the chain and the answer (CoT-SFT); false: on the answer alone (No-CoT)."""
    train_steps: int = 1500
    """Optimizer steps (15000 at batch 32 is the 480k examples tiny-codi saw after tiny-cot)."""


#: LatentSeek rewards by name (besides ``module:function``).
REWARDS = ("auto", "psrm", "self", "confidence")


@dataclass(frozen=True)
class LatentSeekConfig(DataOptions, StepRange):
    """LatentSeek: per-instance test-time optimisation of the first latents of a greedy CoT."""

    model: str = "tiny-cot"
    """Frozen CoT model: zoo name, folder or hub id."""
    data: str = ""
    """Problems: any --data source (GSM8K, MATH-500, AIME, JSONL, ...; its first --n-eval); empty: --n-eval held-out
    synthetic problems per step count (--min-steps..--max-steps)."""
    rho: float = 0.2
    """Fraction of the generated tokens whose final-layer states are optimised."""
    max_latents: int = 300
    """Cap on optimised states: min(rho*T, max_latents)."""
    lr: float = 0.05
    """Adam learning rate on the states."""
    max_iters: int = 10
    """Iterations per problem."""
    threshold: float = -0.2
    """Stop once the reward exceeds this."""
    variant: Literal["argmax", "sample"] = "argmax"
    """Tokens scored in the loss: argmax (the released code) or sampled (the paper's algorithm)."""
    reward: str = "auto"
    """Reward: psrm (0 if the answer is right else -1: the paper's perfect sparse reward, from the gold answers), self
    (the paper's self-reward: the model judges its own solution with four weighted verifier prompts), confidence (no
    gold: the model's least confident token of its chain, p - 1), auto (psrm for the zoo's formats, self otherwise)
    or module:function (a pluggable fn(text, gold) -> float)."""
    min_steps: int = 6
    max_steps: int = 8
    n_eval: int = 30
    """Held-out problems evaluated per step count (synthetic), or the first n_eval problems of --data."""
    renamed: ClassVar[dict[str, str]] = {"n": "n_eval"}
    seed: int = HELD_OUT["eval"]
    """Held-out problem seed (and sampling seed)."""
    max_new_tokens: int = 0
    """Token budget of each (re)generation; 0: 72 for the zoo's formats, 1024 otherwise (the paper's)."""
    verifier_max_new_tokens: int = 4096
    """Token budget of each verifier's answer with --reward self (the paper's code: 4096)."""
    baseline_temperatures: tuple[float, ...] = (0.5, 1.0)
    """Oracle best-of-N baseline on the same problems, one per temperature (empty: none): N sampled chains of the same
    model, correct if any is (what a gold-answer reward buys with the same retry budget)."""
    baseline_samples: int = 0
    """Chains per problem of the best-of-N baseline; 0: 1 + max_iters (LatentSeek's budget of checked chains)."""

    def check(self) -> None:
        _check_data(self.data, self.data_fields, what="seek")
        if any(not t > 0 for t in self.baseline_temperatures) or self.baseline_samples < 0:
            raise ThinklensError.of("baseline", (self.baseline_temperatures, self.baseline_samples),
                                    "temperatures > 0 and samples >= 0 (0: 1 + max_iters)",
                                    f"pass {opt('baseline_temperatures', (0.5, 1.0))} {opt('baseline_samples', 0)} (or '' for none)")
        if self.reward not in REWARDS and ":" not in self.reward:
            raise ThinklensError.of("reward", self.reward, f"one of {', '.join(REWARDS)} or module:function",
                                    f"pass {opt('reward', 'psrm')} (gold answers) or {opt('reward', 'self')} (the model judges itself)")
        if not 0 <= self.rho <= 1:
            raise ThinklensError.of("rho", self.rho, "a fraction in [0, 1]", f"pass {opt('rho', 0.2)}")
        if self.max_latents < 0 or self.max_iters < 0:
            raise ThinklensError.of("max_latents/max_iters", (self.max_latents, self.max_iters), "integers >= 0",
                                    f"pass {opt('max_latents', 300)} {opt('max_iters', 10)}")
        if self.variant not in ("argmax", "sample"):
            raise ThinklensError.of("variant", self.variant, "argmax or sample", f"pass {opt('variant', 'argmax')}")
        _positive("n_eval", self.n_eval, "pass --n-eval 30")
        if self.max_new_tokens < 0:
            raise ThinklensError.of("max_new_tokens", self.max_new_tokens, "an integer >= 0 (0: the format's default)",
                                    f"pass {opt('max_new_tokens', 1024)}")
        _positive("verifier_max_new_tokens", self.verifier_max_new_tokens, f"pass {opt('verifier_max_new_tokens', 4096)}")


@dataclass(frozen=True)
class EvalConfig(DataOptions, StepRange):
    """The comparison table: which models, which problems."""

    model: str = ""
    """A model compared before ``models`` (zoo name or folder; empty: ``models`` only)."""
    models: tuple[str, ...] = ("tiny-nocot", "tiny-cot", "tiny-coconut", "tiny-codi", "tiny-latent-sft")
    """Models to compare: zoo names or folders (latent models carry latent.json); tiny-nocot is the No-CoT matched to
    tiny-codi (tiny-direct, trained otherwise, is compared only as an unmatched No-CoT)."""
    explicit: tuple[str, ...] = ()
    """Latent models also scored in explicit-CoT mode: their LM prompted and decoded as a token-level model in the format
    they were trained in, no latents (CODI's teacher; e.g. --explicit tiny-codi)."""
    data: str = ""
    """Problems: any --data source (GSM8K, MATH-500, JSONL, ...; its first --n-eval, the LatentSeek rows on its first
    --seek-n); empty: --n-eval held-out synthetic problems per step count (--min-steps..--max-steps)."""
    prompt_format: str = "auto"
    """Format of the token-level models: auto (a zoo model's own style, else the chat template when the tokenizer has
    one, else plain), chat, plain, direct, cot or think. A latent model is prompted in the format it was trained in."""
    min_steps: int = 3
    n_eval: int = 100
    """Held-out problems evaluated per step count (synthetic), or the first n_eval problems of --data."""
    renamed: ClassVar[dict[str, str]] = {"n": "n_eval"}
    max_new_tokens: int = 0
    """Generation budget of the token-level models and the LatentSeek rows; 0: the task protocol's budget (LatentSeek:
    72) for the zoo's formats, 1024 otherwise."""
    seed: int = HELD_OUT["eval"]
    """Held-out problem seed (the zoo's evaluation seed)."""
    seek_n: int = 30
    """Problems per step count for the LatentSeek rows (0 = no LatentSeek rows)."""
    seek_min_steps: int = 6
    """Fewest steps of the LatentSeek problems."""
    seek_max_steps: int = 8
    """Most steps of the LatentSeek problems."""
    seek_seed: int = 20_000
    """Seed of the LatentSeek problems (not the one its learning rate was chosen on; 20000 gives the rows of docs/results.md)."""
    seek_lr: float = 0.5
    """LatentSeek learning rate: at the paper's 0.03-0.05 the zoo's d=128 states flip ~0.2-0.3 of ~10 optimised tokens
    per iteration, at 0.5 ~6.7 (chosen on seed-10000 problems)."""
    seek_reward: str = "psrm"
    """Reward of the LatentSeek rows: psrm (the gold answers), self (the model judges itself) or module:function."""
    decode_examples: int = 8
    """Problems whose latents are decoded (top-5) in the result."""

    def check(self) -> None:
        _check_data(self.data, self.data_fields, what="eval")
        if self.seek_reward not in REWARDS and ":" not in self.seek_reward:
            raise ThinklensError.of("seek_reward", self.seek_reward, f"one of {', '.join(REWARDS)} or module:function",
                                    f"pass {opt('seek_reward', 'psrm')}")
        if self.max_new_tokens < 0:
            raise ThinklensError.of("max_new_tokens", self.max_new_tokens, "an integer >= 0 (0: the format's default)",
                                    f"pass {opt('max_new_tokens', 1024)}")
        if not self.names():
            raise ThinklensError.of("models", self.models, "at least one model", f"pass {opt('models', ('tiny-cot', 'tiny-codi'))}")
        check_step_range(self.seek_min_steps, self.seek_max_steps, fix=f"pass {opt('seek_min_steps', 6)} {opt('seek_max_steps', 8)}")
        _positive("n_eval", self.n_eval, "pass --n-eval 100")
        if self.seek_n < 0 or self.decode_examples < 0:
            raise ThinklensError.of("seek_n/decode_examples", (self.seek_n, self.decode_examples), "integers >= 0", "pass 30")

    def names(self) -> list[str]:
        """The models compared, in order: ``model`` (if given), then ``models``."""
        return ([self.model] if self.model else []) + [m for m in self.models if m != self.model]

