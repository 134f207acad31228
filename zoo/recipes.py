"""One training recipe per zoo model (a frozen config each, plus the registry that maps names to them).

Example:
    >>> RECIPES["tiny-cot"].init
    'tiny-pre'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from thinklens.errors import ThinklensError
from thinklens.tasks import STYLES, TaskConfig
from thinklens.zoo.modeling import ZooModelConfig


@dataclass(frozen=True)
class ZooRecipe:
    """How one zoo model is trained; training length is fixed in steps, so a run is reproducible."""

    name: str
    """The zoo name it produces."""
    styles: tuple[tuple[str, float], ...]
    """Mixture of rendering styles ``(style, weight)`` in the training data."""
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
    eval_style: str = "cot"
    """Style the model is evaluated in."""

    def __post_init__(self) -> None:
        if self.steps < 1 or self.warmup_steps < 0 or self.warmup_steps > self.steps:
            raise ThinklensError.of(
                f"recipe {self.name} steps", (self.steps, self.warmup_steps), "0 <= warmup_steps <= steps",
                "fix the recipe",
            )
        if not self.lr > 0 or not 0 <= self.min_lr_ratio <= 1:
            raise ThinklensError.of(f"recipe {self.name} lr", (self.lr, self.min_lr_ratio), "lr > 0, ratio in [0,1]", "fix it")
        for style, weight in self.styles:
            if style not in STYLES or weight < 0:
                raise ThinklensError.of(f"recipe {self.name} style", (style, weight), f"a style in {STYLES}", "fix it")
        if self.eval_style not in STYLES:
            raise ThinklensError.of(f"recipe {self.name} eval_style", self.eval_style, f"one of {STYLES}", "fix it")

    def to_json(self) -> dict:
        """The recipe as a JSON-able dict (stored in zoo.json and in checkpoints)."""
        out = asdict(self)
        out["styles"] = [list(s) for s in self.styles]
        out["task"]["ops"] = list(self.task.ops)
        return out


#: The zoo's task: the TaskConfig defaults (values 0..99, + - * with operands up to 10 / factors up to 4).
_TASK = TaskConfig()
#: tiny-think-carry's traces: slips are forgotten carries and "hmm" comes before multiplications, both
#: at rates > 0.5, so the model learns WHEN it reflects and greedy decoding shows it (tiny-think's
#: random near misses at rate 0.25 are never the greedy choice, so its greedy traces have no "wait").
#: Same questions as _TASK.
CARRY_THINK_TASK = TaskConfig(correction_rate=0.7, correction_on="carry", hmm_rate=0.7, hmm_on="mul")

RECIPES: dict[str, ZooRecipe] = {
    "tiny-pre": ZooRecipe(
        name="tiny-pre", styles=(("cot", 0.45), ("think", 0.4), ("direct", 0.15)),
        steps=2400, lr=3e-3, warmup_steps=100, task=_TASK, eval_style="cot",
    ),
    "tiny-direct": ZooRecipe(
        name="tiny-direct", init="tiny-pre", styles=(("direct", 1.0),),
        steps=250, lr=1e-3, warmup_steps=20, task=_TASK, eval_style="direct",
    ),
    "tiny-cot": ZooRecipe(
        name="tiny-cot", init="tiny-pre", styles=(("cot", 1.0),),
        steps=1500, lr=1e-3, warmup_steps=50, task=_TASK, eval_style="cot",
    ),
    "tiny-think": ZooRecipe(
        name="tiny-think", init="tiny-pre", styles=(("think", 1.0),),
        steps=3500, lr=1e-3, warmup_steps=50, task=_TASK, eval_style="think",
    ),
    "tiny-think-carry": ZooRecipe(
        name="tiny-think-carry", init="tiny-pre", styles=(("think", 1.0),),
        steps=1000, lr=1e-3, warmup_steps=50, task=CARRY_THINK_TASK, eval_style="think",
    ),
}


def get_recipe(name: str) -> ZooRecipe:
    """The recipe for a zoo name (did-you-mean error for unknown names; error for untrainable ones)."""
    from thinklens.zoo.registry import check_zoo_name

    check_zoo_name(name)
    if name not in RECIPES:
        raise ThinklensError.of(
            "zoo recipe", name, f"one of {', '.join(RECIPES)}", "this model is trained by its own trainer"
        )
    return RECIPES[name]
