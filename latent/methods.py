"""The table of latent-reasoning methods: one entry per method names its config class, its module and what
the trainer, the evaluator and the loader must know about it; the module holds the functions they call.

A new method is its config, one module implementing :class:`MethodModule` and one :class:`LatentMethod` row in
:data:`METHODS`: the row is its job ``thinklens run <name>`` (``latent/jobs/trainers.py`` makes one job per row, a
list registered once in pyproject.toml). The table imports no torch: a method's
module is imported when it is first used.

Example:
    >>> sorted(METHODS)
    ['coconut', 'codi', 'latent-sft', 'sft']
    >>> from thinklens.latent.config import CODIConfig
    >>> method = method_of(CODIConfig(train_steps=10))
    >>> method.name, [p.name for p in method.module.train_phases(CODIConfig(train_steps=10))]
    ('codi', ['codi'])
    >>> method.saved_config(CODIConfig())["method"], "publish" in method.saved_config(CODIConfig())
    ('codi', False)
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from thinklens.errors import ThinklensError, did_you_mean
from thinklens.latent.config import CoconutConfig, CODIConfig, LatentSFTConfig, SFTConfig, TrainConfig

if TYPE_CHECKING:
    from torch import nn

    from thinklens.engine.model import HookedModel
    from thinklens.latent.segments import Example, LatentTokens


@dataclass(frozen=True)
class Phase:
    """One stretch of training with its own optimizer (Coconut stages, Latent-SFT runs)."""

    name: str
    steps: int
    enter: Callable[[Any], None]
    """Sets the trainer module up for this phase (stage, trainable parts)."""


class MethodModule(Protocol):
    """What a method's module defines (``saved`` is the ``config`` of a saved model's ``latent.json``)."""

    def train_phases(self, cfg: Any) -> list[Phase]:
        """The training phases of ``cfg``, in order (phases with 0 steps left out)."""

    def build_trainer(self, cfg: Any, model: "HookedModel", tokens: "LatentTokens") -> "nn.Module":
        """The trainer module: ``collate(examples)`` -> batch, ``forward(batch)`` -> dict with ``loss``."""

    def build_for_inference(self, model: "HookedModel", tokens: "LatentTokens", saved: dict) -> "nn.Module":
        """The module of a saved model, before its side modules are loaded."""

    def infer_examples(self, module: "nn.Module", examples: list["Example"], saved: dict) -> list[dict]:
        """One dict per example: ``ids`` (tokens generated after the latents) and ``latents`` (decoded)."""

    def side_modules(self, module: "nn.Module", saved: dict) -> dict[str, "nn.Module"]:
        """Parts saved beside the LM weights as ``<key>.safetensors`` (CODI's projection); often none."""

    def label_tags(self, saved: dict, prior_steps: int | None) -> str:
        """What sets this run apart from the method's defaults, appended to its label in the table."""


@dataclass(frozen=True)
class LatentMethod:
    """One latent-reasoning method: its names, its config and the module that implements it."""

    name: str
    """Job name (``thinklens run <name>``) and ``method`` in a saved model's latent.json."""
    label: str
    """Name in the comparison table."""
    config: type[TrainConfig]
    """Frozen config class (training settings)."""
    module_name: str
    """Module implementing :class:`MethodModule`."""
    continue_fields: tuple[str, ...] = ()
    """Config fields a run continuing a saved model of this method must keep (CODI's projection)."""
    cannot_continue: str = ""
    """Why a saved model of this method cannot be trained further ("": it can)."""
    lora_copies: tuple[str, ...] = ()
    """Trainer-module attributes holding another copy of the LM, given their own LoRA adapters."""
    special_tokens: tuple[str, ...] = ("<bot>", "<eot>", "<latent>", "<think>", "</think>", "<compress>")
    """The special tokens the method's sequences hold (``--add-tokens`` adds them to a tokenizer that lacks them)."""
    validations: tuple[tuple[str, str], ...] = ()
    """Its planted and null settings (``Job.validations``): (name, ``module:SETTINGS``) pairs."""
    smallest: tuple[str, ...] = ()
    """Its smallest run (``Job.smallest``): options that train it in seconds."""

    @property
    def module(self) -> MethodModule:
        """The implementing module (imported now)."""
        return importlib.import_module(self.module_name)  # type: ignore[return-value]

    def saved_config(self, cfg: TrainConfig) -> dict[str, Any]:
        """The ``config`` a trained model records in latent.json: the method and the training settings."""
        fields = dataclasses.asdict(cfg)
        fields.pop("publish", None)  # where a copy went is not a training setting
        return {"method": self.name, **fields}


#: Every latent method, by name.
METHODS: dict[str, LatentMethod] = {m.name: m for m in (
    LatentMethod("coconut", "Coconut", CoconutConfig, "thinklens.latent.coconut",
                 validations=(("codi", "thinklens.latent.codi_validation:SETTINGS"),),
                 smallest=("--max-stage", "1", "--stage-steps", "2", "--final-stage-steps", "2", "--batch-size", "4",
                           "--n-eval", "2", "--publish", "{out}/model")),
    LatentMethod("codi", "CODI", CODIConfig, "thinklens.latent.codi", continue_fields=("projection", "prj_dim"),
                 validations=(("codi", "thinklens.latent.codi_validation:SETTINGS"),),
                 smallest=("--train-steps", "4", "--batch-size", "8", "--n-eval", "2", "--n-latents", "2", "--publish", "{out}/model")),
    LatentMethod("latent-sft", "Latent-SFT", LatentSFTConfig, "thinklens.latent.latent_sft", lora_copies=("encoder",),
                 cannot_continue="a saved Latent-SFT model has no encoder to continue stage 1 or 2 with",
                 smallest=("--encoder-steps", "2", "--decoder-steps", "2", "--joint-steps", "2", "--stage2-steps", "2",
                           "--batch-size", "4", "--n-eval", "2", "--publish", "{out}/model")),
    # token-level SFT writes the prompt, the chain and the answer in the model's own tokens: no special token, so
    # a fine-tune keeps its base's vocabulary (hybrid and reasoning-vector pair the two)
    LatentMethod("sft", "SFT", SFTConfig, "thinklens.latent.sft", continue_fields=("cot",), special_tokens=(),
                 smallest=("--train-steps", "4", "--batch-size", "4", "--n-eval", "2", "--min-steps", "3", "--max-steps", "3",
                           "--publish", "{out}/model")),
)}


def method_named(name: str) -> LatentMethod:
    """The method called ``name`` (e.g. a latent.json ``method``), with a did-you-mean error."""
    if name not in METHODS:
        raise ThinklensError.of("latent method", name, f"one of {', '.join(METHODS)}", did_you_mean(name, list(METHODS)))
    return METHODS[name]


def method_of(cfg: Any) -> LatentMethod:
    """The method whose config ``cfg`` is."""
    for m in METHODS.values():
        if type(cfg) is m.config:
            return m
    raise ThinklensError.of("config", type(cfg).__name__, ", ".join(m.config.__name__ for m in METHODS.values()),
                            "build the config of a latent method")
