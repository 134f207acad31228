"""One training recipe per zoo model (a frozen config each, plus the registry that maps names to them).

Example:
    >>> RECIPES["tiny-cot"].init
    'tiny-pre'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from thinklens.data.formats import ZOO_FORMATS
from thinklens.errors import ThinklensError
from thinklens.runs.configcli import ConfigGroup
from thinklens.tasks import TaskConfig
from thinklens.zoo.modeling import ZooModelConfig
from thinklens.zoo.overthink import OverthinkMix
from thinklens.zoo.r1 import R1TextMix
from thinklens.zoo.registry import check_zoo_name


@dataclass(frozen=True)
class ZooRecipe(ConfigGroup):
    """How one zoo model is trained; training length is fixed in steps, so a run is reproducible."""

    name: str
    """The zoo name it produces."""
    format_mix: tuple[tuple[str, float], ...]
    """Mixture of zoo prompt formats ``(prompt_format, weight)`` the training problems are rendered in."""
    steps: int
    """Optimizer steps."""
    lr: float
    """Peak learning rate (AdamW)."""
    warmup_steps: int
    """Linear warmup steps before the cosine decay."""
    init: str | None = None
    """Zoo model to fine-tune from (None: fresh init)."""
    min_lr_ratio: float = 0.05
    """Final learning rate as a fraction of the peak (cosine floor)."""
    weight_decay: float = 0.05
    """AdamW weight decay on matrices (not on norms or biases)."""
    batch_tokens: int = 2048
    """Padded tokens per batch (the batch size follows from the problems' length)."""
    grad_clip: float = 1.0
    """Gradient norm clip."""
    task: TaskConfig = field(default_factory=TaskConfig)
    """Problems drawn for training (held-out evaluation uses other seeds)."""
    model: ZooModelConfig = field(default_factory=ZooModelConfig)
    """Model shape (ignored when ``init`` is set: the parent's shape is kept)."""
    prompt_format: str = "cot"
    """The prompt format the model answers in: the one it is evaluated in, and the one ``auto`` picks for it."""
    own_formats: ClassVar[tuple[str, ...]] = ZOO_FORMATS
    """The prompt formats a model of this kind of recipe can answer in (the zoo formats: a word-level model)."""

    def check(self) -> None:
        if self.steps < 1 or self.warmup_steps < 0 or self.warmup_steps > self.steps:
            raise ThinklensError.of(
                f"recipe {self.name} steps", (self.steps, self.warmup_steps), "0 <= warmup_steps <= steps",
                "fix the recipe",
            )
        if not self.lr > 0 or not 0 <= self.min_lr_ratio <= 1:
            raise ThinklensError.of(f"recipe {self.name} lr", (self.lr, self.min_lr_ratio), "lr > 0, ratio in [0,1]", "fix it")
        for prompt_format, weight in self.format_mix:
            if prompt_format not in ZOO_FORMATS or weight < 0:
                raise ThinklensError.of(f"recipe {self.name} format_mix", (prompt_format, weight),
                                        f"(prompt format, weight >= 0) pairs, the format one of {', '.join(ZOO_FORMATS)}",
                                        "fix the recipe")
        if self.prompt_format not in self.own_formats:
            raise ThinklensError.of(f"recipe {self.name} prompt_format", self.prompt_format,
                                    f"one of {', '.join(self.own_formats)}", "fix the recipe")

    def to_json(self) -> dict:
        """The recipe as a JSON-able dict (stored in zoo.json and in checkpoints)."""
        out = asdict(self)
        out["format_mix"] = [list(s) for s in self.format_mix]
        out["task"]["ops"] = list(self.task.ops)
        return out


#: Keys a saved recipe (a zoo.json's ``recipe``, a checkpoint's identity) held before the prompt format had one
#: name: ``{old key: field}``.
LEGACY_RECIPE_KEYS: dict[str, str] = {"styles": "format_mix", "eval_style": "prompt_format"}


def upgrade_recipe_json(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A recipe's JSON written before the prompt format had one name, with today's keys (a copy; today's JSON is
    returned as it is). An R1 recipe held both ``eval_style`` (None) and ``prompt_format`` (chat): the latter wins.

    Example:
        >>> old = {"name": "tiny-cot", "styles": [["cot", 1.0]], "eval_style": "cot"}
        >>> upgrade_recipe_json(old)
        {'name': 'tiny-cot', 'format_mix': [['cot', 1.0]], 'prompt_format': 'cot'}
        >>> upgrade_recipe_json({"styles": [["think", 1.0]], "eval_style": None, "prompt_format": "chat"})
        {'prompt_format': 'chat', 'format_mix': [['think', 1.0]]}
    """
    out = dict(doc)
    for old, new in LEGACY_RECIPE_KEYS.items():
        if old in out:
            value = out.pop(old)
            if out.get(new) is None:
                out[new] = value
    return out


#: The zoo's task: the TaskConfig defaults (values 0..99, + - * with operands up to 10 / factors up to 4).
_TASK = TaskConfig()
#: tiny-think-carry's traces: slips are forgotten carries and "hmm" comes before multiplications, both
#: at rates > 0.5, so the model learns WHEN it reflects and greedy decoding shows it (tiny-think's
#: random near misses at rate 0.25 are never the greedy choice, so its greedy traces have no "wait").
#: Same questions as _TASK.
CARRY_THINK_TASK = TaskConfig(correction_rate=0.7, correction_on="carry", hmm_rate=0.7, hmm_on="mul")


def finetune_recipe(name: str, prompt_format: str, steps: int, *, warmup_steps: int = 50,
                    task: TaskConfig = _TASK) -> ZooRecipe:
    """A fine-tune of tiny-pre on one prompt format at lr 1e-3, evaluated in that format."""
    return ZooRecipe(name=name, init="tiny-pre", format_mix=((prompt_format, 1.0),), steps=steps, lr=1e-3,
                     warmup_steps=warmup_steps, task=task, prompt_format=prompt_format)


RECIPES: dict[str, ZooRecipe] = {
    "tiny-pre": ZooRecipe(
        name="tiny-pre", format_mix=(("cot", 0.45), ("think", 0.4), ("direct", 0.15)),
        steps=2400, lr=3e-3, warmup_steps=100, task=_TASK, prompt_format="cot",
    ),
    "tiny-direct": finetune_recipe("tiny-direct", "direct", 250, warmup_steps=20),
    "tiny-cot": finetune_recipe("tiny-cot", "cot", 1500),
    "tiny-think": finetune_recipe("tiny-think", "think", 3500),
    "tiny-think-carry": finetune_recipe("tiny-think-carry", "think", 1000, task=CARRY_THINK_TASK),
    # the reasoning-vector lineage's weak sibling: tiny-cot's recipe stopped at 300 steps (trained with --seed 1), so
    # it lacks the 8-step skill that tiny-grpo adds to tiny-cot (steering/vector_validation.py)
    "tiny-cot-short": finetune_recipe("tiny-cot-short", "cot", 300, warmup_steps=20),
}


def get_recipe(name: str) -> ZooRecipe:
    """The recipe for a zoo name (did-you-mean error for unknown names; error for untrainable ones)."""
    check_zoo_name(name)
    if name not in RECIPES:
        raise ThinklensError.of(
            "zoo recipe", name, f"one of {', '.join(RECIPES)}", "this model is trained by its own trainer"
        )
    return RECIPES[name]


@dataclass(frozen=True)
class R1Recipe(ZooRecipe):
    """A zoo model that looks like a real reasoning model from the outside (trained by :mod:`thinklens.zoo.r1_train`):
    Qwen2 architecture (grouped-query attention: tiny-r1's shape has 2 key/value heads), a byte-level BPE
    tokenizer learned on the rendered task, a chat template whose generation prompt opens ``<think>``,
    natural-language reasoning and ``\\boxed{}`` answers. Fresh init (its vocabulary differs from tiny-pre's,
    so it cannot share that init), or ``init`` an R1 model of the zoo: its weights are the start and its
    tokenizer is kept (of the shape in ``model`` only ``max_positions`` counts then: RoPE has no learned
    positions, so a child may take longer texts than its parent)."""

    prompt_format: str = "chat"
    """How the model is prompted (the format ``auto`` picks for it): its chat template."""
    own_formats: ClassVar[tuple[str, ...]] = ("chat",)
    vocab_size: int = 512
    """Target size of the learned BPE vocabulary (bytes + merges; the control tokens come on top)."""
    mix: R1TextMix = field(default_factory=R1TextMix)
    """How the training texts vary (:func:`thinklens.zoo.r1.example_texts`)."""
    more_steps: int = 0
    """Steps of a continuation phase after ``steps`` (its own warmup and cosine at ``more_lr``), so a model
    found short can be trained on from its last checkpoint and still be one straight run of the recipe."""
    more_lr: float = 1e-3
    """Peak learning rate of the continuation phase."""

    def check(self) -> None:
        if self.init is not None and not isinstance(RECIPES.get(self.init), R1Recipe):
            raise ThinklensError.of(f"recipe {self.name} init", self.init,
                                    "None (a fresh init) or an R1 model of the zoo (its tokenizer is reused)",
                                    "pass init='tiny-r1' or drop init")
        if self.more_steps < 0 or not self.more_lr > 0:
            raise ThinklensError.of(f"recipe {self.name} more_steps", (self.more_steps, self.more_lr),
                                    "more_steps >= 0 and more_lr > 0", "pass more_steps=0")

    @property
    def total_steps(self) -> int:
        """Optimizer steps of both phases."""
        return self.steps + self.more_steps

    def to_json(self) -> dict:
        """As :meth:`ZooRecipe.to_json`, JSON values only (a mix's tuples become lists), so a checkpoint's stored
        identity compares equal."""
        return json.loads(json.dumps(super().to_json()))


#: tiny-r1 trains at lr 1e-3: at the zoo's 3e-3 its first layer's attention collapses to uniform on these
#: longer chat texts (the input norm's gain shrinks step after step) and operands are never copied from
#: the question; at 1e-3 they are copied after about 700 steps (measured on 900-step pilots).
RECIPES["tiny-r1"] = R1Recipe(
    name="tiny-r1", format_mix=(("think", 1.0),), steps=7000, lr=1e-3, warmup_steps=200, task=CARRY_THINK_TASK,
    model=ZooModelConfig(max_positions=512, n_kv_heads=2),
)

#: The overthinking organism (the controls spec's "Overthinking"): tiny-r1 fine-tuned on chains that conclude,
#: then re-check 1-3 times (:mod:`thinklens.zoo.overthink`); its zoo.json's eval holds the planted effect
#: (:func:`thinklens.zoo.overthink_eval.measure_overthinking`). 2000 steps took 21 min at 1 thread on the shared machine
#: (1200 steps: greedy accuracy 0.75). Measured (n=50 per step count): the answer is written in 99.5% of greedy
#: traces and a forced exit there answers it 398/398, yet the whole-chain round 3 still miscopies the start of
#: 5-8 step chains, so their final answers (0.5-0.78) are below tiny-r1's: re-checking hurts those.
RECIPES["tiny-overthink"] = R1Recipe(
    name="tiny-overthink", format_mix=(("think", 1.0),), steps=2000, lr=5e-4, warmup_steps=60, init="tiny-r1",
    task=CARRY_THINK_TASK, model=ZooModelConfig(max_positions=1024, n_kv_heads=2),
    mix=OverthinkMix(),
)

#: The re-check behaviour latent: tiny-r1 fine-tuned on tiny-overthink's texts of which only 10% re-check (no
#: slips, no forced exits), so it knows how to open and write a round but rarely does; the base of the hybrid
#: job's planted-latent setting (:mod:`thinklens.steering.hybrid_validation`), whose thinking model is
#: tiny-overthink (re-checks always). Fewer steps than tiny-overthink: the rounds are the only new text.
RECIPES["tiny-r1-sometimes"] = R1Recipe(
    name="tiny-r1-sometimes", format_mix=(("think", 1.0),), steps=1200, lr=5e-4, warmup_steps=60, init="tiny-r1",
    task=CARRY_THINK_TASK, model=ZooModelConfig(max_positions=1024, n_kv_heads=2),
    mix=OverthinkMix(round_rate=0.1, slip_rate=0.0, forced_exit_rate=0.0),
)
